package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

var errBoom = errors.New("storetest: fn failed on purpose")

func testTxCommit(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := newCache(1)
	w := newWorkspace(c, 1)
	r := newRuntime(w, 1)
	err := s.Tx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := tx.CreateRepoCache(ctx, c); err != nil {
			return err
		}
		if err := tx.CreateWorkspace(ctx, w); err != nil {
			return err
		}
		// Reads inside the transaction see its own writes.
		got, err := tx.GetWorkspaceByKey(ctx, w.Key)
		if err != nil {
			return err
		}
		checkWorkspace(t, got, w)
		return tx.PutRuntime(ctx, r)
	})
	mustNoErr(t, "Tx", err)

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

// seedTx creates a cache, a workspace and its runtime outside any
// transaction, for the rollback tests to try to change.
func seedTx(t *testing.T, s store.Store) (*grove.RepoCache, *grove.Workspace, *grove.RuntimeRecord) {
	t.Helper()
	c := mustCaches(t, s, 1)[0]
	w := mustWorkspace(t, s, newWorkspace(c, 1))
	r := newRuntime(w, 1)
	mustNoErr(t, "PutRuntime", s.PutRuntime(context.Background(), r))
	return c, w, r
}

// checkSeed verifies the seed is exactly as created and nothing else exists.
func checkSeed(t *testing.T, s store.Store, c *grove.RepoCache, w *grove.Workspace, r *grove.RuntimeRecord) {
	t.Helper()
	ctx := context.Background()
	caches, err := s.ListRepoCaches(ctx)
	mustNoErr(t, "ListRepoCaches", err)
	if len(caches) != 1 {
		t.Fatalf("ListRepoCaches: %d records, want only the seed", len(caches))
	}
	checkCache(t, caches[0], c)
	ws, err := s.ListWorkspaces(ctx, store.WorkspaceFilter{})
	mustNoErr(t, "ListWorkspaces", err)
	if len(ws) != 1 {
		t.Fatalf("ListWorkspaces: %v, want only the seed", workspaceIDs(ws))
	}
	checkWorkspace(t, ws[0], w)
	rts, err := s.ListRuntimes(ctx)
	mustNoErr(t, "ListRuntimes", err)
	if len(rts) != 1 {
		t.Fatalf("ListRuntimes: %d records, want only the seed", len(rts))
	}
	checkRuntime(t, rts[0], r)
}

// mutateAll does one of every kind of write, so a rollback has something
// to undo in every table.
func mutateAll(ctx context.Context, tx store.Store, c *grove.RepoCache, w *grove.Workspace) error {
	nc := newCache(2)
	nw := newWorkspace(nc, 2)
	uc, uw := *c, *w
	uc.SizeBytes, uw.SizeBytes = 1, 1
	steps := []func() error{
		func() error { return tx.CreateRepoCache(ctx, nc) },
		func() error { return tx.CreateWorkspace(ctx, nw) },
		func() error { return tx.PutRuntime(ctx, newRuntime(nw, 2)) },
		func() error { return tx.UpdateRepoCache(ctx, &uc) },
		func() error { return tx.UpdateWorkspace(ctx, &uw) },
		func() error { return tx.DeleteRuntime(ctx, w.ID) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return nil
}

func testTxRollback(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, w, r := seedTx(t, s)
	err := s.Tx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := mutateAll(ctx, tx, c, w); err != nil {
			t.Errorf("mutateAll: %v", err)
		}
		if err := tx.DeleteWorkspace(ctx, w.ID); err != nil {
			t.Errorf("DeleteWorkspace: %v", err)
		}
		return errBoom
	})
	if err != errBoom { // "unchanged": the very value, not a wrapper
		t.Errorf("Tx returned %v, want fn's error unchanged", err)
	}
	checkSeed(t, s, c, w, r)
}

// testTxRollbackAfterFailedStep: the writes before a failing step go too.
func testTxRollbackAfterFailedStep(t *testing.T, s store.Store) {
	ctx := context.Background()
	c, w, r := seedTx(t, s)
	err := s.Tx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := mutateAll(ctx, tx, c, w); err != nil {
			return err
		}
		dup := newWorkspace(c, 3)
		dup.Key = w.Key
		return tx.CreateWorkspace(ctx, dup)
	})
	wantKind(t, "Tx", err, grove.ErrConflict)
	checkSeed(t, s, c, w, r)
}

