package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove"
)

func TestCreateWorkspaceBranchSources(t *testing.T) {
	src, mainHead := sourceRepo(t)
	c, remote, bare := cacheFor(t, src)
	g := c.Git
	ctx := testCtx(t)
	wsRoot := WorkspacesDir(CacheDir(c.Root, remote.ID))
	featureHead := testGit(t, src, "rev-parse", "feature")
	v1 := testGit(t, src, "rev-parse", "v1^{commit}")

	tests := []struct {
		name     string
		opt      WorkspaceOptions
		wantHead string
		wantRef  string // symbolic HEAD; "" when detached
	}{
		{"new branch at base", WorkspaceOptions{Branch: "agent/edits-c1", Base: "main"}, mainHead, "refs/heads/agent/edits-c1"},
		{"new branch at cache HEAD", WorkspaceOptions{Branch: "agent/task-t1"}, mainHead, "refs/heads/agent/task-t1"},
		{"existing cache branch is not reset to base", WorkspaceOptions{Branch: "feature", Base: "v1"}, featureHead, "refs/heads/feature"},
		{"detached analysis at tag", WorkspaceOptions{Base: "v1"}, v1, ""},
		{"detached analysis at sha", WorkspaceOptions{Base: featureHead}, featureHead, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(wsRoot, fmt.Sprintf("ws%d", i))
			head, err := g.CreateWorkspace(ctx, bare, dir, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			if head != tt.wantHead || testGit(t, dir, "rev-parse", "HEAD") != tt.wantHead {
				t.Errorf("head = %s, want %s", head, tt.wantHead)
			}
			sym, _ := runQuiet(dir, "symbolic-ref", "-q", "HEAD")
			if sym != tt.wantRef {
				t.Errorf("HEAD -> %q, want %q", sym, tt.wantRef)
			}
			if st := testGit(t, dir, "status", "--porcelain"); st != "" {
				t.Errorf("fresh workspace is dirty:\n%s", st)
			}
			if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
				t.Errorf("not checked out: %v", err)
			}
			alt, err := os.ReadFile(filepath.Join(dir, ".git", "objects", "info", "alternates"))
			if err != nil || strings.TrimSpace(string(alt)) != CacheObjects(bare) {
				t.Errorf("alternates = %q, %v; want %s", alt, err, CacheObjects(bare))
			}
			for _, p := range Protected(dir) {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("protected path missing: %v", err)
				}
			}
			// Only the workspace's own branch exists locally.
			heads := testGit(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/")
			if heads != tt.wantRef {
				t.Errorf("local branches = %q, want %q", heads, tt.wantRef)
			}
			if origin := testGit(t, dir, "config", "remote.origin.url"); origin != bare {
				t.Errorf("origin = %q, want the cache %q", origin, bare)
			}
		})
	}
	if leftovers, _ := filepath.Glob(filepath.Join(wsRoot, ".ws-tmp-*")); len(leftovers) != 0 {
		t.Errorf("temporary workspaces left behind: %v", leftovers)
	}

	// Bad input changes nothing on disk.
	for _, opt := range []WorkspaceOptions{{Branch: "-x"}, {Branch: "a..b"}, {Branch: "main\n"}, {Base: "@{"}, {Branch: "x", Base: "no-such-ref"}} {
		dir := filepath.Join(wsRoot, "bad")
		_, err := g.CreateWorkspace(ctx, bare, dir, opt)
		if !errors.Is(err, grove.ErrInvalid) && !errors.Is(err, grove.ErrNotFound) {
			t.Errorf("CreateWorkspace(%+v) = %v, want ErrInvalid or ErrNotFound", opt, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("CreateWorkspace(%+v) left %s behind", opt, dir)
		}
	}
	if _, err := g.CreateWorkspace(ctx, bare, filepath.Join(wsRoot, "ws0"), WorkspaceOptions{Branch: "other"}); !errors.Is(err, grove.ErrConflict) {
		t.Errorf("CreateWorkspace over an existing dir = %v, want ErrConflict", err)
	}
}

// runQuiet runs git and returns trimmed stdout, ignoring the exit status.
func runQuiet(dir string, args ...string) (string, error) {
	g := &Git{}
	out, err := g.run(testCtxBackground(), call{args: args, dir: dir, env: workEnv(dir)})
	return strings.TrimSpace(string(out)), err
}

