package drivertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

type suite struct{ h Harness }

var seq atomic.Int64

// workspace is one runtime of the driver under test over a fresh directory.
type workspace struct {
	d    driver.Driver
	id   string
	dir  string // the workspace root on the host
	spec driver.Spec
}

// runtime makes a fresh driver and one workspace runtime on it.
func (s *suite) runtime(t *testing.T, mod func(*driver.Spec)) *workspace {
	t.Helper()
	return s.workspace(t, s.h.New(t), mod)
}

// workspace makes a fresh workspace directory (inside a parent the test
// owns, so escapes to "../" land somewhere checkable) and creates its
// runtime on d.
func (s *suite) workspace(t *testing.T, d driver.Driver, mod func(*driver.Spec)) *workspace {
	t.Helper()
	parent := t.TempDir()
	dir := filepath.Join(parent, "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := s.h.Spec(t, dir)
	spec.WorkspaceID = fmt.Sprintf("drivertest-%d-%d", os.Getpid(), seq.Add(1))
	spec.WorkDir = dir
	spec.Writable = true
	if mod != nil {
		mod(&spec)
	}
	rt, err := d.Create(context.Background(), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if rt.WorkspaceID != spec.WorkspaceID {
		t.Fatalf("Create returned runtime %q, want %q", rt.WorkspaceID, spec.WorkspaceID)
	}
	t.Cleanup(func() {
		if err := d.Destroy(context.Background(), spec.WorkspaceID); err != nil {
			t.Errorf("Destroy: %v", err)
		}
	})
	return &workspace{d: d, id: spec.WorkspaceID, dir: dir, spec: spec}
}

// exec runs req and fails the test on an error.
func (w *workspace) exec(t *testing.T, req grove.ExecRequest) *grove.ExecResult {
	t.Helper()
	res, err := w.d.Exec(context.Background(), w.id, req)
	if err != nil {
		t.Fatalf("Exec(%q%q): %v", req.Argv, req.Shell, err)
	}
	return res
}

// ok runs req and fails unless it exits 0.
func (w *workspace) ok(t *testing.T, req grove.ExecRequest) *grove.ExecResult {
	t.Helper()
	res := w.exec(t, req)
	if res.ExitCode != 0 {
		t.Fatalf("Exec(%q%q) exit %d, stdout %q, stderr %q", req.Argv, req.Shell, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res
}

func sh(script string) grove.ExecRequest { return grove.ExecRequest{Shell: script} }

func argv(a ...string) grove.ExecRequest { return grove.ExecRequest{Argv: a} }

// markerGone checks that a background process told to create marker at
// after has been killed: the marker must still be missing a while after
// that moment.
func markerGone(t *testing.T, marker string, after time.Time) {
	t.Helper()
	time.Sleep(time.Until(after.Add(700 * time.Millisecond)))
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("a background process of the killed command survived and wrote %s: %q", filepath.Base(marker), b)
	}
}

func hasMode(modes []driver.NetworkMode, m driver.NetworkMode) bool {
	for _, x := range modes {
		if x == m {
			return true
		}
	}
	return false
}

func envMap(out []byte) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}