func testTxNested(t *testing.T, s store.Store) {
	ctx := context.Background()
	cs := []*grove.RepoCache{newCache(1), newCache(2), newCache(3)}
	err := s.Tx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := tx.CreateRepoCache(ctx, cs[0]); err != nil {
			return err
		}
		err := tx.Tx(ctx, func(ctx context.Context, inner store.Store) error {
			if err := inner.CreateRepoCache(ctx, cs[1]); err != nil {
				return err
			}
			return errBoom
		})
		if err != errBoom {
			t.Errorf("inner Tx returned %v, want fn's error unchanged", err)
		}
		if _, err := tx.GetRepoCache(ctx, cs[1].ID); !errors.Is(err, grove.ErrNotFound) {
			t.Errorf("failed inner Tx left its write visible to the outer one: %v", err)
		}
		if _, err := tx.GetRepoCache(ctx, cs[0].ID); err != nil {
			t.Errorf("failed inner Tx undid the outer Tx's write: %v", err)
		}
		return tx.Tx(ctx, func(ctx context.Context, inner store.Store) error {
			return inner.CreateRepoCache(ctx, cs[2])
		})
	})
	mustNoErr(t, "Tx", err)
	for i, want := range []bool{true, false, true} {
		_, err := s.GetRepoCache(ctx, cs[i].ID)
		if want {
			mustNoErr(t, "GetRepoCache "+cs[i].ID, err)
		} else {
			wantKind(t, "GetRepoCache "+cs[i].ID, err, grove.ErrNotFound)
		}
	}

	// A committed inner Tx is still undone by its failing outer Tx.
	err = s.Tx(ctx, func(ctx context.Context, tx store.Store) error {
		if err := tx.Tx(ctx, func(ctx context.Context, inner store.Store) error {
			return inner.DeleteRepoCache(ctx, cs[0].ID)
		}); err != nil {
			return err
		}
		return errBoom
	})
	if err != errBoom {
		t.Errorf("Tx returned %v, want fn's error unchanged", err)
	}
	_, err = s.GetRepoCache(ctx, cs[0].ID)
	mustNoErr(t, "GetRepoCache after rolled-back outer Tx", err)
}

// testTxPanic: a panicking fn keeps nothing, the panic reaches the caller,
// and the store is usable afterwards (no lock left held).
func testTxPanic(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := newCache(1)
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("Tx swallowed fn's panic")
			}
		}()
		_ = s.Tx(ctx, func(ctx context.Context, tx store.Store) error {
			if err := tx.CreateRepoCache(ctx, c); err != nil {
				return err
			}
			panic("storetest: panic on purpose")
		})
	}()
	_, err := s.GetRepoCache(ctx, c.ID)
	wantKind(t, "GetRepoCache after panicking Tx", err, grove.ErrNotFound)
	mustNoErr(t, "Tx after a panic", s.Tx(ctx, func(ctx context.Context, tx store.Store) error {
		return tx.CreateRepoCache(ctx, c)
	}))
	mustNoErr(t, "CreateRepoCache after a panic", s.CreateRepoCache(ctx, newCache(2)))
}

