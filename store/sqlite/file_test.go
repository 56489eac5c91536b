package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/sqlite"
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

func checkSeeded(t *testing.T, s store.Store, want []*grove.Workspace) {
	t.Helper()
	got, err := s.ListWorkspaces(context.Background(), store.WorkspaceFilter{})
	if err != nil {
		t.Fatalf("ListWorkspaces: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("ListWorkspaces: %d workspaces, want %d", len(got), len(want))
	}
	for i := range want {
		// Times come back in UTC, exact to the nanosecond.
		if *got[i] != *want[i] {
			t.Errorf("workspace %d:\n got %+v\nwant %+v", i, *got[i], *want[i])
		}
	}
}

// TestReopen: data survives Close and Open, and running the migrations a
// second time changes nothing.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grove.db")
	s := open(t, path)
	want := seed(t, s, 3)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range 2 {
		s = open(t, path)
		checkSeeded(t, s, want)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if n := appliedMigrations(t, path); n != migrationFiles(t) {
		t.Errorf("schema_migrations has %d rows, want %d", n, migrationFiles(t))
	}
}

// TestTwoStoresOneFile: two Stores on one file stand for two processes.
// Both open (migrating concurrently), see each other's writes, and their
// transactions are serialisable against each other — which only BEGIN
// IMMEDIATE and busy_timeout provide, the in-process semaphore being
// per Store.
func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grove.db")
	stores := make([]*sqlite.Store, 2)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() { stores[i] = open(t, path) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, s := range stores {
		t.Cleanup(func() { s.Close() })
	}
	if n := appliedMigrations(t, path); n != migrationFiles(t) {
		t.Errorf("schema_migrations has %d rows after two concurrent Opens, want %d", n, migrationFiles(t))
	}

	w := seed(t, stores[0], 1)[0]
	const perStore = 15
	ctx := context.Background()
	for _, s := range stores {
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

func TestOpenPaths(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		kind error // nil: must open
	}{
		{"plain", filepath.Join(dir, "a.db"), nil},
		{"URI metacharacters in the name", filepath.Join(dir, "we?ird#na%20me.db"), nil},
		{"empty", "", grove.ErrInvalid},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "a.db"), errAny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sqlite.Open(context.Background(), tc.path)
			switch {
			case tc.kind == nil && err != nil:
				t.Fatalf("Open: %v", err)
			case tc.kind == nil:
				seed(t, s, 1)
				s.Close()
				// The file is where the caller said, not at a name cut
				// short at '?' or '#'.
				if _, err := os.Stat(tc.path); err != nil {
					t.Errorf("database file: %v", err)
				}
				if n := appliedMigrations(t, tc.path); n != migrationFiles(t) {
					t.Errorf("schema_migrations at %q has %d rows, want %d", tc.path, n, migrationFiles(t))
				}
			case err == nil:
				s.Close()
				t.Fatalf("Open(%q) succeeded, want an error", tc.path)
			case tc.kind != errAny && !errors.Is(err, tc.kind):
				t.Errorf("Open: %v, want %v", err, tc.kind)
			}
		})
	}
}

var errAny = errors.New("any error")

// appliedMigrations counts schema_migrations rows through a connection of
// its own, which also proves the data is on disk at path.
func appliedMigrations(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path}).String())
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
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
