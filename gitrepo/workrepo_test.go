package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

// workRepo ensures user's work repository on the cache at bare.
func workRepo(t testing.TB, g *Git, bare, user string) string {
	t.Helper()
	w := WorkRepoPath(bare, user)
	if err := g.EnsureWorkRepo(testCtx(t), bare, w); err != nil {
		t.Fatal(err)
	}
	return w
}

// bundleOf writes a git bundle of ref in the repository at dir, without
// the history of exclude, as the runtime would (execpath.Bundle), and
// returns its path.
func bundleOf(t testing.TB, dir, ref string, exclude ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "work.bundle")
	args := []string{"bundle", "create", "-q", p, ref}
	for _, x := range exclude {
		args = append(args, "^"+x)
	}
	testGit(t, dir, args...)
	return p
}

// commitAll commits everything in the workspace with host git: a test
// fixture standing in for the agent (Grove itself commits only inside the
// runtime).
func commitAll(t testing.TB, ws, msg string) string {
	t.Helper()
	testGit(t, ws, "add", "-A")
	testGit(t, ws, "-c", "core.hooksPath=/dev/null", "commit", "-qm", msg)
	return testGit(t, ws, "rev-parse", "HEAD")
}

// saveBranch carries the workspace's branch into the work repository the
// way the engine does: a bundle, received with every object checked.
func saveBranch(t testing.TB, g *Git, work, ws, branch string) string {
	t.Helper()
	ref := "refs/heads/" + branch
	tip := testGit(t, ws, "rev-parse", ref)
	if err := g.ReceiveBundle(testCtx(t), work, bundleOf(t, ws, ref), ref, SavedBranchPrefix+branch, tip); err != nil {
		t.Fatal(err)
	}
	return tip
}

func TestEnsureWorkRepo(t *testing.T) {
	src, mainHead := sourceRepo(t)
	c, remote, bare := cacheFor(t, src)
	g := c.Git
	ctx := testCtx(t)
	w := WorkRepoPath(bare, "alice")
	if filepath.Dir(w) != WorkReposDir(CacheDir(c.Root, remote.ID)) {
		t.Errorf("work repository %s is not under %s", w, WorkReposDir(CacheDir(c.Root, remote.ID)))
	}
	if sha, err := g.LookupRef(ctx, w, SavedBranchPrefix+"x"); err != nil || sha != "" {
		t.Errorf("LookupRef before the repository exists = %q, %v", sha, err)
	}
	if err := g.EnsureWorkRepo(ctx, bare, w); err != nil {
		t.Fatal(err)
	}
	// It borrows the cache's objects rather than copying them.
	alt, err := os.ReadFile(filepath.Join(w, "objects", "info", "alternates"))
	if err != nil || strings.TrimSpace(string(alt)) != CacheObjects(bare) {
		t.Errorf("alternates = %q, %v; want %s", alt, err, CacheObjects(bare))
	}
	if !g.HasCommit(ctx, w, mainHead) {
		t.Error("the work repository does not see the cache's commits")
	}
	if n := testGit(t, "", "--git-dir="+w, "count-objects"); !strings.HasPrefix(n, "0 objects") {
		t.Errorf("a new work repository holds objects of its own: %s", n)
	}
	if packs, _ := filepath.Glob(filepath.Join(w, "objects", "pack", "*")); len(packs) != 0 {
		t.Errorf("a new work repository holds packs: %v", packs)
	}
	if hooks, _ := filepath.Glob(filepath.Join(w, "hooks", "*")); len(hooks) != 0 {
		t.Errorf("template hooks in the work repository: %v", hooks)
	}
	if sha, err := g.LookupRef(ctx, w, SavedBranchPrefix+"x"); err != nil || sha != "" {
		t.Errorf("LookupRef of a missing ref = %q, %v", sha, err)
	}

	// Idempotent: a second call keeps what the first repository holds.
	if err := g.SetRef(ctx, w, SavedBranchPrefix+"x", mainHead); err != nil {
		t.Fatal(err)
	}
	if err := g.EnsureWorkRepo(ctx, bare, w); err != nil {
		t.Fatal(err)
	}
	if sha, err := g.LookupRef(ctx, w, SavedBranchPrefix+"x"); err != nil || sha != mainHead {
		t.Errorf("ref after a second EnsureWorkRepo = %q, %v; want %s", sha, err, mainHead)
	}
	if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(w), ".work-tmp-*")); len(tmp) != 0 {
		t.Errorf("temporary work repositories left behind: %v", tmp)
	}

	for _, tc := range []struct{ ref, sha string }{
		{"refs/grove/../x", mainHead}, {"-x", mainHead}, {SavedBranchPrefix + "x", "main"}, {SavedBranchPrefix + "x", mainHead[:10]},
	} {
		if err := g.SetRef(ctx, w, tc.ref, tc.sha); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("SetRef(%q, %q) = %v, want ErrInvalid", tc.ref, tc.sha, err)
		}
	}
	for _, sha := range []string{"main", "HEAD", "", strings.Repeat("0", 40)} {
		if g.HasCommit(ctx, w, sha) {
			t.Errorf("HasCommit(%q) = true", sha)
		}
	}
}

