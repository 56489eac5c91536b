package drivertest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// skipUnisolated skips a case whose promise only an isolated runtime can
// keep, naming the capability, so the skip is visible in the test output.
func skipUnisolated(t *testing.T, d driver.Driver) {
	t.Helper()
	if !d.Capabilities().Isolated {
		t.Skipf("%s reports Capabilities().Isolated=false: its commands run as the host user and can reach anything that user can, so it makes no separation promise", d.Kind())
	}
}

// usersSeparated: two users' workspaces of one project never share a
// runtime, and neither sees, changes nor lists the other's files or
// processes.
func (s *suite) usersSeparated(t *testing.T) {
	d := s.h.New(t)
	skipUnisolated(t, d)
	alice := s.workspace(t, d, func(sp *driver.Spec) { sp.User = "drivertest-alice" })
	bob := s.workspace(t, d, func(sp *driver.Spec) { sp.User = "drivertest-bob" })
	if alice.spec.Project != bob.spec.Project {
		t.Fatalf("the case needs one project, got %q and %q", alice.spec.Project, bob.spec.Project)
	}
	ctx := context.Background()
	ra, err := d.Get(ctx, alice.id)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := d.Get(ctx, bob.id)
	if err != nil {
		t.Fatal(err)
	}
	if ra.BackendID != "" && ra.BackendID == rb.BackendID {
		t.Fatalf("alice and bob share the runtime %s", ra.BackendID)
	}

	if err := os.WriteFile(filepath.Join(bob.dir, "secret"), []byte("bob's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"BOB": bob.dir}
	for _, a := range []struct{ name, script string }{
		{"read", `cat "$BOB/secret"`},
		{"list", `ls -A "$BOB" | grep -q .`},
		{"write", `echo planted > "$BOB/planted"`},
		{"delete", `rm "$BOB/secret"`},
	} {
		if res := alice.exec(t, grove.ExecRequest{Shell: a.script, Env: env}); res.ExitCode == 0 {
			t.Errorf("alice could %s bob's workspace: %s", a.name, res.Stdout)
		}
	}
	if b, err := os.ReadFile(filepath.Join(bob.dir, "secret")); err != nil || string(b) != "bob's\n" {
		t.Errorf("bob's file after alice's attempts: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(bob.dir, "planted")); err == nil {
		t.Error("alice planted a file in bob's workspace")
	}

	// Processes: a running command of bob's, recognisable by its $0, is
	// not visible to alice. Controls: the host sees it (so it is running
	// when alice looks), and the same probe inside alice's runtime finds a
	// process of alice's own (so the probe works there).
	marker := fmt.Sprintf("drivertest-marker-%d-%d", os.Getpid(), seq.Add(1))
	bctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := d.Exec(bctx, bob.id, grove.ExecRequest{Argv: []string{"sh", "-c", "sleep 5", marker}})
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("bob's sleep: %v", err)
		}
	}()
	defer wg.Wait()
	defer stop() // bob's sleep is not needed past the checks
	deadline := time.Now().Add(2500 * time.Millisecond)
	for !hostSees(marker) {
		if time.Now().After(deadline) {
			t.Fatal("bob's command never showed up in the host's /proc")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The brackets keep the probe from matching its own command line.
	probe := func(m string) string {
		i := len(m) - 1
		return fmt.Sprintf(`grep -l '%s[%s]' /proc/[0-9]*/cmdline 2>/dev/null | grep -q .`, m[:i], m[i:])
	}
	own := marker + "-alice"
	self := alice.exec(t, grove.ExecRequest{Shell: fmt.Sprintf(`sh -c 'sleep 2' %s & sleep 0.3; %s; r=$?; kill $! 2>/dev/null; exit $r`, own, probe(own))})
	if self.ExitCode != 0 {
		t.Fatalf("the process probe does not find alice's own command inside her runtime (exit %d %s)", self.ExitCode, self.Stderr)
	}
	if res := alice.exec(t, grove.ExecRequest{Shell: probe(marker)}); res.ExitCode == 0 {
		t.Error("alice sees bob's running command")
	}
}

// hostSees reports whether a process whose command line contains marker
// runs on the host.
func hostSees(marker string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), marker) {
			return true
		}
	}
	return false
}

