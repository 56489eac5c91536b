package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/postgres"
)

func seed(t testing.TB, s store.Store, n int) []*grove.Workspace {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2025, 6, 7, 8, 9, 10, 987654321, time.UTC)
	c := &grove.RepoCache{
		ID: "rc-1", Repo: grove.RepoID{Host: "github.com", Owner: "acme", Name: "app"},
		URL: "https://github.com/acme/app.git", LocalPath: "/srv/acme/app/.bare", State: grove.CacheReady,
		SizeBytes: 123, LastFetchedAt: now, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.CreateRepoCache(ctx, c); err != nil {
		t.Fatalf("CreateRepoCache: %v", err)
	}
	var ws []*grove.Workspace
	for i := range n {
		scope := fmt.Sprintf("conv-%d", i)
		k := grove.WorkspaceKey{User: "alice", Project: "p", Repo: c.Repo, Mode: grove.ModeEdit, Scope: scope}
		w := &grove.Workspace{
			ID: fmt.Sprintf("ws-%d", i), Key: k.String(), RepoCacheID: c.ID, Repo: c.Repo,
			User: k.User, Project: k.Project, Mode: k.Mode, Scope: scope, BaseRef: "main",
			Branch: grove.DefaultBranch(k.Mode, scope), LocalPath: "/srv/acme/app/worktrees/alice_p_" + scope,
			State: grove.WorkspaceReady, Dirty: i%2 == 0, SizeBytes: int64(i),
			CreatedAt: now.Add(time.Duration(i)), UpdatedAt: now, LastUsedAt: now,
		}
		if err := s.CreateWorkspace(ctx, w); err != nil {
			t.Fatalf("CreateWorkspace: %v", err)
		}
		ws = append(ws, w)
	}
	return ws
}

// appliedMigrations counts schema_migrations rows through a connection of
// its own, so it sees only what was committed.
func appliedMigrations(t *testing.T, dsn string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatalf("count schema_migrations: %v", err)
	}
	return n
}

// migrationFiles counts the embedded migrations: each is applied once.
func migrationFiles(t *testing.T) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(m) == 0 {
		t.Fatalf("migrations: %v (%d files)", err, len(m))
	}
	return len(m)
}