func TestWorkRepoPathPerUser(t *testing.T) {
	bare := filepath.Join("/repos", "github.com", "o", "r", ".bare")
	long := strings.Repeat("x", 60)
	tests := []struct{ a, b string }{
		{"a/b", "a_b"},
		{"a b", "a_b"},
		{"..", "__"},
		{"ü", "_"},
		{long + "1", long + "2"},
		{"alice", "Alice"},
	}
	for _, tt := range tests {
		pa, pb := WorkRepoPath(bare, tt.a), WorkRepoPath(bare, tt.b)
		if pa == pb {
			t.Errorf("users %q and %q share %s", tt.a, tt.b, pa)
		}
		for _, p := range []string{pa, pb} {
			if filepath.Dir(p) != WorkReposDir(filepath.Dir(bare)) || !strings.HasSuffix(p, ".git") || strings.HasPrefix(filepath.Base(p), ".") {
				t.Errorf("work repository path %s is not a plain name under %s", p, WorkReposDir(filepath.Dir(bare)))
			}
		}
		if WorkRepoPath(bare, tt.a) != pa {
			t.Errorf("WorkRepoPath(%q) is not stable", tt.a)
		}
	}
}

// badCommit writes, in the repository at dir, a commit git's fsck refuses
// (an author line without a closing '>') on top of parent, points
// refs/heads/bad at it and returns it.
func badCommit(t *testing.T, dir, parent string) string {
	t.Helper()
	tree := testGit(t, dir, "rev-parse", parent+"^{tree}")
	body := filepath.Join(t.TempDir(), "commit")
	writeFile(t, body, fmt.Sprintf("tree %s\nparent %s\nauthor Mallory <mallory@example.com 1700000000 +0000\ncommitter Mallory <mallory@example.com> 1700000000 +0000\n\nbad\n", tree, parent))
	sha := testGit(t, dir, "hash-object", "-t", "commit", "--literally", "-w", body)
	testGit(t, dir, "update-ref", "refs/heads/bad", sha)
	return sha
}

