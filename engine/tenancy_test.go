package engine_test

import (
	"errors"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/driver/bwrap"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/platform/github/githubtest"
)

// sameAnswer fails unless err is exactly what a nonexistent repository
// got: the same kind and, the repository's name aside, the same message.
func sameAnswer(t *testing.T, what string, err, nonexistent error, name, missing string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want the nonexistent-repository answer", what)
	}
	if grove.Code(err) != grove.Code(nonexistent) {
		t.Fatalf("%s: %s (%v), want %s like a nonexistent repository (%v)", what, grove.Code(err), err, grove.Code(nonexistent), nonexistent)
	}
	if got, want := strings.ReplaceAll(err.Error(), name, missing), nonexistent.Error(); got != want {
		t.Fatalf("%s: message %q differs from the nonexistent repository's %q", what, got, want)
	}
}

// TestTenancy runs three users against one private repository on a
// token-checking smart-HTTP server (git http-backend behind the GitHub
// Enterprise look-alike), with workspaces in bwrap sandboxes.
func TestTenancy(t *testing.T) {
	testenv.Require(t, "bwrap", bwrap.Available(), "bwrap not installed or user namespaces unavailable")
	drv, err := bwrap.New(bwrap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fake := githubtest.NewEnterprise(t, 42)
	const aliceTok, bobTok, carolTok = "ghp_alice_0123456789", "ghp_bob_0123456789", "ghp_carol_0123456789"
	fake.SetToken(aliceTok, true)
	fake.SetToken(carolTok, true)
	served := fake.ServeRepo(t, "octo", "private", sourceRepo(t))
	base := run(t, "", "git", "--git-dir", served, "rev-parse", "refs/heads/main")

	clk := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	f := newFixture(t, fixtureOpt{drv: drv, now: clk.now, tune: func(c *engine.Config) { c.BaseURL = fake.URL }})
	eng := f.eng
	edit := func(user, tok, conv string) grove.AcquireRequest {
		return grove.AcquireRequest{Repo: "octo/private", User: user, Project: "p", Mode: grove.ModeEdit, Conversation: conv, Token: tok}
	}

	// Alice fills the shared cache with her token and commits work she
	// does not push.
	alice, created, err := eng.Acquire(bg, edit("alice", aliceTok, "c1"))
	if err != nil || !created {
		t.Fatalf("alice acquire: %v created=%v", err, created)
	}
	if err := eng.WriteFile(bg, alice.ID, "alice-secret.txt", []byte("ALICE-UNPUSHED\n")); err != nil {
		t.Fatal(err)
	}
	cr, err := eng.Commit(bg, alice.ID, grove.CommitRequest{Message: "alice's unpushed work"})
	if err != nil {
		t.Fatal(err)
	}
	aliceSHA := cr.SHA
	if err := eng.Release(bg, alice.ID); err != nil {
		t.Fatal(err)
	}

	// The answer for a repository that does not exist, with no token and
	// with a valid one.
	_, _, nonexistent := eng.Acquire(bg, grove.AcquireRequest{Repo: "octo/missing", User: "bob", Project: "p", Mode: grove.ModeEdit, Conversation: "c1"})
	if !errors.Is(nonexistent, grove.ErrNotFound) {
		t.Fatalf("nonexistent repository: %v, want ErrNotFound", nonexistent)
	}
	_, _, withToken := eng.Acquire(bg, grove.AcquireRequest{Repo: "octo/missing", User: "alice", Project: "p", Mode: grove.ModeEdit, Conversation: "c1", Token: aliceTok})
	sameAnswer(t, "nonexistent repository with a valid token", withToken, nonexistent, "missing", "missing")

	t.Run("denied users get the nonexistent-repository answer", func(t *testing.T) {
		for _, tc := range []struct{ name, tok string }{{"no token", ""}, {"wrong token", "ghp_wrong_0123456789"}, {"alice's token misspelt", aliceTok + "x"}} {
			_, _, err := eng.Acquire(bg, edit("bob", tc.tok, "c1"))
			sameAnswer(t, "bob acquire, "+tc.name, err, nonexistent, "private", "missing")
			_, _, err = eng.Acquire(bg, grove.AcquireRequest{Repo: "octo/private", User: "bob", Project: "p", Mode: grove.ModeAnalysis, Token: tc.tok})
			sameAnswer(t, "bob analysis acquire, "+tc.name, err, nonexistent, "private", "missing")
			_, err = eng.EnsureRepo(bg, grove.EnsureRepoRequest{Repo: "octo/private", User: "bob", Token: tc.tok})
			sameAnswer(t, "bob EnsureRepo, "+tc.name, err, nonexistent, "private", "missing")
		}
		list, _ := eng.List(bg, grove.WorkspaceFilter{User: "bob"})
		if len(list) != 0 {
			t.Fatalf("bob has workspaces after being denied: %+v", list)
		}
	})

	// Bob's own token can read the repository (Carol's too): each user on
	// the same conversation, and Carol on Alice's branch name under another
	// conversation, gets a workspace of their own at the base commit.
	fake.SetToken(bobTok, true)
	bob, created, err := eng.Acquire(bg, edit("bob", bobTok, "c1"))
	if err != nil || !created {
		t.Fatalf("bob acquire with his own token: %v created=%v", err, created)
	}
	carolReq := edit("carol", carolTok, "c9")
	carolReq.Branch = alice.Branch
	carol, created, err := eng.Acquire(bg, carolReq)
	if err != nil || !created {
		t.Fatalf("carol acquire on alice's branch name: %v created=%v", err, created)
	}
	t.Run("same conversation and branch name: separate workspaces at the base", func(t *testing.T) {
		seen := map[string]string{}
		for _, ws := range []*grove.Workspace{alice, bob, carol} {
			if ws.Branch != alice.Branch {
				t.Errorf("%s: branch %q, want %q", ws.User, ws.Branch, alice.Branch)
			}
			if other, ok := seen[ws.LocalPath]; ok {
				t.Errorf("%s and %s share directory %s", ws.User, other, ws.LocalPath)
			}
			seen[ws.LocalPath] = ws.User
		}
		if bob.ID == alice.ID || carol.ID == alice.ID || bob.ID == carol.ID {
			t.Fatal("two users share a workspace id")
		}
		for _, ws := range []*grove.Workspace{bob, carol} {
			if ws.HeadSHA != base {
				t.Errorf("%s starts at %s, want the base %s (never alice's %s)", ws.User, ws.HeadSHA, base, aliceSHA)
			}
			if _, err := eng.ReadFile(bg, ws.ID, "alice-secret.txt", 0); !errors.Is(err, grove.ErrNotFound) {
				t.Errorf("%s reads alice's unpushed file: %v", ws.User, err)
			}
		}
	})

	t.Run("bob's sandbox cannot enumerate alice's unpushed objects", func(t *testing.T) {
		res, err := eng.Exec(bg, bob.ID, grove.ExecRequest{Shell: "git cat-file --batch-all-objects --batch-check; echo; git cat-file -t " + aliceSHA + " || echo ALICE-COMMIT-ABSENT"})
		if err != nil {
			t.Fatal(err)
		}
		out := string(res.Stdout)
		if !strings.Contains(out, base) {
			t.Fatalf("the listing does not even show the base commit; the check proves nothing:\n%s\n%s", out, res.Stderr)
		}
		if strings.Contains(out, aliceSHA) || !strings.Contains(out, "ALICE-COMMIT-ABSENT") {
			t.Fatalf("bob's sandbox sees alice's unpushed commit %s:\n%s", aliceSHA, out)
		}
	})

	t.Run("another user's workspace is not found, and cannot be moved", func(t *testing.T) {
		asBob := auth.Scope(eng, auth.Principal{User: "bob"})
		unknown := "ws_0123456789abcdef"
		_, errUnknown := asBob.Get(bg, unknown)
		if !errors.Is(errUnknown, grove.ErrNotFound) {
			t.Fatalf("unknown id: %v", errUnknown)
		}
		for name, call := range map[string]func() error{
			"get":     func() error { _, err := asBob.Get(bg, alice.ID); return err },
			"release": func() error { return asBob.Release(bg, alice.ID) },
			"destroy": func() error { return asBob.Destroy(bg, alice.ID) },
			"commit": func() error {
				_, err := asBob.Commit(bg, alice.ID, grove.CommitRequest{Message: "x"})
				return err
			},
			"push":  func() error { _, err := asBob.Push(bg, alice.ID, grove.PushRequest{Token: bobTok}); return err },
			"write": func() error { return asBob.WriteFile(bg, alice.ID, "x", []byte("x")) },
		} {
			err := call()
			if grove.Code(err) != grove.Code(errUnknown) || strings.ReplaceAll(err.Error(), alice.ID, unknown) != errUnknown.Error() {
				t.Errorf("bob %s alice's workspace: %v; want exactly the unknown-id answer %v", name, err, errUnknown)
			}
		}
		list, err := asBob.List(bg, grove.WorkspaceFilter{User: "alice"})
		if err != nil || len(list) != 1 || list[0].ID != bob.ID {
			t.Errorf("bob lists %+v (%v), want only his own workspace", list, err)
		}
		if _, err := eng.Get(bg, alice.ID); err != nil {
			t.Fatalf("alice's workspace is gone: %v", err)
		}
	})

	t.Run("a user's second workspace on a branch they hold is a conflict", func(t *testing.T) {
		req := edit("bob", bobTok, "c2")
		req.Branch = bob.Branch
		_, _, err := eng.Acquire(bg, req)
		if !errors.Is(err, grove.ErrConflict) {
			t.Fatalf("bob's second workspace on his own branch: %v, want ErrConflict", err)
		}
	})

	t.Run("alice's own work keeps working", func(t *testing.T) {
		before := f.gitCallCount(t)
		again, created, err := eng.Acquire(bg, edit("alice", "", "c1"))
		if err != nil || created || again.ID != alice.ID {
			t.Fatalf("alice re-acquire: %v created=%v", err, created)
		}
		if n := f.gitCallCount(t) - before; n != 0 {
			t.Fatalf("re-acquire within the access TTL ran %d git processes, want 0", n)
		}
		if err := eng.Destroy(bg, alice.ID); err != nil {
			t.Fatal(err)
		}
		restored, created, err := eng.Acquire(bg, edit("alice", aliceTok, "c1"))
		if err != nil || !created {
			t.Fatalf("alice re-acquire after destroy: %v created=%v", err, created)
		}
		if restored.HeadSHA != aliceSHA {
			t.Fatalf("alice's branch restored at %s, want her commit %s", restored.HeadSHA, aliceSHA)
		}
		if b, err := eng.ReadFile(bg, restored.ID, "alice-secret.txt", 0); err != nil || string(b) != "ALICE-UNPUSHED\n" {
			t.Fatalf("alice's file after restore: %q %v", b, err)
		}
		res, err := eng.Push(bg, restored.ID, grove.PushRequest{Token: aliceTok})
		if err != nil {
			t.Fatal(err)
		}
		if got := run(t, "", "git", "--git-dir", served, "rev-parse", "refs/heads/"+alice.Branch); got != aliceSHA || res.RemoteSHA != aliceSHA {
			t.Fatalf("remote branch at %s (result %s), want %s", got, res.RemoteSHA, aliceSHA)
		}
		alice = restored

		// Bob meets Alice only at the remote: his own commit on the same
		// branch name is refused there as not a fast-forward.
		if err := eng.WriteFile(bg, bob.ID, "bob.txt", []byte("bob\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Commit(bg, bob.ID, grove.CommitRequest{Message: "bob's work"}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Push(bg, bob.ID, grove.PushRequest{Token: bobTok}); !errors.Is(err, grove.ErrConflict) {
			t.Fatalf("bob's push onto alice's pushed branch: %v, want ErrConflict from the remote", err)
		}
	})

	t.Run("access is checked again after the TTL", func(t *testing.T) {
		// Within the TTL, alice's remembered success serves even a call
		// with no token; after it, a revoked token stops new work.
		clk.advance(engine.DefaultAccessCheckTTL - time.Second)
		if _, _, err := eng.Acquire(bg, edit("alice", "", "c1")); err != nil {
			t.Fatalf("re-acquire within the TTL: %v", err)
		}
		fake.SetToken(aliceTok, false)
		clk.advance(2 * time.Second)
		before := f.gitCallCount(t)
		_, _, err := eng.Acquire(bg, edit("alice", aliceTok, "c1"))
		sameAnswer(t, "alice re-acquire with a revoked token", err, nonexistent, "private", "missing")
		if n := f.gitCallCount(t) - before; n != 1 {
			t.Errorf("the re-check ran %d git processes, want 1 (ls-remote)", n)
		}
		// Her work stays hers: a restored token reaches it again.
		fake.SetToken(aliceTok, true)
		ws, created, err := eng.Acquire(bg, edit("alice", aliceTok, "c1"))
		if err != nil || created || ws.ID != alice.ID {
			t.Fatalf("alice re-acquire with her token back: %v created=%v", err, created)
		}
	})
}

// TestAccessCheckPublicRepository: a repository anyone may read needs no
// token, for every user, and is remembered per user.
func TestAccessCheckPublicRepository(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	served := filepath.Join(root, "octo", "open.git")
	run(t, "", "git", "clone", "-q", "--bare", sourceRepo(t), served)
	srv := httptest.NewServer(&cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Env: []string{
		"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}})
	defer srv.Close()

	f := newFixture(t)
	for _, user := range []string{"alice", "bob", "carol"} {
		ws, created, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: srv.URL + "/octo/open.git", User: user, Project: "p", Mode: grove.ModeEdit, Conversation: "c1"})
		if err != nil || !created {
			t.Fatalf("%s acquire of a public repository with no token: %v created=%v", user, err, created)
		}
		before := f.gitCallCount(t)
		if _, created, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: srv.URL + "/octo/open.git", User: user, Project: "p", Mode: grove.ModeEdit, Conversation: "c1"}); err != nil || created {
			t.Fatalf("%s re-acquire: %v created=%v", user, err, created)
		}
		if n := f.gitCallCount(t) - before; n != 0 {
			t.Fatalf("%s re-acquire ran %d git processes, want 0", user, n)
		}
		_ = ws
	}
	if _, err := f.eng.EnsureRepo(bg, grove.EnsureRepoRequest{Repo: srv.URL + "/octo/open.git", User: "dave"}); err != nil {
		t.Fatalf("EnsureRepo of a public repository with no token: %v", err)
	}
}