func TestReattachAfterRemove(t *testing.T) {
	src, mainHead := sourceRepo(t)
	c, remote, bare := cacheFor(t, src)
	g := c.Git
	ctx := testCtx(t)
	work := workRepo(t, g, bare, "alice")
	dir := filepath.Join(WorkspacesDir(CacheDir(c.Root, remote.ID)), WorkspaceDirName("alice", "c1", "agent/edits-c1"))
	opt := WorkspaceOptions{Branch: "agent/edits-c1", Base: "main", WorkRepo: work}
	if _, err := g.CreateWorkspace(ctx, bare, dir, opt); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "work.txt"), "agent work\n")
	sha := commitAll(t, dir, "agent work")
	// The workspace's objects and refs are its own: neither the cache nor
	// the work repository has them before they are saved.
	if _, err := g.ResolveCommit(ctx, bare, sha); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("workspace commit leaked into the cache: %v", err)
	}
	if g.HasCommit(ctx, work, sha) {
		t.Fatal("workspace commit in the work repository before it was saved")
	}
	saveBranch(t, g, work, dir, "agent/edits-c1")
	if err := g.RemoveWorkspace(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace still there: %v", err)
	}
	if err := g.RemoveWorkspace(ctx, dir); err != nil {
		t.Errorf("second RemoveWorkspace = %v, want nil", err)
	}
	head, err := g.CreateWorkspace(ctx, bare, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if head != sha {
		t.Errorf("re-attached at %s, want the saved commit %s (base was %s)", head, sha, mainHead)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "work.txt")); err != nil || string(b) != "agent work\n" {
		t.Errorf("work.txt after re-attach = %q, %v", b, err)
	}
	// The saved work lives in the work repository only: the cache (the
	// remote's mirror, shared by all users) never saw it.
	if _, err := g.ResolveCommit(ctx, bare, "refs/heads/agent/edits-c1"); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("agent branch appeared under refs/heads of the cache: %v", err)
	}
	if _, err := g.ResolveCommit(ctx, bare, sha); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("saved commit reached the cache: %v", err)
	}
	// Without the work repository the same branch starts afresh at base.
	if head, err := g.CreateWorkspace(ctx, bare, dir+"-nowork", WorkspaceOptions{Branch: "agent/edits-c1", Base: "main"}); err != nil || head != mainHead {
		t.Errorf("workspace without the work repository at %s, %v; want base %s", head, err, mainHead)
	}
}