func TestReceiveBundle(t *testing.T) {
	src, mainHead := sourceRepo(t)
	c, remote, bare := cacheFor(t, src)
	g := c.Git
	ctx := testCtx(t)
	wsRoot := WorkspacesDir(CacheDir(c.Root, remote.ID))

	// The agent's work: two commits on agent/x, the second on top of the
	// first, and a malformed commit on bad.
	ws := filepath.Join(wsRoot, "w")
	if _, err := g.CreateWorkspace(ctx, bare, ws, WorkspaceOptions{Branch: "agent/x", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "one.txt"), "one\n")
	one := commitAll(t, ws, "one")
	writeFile(t, filepath.Join(ws, "two.txt"), "two\n")
	two := commitAll(t, ws, "two")
	bad := badCommit(t, ws, mainHead)
	ref := "refs/heads/agent/x"
	dst := SavedBranchPrefix + "agent/x"

	whole := bundleOf(t, ws, ref, mainHead)
	onlyTwo := bundleOf(t, ws, ref, one) // needs one, which the cache lacks
	badBundle := bundleOf(t, ws, "refs/heads/bad", mainHead)
	testGit(t, ws, "bundle", "verify", "-q", badBundle) // well-formed as a bundle
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(t.TempDir(), "truncated.bundle")
	writeFile(t, truncated, string(data[:len(data)-len(data)/3]))
	garbage := filepath.Join(t.TempDir(), "garbage.bundle")
	writeFile(t, garbage, "# v2 git bundle\n"+two+" "+ref+"\n\nPACK not really\n")
	notBundle := filepath.Join(t.TempDir(), "not.bundle")
	writeFile(t, notBundle, "hello\n")

	tests := []struct {
		name       string
		setup      func(t *testing.T, work string) // before the receive
		bundle     string
		src, dst   string
		want       string
		ok         bool
		wantKind   error  // when set, errors.Is must hold
		mustLackOf string // an object that must not have landed
	}{
		{name: "branch", bundle: whole, src: ref, dst: dst, want: two, ok: true},
		{name: "prerequisite held by the work repository", setup: func(t *testing.T, work string) {
			testGit(t, ws, "update-ref", "refs/heads/one", one)
			if err := g.ReceiveBundle(ctx, work, bundleOf(t, ws, "refs/heads/one", mainHead), "refs/heads/one", SavedBranchPrefix+"one", one); err != nil {
				t.Fatal(err)
			}
		}, bundle: onlyTwo, src: ref, dst: dst, want: two, ok: true},
		{name: "tip is not want", bundle: whole, src: ref, dst: dst, want: one, wantKind: grove.ErrInvalid},
		{name: "tip is not want, dst kept", setup: func(t *testing.T, work string) {
			if err := g.SetRef(ctx, work, dst, mainHead); err != nil {
				t.Fatal(err)
			}
		}, bundle: whole, src: ref, dst: dst, want: one, wantKind: grove.ErrInvalid},
		{name: "src not in the bundle", bundle: whole, src: "refs/heads/other", dst: dst, want: two},
		{name: "missing prerequisite", bundle: onlyTwo, src: ref, dst: dst, want: two, mustLackOf: two},
		{name: "truncated bundle", bundle: truncated, src: ref, dst: dst, want: two, mustLackOf: two},
		{name: "garbage pack", bundle: garbage, src: ref, dst: dst, want: two},
		{name: "not a bundle", bundle: notBundle, src: ref, dst: dst, want: two},
		{name: "missing file", bundle: filepath.Join(t.TempDir(), "nope"), src: ref, dst: dst, want: two},
		{name: "malformed commit", bundle: badBundle, src: "refs/heads/bad", dst: SavedBranchPrefix + "bad", want: bad, mustLackOf: bad},
		{name: "want not a sha", bundle: whole, src: ref, dst: dst, want: "agent/x", wantKind: grove.ErrInvalid},
		{name: "bad dst", bundle: whole, src: ref, dst: "refs/grove/../x", want: two, wantKind: grove.ErrInvalid},
		{name: "bad src", bundle: whole, src: "-x", dst: dst, want: two, wantKind: grove.ErrInvalid},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := workRepo(t, g, bare, fmt.Sprintf("user%d", i))
			if tt.setup != nil {
				tt.setup(t, work)
			}
			before, err := g.LookupRef(ctx, work, tt.dst)
			if err != nil && tt.ok {
				t.Fatal(err)
			}
			err = g.ReceiveBundle(ctx, work, tt.bundle, tt.src, tt.dst, tt.want)
			if tt.ok {
				if err != nil {
					t.Fatalf("ReceiveBundle = %v", err)
				}
				if got, err := g.LookupRef(ctx, work, tt.dst); err != nil || got != tt.want {
					t.Errorf("%s = %s, %v; want %s", tt.dst, got, err, tt.want)
				}
				if got := testGit(t, "", "--git-dir="+work, "show", tt.want+":two.txt"); got != "two" {
					t.Errorf("received tree: two.txt = %q", got)
				}
			} else {
				if err == nil {
					t.Fatal("ReceiveBundle succeeded")
				}
				if tt.wantKind != nil && !errors.Is(err, tt.wantKind) {
					t.Errorf("ReceiveBundle = %v, want %v", err, tt.wantKind)
				}
				if after, _ := g.LookupRef(ctx, work, tt.dst); after != before {
					t.Errorf("a refused bundle moved %s from %q to %q", tt.dst, before, after)
				}
			}
			if tt.mustLackOf != "" && g.HasCommit(ctx, work, tt.mustLackOf) {
				t.Errorf("commit %s of a refused bundle landed in the work repository", tt.mustLackOf)
			}
			if refs := testGit(t, "", "--git-dir="+work, "for-each-ref", "--format=%(refname)", "refs/grove/incoming/"); refs != "" {
				t.Errorf("temporary refs left behind: %s", refs)
			}
			if tmp, _ := filepath.Glob(filepath.Join(work, "objects", "pack", "tmp_*")); len(tmp) != 0 {
				t.Errorf("temporary packs left behind: %v", tmp)
			}
			// The shared cache never receives a user's work.
			if _, err := g.ResolveCommit(ctx, bare, two); !errors.Is(err, grove.ErrNotFound) {
				t.Errorf("work reached the cache: %v", err)
			}
		})
	}
}

