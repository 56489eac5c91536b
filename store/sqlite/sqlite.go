// Package sqlite is Grove's embedded default store: one SQLite file, pure
// Go (modernc.org/sqlite, no cgo), schema migrations embedded in the
// binary.
//
// # Concurrency
//
// The database runs in WAL mode, so readers never wait for the writer and
// the writer never waits for readers. Writers are serialised twice over:
// inside this process by a semaphore (writes queue in Go, in order, and
// stop waiting when their ctx ends), and against other processes by
// BEGIN IMMEDIATE plus busy_timeout. BEGIN IMMEDIATE takes the write lock
// when the transaction starts, so a read-modify-write inside Tx can never
// be invalidated by another writer between its read and its write — the
// transactions are serialisable.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

var _ store.Store = (*Store)(nil)

// busyTimeoutMS bounds how long a statement waits for a lock another
// process (or another Store on the same file) holds.
const busyTimeoutMS = 5000

// Store is a store.Store on one SQLite file.
type Store struct {
	db     *sql.DB
	writer chan struct{} // in-process write lock, shared by all views of one Open
	q      querier       // db, or tx inside a transaction
	tx     *sql.Tx       // nil outside a transaction
	depth  int           // savepoint nesting inside tx
	hot    *hotStmts     // the per-request lookups, prepared once
}

// hotStmts are the lookups every request makes (re-acquire, a workspace by
// id, an API key by hash). Preparing them once saves SQLite's parse and
// plan on each call — about half the cost of a lookup (12 µs instead of
// 21 µs measured for the re-acquire lookup).
type hotStmts struct {
	wsByKey, wsByID, keyByHash *sql.Stmt
}

func prepareHot(ctx context.Context, db *sql.DB) (*hotStmts, error) {
	var h hotStmts
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&h.wsByKey, selectWorkspace + ` WHERE ws_key = ?`},
		{&h.wsByID, selectWorkspace + ` WHERE id = ?`},
		{&h.keyByHash, `SELECT ` + apiKeyColumns + ` FROM api_keys WHERE secret_hash = ?`},
	} {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			h.close()
			return nil, err
		}
		*p.dst = st
	}
	return &h, nil
}

func (h *hotStmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{h.wsByKey, h.wsByID, h.keyByHash} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// stmt is st bound to the current transaction, if any.
func (s *Store) stmt(ctx context.Context, st *sql.Stmt) *sql.Stmt {
	if s.tx != nil {
		return s.tx.StmtContext(ctx, st)
	}
	return st
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Open opens (creating if needed) the database file at path and brings
// its schema up to date. Opening the same file again, from this process or
// another, is safe: migrations already applied are skipped.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "sqlite store: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "sqlite store: path %q: %v", path, err)
	}
	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("sqlite store: %w", err)
	}
	// One connection writes at a time (the writer semaphore); the others
	// serve readers, which WAL lets run alongside the writer. Keeping them
	// all idle rather than closing them avoids re-running the connection
	// pragmas and re-reading the schema on the hot read path. A Tx holds
	// one connection and never waits for another (fn must use the tx
	// Store), so no number of concurrent Tx calls can exhaust the pool
	// into a deadlock: the extra callers wait on the semaphore without
	// holding a connection.
	conns := max(4, runtime.GOMAXPROCS(0))
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)

	if err := migrateRetrying(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	hot, err := prepareHot(ctx, db)
	if err != nil {
		db.Close()
		return nil, dbError(ctx, err, "sqlite store: prepare", nil)
	}
	return &Store{db: db, writer: make(chan struct{}, 1), q: db, hot: hot}, nil
}

