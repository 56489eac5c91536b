package debug

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	grove "github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/testenv"
)

// component names the adapters in GROVE_TEST_REQUIRE.
var component = map[*adapter]string{lldbDAP: "lldb", delve: "dlv", debugpy: "debugpy"}

// newManager returns a Manager on a LocalHost rooted at dir, closed when
// the test ends.
func newManager(t *testing.T, dir string) *Manager {
	t.Helper()
	h, err := NewLocalHost(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(h, Options{})
	t.Cleanup(func() { m.Close() })
	return m
}

// requireAdapter skips (or fails, when GROVE_TEST_REQUIRE names it) when
// a's adapter does not probe OK.
func requireAdapter(t *testing.T, m *Manager, a *adapter) {
	t.Helper()
	_, _, err := m.probes.probe(context.Background(), a)
	why := ""
	if err != nil {
		why = err.Error()
	}
	testenv.Require(t, component[a], err == nil, why)
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gcc compiles src in dir to out with debug info.
func gcc(t *testing.T, dir, src, out string) {
	t.Helper()
	cc := testenv.RequireBinary(t, "lldb", "gcc")
	cmd := exec.Command(cc, "-g", "-O0", "-o", out, src)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// variable finds a variable of the top frame's scopes.
func variable(snap *grove.DebugSnapshot, name string) (grove.DebugVariable, bool) {
	if len(snap.Frames) == 0 {
		return grove.DebugVariable{}, false
	}
	for _, sc := range snap.Frames[0].Scopes {
		for _, v := range sc.Variables {
			if v.Name == name {
				return v, true
			}
		}
	}
	return grove.DebugVariable{}, false
}

func wantVar(t *testing.T, snap *grove.DebugSnapshot, name, value string) {
	t.Helper()
	v, ok := variable(snap, name)
	if !ok {
		t.Fatalf("no variable %s in top frame: %+v", name, snap.Frames)
	}
	if v.Value != value && strings.Trim(v.Value, "'\"") != value {
		t.Fatalf("variable %s = %q, want %q", name, v.Value, value)
	}
}

func wantStoppedAt(t *testing.T, snap *grove.DebugSnapshot, file string, line int) {
	t.Helper()
	if snap.State != grove.DebugStopped {
		t.Fatalf("state %s (output %q), want stopped", snap.State, snap.Output)
	}
	if len(snap.Frames) == 0 {
		t.Fatalf("stopped without frames")
	}
	f := snap.Frames[0]
	if f.File != file || f.Line != line {
		t.Fatalf("top frame %s at %s:%d, want %s:%d", f.Name, f.File, f.Line, file, line)
	}
}
