package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

// base is a time with nanoseconds and a non-UTC zone, so adapters that drop
// the zone or round sub-millisecond digits badly are caught.
var base = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.FixedZone("CET", 3600))

func at(d time.Duration) time.Time { return base.Add(d) }

// newCache returns a repo cache with every field set.
func newCache(n int) *grove.RepoCache {
	return &grove.RepoCache{
		ID:            fmt.Sprintf("rc-%03d", n),
		Repo:          grove.RepoID{Host: "github.com", Owner: "acme/platform", Name: fmt.Sprintf("repo%d", n)},
		URL:           fmt.Sprintf("https://github.com/acme/platform/repo%d.git", n),
		LocalPath:     fmt.Sprintf("/var/lib/grove/acme/platform/repo%d/.bare", n),
		State:         grove.CacheReady,
		SizeBytes:     1<<40 + int64(n),
		LastFetchedAt: at(time.Minute),
		LastUsedAt:    at(2 * time.Minute),
		CreatedAt:     at(time.Duration(n) * time.Second),
		UpdatedAt:     at(3 * time.Minute),
	}
}

// newWorkspace returns an edit workspace on cache c with every field set.
func newWorkspace(c *grove.RepoCache, n int) *grove.Workspace {
	scope := fmt.Sprintf("conv-%03d", n)
	key := grove.WorkspaceKey{User: "alice", Project: "p1", Repo: c.Repo, Mode: grove.ModeEdit, Scope: scope}
	return &grove.Workspace{
		ID:          fmt.Sprintf("ws-%03d", n),
		Key:         key.String(),
		RepoCacheID: c.ID,
		Repo:        c.Repo,
		User:        key.User,
		Project:     key.Project,
		Mode:        key.Mode,
		Scope:       scope,
		BaseRef:     "main",
		Branch:      grove.DefaultBranch(key.Mode, scope),
		HeadSHA:     "0123456789abcdef0123456789abcdef01234567",
		LocalPath:   "/var/lib/grove/acme/platform/worktrees/alice_" + scope,
		State:       grove.WorkspaceReady,
		Dirty:       true,
		Pinned:      true,
		SizeBytes:   1<<33 + int64(n),
		RuntimeKind: "bwrap",
		CreatedAt:   at(time.Duration(n) * time.Second),
		UpdatedAt:   at(time.Hour),
		LastUsedAt:  at(2 * time.Hour),
	}
}

// newRuntime returns a runtime record for workspace w with every field set.
func newRuntime(w *grove.Workspace, n int) *grove.RuntimeRecord {
	return &grove.RuntimeRecord{
		ID:            fmt.Sprintf("rt-%03d", n),
		WorkspaceID:   w.ID,
		Kind:          "docker",
		BackendID:     fmt.Sprintf("container-%03d", n),
		Image:         "grove/agent-sandbox:1",
		State:         "running",
		LastStartedAt: at(time.Minute),
		LastUsedAt:    at(2 * time.Minute),
		CreatedAt:     at(time.Duration(n) * time.Second),
		UpdatedAt:     at(3 * time.Minute),
	}
}

// mustCache creates n caches and returns them.
func mustCaches(t *testing.T, s store.Store, n int) []*grove.RepoCache {
	t.Helper()
	var out []*grove.RepoCache
	for i := range n {
		c := newCache(i)
		if err := s.CreateRepoCache(context.Background(), c); err != nil {
			t.Fatalf("CreateRepoCache(%s): %v", c.ID, err)
		}
		out = append(out, c)
	}
	return out
}

func mustWorkspace(t *testing.T, s store.Store, w *grove.Workspace) *grove.Workspace {
	t.Helper()
	if err := s.CreateWorkspace(context.Background(), w); err != nil {
		t.Fatalf("CreateWorkspace(%s): %v", w.ID, err)
	}
	return w
}

// sameTime accepts a stored time when it is within a millisecond of the
// original (the precision the contract promises; Postgres keeps
// microseconds) and zero exactly when the original was zero. It then sets
// *got to want so the records can be compared with ==.
func sameTime(t *testing.T, field string, got *time.Time, want time.Time) {
	t.Helper()
	switch {
	case want.IsZero() && !got.IsZero():
		t.Errorf("%s = %v, want the zero time", field, *got)
	case !want.IsZero() && got.IsZero():
		t.Errorf("%s is zero, want %v", field, want)
	case got.Sub(want).Abs() >= time.Millisecond:
		t.Errorf("%s = %v, want %v (to the millisecond)", field, *got, want)
	}
	*got = want
}

func checkCache(t *testing.T, got, want *grove.RepoCache) {
	t.Helper()
	if got == nil {
		t.Fatalf("repo cache %s: got nil", want.ID)
	}
	g := *got
	sameTime(t, "LastFetchedAt", &g.LastFetchedAt, want.LastFetchedAt)
	sameTime(t, "LastUsedAt", &g.LastUsedAt, want.LastUsedAt)
	sameTime(t, "CreatedAt", &g.CreatedAt, want.CreatedAt)
	sameTime(t, "UpdatedAt", &g.UpdatedAt, want.UpdatedAt)
	if g != *want {
		t.Errorf("repo cache round trip:\n got %+v\nwant %+v", g, *want)
	}
}

func checkWorkspace(t *testing.T, got, want *grove.Workspace) {
	t.Helper()
	if got == nil {
		t.Fatalf("workspace %s: got nil", want.ID)
	}
	g := *got
	sameTime(t, "CreatedAt", &g.CreatedAt, want.CreatedAt)
	sameTime(t, "UpdatedAt", &g.UpdatedAt, want.UpdatedAt)
	sameTime(t, "LastUsedAt", &g.LastUsedAt, want.LastUsedAt)
	if g != *want {
		t.Errorf("workspace round trip:\n got %+v\nwant %+v", g, *want)
	}
}

func checkRuntime(t *testing.T, got, want *grove.RuntimeRecord) {
	t.Helper()
	if got == nil {
		t.Fatalf("runtime of %s: got nil", want.WorkspaceID)
	}
	g := *got
	sameTime(t, "LastStartedAt", &g.LastStartedAt, want.LastStartedAt)
	sameTime(t, "LastUsedAt", &g.LastUsedAt, want.LastUsedAt)
	sameTime(t, "CreatedAt", &g.CreatedAt, want.CreatedAt)
	sameTime(t, "UpdatedAt", &g.UpdatedAt, want.UpdatedAt)
	if g != *want {
		t.Errorf("runtime round trip:\n got %+v\nwant %+v", g, *want)
	}
}

// wantKind fails t unless err wraps kind.
func wantKind(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Errorf("%s: err = %v, want %v", what, err, kind)
	}
	// Messages reach users: the database's own words must not.
	if err != nil {
		low := strings.ToLower(err.Error())
		for _, w := range []string{"constraint", "unique", "violates", "sqlstate", "duplicate key", "foreign key"} {
			if strings.Contains(low, w) {
				t.Errorf("%s: the message shows the database's text (%q): %v", what, w, err)
			}
		}
	}
}

func mustNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func workspaceIDs(ws []*grove.Workspace) []string {
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return ids
}
