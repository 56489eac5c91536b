package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

func testRepoCacheCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := newCache(1)
	mustNoErr(t, "CreateRepoCache", s.CreateRepoCache(ctx, c))

	got, err := s.GetRepoCache(ctx, c.ID)
	mustNoErr(t, "GetRepoCache", err)
	checkCache(t, got, c)

	got, err = s.GetRepoCacheByKey(ctx, c.Repo.Key())
	mustNoErr(t, "GetRepoCacheByKey", err)
	checkCache(t, got, c)

	list, err := s.ListRepoCaches(ctx)
	mustNoErr(t, "ListRepoCaches", err)
	if len(list) != 1 {
		t.Fatalf("ListRepoCaches: %d records, want 1", len(list))
	}
	checkCache(t, list[0], c)

	// Every field but the id changes, including the key.
	u := &grove.RepoCache{
		ID:            c.ID,
		Repo:          grove.RepoID{Host: "gitlab.example.com:8443", Owner: "group/sub", Name: "renamed"},
		URL:           "https://gitlab.example.com:8443/group/sub/renamed.git",
		LocalPath:     "/srv/grove/renamed/.bare",
		State:         grove.CacheBroken,
		SizeBytes:     42,
		LastFetchedAt: at(10 * time.Hour),
		LastUsedAt:    time.Time{},
		CreatedAt:     c.CreatedAt,
		UpdatedAt:     at(11 * time.Hour),
	}
	mustNoErr(t, "UpdateRepoCache", s.UpdateRepoCache(ctx, u))
	got, err = s.GetRepoCacheByKey(ctx, u.Repo.Key())
	mustNoErr(t, "GetRepoCacheByKey after update", err)
	checkCache(t, got, u)
	_, err = s.GetRepoCacheByKey(ctx, c.Repo.Key())
	wantKind(t, "GetRepoCacheByKey(old key)", err, grove.ErrNotFound)

	mustNoErr(t, "DeleteRepoCache", s.DeleteRepoCache(ctx, c.ID))
	_, err = s.GetRepoCache(ctx, c.ID)
	wantKind(t, "GetRepoCache after delete", err, grove.ErrNotFound)
	list, err = s.ListRepoCaches(ctx)
	mustNoErr(t, "ListRepoCaches", err)
	if len(list) != 0 {
		t.Errorf("ListRepoCaches after delete: %d records, want 0", len(list))
	}
}

func testWorkspaceCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	cs := mustCaches(t, s, 2)
	w := newWorkspace(cs[0], 1)
	mustNoErr(t, "CreateWorkspace", s.CreateWorkspace(ctx, w))

	got, err := s.GetWorkspace(ctx, w.ID)
	mustNoErr(t, "GetWorkspace", err)
	checkWorkspace(t, got, w)
	got, err = s.GetWorkspaceByKey(ctx, w.Key)
	mustNoErr(t, "GetWorkspaceByKey", err)
	checkWorkspace(t, got, w)

	key := grove.WorkspaceKey{User: "bob", Project: "p2", Repo: cs[1].Repo, Mode: grove.ModeAnalysis, Scope: "v1.2.3"}
	u := &grove.Workspace{
		ID:          w.ID,
		Key:         key.String(),
		RepoCacheID: cs[1].ID,
		Repo:        cs[1].Repo,
		User:        key.User,
		Project:     key.Project,
		Mode:        key.Mode,
		Scope:       key.Scope,
		BaseRef:     "v1.2.3",
		Branch:      "",
		HeadSHA:     "fedcba9876543210fedcba9876543210fedcba98",
		LocalPath:   "",
		State:       grove.WorkspaceReleased,
		Dirty:       false,
		Pinned:      false,
		SizeBytes:   0,
		RuntimeKind: "",
		CreatedAt:   w.CreatedAt,
		UpdatedAt:   at(5 * time.Hour),
		LastUsedAt:  at(6 * time.Hour),
	}
	mustNoErr(t, "UpdateWorkspace", s.UpdateWorkspace(ctx, u))
	got, err = s.GetWorkspaceByKey(ctx, u.Key)
	mustNoErr(t, "GetWorkspaceByKey after update", err)
	checkWorkspace(t, got, u)
	_, err = s.GetWorkspaceByKey(ctx, w.Key)
	wantKind(t, "GetWorkspaceByKey(old key)", err, grove.ErrNotFound)

	// The branch the workspace gave up is free again.
	w2 := newWorkspace(cs[0], 2)
	w2.Branch = w.Branch
	mustNoErr(t, "CreateWorkspace on the released branch", s.CreateWorkspace(ctx, w2))

	mustNoErr(t, "DeleteWorkspace", s.DeleteWorkspace(ctx, w.ID))
	_, err = s.GetWorkspace(ctx, w.ID)
	wantKind(t, "GetWorkspace after delete", err, grove.ErrNotFound)
	list, err := s.ListWorkspaces(ctx, store.WorkspaceFilter{})
	mustNoErr(t, "ListWorkspaces", err)
	if ids := workspaceIDs(list); !slices.Equal(ids, []string{w2.ID}) {
		t.Errorf("ListWorkspaces after delete = %v, want [%s]", ids, w2.ID)
	}
}

