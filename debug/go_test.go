package debug

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	grove "github.com/grove-dev/grove"
)

const addGo = `package main

import "fmt"

func add(a, b int) int {
	sum := a + b
	return sum
}

func main() {
	fmt.Println(add(2, 3))
}
`

func TestDelveBreakpointLocalsStep(t *testing.T) {
	dir := t.TempDir()
	// dlv builds the program itself, with the go on PATH.
	if _, err := exec.LookPath("go"); err != nil {
		if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
			t.Setenv("PATH", os.Getenv("PATH")+string(filepath.ListSeparator)+"/usr/local/go/bin")
		}
	}
	m := newManager(t, dir)
	requireAdapter(t, m, delve)
	writeFile(t, dir, "go.mod", "module example.com/add\n\ngo 1.21\n")
	writeFile(t, dir, "main.go", addGo)
	ctx := ctxT(t)

	t0 := time.Now()
	sess, err := m.Start(ctx, grove.DebugStartRequest{
		Language:    "go",
		Program:     ".",
		Env:         map[string]string{"GOFLAGS": "-mod=mod"},
		Breakpoints: []grove.SourceBreakpoints{{File: "main.go", Lines: []int{6}}},
		Timeout:     2 * time.Minute, // the first build compiles the runtime without optimisations
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("start: %s", time.Since(t0))
	if len(sess.Breakpoints) != 1 || !sess.Breakpoints[0].Verified {
		t.Fatalf("breakpoints %+v", sess.Breakpoints)
	}
	snap, err := m.Snapshot(ctx, grove.DebugSnapshotRequest{Session: sess.ID, Timeout: 30 * time.Second, Expressions: []string{"a + b"}})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "main.go", 6)
	wantVar(t, snap, "a", "2")
	wantVar(t, snap, "b", "3")
	if len(snap.Evaluations) != 1 || snap.Evaluations[0].Result != "5" {
		t.Fatalf("evaluations %+v", snap.Evaluations)
	}
	ev, err := m.Evaluate(ctx, grove.DebugEvaluateRequest{Session: sess.ID, Expression: "a * b"})
	if err != nil || ev.Result != "6" {
		t.Fatalf("evaluate a * b = %+v, %v", ev, err)
	}
	snap, err = m.Step(ctx, grove.DebugStepRequest{Session: sess.ID, Kind: "over"})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "main.go", 7)
	wantVar(t, snap, "sum", "5")

	snap, err = m.Continue(ctx, grove.DebugContinueRequest{Session: sess.ID, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if snap.State != grove.DebugTerminated {
		t.Fatalf("after continue: %+v", snap)
	}
	if snap.ExitCode != nil && *snap.ExitCode != 0 {
		t.Errorf("exit code %d", *snap.ExitCode)
	}
	t.Logf("exit code reported: %v", snap.ExitCode != nil)
	if !strings.Contains(snap.Output, "5") {
		t.Errorf("output %q, want 5 (outputMode remote)", snap.Output)
	}
	if err := m.Stop(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "__debug_bin")); err == nil {
		t.Errorf("dlv left its binary in the workspace")
	}
}