// TestReopen: data survives Close and Open, to the nanosecond, and
// running the migrations again changes nothing.
func TestReopen(t *testing.T) {
	dsn := newSchema(t)
	s := open(t, dsn)
	want := seed(t, s, 3)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range 2 {
		s = open(t, dsn)
		got, err := s.ListWorkspaces(context.Background(), store.WorkspaceFilter{})
		if err != nil {
			t.Fatalf("ListWorkspaces: %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("ListWorkspaces: %d workspaces, want %d", len(got), len(want))
		}
		for i := range want {
			if *got[i] != *want[i] {
				t.Errorf("workspace %d:\n got %+v\nwant %+v", i, *got[i], *want[i])
			}
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if n := appliedMigrations(t, dsn); n != migrationFiles(t) {
		t.Errorf("schema_migrations has %d rows, want %d", n, migrationFiles(t))
	}
}

// TestTwoStoresOneSchema: two Stores on one schema stand for two worker
// processes (each has its own pool, so nothing in Go is shared). Both open
// at once, migrating concurrently; their transactions are serialisable
// against each other, which only the server-side writer lock provides.
func TestTwoStoresOneSchema(t *testing.T) {
	dsn := newSchema(t)
	stores := make([]*postgres.Store, 4)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() { stores[i] = open(t, dsn) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, s := range stores {
		t.Cleanup(func() { s.Close() })
	}
	if n := appliedMigrations(t, dsn); n != migrationFiles(t) {
		t.Errorf("schema_migrations has %d rows after %d concurrent Opens, want %d", n, len(stores), migrationFiles(t))
	}

	w := seed(t, stores[0], 1)[0]
	const perStore = 10
	ctx := context.Background()
	for _, s := range stores[:2] {
		for range perStore {
			wg.Go(func() {
				err := s.Tx(ctx, func(ctx context.Context, tx store.Store) error {
					got, err := tx.GetWorkspace(ctx, w.ID)
					if err != nil {
						return err
					}
					// Widen the window between read and write so the
					// two stores' transactions really overlap.
					time.Sleep(time.Millisecond)
					got.SizeBytes++
					return tx.UpdateWorkspace(ctx, got)
				})
				if err != nil {
					t.Errorf("Tx: %v", err)
				}
			})
		}
	}
	wg.Wait()
	got, err := stores[1].GetWorkspace(ctx, w.ID)
	if err != nil {
		t.Fatalf("GetWorkspace: %v", err)
	}
	if want := w.SizeBytes + 2*perStore; got.SizeBytes != want {
		t.Errorf("SizeBytes = %d, want %d: updates were lost between stores", got.SizeBytes, want)
	}
}

// TestPlainWriteWaitsForTx: a write outside any Tx, from another Store,
// cannot land between a Tx's read and its write (it would be silently
// overwritten); it waits for the Tx to end, as it does in SQLite.
func TestPlainWriteWaitsForTx(t *testing.T) {
	dsn := newSchema(t)
	a, b := open(t, dsn), open(t, dsn)
	t.Cleanup(func() { a.Close(); b.Close() })
	w := seed(t, a, 1)[0]
	ctx := context.Background()
	// b's pool has a connection with the statement prepared, so only the
	// lock can hold the plain write back.
	if _, err := b.GetWorkspace(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	x := *w
	x.Pinned = true
	if err := b.UpdateWorkspace(ctx, &x); err != nil {
		t.Fatal(err)
	}

	plainDone := make(chan error, 1)
	err := a.Tx(ctx, func(ctx context.Context, tx store.Store) error {
		got, err := tx.GetWorkspace(ctx, w.ID)
		if err != nil {
			return err
		}
		go func() {
			plainDone <- b.UpdateWorkspace(context.Background(), &x)
		}()
		select {
		case err := <-plainDone:
			t.Errorf("a plain UpdateWorkspace finished (%v) inside another store's Tx", err)
		case <-time.After(200 * time.Millisecond):
		}
		got.SizeBytes = 99
		return tx.UpdateWorkspace(ctx, got)
	})
	if err != nil {
		t.Fatalf("Tx: %v", err)
	}
	if err := <-plainDone; err != nil {
		t.Fatalf("plain UpdateWorkspace: %v", err)
	}
	got, err := a.GetWorkspace(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The plain write ran last and replaced the row.
	if !got.Pinned || got.SizeBytes != w.SizeBytes {
		t.Errorf("after Tx then plain write: Pinned=%v SizeBytes=%d, want true, %d", got.Pinned, got.SizeBytes, w.SizeBytes)
	}
}

// TestFailedStatementInsideTx: in PostgreSQL a failed statement aborts its
// transaction; the store confines the failure to the statement, so fn can
// handle a conflict and go on, as with the sqlite adapter.
func TestFailedStatementInsideTx(t *testing.T) {
	s := open(t, newSchema(t))
	t.Cleanup(func() { s.Close() })
	w := seed(t, s, 1)[0]
	ctx := context.Background()
	err := s.Tx(ctx, func(ctx context.Context, tx store.Store) error {
		dup := *w
		dup.ID = "ws-dup"
		if err := tx.CreateWorkspace(ctx, &dup); !errors.Is(err, grove.ErrConflict) {
			return fmt.Errorf("CreateWorkspace(same key) = %v, want conflict", err)
		}
		got, err := tx.GetWorkspaceByKey(ctx, w.Key)
		if err != nil {
			return fmt.Errorf("read after a failed statement: %w", err)
		}
		got.SizeBytes = 7
		return tx.UpdateWorkspace(ctx, got)
	})
	if err != nil {
		t.Fatalf("Tx: %v", err)
	}
	got, err := s.GetWorkspace(ctx, w.ID)
	if err != nil || got.SizeBytes != 7 {
		t.Fatalf("after Tx: %+v, %v; want SizeBytes 7", got, err)
	}
}

// TestBadValues: values PostgreSQL cannot store are invalid input, not
// internal errors.
func TestBadValues(t *testing.T) {
	s := open(t, newSchema(t))
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	tests := []struct {
		name string
		c    grove.RepoCache
	}{
		{"NUL byte in a string", grove.RepoCache{ID: "rc-nul", URL: "https://x/\x00", Repo: grove.RepoID{Name: "a"}}},
		{"invalid UTF-8", grove.RepoCache{ID: "rc-utf", URL: "https://x/\xff", Repo: grove.RepoID{Name: "b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.CreateRepoCache(ctx, &tc.c); !errors.Is(err, grove.ErrInvalid) {
				t.Errorf("CreateRepoCache = %v, want invalid input", err)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dsn := baseDSN(t)
	const secret = "s3cret-pw"
	tests := []struct {
		name string
		dsn  string
		kind error
	}{
		{"unparseable", "postgres://grove:" + secret + "@127.0.0.1:notaport/x", grove.ErrInvalid},
		{"schema missing", withParam(t, dsn, "search_path", "no_such_schema_here"), grove.ErrInvalid},
		{"nothing listening", "postgres://grove:" + secret + "@127.0.0.1:1/x?connect_timeout=2", grove.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := postgres.Open(context.Background(), tc.dsn)
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded, want %v", tc.kind)
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("Open = %v, want %v", err, tc.kind)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Open's error shows the password: %v", err)
			}
		})
	}
}

// TestWaitForWriterLockHonoursCtx: a Tx or a write waiting for another
// process's Tx gives up when its ctx ends, and its store stays usable.
func TestWaitForWriterLockHonoursCtx(t *testing.T) {
	dsn := newSchema(t)
	a, b := open(t, dsn), open(t, dsn)
	t.Cleanup(func() { a.Close(); b.Close() })
	w := seed(t, a, 1)[0]
	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Tx", func(ctx context.Context) error {
			return b.Tx(ctx, func(ctx context.Context, tx store.Store) error {
				t.Errorf("Tx ran fn while another store's Tx held the writer lock")
				return nil
			})
		}},
		{"UpdateWorkspace", func(ctx context.Context) error {
			x := *w
			x.HeadSHA = "abandoned"
			return b.UpdateWorkspace(ctx, &x)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Tx(context.Background(), func(context.Context, store.Store) error {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				start := time.Now()
				err := tc.call(ctx)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("waiting %s = %v, want context.DeadlineExceeded", tc.name, err)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("waiting %s took %v after its ctx ended", tc.name, d)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("holding Tx: %v", err)
			}
			// An abandoned write must not land later, when the lock it
			// was queued for comes free: the wait is cancelled on the
			// server, not just on this side of the connection.
			time.Sleep(300 * time.Millisecond)
			got, err := a.GetWorkspace(context.Background(), w.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.HeadSHA != w.HeadSHA {
				t.Errorf("HeadSHA = %q after the write's ctx ended, want %q", got.HeadSHA, w.HeadSHA)
			}
			if err := b.UpdateWorkspace(context.Background(), w); err != nil {
				t.Errorf("UpdateWorkspace after the wait was abandoned: %v", err)
			}
		})
	}
}