// TestWorkspacesReattachOnlyTheirUsersWork: a workspace re-attaches its
// branch from its own user's work repository ahead of the cache's copy,
// and never from another user's, even for the same branch name.
func TestWorkspacesReattachOnlyTheirUsersWork(t *testing.T) {
	src, _ := sourceRepo(t)
	c, remote, bare := cacheFor(t, src)
	g := c.Git
	ctx := testCtx(t)
	wsRoot := WorkspacesDir(CacheDir(c.Root, remote.ID))
	featureHead := testGit(t, src, "rev-parse", "feature")

	// alice and bob each save their own work on feature.
	saved := map[string]string{}
	for _, user := range []string{"alice", "bob"} {
		work := workRepo(t, g, bare, user)
		dir := filepath.Join(wsRoot, WorkspaceDirName(user, "s", "feature"))
		if head, err := g.CreateWorkspace(ctx, bare, dir, WorkspaceOptions{Branch: "feature", WorkRepo: work}); err != nil || head != featureHead {
			t.Fatalf("%s's first workspace = %s, %v; want the cache's %s", user, head, err, featureHead)
		}
		writeFile(t, filepath.Join(dir, "owner.txt"), user+"\n")
		saved[user] = commitAll(t, dir, user+"'s work")
		if got := saveBranch(t, g, work, dir, "feature"); got != saved[user] {
			t.Fatalf("saved %s, want %s", got, saved[user])
		}
		if err := g.RemoveWorkspace(ctx, dir); err != nil {
			t.Fatal(err)
		}
	}
	if saved["alice"] == saved["bob"] {
		t.Fatal("fixture: alice and bob made the same commit")
	}

	tests := []struct {
		user      string
		withWork  bool
		wantHead  string
		wantOwner string // owner.txt; "" when absent
		foreign   string // a commit the workspace must not be able to read
	}{
		{"alice", true, saved["alice"], "alice", saved["bob"]},
		{"bob", true, saved["bob"], "bob", saved["alice"]},
		{"carol", true, featureHead, "", saved["alice"]},
		{"dave", false, featureHead, "", saved["bob"]},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			opt := WorkspaceOptions{Branch: "feature", Base: "main"}
			if tt.withWork {
				opt.WorkRepo = workRepo(t, g, bare, tt.user)
			}
			dir := filepath.Join(wsRoot, WorkspaceDirName(tt.user, "again", "feature"))
			head, err := g.CreateWorkspace(ctx, bare, dir, opt)
			if err != nil {
				t.Fatal(err)
			}
			if head != tt.wantHead || testGit(t, dir, "rev-parse", "HEAD") != tt.wantHead {
				t.Errorf("head = %s, want %s", head, tt.wantHead)
			}
			if sym := testGit(t, dir, "symbolic-ref", "HEAD"); sym != "refs/heads/feature" {
				t.Errorf("HEAD -> %s", sym)
			}
			b, err := os.ReadFile(filepath.Join(dir, "owner.txt"))
			if got := strings.TrimSpace(string(b)); got != tt.wantOwner || (tt.wantOwner == "" && !errors.Is(err, os.ErrNotExist)) {
				t.Errorf("owner.txt = %q, %v; want %q", got, err, tt.wantOwner)
			}
			altb, err := os.ReadFile(filepath.Join(dir, ".git", "objects", "info", "alternates"))
			if err != nil {
				t.Fatal(err)
			}
			alt := strings.TrimSpace(string(altb))
			wantAlt := CacheObjects(bare)
			if tt.withWork {
				wantAlt += "\n" + WorkRepoObjects(WorkRepoPath(bare, tt.user))
			}
			if alt != wantAlt {
				t.Errorf("alternates = %q, want %q", alt, wantAlt)
			}
			if _, err := runQuiet(dir, "cat-file", "-e", tt.foreign+"^{commit}"); err == nil {
				t.Errorf("%s's workspace can read another user's commit %s", tt.user, tt.foreign)
			}
			if testGit(t, dir, "status", "--porcelain") != "" {
				t.Error("re-attached workspace is dirty")
			}
		})
	}
}
