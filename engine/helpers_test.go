package engine_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider/local"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/memory"
)

// fixture is an engine over a temp root, with a counting git wrapper so tests
// can prove a path makes no git call.
type fixture struct {
	eng      *engine.Engine
	store    store.Store
	prov     *local.Provider
	root     string
	gitCalls string // file the wrapper appends one line to per call
}

type fixtureOpt struct {
	drv             driver.Driver
	allowUnisolated bool
	now             func() time.Time
	configure       func(*engine.Config) // last word on the engine's config
}

func newFixture(t *testing.T, opts ...fixtureOpt) *fixture {
	t.Helper()
	var o fixtureOpt
	if len(opts) > 0 {
		o = opts[0]
	}
	root := t.TempDir()
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(root, "git-calls")
	wrapper := filepath.Join(root, "git-wrapper")
	script := "#!/bin/sh\necho \"$1\" >> " + strconv.Quote(calls) + "\nexec " + strconv.Quote(realGit) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o700)
	git := &gitrepo.Git{Binary: wrapper, Home: home, Identity: gitrepo.Identity{Name: "Test Agent", Email: "agent@example.invalid"}}
	prov := local.New(&gitrepo.Caches{Git: git, Root: filepath.Join(root, "repos")}, fsops.Options{})
	drv := o.drv
	os.MkdirAll(filepath.Join(root, "rt"), 0o700)
	if drv == nil {
		drv = subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: filepath.Join(root, "rt")})
		o.allowUnisolated = true
	}
	st := memory.New()
	cfg := engine.Config{Store: st, Provider: prov, Driver: drv, AllowUnisolatedWrites: o.allowUnisolated, Now: o.now}
	if o.configure != nil {
		o.configure(&cfg)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{eng: eng, store: st, prov: prov, root: root, gitCalls: calls}
}

func (f *fixture) gitCallCount(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(f.gitCalls)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// sourceRepo makes a non-bare repository with two commits on main and a
// tag, and returns its path.
func sourceRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "upstream")
	run(t, "", "git", "init", "-q", "-b", "main", dir)
	write(t, filepath.Join(dir, "README.md"), "hello\n")
	write(t, filepath.Join(dir, "src", "main.go"), "package main\n\nfunc main() {}\n")
	run(t, dir, "git", "add", "-A")
	run(t, dir, "git", "commit", "-qm", "first")
	write(t, filepath.Join(dir, "README.md"), "hello\nworld\n")
	run(t, dir, "git", "commit", "-qam", "second")
	run(t, dir, "git", "tag", "v1")
	return dir
}

func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every path under dir with its size, to prove an operation
// changed nothing on disk.
func snapshot(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if filepath.Base(p) == "git-calls" {
			return nil
		}
		out[p] = info.Size()
		return nil
	})
	return out
}

var bg = context.Background()

// contextUntil returns a context that ends when stop is closed.
func contextUntil(stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
