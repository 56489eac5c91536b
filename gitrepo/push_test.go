package gitrepo

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

// TestPushProtectionsAndLease pushes over real smart HTTP: protected
// branches are refused before any request, a diverged branch is a
// conflict, force-with-lease overwrites only what we last saw, and the
// upstream is recorded.
func TestPushProtectionsAndLease(t *testing.T) {
	src, _ := sourceRepo(t)
	projectRoot := t.TempDir()
	served := filepath.Join(projectRoot, "octo", "hello.git")
	testGit(t, "", "clone", "-q", "--bare", src, served)
	testGit(t, served, "config", "http.receivepack", "true")
	token := "ghs_pushprotections0123"
	srv := smartHTTP(t, projectRoot, token)
	g, logs := newTestGit(t)
	root := t.TempDir()
	c := &Caches{Git: g, Root: root}
	ctx := testCtx(t)
	remote, err := ParseRepo(srv.URL+"/octo/hello.git", ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Ensure(ctx, remote, EnsureOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(branch string) string {
		ws := filepath.Join(WorkspacesDir(CacheDir(root, remote.ID)), WorkspaceDirName("u", branch, branch))
		if _, err := g.CreateWorkspace(ctx, res.Path, ws, WorkspaceOptions{Branch: branch, Base: "main"}); err != nil {
			t.Fatal(err)
		}
		return ws
	}
	commit := func(ws, name string) string {
		writeFile(t, filepath.Join(ws, name), name+"\n")
		cr, err := g.Commit(ctx, ws, grove.CommitRequest{Message: name}, Identity{})
		if err != nil {
			t.Fatal(err)
		}
		return cr.SHA
	}

	// Protected: main itself, and a pattern; nothing reaches the server.
	mainWS := mk("main")
	commit(mainWS, "direct.txt")
	relWS := mk("release/1.0")
	commit(relWS, "rel.txt")
	pushesBefore := gitCalls(logs, "push")
	for _, tc := range []struct {
		ws, branch string
	}{{mainWS, "main"}, {relWS, "release/1.0"}} {
		_, err := g.Push(ctx, tc.ws, remote.URL, tc.branch, PushOptions{Token: token, Protected: []string{"main", "release/*"}})
		if !errors.Is(err, grove.ErrForbidden) || !strings.Contains(err.Error(), "protected") {
			t.Errorf("push %s = %v, want ErrForbidden", tc.branch, err)
		}
	}
	if gitCalls(logs, "push") != pushesBefore {
		t.Error("a protected push ran git push")
	}
	if got := testGit(t, served, "for-each-ref", "--format=%(refname)", "refs/heads/release"); got != "" {
		t.Errorf("protected branch reached the server: %s", got)
	}

	// First push creates the branch and records the upstream.
	ws := mk("agent/edits-c1")
	first := commit(ws, "one.txt")
	pr, err := g.Push(ctx, ws, remote.URL, "agent/edits-c1", PushOptions{Token: token, Protected: []string{"main"}})
	if err != nil || !pr.CreatedBranch {
		t.Fatalf("push = %+v, %v", pr, err)
	}
	if up := testGit(t, ws, "rev-parse", "--abbrev-ref", "agent/edits-c1@{upstream}"); up != "origin/agent/edits-c1" {
		t.Errorf("upstream = %q", up)
	}
	if cfg := testGit(t, ws, "config", "--list", "--local"); strings.Contains(cfg, token) || strings.Contains(cfg, "http://") {
		t.Errorf(".git/config holds a URL or token:\n%s", cfg)
	}

	// Someone else pushes to the branch: a plain push is a conflict.
	other := filepath.Join(t.TempDir(), "other")
	testGit(t, "", "clone", "-q", "-b", "agent/edits-c1", served, other)
	writeFile(t, filepath.Join(other, "theirs.txt"), "theirs\n")
	testGit(t, other, "add", "-A")
	testGit(t, other, "commit", "-qm", "theirs")
	testGit(t, other, "push", "-q", "origin", "agent/edits-c1")
	theirs := testGit(t, served, "rev-parse", "agent/edits-c1")

	// We rewrite our branch (amend) and push.
	writeFile(t, filepath.Join(ws, "one.txt"), "one, amended\n")
	testGit(t, ws, "-c", "core.hooksPath=/dev/null", "commit", "-qa", "--amend", "-m", "one amended")
	if _, err := g.Push(ctx, ws, remote.URL, "agent/edits-c1", PushOptions{Token: token}); !errors.Is(err, grove.ErrConflict) {
		t.Fatalf("non-fast-forward push = %v, want ErrConflict", err)
	}
	// The lease is what we pushed (first), but the server has theirs: refused.
	if _, err := g.Push(ctx, ws, remote.URL, "agent/edits-c1", PushOptions{Token: token, ForceWithLease: true}); !errors.Is(err, grove.ErrConflict) {
		t.Fatalf("force-with-lease over someone else's commit = %v, want ErrConflict", err)
	}
	if got := testGit(t, served, "rev-parse", "agent/edits-c1"); got != theirs {
		t.Fatalf("their commit was overwritten")
	}
	// Once the server is back at what we last saw, the lease holds.
	testGit(t, served, "update-ref", "refs/heads/agent/edits-c1", first)
	pr, err = g.Push(ctx, ws, remote.URL, "agent/edits-c1", PushOptions{Token: token, ForceWithLease: true})
	if err != nil || pr.RemoteSHA == first {
		t.Fatalf("force-with-lease = %+v, %v", pr, err)
	}
	if got := testGit(t, served, "rev-parse", "agent/edits-c1"); got != pr.RemoteSHA {
		t.Fatalf("server at %s, want %s", got, pr.RemoteSHA)
	}
}

func TestCheckProtected(t *testing.T) {
	tests := []struct {
		branch    string
		protected []string
		refused   bool
	}{
		{"main", []string{"main"}, true},
		{"release/2", []string{"release/*"}, true},
		{"agent/x", []string{"main", "release/*"}, false},
		{"mainline", []string{"main"}, false},
		{"x", []string{"", "["}, false},
	}
	for _, tt := range tests {
		err := CheckProtected(tt.branch, tt.protected)
		if (err != nil) != tt.refused || (err != nil && !errors.Is(err, grove.ErrForbidden)) {
			t.Errorf("CheckProtected(%q, %v) = %v", tt.branch, tt.protected, err)
		}
	}
}