// attackLayout is a repo cache and two workspaces made the way Grove's
// gitrepo package makes them: clones that borrow the cache's objects
// through alternates and keep their own refs, each on its own branch.
type attackLayout struct {
	bare, a, b string
}

func newAttackLayout(t *testing.T) attackLayout {
	t.Helper()
	root := t.TempDir()
	l := attackLayout{bare: filepath.Join(root, "cache.git"), a: filepath.Join(root, "ws-a"), b: filepath.Join(root, "ws-b")}
	hostGit(t, root, "init", "-q", "--bare", "-b", "main", l.bare)
	seed := filepath.Join(root, "seed")
	hostGit(t, root, "clone", "-q", l.bare, seed)
	if err := os.WriteFile(filepath.Join(seed, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostGit(t, seed, "add", "README")
	hostGit(t, seed, "commit", "-q", "-m", "seed")
	hostGit(t, seed, "push", "-q", "origin", "main")
	for ws, branch := range map[string]string{l.a: "agent/a", l.b: "agent/b"} {
		hostGit(t, root, "clone", "-q", "--shared", "--no-checkout", l.bare, ws)
		hostGit(t, ws, "checkout", "-q", "-f", "-b", branch, "origin/main")
	}
	return l
}

// treeDigest hashes every path, mode, link target and file content under
// dir, so any change to it shows.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v\n", strings.TrimPrefix(p, dir), st.Mode())
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			fmt.Fprintf(h, "-> %s\n", target)
		case st.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// workspaceAttack is the workspace-isolation attack of DESIGN.md §3: from
// inside workspace A's runtime, attack the repo cache, a sibling workspace
// B of the same cache (not hosted by the driver: another user's, say) and
// A's own protected git files, then check from the host that nothing but
// A's own work changed.
func (s *suite) workspaceAttack(t *testing.T) {
	d := s.h.New(t)
	skipUnisolated(t, d)
	l := newAttackLayout(t)
	protected := []string{
		filepath.Join(l.a, ".git", "config"),
		filepath.Join(l.a, ".git", "hooks"),
		filepath.Join(l.a, ".git", "objects", "info", "alternates"),
	}
	w := s.workspaceAt(t, d, l.a, func(sp *driver.Spec) {
		sp.ReadOnlyPaths = []string{filepath.Join(l.bare, "objects")}
		sp.ProtectedPaths = protected
	})
	home, _ := os.UserHomeDir()
	env := gitReq("").Env
	for k, v := range map[string]string{"A": l.a, "B": l.b, "BARE": l.bare, "HOST_HOME": home} {
		env[k] = v
	}
	run := func(script string) *grove.ExecResult {
		t.Helper()
		return w.exec(t, grove.ExecRequest{Shell: script, Env: env})
	}
	refs := func(dir string) string { return hostGit(t, dir, "for-each-ref", "--format=%(refname) %(objectname)") }

	beforeB, beforeBare := treeDigest(t, l.b), treeDigest(t, l.bare)
	beforeBRefs, beforeBareRefs := refs(l.b), refs(l.bare)
	beforeBareObjects := hostGit(t, l.bare, "count-objects", "-v")
	beforeConfig := readFile(t, protected[0])
	beforeHooks := treeDigest(t, protected[1])
	beforeAlternates := readFile(t, protected[2])

	// Ordinary work inside A must function, or the attacks prove nothing.
	for _, script := range []string{
		"git status --porcelain",
		"echo work > new.txt && git add new.txt && git commit -q -m inside-a",
		"git log --oneline | grep -q inside-a",
	} {
		if res := run(script); res.ExitCode != 0 {
			t.Fatalf("%q inside A: exit %d\n%s%s", script, res.ExitCode, res.Stdout, res.Stderr)
		}
	}
	commit := hostGit(t, l.a, "rev-parse", "HEAD")
	if hostGit(t, l.a, "log", "-1", "--format=%s") != "inside-a" {
		t.Fatal("the commit made inside A is not on A's branch")
	}

	// Each attack must fail inside, except those marked private: a
	// runtime may give the sandbox a private writable tree where the
	// target's parent is only a mount point (bwrap's tmpfs /tmp holding
	// the cache's objects mount), and there only the host-side checks
	// below count.
	attacks := []struct {
		name, script string
		private      bool
	}{
		{"write a file in B", `echo pwned > "$B/pwned.txt"`, false},
		{"delete a file in B", `rm "$B/README"`, false},
		{"read B", `cat "$B/README"`, false},
		{"move B's ref", `git -C "$B" update-ref refs/heads/agent/b HEAD`, false},
		{"write cache objects", `echo x > "$BARE/objects/pwned"`, false},
		{"write cache refs", `echo ` + commit + ` > "$BARE/refs/heads/main"`, false},
		{"write cache HEAD", `echo x >> "$BARE/HEAD"`, true},
		{"git update-ref on the cache", `git --git-dir="$BARE" update-ref refs/heads/main ` + commit, false},
		{"git push into the cache", `git push -q "$BARE" HEAD:refs/heads/evil`, false},
		{"set core.fsmonitor", `git config core.fsmonitor "touch /tmp/pwned"`, false},
		{"append to config", `echo "[core] hooksPath = /tmp" >> .git/config`, false},
		{"plant a pre-commit hook", `printf '#!/bin/sh\ntouch /tmp/pwned\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, false},
		{"replace the hooks dir", `mv .git/hooks .git/hooks.old`, false},
		{"rewrite alternates", `echo "$B/.git/objects" > .git/objects/info/alternates`, false},
		{"replace alternates' directory", `mv .git/objects/info .git/objects/info.old`, false},
		{"replace .git", `mv .git .git.old`, false},
		{"remove config", `rm -f .git/config`, false},
		{"read the host HOME", `ls -A "$HOST_HOME" | grep -q .`, false},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			if res := run(a.script); res.ExitCode == 0 {
				if a.private {
					t.Logf("%q succeeded inside the sandbox; the host-side checks say whether it reached the host", a.script)
					return
				}
				t.Errorf("%q succeeded inside the sandbox: %s", a.script, res.Stdout)
			}
		})
	}

	if _, err := runHostGit(t, l.bare, "cat-file", "-e", commit); err == nil {
		t.Error("A's new commit landed in the cache's object store")
	}
	checks := []struct{ what, before, after string }{
		{"B's files", beforeB, treeDigest(t, l.b)},
		{"B's refs", beforeBRefs, refs(l.b)},
		{"the cache", beforeBare, treeDigest(t, l.bare)},
		{"the cache's refs", beforeBareRefs, refs(l.bare)},
		{"the cache's objects", beforeBareObjects, hostGit(t, l.bare, "count-objects", "-v")},
		{"A's .git/config", beforeConfig, readFile(t, protected[0])},
		{"A's hooks", beforeHooks, treeDigest(t, protected[1])},
		{"A's alternates", beforeAlternates, readFile(t, protected[2])},
	}
	for _, c := range checks {
		if c.before != c.after {
			t.Errorf("%s changed from inside A's sandbox", c.what)
		}
	}
	for _, p := range []string{".git.old", ".git/hooks.old", ".git/objects/info.old"} {
		if _, err := os.Lstat(filepath.Join(l.a, p)); err == nil {
			t.Errorf("%s exists: a protected path's parent was moved away", p)
		}
	}
	if _, err := os.Lstat("/tmp/pwned"); err == nil {
		t.Error("/tmp/pwned exists on the host")
	}
}
