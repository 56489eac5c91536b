package debug

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	grove "github.com/grove-dev/grove"
)

// BenchmarkBreakAndInspect compares one whole debugging round — start the
// program under lldb-dap with a breakpoint, run to it, read the locals and
// an expression, stop — through a Manager, with the raw tool doing the same
// in batch mode (lldb -b: break, run, frame variable, expression, kill), in
// one run:
//
//	go test -run '^$' -bench BreakAndInspect -benchtime 20x ./debug
func BenchmarkBreakAndInspect(b *testing.B) {
	lldb, err := exec.LookPath("lldb-19")
	if err != nil {
		if lldb, err = exec.LookPath("lldb"); err != nil {
			b.Skip("no lldb")
		}
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "add_numbers.c"), []byte(addC), 0o644); err != nil {
		b.Fatal(err)
	}
	cc := exec.Command("gcc", "-g", "-O0", "-o", "add", "add_numbers.c")
	cc.Dir = dir
	if out, err := cc.CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v %s", err, out)
	}
	b.Run("raw-lldb-batch", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(lldb, "-b", "-o", "breakpoint set --file add_numbers.c --line 4", "-o", "run",
				"-o", "frame variable", "-o", "expression a + b", "-o", "kill", filepath.Join(dir, "add"))
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "(int) a = 2") {
				b.Fatalf("lldb: %v\n%s", err, out)
			}
		}
	})
	b.Run("grove-dap", func(b *testing.B) {
		h, err := NewLocalHost(dir)
		if err != nil {
			b.Fatal(err)
		}
		m := NewManager(h, Options{})
		defer m.Close()
		ctx := context.Background()
		for b.Loop() {
			s, err := m.Start(ctx, grove.DebugStartRequest{Language: "c", Program: "add",
				Breakpoints: []grove.SourceBreakpoints{{File: "add_numbers.c", Lines: []int{4}}}})
			if err != nil {
				b.Fatal(err)
			}
			snap, err := m.Continue(ctx, grove.DebugContinueRequest{Session: s.ID, Expressions: []string{"a + b"}})
			if err != nil || len(snap.Evaluations) != 1 || snap.Evaluations[0].Result != "5" {
				b.Fatalf("%+v %v", snap, err)
			}
			if err := m.Stop(ctx, s.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}