// dsn builds the connection string. Every pooled connection runs these
// pragmas, which matters: busy_timeout, foreign_keys and synchronous are
// per connection.
func dsn(absPath string) string {
	q := url.Values{}
	// busy_timeout first, so that even switching the file to WAL waits
	// for a lock instead of failing.
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "journal_mode(WAL)")
	// SQLite does not enforce foreign keys unless asked, per connection.
	q.Add("_pragma", "foreign_keys(ON)")
	// In WAL mode NORMAL fsyncs at checkpoints instead of at every commit.
	// A committed transaction survives a crash of the process (its WAL
	// frames are already in the kernel's page cache); only a power loss or
	// kernel crash can roll back the last few commits, and never corrupts
	// the file. Grove reconciles the store with the disk on start-up, so
	// that rare loss is repaired, and every commit stays fast.
	q.Add("_pragma", "synchronous(NORMAL)")
	// Every BEGIN is BEGIN IMMEDIATE: see the package comment.
	q.Set("_txlock", "immediate")
	// A file: URI, so that '?', '#' and '%' in the path are escaped
	// rather than taken for the query.
	return (&url.URL{Scheme: "file", Path: absPath, RawQuery: q.Encode()}).String()
}

// Close closes the database. Call it once, outside any Tx.
func (s *Store) Close() error {
	if s.tx != nil {
		return grove.Errorf(grove.ErrInvalid, "sqlite store: Close inside Tx")
	}
	return errors.Join(s.hot.close(), s.db.Close())
}

func (s *Store) lockWriter(ctx context.Context) error {
	select {
	case s.writer <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) unlockWriter() { <-s.writer }

// exec runs one write statement: inside a transaction directly, outside
// under the writer semaphore so that it queues behind running
// transactions in Go rather than in SQLite's busy loop.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s.tx == nil {
		if err := s.lockWriter(ctx); err != nil {
			return nil, err
		}
		defer s.unlockWriter()
	}
	return s.q.ExecContext(ctx, query, args...)
}

// Tx runs fn in a transaction (BEGIN IMMEDIATE). A Tx inside fn becomes a
// savepoint, so its failure undoes only its own writes.
func (s *Store) Tx(ctx context.Context, fn func(ctx context.Context, tx store.Store) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.tx != nil {
		return s.savepoint(ctx, fn)
	}
	if err := s.lockWriter(ctx); err != nil {
		return err
	}
	defer s.unlockWriter()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return dbError(ctx, err, "begin transaction", nil)
	}
	committed := false
	defer func() {
		if !committed { // fn failed or panicked
			_ = tx.Rollback()
		}
	}()
	if err := fn(ctx, s.inTx(tx, 0)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return dbError(ctx, err, "commit", nil)
	}
	committed = true
	return nil
}

// inTx is the view of s that fn gets: the same database, working
// through tx.
func (s *Store) inTx(tx *sql.Tx, depth int) *Store {
	v := *s
	v.q, v.tx, v.depth = tx, tx, depth
	return &v
}

func (s *Store) savepoint(ctx context.Context, fn func(ctx context.Context, tx store.Store) error) error {
	name := fmt.Sprintf("grove_sp%d", s.depth+1)
	if _, err := s.tx.ExecContext(ctx, "SAVEPOINT "+name); err != nil {
		return dbError(ctx, err, "savepoint", nil)
	}
	if err := fn(ctx, s.inTx(s.tx, s.depth+1)); err != nil {
		// ROLLBACK TO keeps the savepoint open; RELEASE closes it.
		if _, rbErr := s.tx.ExecContext(ctx, "ROLLBACK TO "+name+"; RELEASE "+name); rbErr != nil {
			// The enclosing transaction is now unusable and will fail
			// as a whole, which still keeps nothing fn did.
			return fmt.Errorf("%w (rolling back savepoint: %v)", err, rbErr)
		}
		return err
	}
	if _, err := s.tx.ExecContext(ctx, "RELEASE "+name); err != nil {
		return dbError(ctx, err, "release savepoint", nil)
	}
	return nil
}

// migrateRetrying runs migrate, retrying for a few seconds while another
// process holds the new file's lock: switching a fresh database to WAL takes
// an exclusive lock for which SQLite does not always call the busy handler.
func migrateRetrying(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := migrate(ctx, db)
		if err == nil || !errors.Is(err, grove.ErrUnavailable) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
