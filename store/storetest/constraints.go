package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

// testUniqueKeys: a create that takes a used key fails with ErrConflict
// and leaves the store as it was.
func testUniqueKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	cs := mustCaches(t, s, 2)
	w := mustWorkspace(t, s, newWorkspace(cs[0], 1))

	tests := []struct {
		name string
		call func() error
	}{
		{"repo cache id", func() error {
			c := newCache(7)
			c.ID = cs[0].ID
			return s.CreateRepoCache(ctx, c)
		}},
		{"repo cache key", func() error {
			c := newCache(7)
			c.Repo = cs[0].Repo
			return s.CreateRepoCache(ctx, c)
		}},
		{"workspace id", func() error {
			x := newWorkspace(cs[1], 7)
			x.ID = w.ID
			return s.CreateWorkspace(ctx, x)
		}},
		{"workspace key", func() error {
			x := newWorkspace(cs[0], 7)
			x.Key = w.Key
			return s.CreateWorkspace(ctx, x)
		}},
		{"branch of one repo cache", func() error {
			x := newWorkspace(cs[0], 7)
			x.Branch = w.Branch
			return s.CreateWorkspace(ctx, x)
		}},
	}
	for _, tc := range tests {
		wantKind(t, tc.name, tc.call(), grove.ErrConflict)
	}

	caches, err := s.ListRepoCaches(ctx)
	mustNoErr(t, "ListRepoCaches", err)
	if len(caches) != 2 {
		t.Errorf("ListRepoCaches: %d records after conflicts, want 2", len(caches))
	}
	for i, c := range cs {
		got, err := s.GetRepoCache(ctx, c.ID)
		mustNoErr(t, "GetRepoCache", err)
		checkCache(t, got, cs[i])
	}
	list, err := s.ListWorkspaces(ctx, store.WorkspaceFilter{})
	mustNoErr(t, "ListWorkspaces", err)
	if ids := workspaceIDs(list); !slices.Equal(ids, []string{w.ID}) {
		t.Errorf("ListWorkspaces after conflicts = %v, want [%s]", ids, w.ID)
	}
	got, err := s.GetWorkspace(ctx, w.ID)
	mustNoErr(t, "GetWorkspace", err)
	checkWorkspace(t, got, w)

	// The same branch name on another repo's cache is a different branch.
	x := newWorkspace(cs[1], 8)
	x.Branch = w.Branch
	mustNoErr(t, "CreateWorkspace: same branch, other repo cache", s.CreateWorkspace(ctx, x))
}

// testBranchPerUser: a branch is unique per (repo cache, user). Another
// user may check out the same branch name of the same repo; the same user
// may not, whichever of the two users asks again.
func testBranchPerUser(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := mustCaches(t, s, 1)[0]
	alice := mustWorkspace(t, s, newWorkspace(c, 1))

	as := func(user string, n int) *grove.Workspace {
		x := newWorkspace(c, n)
		key := grove.WorkspaceKey{User: user, Project: x.Project, Repo: c.Repo, Mode: x.Mode, Scope: x.Scope}
		x.Key, x.User, x.Branch = key.String(), user, alice.Branch
		x.LocalPath += "-" + user
		return x
	}
	bob := as("bob", 2)
	mustNoErr(t, "CreateWorkspace: bob on alice's branch name", s.CreateWorkspace(ctx, bob))
	carol := as("carol", 3)
	mustNoErr(t, "CreateWorkspace: carol on the same branch name", s.CreateWorkspace(ctx, carol))

	wantKind(t, "CreateWorkspace: alice's branch again", s.CreateWorkspace(ctx, as("alice", 4)), grove.ErrConflict)
	wantKind(t, "CreateWorkspace: bob's branch again", s.CreateWorkspace(ctx, as("bob", 5)), grove.ErrConflict)

	// An update cannot move a workspace onto a branch its own user holds,
	// but may take a branch name only other users hold.
	carol2 := as("carol", 6)
	carol2.Branch = "agent/carol-other"
	mustWorkspace(t, s, carol2)
	moved := *carol2
	moved.Branch = alice.Branch
	wantKind(t, "UpdateWorkspace: carol onto her own taken branch", s.UpdateWorkspace(ctx, &moved), grove.ErrConflict)
	dave := as("dave", 7)
	dave.Branch = "agent/dave"
	mustWorkspace(t, s, dave)
	moved = *dave
	moved.Branch = alice.Branch
	mustNoErr(t, "UpdateWorkspace: dave onto a branch name only others hold", s.UpdateWorkspace(ctx, &moved))

	list, err := s.ListWorkspaces(ctx, store.WorkspaceFilter{RepoCacheID: c.ID})
	mustNoErr(t, "ListWorkspaces", err)
	if len(list) != 5 {
		t.Fatalf("ListWorkspaces: %d records, want 5", len(list))
	}
}

