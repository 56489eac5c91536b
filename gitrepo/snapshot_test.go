package gitrepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSnapshotSavesEverythingAndTouchesNothing(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	gitT(t, "", "init", "-q", "-b", "main", src)
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(src, ".gitignore"), []byte("*.log\n"), 0o644)
	gitT(t, src, "add", "-A")
	gitT(t, src, "-c", "user.name=t", "-c", "user.email=t@x.invalid", "commit", "-qm", "one")
	bare := filepath.Join(root, "cache.git")
	gitT(t, "", "clone", "-q", "--bare", src, bare)
	g := &Git{}
	ws := filepath.Join(root, "ws")
	if _, err := g.CreateWorkspace(ctx, bare, ws, WorkspaceOptions{Branch: "agent/x"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("changed\n"), 0o644)     // unstaged
	os.WriteFile(filepath.Join(ws, "new.txt"), []byte("untracked\n"), 0o644) // untracked
	os.WriteFile(filepath.Join(ws, "noise.log"), []byte("ignored\n"), 0o644) // ignored
	before := gitT(t, ws, "status", "--porcelain=v2", "--branch")
	head := gitT(t, ws, "rev-parse", "HEAD")

	sha, err := g.Snapshot(ctx, bare, ws, "ws_0123456789abcdef", "grove: saved before eviction")
	if err != nil {
		t.Fatal(err)
	}
	if after := gitT(t, ws, "status", "--porcelain=v2", "--branch"); after != before {
		t.Fatalf("snapshot changed the workspace's state:\n%s\n---\n%s", before, after)
	}
	if got := gitT(t, ws, "rev-parse", "HEAD"); got != head {
		t.Fatalf("snapshot moved HEAD")
	}
	if got := gitT(t, "", "--git-dir="+bare, "rev-parse", SavedPrefix+"ws_0123456789abcdef"); got != sha {
		t.Fatalf("cache ref at %s, want %s", got, sha)
	}
	if got := gitT(t, "", "--git-dir="+bare, "show", sha+":a.txt"); got != "changed" {
		t.Fatalf("unstaged change not saved: %q", got)
	}
	if got := gitT(t, "", "--git-dir="+bare, "show", sha+":new.txt"); got != "untracked" {
		t.Fatalf("untracked file not saved: %q", got)
	}
	files := gitT(t, "", "--git-dir="+bare, "ls-tree", "--name-only", sha)
	if strings.Contains(files, "noise.log") {
		t.Fatal("an ignored file was saved")
	}
	if parent := gitT(t, "", "--git-dir="+bare, "rev-parse", sha+"^"); parent != head {
		t.Fatalf("snapshot parent %s, want HEAD %s", parent, head)
	}
	for _, bad := range []string{"", "a/b", "..", "-x", "a b"} {
		if _, err := g.Snapshot(ctx, bare, ws, bad, "m"); err == nil {
			t.Errorf("snapshot name %q accepted", bad)
		}
	}
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestDefaultBranchReadsTheCacheHEAD(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ head, want string }{
		{"ref: refs/heads/main\n", "main"},
		{"ref: refs/heads/release/2.x\n", "release/2.x"},
		{"0123456789abcdef0123456789abcdef01234567\n", ""},
	} {
		os.WriteFile(filepath.Join(dir, "HEAD"), []byte(tc.head), 0o644)
		if got, err := DefaultBranch(dir); err != nil || got != tc.want {
			t.Errorf("HEAD %q: got %q %v, want %q", tc.head, got, err, tc.want)
		}
	}
	if _, err := DefaultBranch(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing cache gave no error")
	}
}