func testRuntimeCRUD(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := mustCaches(t, s, 1)[0]
	w := mustWorkspace(t, s, newWorkspace(c, 1))
	r := newRuntime(w, 1)
	mustNoErr(t, "PutRuntime", s.PutRuntime(ctx, r))
	got, err := s.GetRuntime(ctx, w.ID)
	mustNoErr(t, "GetRuntime", err)
	checkRuntime(t, got, r)

	// Put again replaces the record: one runtime per workspace.
	r2 := &grove.RuntimeRecord{
		ID:          "rt-replaced",
		WorkspaceID: w.ID,
		Kind:        "bwrap",
		BackendID:   "",
		State:       "stopped",
		LastUsedAt:  at(9 * time.Hour),
		CreatedAt:   at(8 * time.Hour),
	}
	mustNoErr(t, "PutRuntime (replace)", s.PutRuntime(ctx, r2))
	got, err = s.GetRuntime(ctx, w.ID)
	mustNoErr(t, "GetRuntime after replace", err)
	checkRuntime(t, got, r2)
	list, err := s.ListRuntimes(ctx)
	mustNoErr(t, "ListRuntimes", err)
	if len(list) != 1 {
		t.Fatalf("ListRuntimes: %d records, want 1", len(list))
	}
	checkRuntime(t, list[0], r2)

	mustNoErr(t, "DeleteRuntime", s.DeleteRuntime(ctx, w.ID))
	_, err = s.GetRuntime(ctx, w.ID)
	wantKind(t, "GetRuntime after delete", err, grove.ErrNotFound)
	// Destroying a runtime never deletes its workspace.
	_, err = s.GetWorkspace(ctx, w.ID)
	mustNoErr(t, "GetWorkspace after DeleteRuntime", err)

	// Deleting a workspace takes its runtime record with it.
	mustNoErr(t, "PutRuntime", s.PutRuntime(ctx, r))
	mustNoErr(t, "DeleteWorkspace", s.DeleteWorkspace(ctx, w.ID))
	_, err = s.GetRuntime(ctx, w.ID)
	wantKind(t, "GetRuntime after DeleteWorkspace", err, grove.ErrNotFound)
}

func testZeroTimes(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := &grove.RepoCache{ID: "rc", Repo: grove.RepoID{Host: "local", Owner: "o", Name: "n"}}
	w := &grove.Workspace{ID: "ws", Key: "k", RepoCacheID: c.ID}
	r := &grove.RuntimeRecord{WorkspaceID: w.ID}
	mustNoErr(t, "CreateRepoCache", s.CreateRepoCache(ctx, c))
	mustNoErr(t, "CreateWorkspace", s.CreateWorkspace(ctx, w))
	mustNoErr(t, "PutRuntime", s.PutRuntime(ctx, r))

	gc, err := s.GetRepoCache(ctx, c.ID)
	mustNoErr(t, "GetRepoCache", err)
	checkCache(t, gc, c)
	gw, err := s.GetWorkspace(ctx, w.ID)
	mustNoErr(t, "GetWorkspace", err)
	checkWorkspace(t, gw, w)
	gr, err := s.GetRuntime(ctx, w.ID)
	mustNoErr(t, "GetRuntime", err)
	checkRuntime(t, gr, r)
}

