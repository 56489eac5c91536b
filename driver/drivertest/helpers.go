package drivertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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
	return s.workspaceAt(t, d, dir, mod)
}

// workspaceAt creates a runtime on d for the existing workspace directory
// dir, whose files the case has already put there (Harness.Spec runs after
// that, so an adapter can prepare them).
func (s *suite) workspaceAt(t *testing.T, d driver.Driver, dir string, mod func(*driver.Spec)) *workspace {
	t.Helper()
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

// gitReq is a shell script that runs git inside the sandbox. The clean
// environment has no committer identity, and the sandbox's system config
// may not either, so the request names one.
func gitReq(script string) grove.ExecRequest {
	return grove.ExecRequest{Shell: script, Env: map[string]string{
		"GIT_AUTHOR_NAME": "drivertest", "GIT_AUTHOR_EMAIL": "drivertest@example.com",
		"GIT_COMMITTER_NAME": "drivertest", "GIT_COMMITTER_EMAIL": "drivertest@example.com",
	}}
}

// hostGit runs git on the host in dir and returns its trimmed output. The
// workspace may belong to the uid commands run as rather than to the test
// process (Harness.Spec may hand it over), so the global config it gets
// trusts every directory; git 2.39 honours safe.directory only there.
func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := runHostGit(t, dir, args...)
	if err != nil {
		t.Fatalf("host git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// runHostGit is hostGit for commands that may fail.
func runHostGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(cfg, []byte("[safe]\n\tdirectory = *\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + cfg,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

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