// testConcurrentRMW: read-modify-write inside Tx from many goroutines
// loses no update.
func testConcurrentRMW(t *testing.T, s store.Store) {
	ctx := context.Background()
	c := mustCaches(t, s, 1)[0]
	w := newWorkspace(c, 1)
	w.SizeBytes = 0
	mustWorkspace(t, s, w)

	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			errs <- s.Tx(ctx, func(ctx context.Context, tx store.Store) error {
				got, err := tx.GetWorkspace(ctx, w.ID)
				if err != nil {
					return err
				}
				got.SizeBytes++
				return tx.UpdateWorkspace(ctx, got)
			})
		})
		// Plain reads run alongside the writers and must not fail.
		wg.Go(func() {
			if _, err := s.GetWorkspaceByKey(ctx, w.Key); err != nil {
				t.Errorf("GetWorkspaceByKey during writes: %v", err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Tx: %v", err)
		}
	}
	got, err := s.GetWorkspace(ctx, w.ID)
	mustNoErr(t, "GetWorkspace", err)
	if got.SizeBytes != n {
		t.Errorf("SizeBytes = %d after %d increments: updates were lost", got.SizeBytes, n)
	}
}

// testConcurrentCreate: of many concurrent creates of one key exactly one
// wins and the rest get ErrConflict.
func testConcurrentCreate(t *testing.T, s store.Store) {
	ctx := context.Background()
	cs := mustCaches(t, s, 1)
	const n = 20
	tests := []struct {
		name   string
		create func(i int) error
	}{
		{"repo cache key", func(i int) error {
			c := newCache(100 + i)
			c.Repo = grove.RepoID{Host: "github.com", Owner: "race", Name: "repo"}
			return s.CreateRepoCache(ctx, c)
		}},
		{"workspace key", func(i int) error {
			w := newWorkspace(cs[0], 200+i)
			w.Key = "the-same-key"
			return s.CreateWorkspace(ctx, w)
		}},
		{"branch", func(i int) error {
			w := newWorkspace(cs[0], 300+i)
			w.Branch = "agent/the-same-branch"
			return s.CreateWorkspace(ctx, w)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() { errs <- tc.create(i) })
			}
			wg.Wait()
			close(errs)
			wins := 0
			for err := range errs {
				switch {
				case err == nil:
					wins++
				case !errors.Is(err, grove.ErrConflict):
					t.Errorf("create: %v, want nil or ErrConflict", err)
				}
			}
			if wins != 1 {
				t.Errorf("%d of %d concurrent creates won, want exactly 1", wins, n)
			}
		})
	}
}

func testCancelledContext(t *testing.T, s store.Store) {
	c, w, r := seedTx(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name string
		call func() error
	}{
		{"CreateRepoCache", func() error { return s.CreateRepoCache(ctx, newCache(5)) }},
		{"GetRepoCache", func() error { _, err := s.GetRepoCache(ctx, c.ID); return err }},
		{"GetRepoCacheByKey", func() error { _, err := s.GetRepoCacheByKey(ctx, c.Repo.Key()); return err }},
		{"ListRepoCaches", func() error { _, err := s.ListRepoCaches(ctx); return err }},
		{"UpdateRepoCache", func() error { return s.UpdateRepoCache(ctx, c) }},
		{"DeleteRepoCache", func() error { return s.DeleteRepoCache(ctx, c.ID) }},
		{"CreateWorkspace", func() error { return s.CreateWorkspace(ctx, newWorkspace(c, 5)) }},
		{"GetWorkspace", func() error { _, err := s.GetWorkspace(ctx, w.ID); return err }},
		{"GetWorkspaceByKey", func() error { _, err := s.GetWorkspaceByKey(ctx, w.Key); return err }},
		{"ListWorkspaces", func() error { _, err := s.ListWorkspaces(ctx, store.WorkspaceFilter{}); return err }},
		{"UpdateWorkspace", func() error { return s.UpdateWorkspace(ctx, w) }},
		{"DeleteWorkspace", func() error { return s.DeleteWorkspace(ctx, w.ID) }},
		{"PutRuntime", func() error { return s.PutRuntime(ctx, r) }},
		{"GetRuntime", func() error { _, err := s.GetRuntime(ctx, w.ID); return err }},
		{"ListRuntimes", func() error { _, err := s.ListRuntimes(ctx); return err }},
		{"DeleteRuntime", func() error { return s.DeleteRuntime(ctx, w.ID) }},
		{"Tx", func() error {
			return s.Tx(ctx, func(context.Context, store.Store) error {
				t.Errorf("Tx ran fn with a cancelled context")
				return nil
			})
		}},
	}
	for _, tc := range tests {
		wantKind(t, tc.name, tc.call(), context.Canceled)
	}

	// A context cancelled while fn runs aborts the transaction.
	ctx2, cancel2 := context.WithCancel(context.Background())
	err := s.Tx(ctx2, func(ctx context.Context, tx store.Store) error {
		if err := tx.CreateRepoCache(ctx, newCache(6)); err != nil {
			return err
		}
		cancel2()
		return nil
	})
	wantKind(t, "Tx cancelled mid-way", err, context.Canceled)
	checkSeed(t, s, c, w, r)
}