func TestHooksNeverRunOnHost(t *testing.T) {
	src, _ := sourceRepo(t)
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := "#!/bin/sh\necho \"$0\" >> " + marker + "\n"
	names := []string{"pre-commit", "post-commit", "post-checkout", "commit-msg", "prepare-commit-msg",
		"reference-transaction", "pre-push", "pre-receive", "post-receive", "update", "post-update", "pre-auto-gc"}
	plant := func(hooksDir string) {
		for _, n := range names {
			p := filepath.Join(hooksDir, n)
			writeFile(t, p, hook)
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	plant(filepath.Join(src, ".git", "hooks"))
	c, remote, bare := cacheFor(t, src)
	plant(filepath.Join(bare, "hooks"))
	pushTarget := filepath.Join(t.TempDir(), "target.git")
	testGit(t, "", "init", "-q", "--bare", pushTarget)
	plant(filepath.Join(pushTarget, "hooks"))

	g := c.Git
	ctx := testCtx(t)
	work := workRepo(t, g, bare, "u")
	plant(filepath.Join(work, "hooks"))
	testGit(t, "", "--git-dir="+work, "config", "core.hooksPath", filepath.Join(work, "hooks"))
	dir := filepath.Join(WorkspacesDir(CacheDir(c.Root, remote.ID)), "hooks")
	if _, err := g.CreateWorkspace(ctx, bare, dir, WorkspaceOptions{Branch: "agent/hooks", Base: "main", WorkRepo: work}); err != nil {
		t.Fatal(err)
	}
	plant(filepath.Join(dir, ".git", "hooks"))
	testGit(t, dir, "config", "core.hooksPath", filepath.Join(dir, ".git", "hooks"))

	writeFile(t, filepath.Join(dir, "x.txt"), "x\n")
	commitAll(t, dir, "x") // the fixture's own commit runs no hook
	saveBranch(t, g, work, dir, "agent/hooks")
	if _, err := g.PushWork(ctx, work, pushTarget, "agent/hooks", "", PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateWorkspace(ctx, bare, dir+"2", WorkspaceOptions{Branch: "agent/hooks", WorkRepo: work}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		b, _ := os.ReadFile(marker)
		t.Fatalf("a repository hook ran on the host:\n%s", b)
	}

	// The planted hooks are real: plain git runs them.
	writeFile(t, filepath.Join(dir, "y.txt"), "y\n")
	testGit(t, dir, "add", "-A")
	testGit(t, dir, "commit", "-qm", "y")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("control: plain git commit did not run the planted hook: %v", err)
	}
}

func TestConcurrentWorkspaces(t *testing.T) {
	src, _ := sourceRepo(t)
	c, remote, bare := cacheFor(t, src)
	ctx := testCtx(t)
	root := WorkspacesDir(CacheDir(c.Root, remote.ID))
	const n = 32
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			branch := fmt.Sprintf("agent/task-%d", i)
			_, errs[i] = c.Git.CreateWorkspace(ctx, bare, filepath.Join(root, WorkspaceDirName("u", fmt.Sprint(i), branch)), WorkspaceOptions{Branch: branch, Base: "main"})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("workspace %d: %v", i, err)
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != n {
		t.Errorf("%d entries under %s (want %d): %v", len(entries), root, n, err)
	}
}

func TestStaleLocksAndDiskUsage(t *testing.T) {
	src, _ := sourceRepo(t)
	c, remote, bare := cacheFor(t, src)
	dir := filepath.Join(WorkspacesDir(CacheDir(c.Root, remote.ID)), "locks")
	if _, err := c.Git.CreateWorkspace(testCtx(t), bare, dir, WorkspaceOptions{Branch: "b"}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	stale := []string{
		filepath.Join(dir, ".git", "index.lock"),
		filepath.Join(dir, ".git", "HEAD.lock"),
		filepath.Join(dir, ".git", "refs", "heads", "b.lock"),
	}
	for _, p := range stale {
		writeFile(t, p, "")
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, ".git", "config.lock"), "") // fresh: git may hold it right now
	got := StaleLocks(dir)
	if strings.Join(got, ",") != strings.Join(stale, ",") {
		t.Errorf("StaleLocks = %v, want %v", got, stale)
	}
	writeFile(t, filepath.Join(bare, "packed-refs.lock"), "")
	os.Chtimes(filepath.Join(bare, "packed-refs.lock"), old, old)
	if got := StaleLocks(bare); len(got) != 1 {
		t.Errorf("StaleLocks(bare) = %v, want packed-refs.lock", got)
	}
	if n := DiskUsage(dir); n <= 0 || n > 10<<20 {
		t.Errorf("DiskUsage = %d", n)
	}
}

// A tree that lists one subtree many times, many levels deep, is a few
// hundred bytes of objects and millions of files on checkout: the host
// refuses it before writing anything.
func TestCreateWorkspaceRefusesATreeBomb(t *testing.T) {
	requireGit(t)
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "bomb")
	testGit(t, "", "init", "-q", "-b", "main", src)
	blob := strings.TrimSpace(testGitIn(t, src, "x\n", "hash-object", "-w", "--stdin"))
	var listing strings.Builder
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&listing, "100644 blob %s\tf%d\n", blob, i)
	}
	tree := strings.TrimSpace(testGitIn(t, src, listing.String(), "mktree"))
	for level := 0; level < 3; level++ { // 8 files, then ×8 per level: 4096 files
		listing.Reset()
		for i := 0; i < 8; i++ {
			fmt.Fprintf(&listing, "040000 tree %s\td%d\n", tree, i)
		}
		tree = strings.TrimSpace(testGitIn(t, src, listing.String(), "mktree"))
	}
	commit := strings.TrimSpace(testGitIn(t, src, "bomb\n", "commit-tree", tree))
	testGit(t, src, "update-ref", "refs/heads/main", commit)
	bare := filepath.Join(t.TempDir(), "cache", ".bare")
	testGit(t, "", "clone", "-q", "--bare", src, bare)

	g := &Git{}
	ws := filepath.Join(filepath.Dir(bare), "worktrees", "w")
	_, err := g.CreateWorkspace(ctx, bare, ws, WorkspaceOptions{Branch: "agent/x", MaxFiles: 1000})
	if !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("checkout of a 4096-file tree under a 1000-file bound: %v", err)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("a workspace was left behind: %v", err)
	}
	// Within the bound the same tree checks out.
	if _, err := g.CreateWorkspace(ctx, bare, ws, WorkspaceOptions{Branch: "agent/x", MaxFiles: 5000}); err != nil {
		t.Fatal(err)
	}
}
