package gitrepo

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

// TestPushProtectionsAndLease pushes from a work repository over real
// smart HTTP: protected branches are refused before any request, a
// diverged branch is a conflict, and force-with-lease overwrites only what
// Grove last pushed from the branch (refs/grove/pushed/<branch>), else
// what the caller passes as the lease.
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
	work := workRepo(t, g, res.Path, "u")
	mk := func(branch string) string {
		ws := filepath.Join(WorkspacesDir(CacheDir(root, remote.ID)), WorkspaceDirName("u", branch, branch))
		if _, err := g.CreateWorkspace(ctx, res.Path, ws, WorkspaceOptions{Branch: branch, Base: "main", WorkRepo: work}); err != nil {
			t.Fatal(err)
		}
		return ws
	}
	commit := func(ws, name string) string {
		writeFile(t, filepath.Join(ws, name), name+"\n")
		commitAll(t, ws, name)
		return saveBranch(t, g, work, ws, testGit(t, ws, "symbolic-ref", "--short", "HEAD"))
	}

	// Protected: main itself, and a pattern; nothing reaches the server
	// although both have saved work that would push.
	commit(mk("main"), "direct.txt")
	commit(mk("release/1.0"), "rel.txt")
	pushesBefore := gitCalls(logs, "push")
	for _, branch := range []string{"main", "release/1.0"} {
		_, err := g.PushWork(ctx, work, remote.URL, branch, "", PushOptions{Token: token, Protected: []string{"main", "release/*"}})
		if !errors.Is(err, grove.ErrForbidden) || !strings.Contains(err.Error(), "protected") {
			t.Errorf("push %s = %v, want ErrForbidden", branch, err)
		}
	}
	if gitCalls(logs, "push") != pushesBefore {
		t.Error("a protected push ran git push")
	}
	if got := testGit(t, served, "for-each-ref", "--format=%(refname)", "refs/heads/release"); got != "" {
		t.Errorf("protected branch reached the server: %s", got)
	}
	// Control: unprotected, the same saved work does push.
	if _, err := g.PushWork(ctx, work, remote.URL, "release/1.0", "", PushOptions{Token: token, Protected: []string{"main"}}); err != nil {
		t.Fatalf("control push of release/1.0: %v", err)
	}

	// First push creates the branch and records what was pushed.
	ws := mk("agent/edits-c1")
	first := commit(ws, "one.txt")
	pr, err := g.PushWork(ctx, work, remote.URL, "agent/edits-c1", "", PushOptions{Token: token, Protected: []string{"main"}})
	if err != nil || !pr.CreatedBranch || pr.RemoteSHA != first {
		t.Fatalf("push = %+v, %v", pr, err)
	}
	if got, _ := g.LookupRef(ctx, work, PushedPrefix+"agent/edits-c1"); got != first {
		t.Errorf("%sagent/edits-c1 = %q, want %s", PushedPrefix, got, first)
	}
	for _, dir := range []string{work, filepath.Join(ws, ".git")} {
		if cfg := testGit(t, "", "--git-dir="+dir, "config", "--list", "--local"); strings.Contains(cfg, token) || strings.Contains(cfg, "http://") {
			t.Errorf("%s/config holds a URL or token:\n%s", dir, cfg)
		}
	}

	// Someone else pushes to the branch: a plain push is a conflict.
	other := filepath.Join(t.TempDir(), "other")
	testGit(t, "", "clone", "-q", "-b", "agent/edits-c1", served, other)
	writeFile(t, filepath.Join(other, "theirs.txt"), "theirs\n")
	testGit(t, other, "add", "-A")
	testGit(t, other, "commit", "-qm", "theirs")
	testGit(t, other, "push", "-q", "origin", "agent/edits-c1")
	theirs := testGit(t, served, "rev-parse", "agent/edits-c1")

	// We rewrite our branch (amend) and save it again.
	writeFile(t, filepath.Join(ws, "one.txt"), "one, amended\n")
	testGit(t, ws, "-c", "core.hooksPath=/dev/null", "commit", "-qa", "--amend", "-m", "one amended")
	amended := saveBranch(t, g, work, ws, "agent/edits-c1")
	if _, err := g.PushWork(ctx, work, remote.URL, "agent/edits-c1", theirs, PushOptions{Token: token}); !errors.Is(err, grove.ErrConflict) {
		t.Fatalf("non-fast-forward push = %v, want ErrConflict", err)
	}
	// The lease is what we pushed (first), not the caller's lease (here
	// theirs, as a freshly fetched cache would say): refused.
	if _, err := g.PushWork(ctx, work, remote.URL, "agent/edits-c1", theirs, PushOptions{Token: token, ForceWithLease: true}); !errors.Is(err, grove.ErrConflict) {
		t.Fatalf("force-with-lease over someone else's commit = %v, want ErrConflict", err)
	}
	if got := testGit(t, served, "rev-parse", "agent/edits-c1"); got != theirs {
		t.Fatalf("their commit was overwritten")
	}
	if got, _ := g.LookupRef(ctx, work, PushedPrefix+"agent/edits-c1"); got != first {
		t.Errorf("a refused push moved the pushed ref to %s", got)
	}
	// Once the server is back at what we last pushed, the lease holds
	// (whatever the caller's lease says).
	testGit(t, served, "update-ref", "refs/heads/agent/edits-c1", first)
	pr, err = g.PushWork(ctx, work, remote.URL, "agent/edits-c1", theirs, PushOptions{Token: token, ForceWithLease: true})
	if err != nil || pr.RemoteSHA != amended || pr.CreatedBranch || pr.UpToDate {
		t.Fatalf("force-with-lease = %+v, %v", pr, err)
	}
	if got := testGit(t, served, "rev-parse", "agent/edits-c1"); got != amended {
		t.Fatalf("server at %s, want %s", got, amended)
	}
	if got, _ := g.LookupRef(ctx, work, PushedPrefix+"agent/edits-c1"); got != amended {
		t.Errorf("pushed ref = %s, want %s", got, amended)
	}

	// Another user who never pushed this branch has no pushed ref: the
	// caller's lease decides, and "" means the branch must not exist.
	bob := workRepo(t, g, res.Path, "bob")
	bws := filepath.Join(WorkspacesDir(CacheDir(root, remote.ID)), WorkspaceDirName("bob", "c1", "agent/edits-c1"))
	if _, err := g.CreateWorkspace(ctx, res.Path, bws, WorkspaceOptions{Branch: "agent/edits-c1", Base: "main", WorkRepo: bob}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(bws, "bob.txt"), "bob\n")
	commitAll(t, bws, "bob")
	bobTip := saveBranch(t, g, bob, bws, "agent/edits-c1")
	for _, tc := range []struct {
		name, lease string
		ok          bool
	}{
		{"no lease: must not exist", "", false},
		{"stale lease", first, false},
		{"current lease", amended, true},
	} {
		pr, err := g.PushWork(ctx, bob, remote.URL, "agent/edits-c1", tc.lease, PushOptions{Token: token, ForceWithLease: true})
		if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, grove.ErrConflict)) {
			t.Errorf("%s: push = %+v, %v", tc.name, pr, err)
		}
		want := amended
		if tc.ok {
			want = bobTip
		}
		if got := testGit(t, served, "rev-parse", "agent/edits-c1"); got != want {
			t.Errorf("%s: server at %s, want %s", tc.name, got, want)
		}
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
