package gitrepo

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/grove-dev/grove"
)

// TestPushLocal pushes saved work from work repositories to a local bare
// repository. (Status, diff, log and commit of a workspace run in its
// runtime now: provider/execpath tests them.)
func TestPushLocal(t *testing.T) {
	src, _ := sourceRepo(t)
	c, remote, bare := cacheFor(t, src)
	g := c.Git
	ctx := testCtx(t)
	target := filepath.Join(t.TempDir(), "target.git")
	testGit(t, "", "clone", "-q", "--bare", src, target)
	root := WorkspacesDir(CacheDir(c.Root, remote.ID))

	alice := workRepo(t, g, bare, "alice")
	a := filepath.Join(root, "a")
	if _, err := g.CreateWorkspace(ctx, bare, a, WorkspaceOptions{Branch: "agent/p", Base: "main", WorkRepo: alice}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(a, "a.txt"), "from a\n")
	commitAll(t, a, "a")
	ca := saveBranch(t, g, alice, a, "agent/p")
	if _, err := g.PushWork(ctx, alice, target, "agent/never-saved", "", PushOptions{}); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("push of a branch with no saved work = %v, want ErrNotFound", err)
	}
	pr, err := g.PushWork(ctx, alice, target, "agent/p", "", PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !pr.CreatedBranch || pr.UpToDate || pr.RemoteSHA != ca || pr.Branch != "agent/p" || testGit(t, target, "rev-parse", "agent/p") != ca {
		t.Errorf("first Push = %+v", pr)
	}
	if got, _ := g.LookupRef(ctx, alice, PushedPrefix+"agent/p"); got != ca {
		t.Errorf("pushed ref = %q, want %s", got, ca)
	}
	if pr, err := g.PushWork(ctx, alice, target, "agent/p", "", PushOptions{}); err != nil || !pr.UpToDate || pr.CreatedBranch {
		t.Errorf("second Push = %+v, %v; want up to date", pr, err)
	}
	// Only the named branch travels: none of the work repository's own
	// refs, none of the cache's.
	if out := testGit(t, target, "for-each-ref", "--format=%(refname)"); out != "refs/heads/agent/p\nrefs/heads/feature\nrefs/heads/main\nrefs/tags/v1" {
		t.Errorf("target refs = %q", out)
	}

	// A second user's diverging history on the same branch is rejected,
	// and forced with a lease only when it knows what it overwrites.
	bob := workRepo(t, g, bare, "bob")
	b := filepath.Join(root, "b")
	if _, err := g.CreateWorkspace(ctx, bare, b, WorkspaceOptions{Branch: "agent/p", Base: "feature", WorkRepo: bob}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(b, "b.txt"), "from b\n")
	commitAll(t, b, "b")
	saveBranch(t, g, bob, b, "agent/p")
	if _, err := g.PushWork(ctx, bob, target, "agent/p", "", PushOptions{}); !errors.Is(err, grove.ErrConflict) {
		t.Errorf("non-fast-forward Push = %v, want ErrConflict", err)
	}
	if _, err := g.PushWork(ctx, bob, target, "agent/p", "", PushOptions{ForceWithLease: true}); !errors.Is(err, grove.ErrConflict) {
		t.Errorf("force-with-lease over an unknown remote branch = %v, want ErrConflict", err)
	}
	if testGit(t, target, "rev-parse", "agent/p") != ca {
		t.Errorf("rejected push changed the remote branch")
	}
	if got, _ := g.LookupRef(ctx, bob, PushedPrefix+"agent/p"); got != "" {
		t.Errorf("a rejected push recorded %s as pushed", got)
	}
	for _, bad := range []string{"", "-x", "https://user:pw@example.com/o/r", "https://tok@example.com/o/r", "ext::sh -c x", "file:///x y"} {
		if _, err := g.PushWork(ctx, bob, bad, "agent/p", "", PushOptions{}); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("Push to %q = %v, want ErrInvalid", bad, err)
		}
	}
	for _, bad := range []string{"a..b", "-x", "HEAD", "refs/heads/x"} {
		if _, err := g.PushWork(ctx, bob, target, bad, "", PushOptions{}); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("Push of %q = %v, want ErrInvalid", bad, err)
		}
	}
}
