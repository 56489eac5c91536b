package engine_test

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/gitrepo"
)

// TestRemoteCallerSources: the engine itself enforces the source rules for
// a ctx marked grove.WithRemoteCaller, before any git process, on every
// entry point; the in-process CLI (no mark) keeps local paths.
func TestRemoteCallerSources(t *testing.T) {
	src := sourceRepo(t)
	var lookups int
	f := newFixture(t, fixtureOpt{tune: func(c *engine.Config) {
		c.LookupHost = func(context.Context, string) ([]netip.Addr, error) {
			lookups++
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil // a rebinding answer
		}
	}})
	cli := context.Background()
	remote := grove.WithRemoteCaller(cli)
	req := grove.AcquireRequest{User: "alice", Project: "p", Repo: src, Mode: grove.ModeEdit, Conversation: "c1"}

	// The CLI may name any local repository.
	ws, _, err := f.eng.Acquire(cli, req)
	if err != nil {
		t.Fatal(err)
	}
	calls := f.gitCallCount(t)
	notAccessible := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, grove.ErrNotFound) || err.Error() != gitrepo.NotAccessibleMessage {
			t.Errorf("%s: %v, want %q", what, err, gitrepo.NotAccessibleMessage)
		}
	}
	// A network caller may not — not even to re-attach the workspace the
	// CLI made (the check comes before reuse).
	_, _, err = f.eng.Acquire(remote, req)
	notAccessible("acquire", err)
	_, err = f.eng.EnsureRepo(remote, grove.EnsureRepoRequest{Repo: src})
	notAccessible("ensure", err)
	_, err = f.eng.List(remote, grove.WorkspaceFilter{Repo: src})
	notAccessible("list filter", err)
	_, err = f.eng.EnsureRepo(remote, grove.EnsureRepoRequest{Repo: "owner/repo"})
	if !errors.Is(err, grove.ErrForbidden) || lookups != 1 {
		t.Errorf("owner/repo resolving to loopback: %v (lookups %d)", err, lookups)
	}
	_, err = f.eng.EnsureRepo(remote, grove.EnsureRepoRequest{Repo: "https://evil.example/o/r"})
	if !errors.Is(err, grove.ErrForbidden) {
		t.Errorf("unlisted host: %v", err)
	}
	// Nor push, through a workspace it owns, to where the CLI cloned from.
	_, err = f.eng.Push(remote, ws.ID, grove.PushRequest{})
	notAccessible("push", err)
	if n := f.gitCallCount(t); n != calls {
		t.Errorf("refusals ran %d git processes", n-calls)
	}

	// With the upstream's directory listed, and Grove's own root listed
	// too: the repository is accepted, Grove's caches never are.
	g := newFixture(t, fixtureOpt{tune: func(c *engine.Config) {
		c.LocalRepoRoots = []string{filepath.Dir(src), filepath.Dir(ws.LocalPath), "/"}
	}})
	ws2, _, err := g.eng.Acquire(remote, req)
	if err != nil {
		t.Fatalf("allowed root: %v", err)
	}
	c, err := g.eng.EnsureRepo(remote, grove.EnsureRepoRequest{Repo: src})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{c.LocalPath, filepath.Dir(c.LocalPath), ws2.LocalPath, g.root} {
		_, err := g.eng.EnsureRepo(remote, grove.EnsureRepoRequest{Repo: p})
		notAccessible(p, err)
	}
}
