package gitrepo

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
)

func TestEnsureClonesOnceAndRespectsFreshness(t *testing.T) {
	src, mainHead := sourceRepo(t)
	g, logs := newTestGit(t)
	remote, err := ParseRepo(src, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := &Caches{Git: g, Root: t.TempDir(), Freshness: 10 * time.Minute, Now: func() time.Time { return now }}
	ctx := testCtx(t)

	res, err := c.Ensure(ctx, remote, EnsureOptions{Ref: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cloned || res.Fetched || res.Path != BarePath(CacheDir(c.Root, remote.ID)) {
		t.Fatalf("first Ensure = %+v", res)
	}
	if sha, err := g.ResolveCommit(ctx, res.Path, "main"); err != nil || sha != mainHead {
		t.Fatalf("ResolveCommit(main) = %q, %v; want %s", sha, err, mainHead)
	}
	for _, ref := range []string{"feature", "v1"} {
		if _, err := g.ResolveCommit(ctx, res.Path, ref); err != nil {
			t.Errorf("clone lacks %s: %v", ref, err)
		}
	}
	if refspecs := testGit(t, res.Path, "config", "--get-all", "remote.origin.fetch"); !strings.Contains(refspecs, "+refs/heads/*:refs/heads/*") || !strings.Contains(refspecs, "+refs/tags/*:refs/tags/*") {
		t.Errorf("fetch refspecs = %q", refspecs)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(res.Path), ".bare-tmp-*")); len(leftovers) != 0 {
		t.Errorf("temporary clone left behind: %v", leftovers)
	}

	// Within the freshness window, with the ref present: no git fetch.
	now = now.Add(5 * time.Minute)
	for _, opt := range []EnsureOptions{{}, {Ref: "feature"}, {Ref: "v1"}, {Ref: mainHead}} {
		res, err := c.Ensure(ctx, remote, opt)
		if err != nil || res.Cloned || res.Fetched {
			t.Errorf("fresh Ensure(%+v) = %+v, %v; want no clone, no fetch", opt, res, err)
		}
	}
	if n := gitCalls(logs, "fetch"); n != 0 {
		t.Fatalf("%d fetches within the freshness window\n%s", n, logs)
	}

	// A missing ref triggers a fetch of exactly that branch, tag or sha.
	testGit(t, src, "branch", "late", "main")
	testGit(t, src, "tag", "t2", "feature")
	testGit(t, src, "checkout", "-q", "--detach", "main")
	writeFile(t, filepath.Join(src, "pr.txt"), "pr\n")
	testGit(t, src, "add", "-A")
	testGit(t, src, "commit", "-qm", "pull request")
	prSHA := testGit(t, src, "rev-parse", "HEAD")
	testGit(t, src, "update-ref", "refs/pull/1/head", prSHA)
	testGit(t, src, "checkout", "-q", "main")

	for _, tt := range []struct{ ref, refspec string }{
		{"late", "+refs/heads/late:refs/heads/late"},
		{"t2", "+refs/tags/t2:refs/tags/t2"},
		{prSHA, prSHA + ":refs/grove/commits/" + prSHA},
	} {
		before := gitCalls(logs, "fetch")
		res, err := c.Ensure(ctx, remote, EnsureOptions{Ref: tt.ref})
		if err != nil || !res.Fetched {
			t.Fatalf("Ensure(%s) = %+v, %v; want a fetch", tt.ref, res, err)
		}
		if !strings.Contains(logs.String(), tt.refspec) {
			t.Errorf("Ensure(%s) did not fetch the exact refspec %s\n%s", tt.ref, tt.refspec, logs)
		}
		if gitCalls(logs, "fetch") == before {
			t.Errorf("Ensure(%s): no fetch logged", tt.ref)
		}
		if _, err := g.ResolveCommit(ctx, res.Path, tt.ref); err != nil {
			t.Errorf("after Ensure(%s): %v", tt.ref, err)
		}
	}
	// The tag-only fetch must not have dragged in the unrelated branch.
	if _, err := g.ResolveCommit(ctx, res.Path, "refs/pull/1/head"); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("refs/pull/1/head present although only its sha was asked for: %v", err)
	}

	// A ref that exists nowhere.
	if _, err := c.Ensure(ctx, remote, EnsureOptions{Ref: "no-such-branch"}); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("Ensure(no-such-branch) = %v, want ErrNotFound", err)
	}
	if _, err := c.Ensure(ctx, remote, EnsureOptions{Ref: "a..b"}); !errors.Is(err, grove.ErrInvalid) {
		t.Errorf("Ensure(a..b) = %v, want ErrInvalid", err)
	}

	// Stale, or asked to refresh: fetch everything.
	testGit(t, src, "branch", "later", "main")
	for _, opt := range []EnsureOptions{{Refresh: true}, {LastFetched: now.Add(-time.Hour)}} {
		now = now.Add(time.Hour)
		res, err := c.Ensure(ctx, remote, opt)
		if err != nil || !res.Fetched || !res.FetchedAt.Equal(now) {
			t.Errorf("Ensure(%+v) = %+v, %v; want a fetch at %v", opt, res, err, now)
		}
	}
	if _, err := g.ResolveCommit(ctx, res.Path, "later"); err != nil {
		t.Errorf("refresh did not bring the new branch: %v", err)
	}

	if err := c.Remove(ctx, res.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(res.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cache still there after Remove: %v", err)
	}
	if err := c.Remove(ctx, filepath.Dir(src)); !errors.Is(err, grove.ErrInvalid) {
		t.Errorf("Remove of a non-cache = %v, want ErrInvalid", err)
	}
}

func TestEnsureMissingRemote(t *testing.T) {
	src, _ := sourceRepo(t)
	remote, err := ParseRepo(src, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	g, _ := newTestGit(t)
	c := &Caches{Git: g, Root: t.TempDir()}
	_, err = c.Ensure(testCtx(t), remote, EnsureOptions{})
	if !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("Ensure of a vanished repo = %v, want ErrNotFound", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(c.Path(remote))); len(entries) != 0 {
		t.Errorf("failed clone left %d entries behind", len(entries))
	}
}

// A clone larger than the server's limit is stopped, fails with
// grove.ErrResourceLimit and leaves nothing behind.
func TestCloneSizeLimit(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(t.TempDir(), "big")
	testGit(t, "", "init", "-q", "-b", "main", src)
	// Incompressible content, so the pack really is big.
	data := make([]byte, 8<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "blob.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	testGit(t, src, "add", "-A")
	testGit(t, src, "commit", "-qm", "big")
	caches := &Caches{Git: &Git{}, Root: root, MaxBytes: 1 << 20}
	remote, err := ParseRepo(src, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = caches.Ensure(context.Background(), remote, EnsureOptions{})
	if !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("a clone over the limit: %v", err)
	}
	if _, err := os.Stat(caches.Path(remote)); !os.IsNotExist(err) {
		t.Fatalf("a cache was left behind: %v", err)
	}
}