func testReturnsCopies(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := newCache(1)
	w := newWorkspace(c, 1)
	r := newRuntime(w, 1)
	wantC, wantW, wantR := *c, *w, *r
	mustNoErr(t, "CreateRepoCache", s.CreateRepoCache(ctx, c))
	mustNoErr(t, "CreateWorkspace", s.CreateWorkspace(ctx, w))
	mustNoErr(t, "PutRuntime", s.PutRuntime(ctx, r))

	// The store keeps no reference to what the caller passed in...
	c.State, w.SizeBytes, r.State = "scribbled", -1, "scribbled"
	// ...nor to what it handed out.
	for _, f := range []func() error{
		func() error {
			g, err := s.GetRepoCache(ctx, wantC.ID)
			if err == nil {
				g.URL = "scribbled"
			}
			return err
		},
		func() error {
			g, err := s.GetRepoCacheByKey(ctx, wantC.Repo.Key())
			if err == nil {
				g.URL = "scribbled"
			}
			return err
		},
		func() error {
			l, err := s.ListRepoCaches(ctx)
			if err == nil && len(l) > 0 {
				l[0].URL = "scribbled"
			}
			return err
		},
		func() error {
			g, err := s.GetWorkspace(ctx, wantW.ID)
			if err == nil {
				g.Branch = "scribbled"
			}
			return err
		},
		func() error {
			g, err := s.GetWorkspaceByKey(ctx, wantW.Key)
			if err == nil {
				g.Branch = "scribbled"
			}
			return err
		},
		func() error {
			l, err := s.ListWorkspaces(ctx, store.WorkspaceFilter{})
			if err == nil && len(l) > 0 {
				l[0].Branch = "scribbled"
			}
			return err
		},
		func() error {
			g, err := s.GetRuntime(ctx, wantW.ID)
			if err == nil {
				g.Image = "scribbled"
			}
			return err
		},
		func() error {
			l, err := s.ListRuntimes(ctx)
			if err == nil && len(l) > 0 {
				l[0].Image = "scribbled"
			}
			return err
		},
	} {
		mustNoErr(t, "read", f())
	}

	gc, err := s.GetRepoCache(ctx, wantC.ID)
	mustNoErr(t, "GetRepoCache", err)
	checkCache(t, gc, &wantC)
	gw, err := s.GetWorkspace(ctx, wantW.ID)
	mustNoErr(t, "GetWorkspace", err)
	checkWorkspace(t, gw, &wantW)
	gr, err := s.GetRuntime(ctx, wantW.ID)
	mustNoErr(t, "GetRuntime", err)
	checkRuntime(t, gr, &wantR)
}

func testNotFound(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := newCache(1)
	w := newWorkspace(c, 1)
	// One record of each kind exists so that "not found" is about the id,
	// not an empty table.
	other := newCache(2)
	mustNoErr(t, "CreateRepoCache", s.CreateRepoCache(ctx, other))
	ow := mustWorkspace(t, s, newWorkspace(other, 2))
	mustNoErr(t, "PutRuntime", s.PutRuntime(ctx, newRuntime(ow, 2)))

	tests := []struct {
		name string
		call func() error
	}{
		{"GetRepoCache", func() error { _, err := s.GetRepoCache(ctx, c.ID); return err }},
		{"GetRepoCacheByKey", func() error { _, err := s.GetRepoCacheByKey(ctx, c.Repo.Key()); return err }},
		{"UpdateRepoCache", func() error { return s.UpdateRepoCache(ctx, c) }},
		{"DeleteRepoCache", func() error { return s.DeleteRepoCache(ctx, c.ID) }},
		{"GetWorkspace", func() error { _, err := s.GetWorkspace(ctx, w.ID); return err }},
		{"GetWorkspaceByKey", func() error { _, err := s.GetWorkspaceByKey(ctx, w.Key); return err }},
		{"UpdateWorkspace", func() error { return s.UpdateWorkspace(ctx, w) }},
		{"DeleteWorkspace", func() error { return s.DeleteWorkspace(ctx, w.ID) }},
		{"GetRuntime", func() error { _, err := s.GetRuntime(ctx, w.ID); return err }},
		{"DeleteRuntime", func() error { return s.DeleteRuntime(ctx, w.ID) }},
	}
	for _, tc := range tests {
		wantKind(t, tc.name, tc.call(), grove.ErrNotFound)
	}
	// Updating a missing record must not have created it.
	_, err := s.GetRepoCache(ctx, c.ID)
	wantKind(t, "GetRepoCache after UpdateRepoCache of a missing record", err, grove.ErrNotFound)
	_, err = s.GetWorkspace(ctx, w.ID)
	wantKind(t, "GetWorkspace after UpdateWorkspace of a missing record", err, grove.ErrNotFound)
}

// testInvalid: records without their identifying fields are refused
// rather than stored under an empty key.
func testInvalid(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := mustCaches(t, s, 1)[0]
	noID := newWorkspace(c, 1)
	noID.ID = ""
	noKey := newWorkspace(c, 2)
	noKey.Key = ""
	noCache := newWorkspace(c, 3)
	noCache.RepoCacheID = ""
	tests := []struct {
		name string
		call func() error
	}{
		{"repo cache without id", func() error {
			rc := newCache(9)
			rc.ID = ""
			return s.CreateRepoCache(ctx, rc)
		}},
		{"workspace without id", func() error { return s.CreateWorkspace(ctx, noID) }},
		{"workspace without key", func() error { return s.CreateWorkspace(ctx, noKey) }},
		{"workspace without repo cache", func() error { return s.CreateWorkspace(ctx, noCache) }},
		{"runtime without workspace", func() error { return s.PutRuntime(ctx, &grove.RuntimeRecord{ID: "rt"}) }},
	}
	for _, tc := range tests {
		wantKind(t, tc.name, tc.call(), grove.ErrInvalid)
	}
	list, err := s.ListWorkspaces(ctx, store.WorkspaceFilter{})
	mustNoErr(t, "ListWorkspaces", err)
	if len(list) != 0 {
		t.Errorf("invalid workspaces were stored: %v", workspaceIDs(list))
	}
}

