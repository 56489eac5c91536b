package gitrepo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

func TestWorkspaceGitOps(t *testing.T) {
	src, mainHead := sourceRepo(t)
	c, remote, bare := cacheFor(t, src)
	g := c.Git
	g.Identity = Identity{Name: "Configured Bot", Email: "bot@example.com"}
	ctx := testCtx(t)
	dir := filepath.Join(WorkspacesDir(CacheDir(c.Root, remote.ID)), "ops")
	if _, err := g.CreateWorkspace(ctx, bare, dir, WorkspaceOptions{Branch: "agent/ops", Base: "main"}); err != nil {
		t.Fatal(err)
	}

	writeFile(t, filepath.Join(dir, "README.md"), "hello\nworld\n")
	writeFile(t, filepath.Join(dir, "new file.txt"), "n\n")
	if err := os.Remove(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	st, err := g.Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Branch != "agent/ops" || st.Head != mainHead || st.Clean || len(st.Unstaged) != 2 || len(st.Untracked) != 1 || st.Untracked[0] != "new file.txt" {
		t.Errorf("Status = %+v", st)
	}
	if dirty, err := g.Dirty(ctx, dir); err != nil || !dirty {
		t.Errorf("Dirty = %v, %v; want true", dirty, err)
	}

	d, err := g.Diff(ctx, dir, grove.DiffRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 2 || !strings.Contains(d.Patch, "+world") || d.Truncated {
		t.Errorf("Diff = %+v", d)
	}
	if d, err := g.Diff(ctx, dir, grove.DiffRequest{MaxBytes: 10}); err != nil || !d.Truncated || len(d.Patch) != 10 {
		t.Errorf("capped Diff = %q truncated=%v, %v", d.Patch, d.Truncated, err)
	}
	if d, err := g.Diff(ctx, dir, grove.DiffRequest{Paths: []string{"README.md"}, StatOnly: true}); err != nil || len(d.Files) != 1 || d.Files[0].Additions != 1 || d.Patch != "" {
		t.Errorf("path Diff = %+v, %v", d, err)
	}
	for _, req := range []grove.DiffRequest{{BaseRef: "-x"}, {Paths: []string{"../x"}}, {Paths: []string{"/etc/passwd"}}} {
		if _, err := g.Diff(ctx, dir, req); err == nil {
			t.Errorf("Diff(%+v) accepted bad input", req)
		}
	}

	// Commit only the named path; the rest stays uncommitted.
	res, err := g.Commit(ctx, dir, grove.CommitRequest{Message: "readme", Paths: []string{"README.md"}, AuthorName: "Alice", AuthorEmail: "alice@example.com"}, Identity{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesChanged != 1 || res.Insertions != 1 || len(res.SHA) != 40 {
		t.Errorf("Commit = %+v", res)
	}
	if who := testGit(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>"); who != "Alice <alice@example.com>|Configured Bot <bot@example.com>" {
		t.Errorf("author|committer = %q", who)
	}
	// Everything else.
	res2, err := g.Commit(ctx, dir, grove.CommitRequest{Message: "rest"}, Identity{Name: "Call", Email: "call@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if res2.FilesChanged != 2 || res2.Deletions != 1 {
		t.Errorf("Commit(all) = %+v", res2)
	}
	if who := testGit(t, dir, "log", "-1", "--format=%cn"); who != "Call" {
		t.Errorf("committer = %q, want the per-call identity", who)
	}
	if _, err := g.Commit(ctx, dir, grove.CommitRequest{Message: "again"}, Identity{}); !errors.Is(err, grove.ErrNothingToCommit) {
		t.Errorf("empty Commit = %v, want ErrNothingToCommit", err)
	}
	for _, req := range []grove.CommitRequest{{Message: ""}, {Message: "x", Paths: []string{"../../etc/passwd"}}, {Message: "x", AuthorName: "a\nb"}} {
		if _, err := g.Commit(ctx, dir, req, Identity{}); err == nil {
			t.Errorf("Commit(%+v) accepted bad input", req)
		}
	}

	log, err := g.Log(ctx, dir, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 4 || log[0].SHA != res2.SHA || log[1].SHA != res.SHA || log[1].Author != "Alice" || log[0].Subject != "rest" {
		t.Errorf("Log = %+v", log)
	}
	if log, err := g.Log(ctx, dir, 10, "README.md"); err != nil || len(log) != 2 {
		t.Errorf("Log(README.md) = %+v, %v", log, err)
	}
	if st, err := g.Status(ctx, dir); err != nil || !st.Clean {
		t.Errorf("Status after commits = %+v, %v", st, err)
	}
}

func TestPushLocal(t *testing.T) {
	src, _ := sourceRepo(t)
	c, remote, bare := cacheFor(t, src)
	g := c.Git
	ctx := testCtx(t)
	target := filepath.Join(t.TempDir(), "target.git")
	testGit(t, "", "clone", "-q", "--bare", src, target)
	root := WorkspacesDir(CacheDir(c.Root, remote.ID))

	a := filepath.Join(root, "a")
	if _, err := g.CreateWorkspace(ctx, bare, a, WorkspaceOptions{Branch: "agent/p", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(a, "a.txt"), "from a\n")
	ca, err := g.Commit(ctx, a, grove.CommitRequest{Message: "a"}, Identity{})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := g.Push(ctx, a, target, "agent/p", PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !pr.CreatedBranch || pr.UpToDate || pr.RemoteSHA != ca.SHA || testGit(t, target, "rev-parse", "agent/p") != ca.SHA {
		t.Errorf("first Push = %+v", pr)
	}
	if pr, err := g.Push(ctx, a, target, "agent/p", PushOptions{}); err != nil || !pr.UpToDate || pr.CreatedBranch {
		t.Errorf("second Push = %+v, %v; want up to date", pr, err)
	}
	// Only the named branch travels.
	if out := testGit(t, target, "for-each-ref", "--format=%(refname)", "refs/heads/"); out != "refs/heads/agent/p\nrefs/heads/feature\nrefs/heads/main" {
		t.Errorf("target branches = %q", out)
	}

	// A second workspace with diverging history is rejected, then forced
	// with a lease only when it knows what it overwrites.
	b := filepath.Join(root, "b")
	if _, err := g.CreateWorkspace(ctx, bare, b, WorkspaceOptions{Branch: "agent/p", Base: "feature"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(b, "b.txt"), "from b\n")
	if _, err := g.Commit(ctx, b, grove.CommitRequest{Message: "b"}, Identity{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Push(ctx, b, target, "agent/p", PushOptions{}); !errors.Is(err, grove.ErrConflict) {
		t.Errorf("non-fast-forward Push = %v, want ErrConflict", err)
	}
	if _, err := g.Push(ctx, b, target, "agent/p", PushOptions{ForceWithLease: true}); !errors.Is(err, grove.ErrConflict) {
		t.Errorf("force-with-lease over an unknown remote branch = %v, want ErrConflict", err)
	}
	if testGit(t, target, "rev-parse", "agent/p") != ca.SHA {
		t.Errorf("rejected push changed the remote branch")
	}
	for _, bad := range []string{"-x", "https://user:pw@example.com/o/r", "https://tok@example.com/o/r", "ext::sh -c x"} {
		if _, err := g.Push(ctx, b, bad, "agent/p", PushOptions{}); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("Push to %q = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := g.Push(ctx, b, target, "a..b", PushOptions{}); !errors.Is(err, grove.ErrInvalid) {
		t.Errorf("Push of a..b = %v, want ErrInvalid", err)
	}
}
