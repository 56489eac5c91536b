package bwrap_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// layout is a repo cache and two workspaces made the way Grove's gitrepo
// package makes them: per-workspace clones that borrow the cache's objects
// through alternates and keep their own refs.
type layout struct {
	bare, a, b string
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func newLayout(t *testing.T) layout {
	root := t.TempDir()
	l := layout{bare: filepath.Join(root, "cache.git"), a: filepath.Join(root, "ws-a"), b: filepath.Join(root, "ws-b")}
	git(t, root, "init", "-q", "--bare", "-b", "main", l.bare)
	seed := filepath.Join(root, "seed")
	git(t, root, "clone", "-q", l.bare, seed)
	if err := os.WriteFile(filepath.Join(seed, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, seed, "add", "README")
	git(t, seed, "commit", "-q", "-m", "seed")
	git(t, seed, "push", "-q", "origin", "main")
	for ws, branch := range map[string]string{l.a: "agent/a", l.b: "agent/b"} {
		git(t, root, "clone", "-q", "--shared", "--no-checkout", l.bare, ws)
		git(t, ws, "checkout", "-q", "-f", "-b", branch, "origin/main")
	}
	return l
}

// treeDigest hashes every path, mode, link target and file content under
// dir, so any change to it shows.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
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

// TestWorkspaceIsolation attacks the cache and a sibling workspace from
// inside workspace A's sandbox (DESIGN.md §3) and checks from the host
// that nothing but A's own work changed.
func TestWorkspaceIsolation(t *testing.T) {
	d := newDriver(t)
	l := newLayout(t)
	spec := driver.Spec{
		WorkspaceID:   "ws-a",
		WorkDir:       l.a,
		Writable:      true,
		ReadOnlyPaths: []string{filepath.Join(l.bare, "objects")},
		ProtectedPaths: []string{
			filepath.Join(l.a, ".git", "config"),
			filepath.Join(l.a, ".git", "hooks"),
			filepath.Join(l.a, ".git", "objects", "info", "alternates"),
		},
	}
	ctx := context.Background()
	if _, err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	env := map[string]string{
		"A": l.a, "B": l.b, "BARE": l.bare, "HOST_HOME": home,
		"GIT_AUTHOR_NAME": "agent", "GIT_AUTHOR_EMAIL": "agent@example.com",
		"GIT_COMMITTER_NAME": "agent", "GIT_COMMITTER_EMAIL": "agent@example.com",
	}
	run := func(script string) *grove.ExecResult {
		t.Helper()
		res, err := d.Exec(ctx, "ws-a", grove.ExecRequest{Shell: script, Env: env})
		if err != nil {
			t.Fatalf("Exec(%q): %v", script, err)
		}
		return res
	}

	beforeB, beforeBare := treeDigest(t, l.b), treeDigest(t, l.bare)
	beforeBRefs := git(t, l.b, "for-each-ref", "--format=%(refname) %(objectname)")
	beforeBareRefs := git(t, l.bare, "for-each-ref", "--format=%(refname) %(objectname)")
	beforeBareObjects := git(t, l.bare, "count-objects", "-v")
	beforeConfig := readFile(t, filepath.Join(l.a, ".git", "config"))
	beforeHooks := treeDigest(t, filepath.Join(l.a, ".git", "hooks"))
	beforeAlternates := readFile(t, filepath.Join(l.a, ".git", "objects", "info", "alternates"))

	// Ordinary work inside A must function.
	for _, script := range []string{
		"git status --porcelain",
		"echo work > new.txt && git add new.txt && git commit -q -m inside-a",
		"git log --oneline | grep -q inside-a",
	} {
		if res := run(script); res.ExitCode != 0 {
			t.Fatalf("%q inside A: exit %d\n%s%s", script, res.ExitCode, res.Stdout, res.Stderr)
		}
	}
	commit := git(t, l.a, "rev-parse", "HEAD")
	if git(t, l.a, "log", "-1", "--format=%s") != "inside-a" {
		t.Fatal("the commit made inside A is not on A's branch")
	}
	if err := exec.Command("git", "--git-dir", l.bare, "cat-file", "-e", commit).Run(); err == nil {
		t.Fatal("A's new commit landed in the cache's object store")
	}

	attacks := []struct{ name, script string }{
		{"write a file in B", `echo pwned > "$B/pwned.txt"`},
		{"delete a file in B", `rm "$B/README"`},
		{"read B", `cat "$B/README"`},
		{"move B's ref", `git -C "$B" update-ref refs/heads/agent/b HEAD`},
		{"write cache objects", `echo x > "$BARE/objects/pwned"`},
		{"write cache refs", `echo ` + commit + ` > "$BARE/refs/heads/main"`},
		{"git update-ref on the cache", `git --git-dir="$BARE" update-ref refs/heads/main ` + commit},
		{"git push into the cache", `git push -q "$BARE" HEAD:refs/heads/evil`},
		{"set core.fsmonitor", `git config core.fsmonitor "touch /tmp/pwned"`},
		{"append to config", `echo "[core] hooksPath = /tmp" >> .git/config`},
		{"plant a pre-commit hook", `printf '#!/bin/sh\ntouch /tmp/pwned\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`},
		{"replace the hooks dir", `mv .git/hooks .git/hooks.old`},
		{"rewrite alternates", `echo "$B/.git/objects" > .git/objects/info/alternates`},
		{"replace alternates' directory", `mv .git/objects/info .git/objects/info.old`},
		{"replace .git", `mv .git .git.old`},
		{"remove config", `rm -f .git/config`},
		{"read the host HOME", `ls -A "$HOST_HOME" | grep -q .`},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			if res := run(a.script); res.ExitCode == 0 {
				t.Errorf("%q succeeded inside the sandbox: %s", a.script, res.Stdout)
			}
		})
	}

	checks := []struct{ what, before, after string }{
		{"B's files", beforeB, treeDigest(t, l.b)},
		{"B's refs", beforeBRefs, git(t, l.b, "for-each-ref", "--format=%(refname) %(objectname)")},
		{"the cache", beforeBare, treeDigest(t, l.bare)},
		{"the cache's refs", beforeBareRefs, git(t, l.bare, "for-each-ref", "--format=%(refname) %(objectname)")},
		{"the cache's objects", beforeBareObjects, git(t, l.bare, "count-objects", "-v")},
		{"A's .git/config", beforeConfig, readFile(t, filepath.Join(l.a, ".git", "config"))},
		{"A's hooks", beforeHooks, treeDigest(t, filepath.Join(l.a, ".git", "hooks"))},
		{"A's alternates", beforeAlternates, readFile(t, filepath.Join(l.a, ".git", "objects", "info", "alternates"))},
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