func testListWorkspaces(t *testing.T, s store.Store) {
	ctx := context.Background()
	cs := mustCaches(t, s, 2)
	// Insertion order differs from creation time; ws-d and ws-e tie on
	// CreatedAt and are ordered by id.
	specs := []struct {
		id, user, project string
		cache             int
		created           time.Duration
	}{
		{"ws-c", "alice", "p1", 0, 3 * time.Second},
		{"ws-a", "alice", "p2", 1, 1 * time.Second},
		{"ws-e", "bob", "p1", 0, 4 * time.Second},
		{"ws-b", "bob", "p1", 1, 2 * time.Second},
		{"ws-d", "alice", "p1", 1, 4 * time.Second},
	}
	for i, sp := range specs {
		w := newWorkspace(cs[sp.cache], i)
		w.ID, w.User, w.Project, w.CreatedAt = sp.id, sp.user, sp.project, at(sp.created)
		w.Key = sp.id + "-key"
		mustWorkspace(t, s, w)
	}
	tests := []struct {
		name   string
		filter store.WorkspaceFilter
		want   []string
	}{
		{"all", store.WorkspaceFilter{}, []string{"ws-a", "ws-b", "ws-c", "ws-d", "ws-e"}},
		{"user", store.WorkspaceFilter{User: "alice"}, []string{"ws-a", "ws-c", "ws-d"}},
		{"project", store.WorkspaceFilter{Project: "p1"}, []string{"ws-b", "ws-c", "ws-d", "ws-e"}},
		{"repo cache", store.WorkspaceFilter{RepoCacheID: cs[1].ID}, []string{"ws-a", "ws-b", "ws-d"}},
		{"user and project", store.WorkspaceFilter{User: "bob", Project: "p1"}, []string{"ws-b", "ws-e"}},
		{"all three", store.WorkspaceFilter{User: "alice", Project: "p1", RepoCacheID: cs[0].ID}, []string{"ws-c"}},
		{"no match", store.WorkspaceFilter{User: "carol"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListWorkspaces(ctx, tc.filter)
			mustNoErr(t, "ListWorkspaces", err)
			if ids := workspaceIDs(got); !slices.Equal(ids, tc.want) {
				t.Errorf("ListWorkspaces(%+v) = %v, want %v", tc.filter, ids, tc.want)
			}
		})
	}
}

// testListOrder: repo caches and runtimes list by CreatedAt then id too, so
// callers (eviction, reconcile) see a stable order on every adapter.
func testListOrder(t *testing.T, s store.Store) {
	ctx := context.Background()
	created := []time.Duration{3, 1, 2, 1} // seconds; ids 0 and 3 tie
	var ws []*grove.Workspace
	for i, d := range created {
		c := newCache(i)
		c.CreatedAt = at(d * time.Second)
		mustNoErr(t, "CreateRepoCache", s.CreateRepoCache(ctx, c))
		w := mustWorkspace(t, s, newWorkspace(c, i))
		ws = append(ws, w)
	}
	for i := len(ws) - 1; i >= 0; i-- {
		r := newRuntime(ws[i], i)
		r.CreatedAt = at(created[i] * time.Second)
		mustNoErr(t, "PutRuntime", s.PutRuntime(ctx, r))
	}
	caches, err := s.ListRepoCaches(ctx)
	mustNoErr(t, "ListRepoCaches", err)
	var got []string
	for _, c := range caches {
		got = append(got, c.ID)
	}
	if want := []string{"rc-001", "rc-003", "rc-002", "rc-000"}; !slices.Equal(got, want) {
		t.Errorf("ListRepoCaches order = %v, want %v", got, want)
	}
	rts, err := s.ListRuntimes(ctx)
	mustNoErr(t, "ListRuntimes", err)
	got = nil
	for _, r := range rts {
		got = append(got, r.WorkspaceID)
	}
	if want := []string{"ws-001", "ws-003", "ws-002", "ws-000"}; !slices.Equal(got, want) {
		t.Errorf("ListRuntimes order = %v, want %v", got, want)
	}
}