// testUniqueKeysOnUpdate: an update cannot move a record onto a key another
// record holds.
func testUniqueKeysOnUpdate(t *testing.T, s store.Store) {
	ctx := context.Background()
	cs := mustCaches(t, s, 2)
	w1 := mustWorkspace(t, s, newWorkspace(cs[0], 1))
	w2 := mustWorkspace(t, s, newWorkspace(cs[0], 2))

	tests := []struct {
		name string
		call func() error
	}{
		{"repo cache key", func() error {
			c := *cs[1]
			c.Repo = cs[0].Repo
			return s.UpdateRepoCache(ctx, &c)
		}},
		{"workspace key", func() error {
			x := *w2
			x.Key = w1.Key
			return s.UpdateWorkspace(ctx, &x)
		}},
		{"workspace branch", func() error {
			x := *w2
			x.Branch = w1.Branch
			return s.UpdateWorkspace(ctx, &x)
		}},
	}
	for _, tc := range tests {
		wantKind(t, tc.name, tc.call(), grove.ErrConflict)
	}
	got, err := s.GetRepoCache(ctx, cs[1].ID)
	mustNoErr(t, "GetRepoCache", err)
	checkCache(t, got, cs[1])
	gw, err := s.GetWorkspace(ctx, w2.ID)
	mustNoErr(t, "GetWorkspace", err)
	checkWorkspace(t, gw, w2)
}

// testDetachedWorkspaces: analysis workspaces have no branch, so any number
// of them share one repo cache.
func testDetachedWorkspaces(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := mustCaches(t, s, 1)[0]
	for i, ref := range []string{"main", "v1.0.0", "v2.0.0"} {
		key := grove.WorkspaceKey{User: "alice", Project: "p1", Repo: c.Repo, Mode: grove.ModeAnalysis, Scope: ref}
		w := newWorkspace(c, i)
		w.Key, w.Mode, w.Scope, w.BaseRef, w.Branch = key.String(), key.Mode, ref, ref, ""
		mustNoErr(t, "CreateWorkspace("+ref+")", s.CreateWorkspace(ctx, w))
	}
	list, err := s.ListWorkspaces(ctx, store.WorkspaceFilter{RepoCacheID: c.ID})
	mustNoErr(t, "ListWorkspaces", err)
	if len(list) != 3 {
		t.Errorf("ListWorkspaces: %d detached workspaces, want 3", len(list))
	}
}

func testDeleteRepoCacheInUse(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := mustCaches(t, s, 1)[0]
	w := mustWorkspace(t, s, newWorkspace(c, 1))
	wantKind(t, "DeleteRepoCache with a workspace", s.DeleteRepoCache(ctx, c.ID), grove.ErrConflict)
	got, err := s.GetRepoCache(ctx, c.ID)
	mustNoErr(t, "GetRepoCache after refused delete", err)
	checkCache(t, got, c)

	mustNoErr(t, "DeleteWorkspace", s.DeleteWorkspace(ctx, w.ID))
	mustNoErr(t, "DeleteRepoCache once unused", s.DeleteRepoCache(ctx, c.ID))
}

// testWorkspaceNeedsRepoCache: a workspace cannot point at a cache that
// does not exist.
func testWorkspaceNeedsRepoCache(t *testing.T, s store.Store) {
	ctx := context.Background()
	ghost := newCache(1)
	wantKind(t, "CreateWorkspace on a missing repo cache",
		s.CreateWorkspace(ctx, newWorkspace(ghost, 1)), grove.ErrNotFound)
	_, err := s.GetWorkspace(ctx, newWorkspace(ghost, 1).ID)
	wantKind(t, "GetWorkspace", err, grove.ErrNotFound)

	c := mustCaches(t, s, 1)[0]
	w := mustWorkspace(t, s, newWorkspace(c, 2))
	moved := *w
	moved.RepoCacheID = ghost.ID + "-missing"
	wantKind(t, "UpdateWorkspace onto a missing repo cache", s.UpdateWorkspace(ctx, &moved), grove.ErrNotFound)
	got, err := s.GetWorkspace(ctx, w.ID)
	mustNoErr(t, "GetWorkspace", err)
	checkWorkspace(t, got, w)
}

func testRuntimeNeedsWorkspace(t *testing.T, s store.Store) {
	ctx := context.Background()
	ghost := newWorkspace(newCache(1), 1)
	wantKind(t, "PutRuntime for a missing workspace", s.PutRuntime(ctx, newRuntime(ghost, 1)), grove.ErrNotFound)
	list, err := s.ListRuntimes(ctx)
	mustNoErr(t, "ListRuntimes", err)
	if len(list) != 0 {
		t.Errorf("ListRuntimes: %d records, want 0", len(list))
	}
}
