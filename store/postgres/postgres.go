// Package postgres is Grove's store for several workers: one PostgreSQL
// schema shared by every Grove process, through pgx's connection pool,
// with the schema migrations embedded in the binary.
//
// # Concurrency
//
// Readers never wait. Writers are serialised by one transaction-level
// advisory lock per schema (pg_advisory_xact_lock), which every Tx takes
// first and every write outside a Tx takes in the same round trip as the
// write. This mirrors the sqlite adapter's single writer (BEGIN IMMEDIATE
// plus its semaphore) and is what makes a read-modify-write inside Tx
// serialisable across goroutines and processes: between its read and its
// write no other writer can commit. PostgreSQL's own SERIALIZABLE level
// would give the same guarantee only by failing one of two conflicting
// transactions (SQLSTATE 40001) and asking the caller to retry, which the
// store contract has no room for; and Grove's writes are small and rare
// next to its reads, so one writer at a time costs nothing that matters.
// The lock is released at commit or rollback, also when a connection dies,
// so a crashed worker never leaves the store locked.
//
// A failed statement inside a PostgreSQL transaction aborts the whole
// transaction. SQLite does not, and callers may go on after, say, a
// conflict inside Tx, so every write inside a Tx runs under a savepoint of
// its own (sent in the same round trip) that a failure rolls back.
//
// The per-request lookups need no explicit preparation: pgx prepares and
// caches every statement per connection on first use.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/internal/sqlrow"
)

var _ store.Store = (*Store)(nil)

// lockClass is the high half of the advisory lock that serialises
// writers ("grov"); the low half is a hash of the schema name, so two Grove
// deployments in two schemas of one database never wait for each other.
// It is the one-key (bigint) form on purpose: PostgreSQL keeps one-key and
// two-key advisory locks apart, and lock/pglock hashes its keys into the
// two-key form, so the writer lock can never collide with a Grove lock key.
const lockClass int64 = 0x67726f76

// writerLock is the advisory lock key of the writers of schemaHash.
func writerLock(schemaHash int32) int64 { return lockClass<<32 | int64(uint32(schemaHash)) }

// rollbackTimeout bounds the rollback of a Tx whose ctx is already done.
const rollbackTimeout = 5 * time.Second

// Store is a store.Store on one PostgreSQL schema (the first schema of the
// connection's search_path).
type Store struct {
	pool   *pgxpool.Pool
	lockID int64   // the writer lock's key: see writerLock
	q      querier // pool, or tx inside a transaction
	tx     pgx.Tx  // nil outside a transaction
	depth  int     // savepoint nesting inside tx
}

// querier is what *pgxpool.Pool and pgx.Tx have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Open connects to the database dsn names (a postgres:// URL or a
// key=value string; search_path picks the schema, which must exist) and
// brings its schema up to date. Any number of processes may Open one
// schema at once: migrations already applied are skipped, and concurrent
// migrators take turns.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message may quote the DSN, and with it a password.
		return nil, grove.Errorf(grove.ErrInvalid, "postgres store: cannot parse the connection string (not shown: it may hold a password)")
	}
	// On ctx end, ask the server to cancel the statement rather than only
	// dropping the connection (pgx's default). A backend waiting for the
	// writer lock does not notice a dropped client: it would take the lock
	// later and run the rest of the pipeline — the write the caller was
	// told had failed. Cancelled, the wait ends in an error and the
	// implicit transaction is rolled back. The deadline is a backstop for
	// a server that does not answer the cancel.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 2 * time.Second}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, dbError(ctx, err, "postgres store: connect", nil)
	}
	s := &Store{pool: pool, q: pool}
	if err := s.init(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// init finds the schema, derives the lock key from it and migrates.
func (s *Store) init(ctx context.Context) error {
	var schema *string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return dbError(ctx, err, "postgres store: connect", nil)
	}
	if schema == nil {
		return grove.Errorf(grove.ErrInvalid, "postgres store: the search_path names no existing schema")
	}
	var hash int32
	if err := s.pool.QueryRow(ctx, `SELECT hashtext($1)`, *schema).Scan(&hash); err != nil {
		return dbError(ctx, err, "postgres store: connect", nil)
	}
	s.lockID = writerLock(hash)
	return migrate(ctx, s.pool, s.lockID)
}

// Close closes the connection pool. Call it once, outside any Tx; calling
// it again is harmless.
func (s *Store) Close() error {
	if s.tx != nil {
		return grove.Errorf(grove.ErrInvalid, "postgres store: Close inside Tx")
	}
	s.pool.Close()
	return nil
}

const lockSQL = `SELECT pg_advisory_xact_lock($1::bigint)`

// exec runs one write statement. Outside a transaction the writer lock
// and the statement go in one pipeline, which PostgreSQL runs as one
// implicit transaction: the lock is held exactly as long as the write.
// Inside a transaction the statement runs under a savepoint, so that its
// failure leaves the transaction usable, as it would in SQLite.
func (s *Store) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	if s.tx == nil {
		b.Queue(lockSQL, s.lockID)
	} else {
		b.Queue(`SAVEPOINT grove_stmt`)
	}
	write := b.Queue(sql, args...)
	if s.tx != nil {
		b.Queue(`RELEASE SAVEPOINT grove_stmt`)
	}
	var tag pgconn.CommandTag
	write.Exec(func(t pgconn.CommandTag) error { tag = t; return nil })
	err := s.q.SendBatch(ctx, b).Close()
	if err != nil && s.tx != nil && ctx.Err() == nil {
		if _, rbErr := s.tx.Exec(ctx, `ROLLBACK TO SAVEPOINT grove_stmt; RELEASE SAVEPOINT grove_stmt`); rbErr != nil {
			// The transaction stays aborted and will fail as a whole,
			// which still keeps nothing it did.
			return tag, fmt.Errorf("%w (rolling back the statement: %v)", err, rbErr)
		}
	}
	return tag, err
}

// Tx runs fn in a transaction that holds the writer lock from its first
// statement to its end (see the package comment). A Tx inside fn becomes a
// savepoint, so its failure undoes only its own writes.
func (s *Store) Tx(ctx context.Context, fn func(ctx context.Context, tx store.Store) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.tx != nil {
		return s.savepoint(ctx, fn)
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return dbError(ctx, err, "begin transaction", nil)
	}
	done := false
	defer func() {
		if !done { // fn failed or panicked, or the commit did not happen
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			defer cancel()
			_ = tx.Rollback(rctx)
		}
	}()
	if _, err := tx.Exec(ctx, lockSQL, s.lockID); err != nil {
		return dbError(ctx, err, "begin transaction: writer lock", nil)
	}
	if err := fn(ctx, s.inTx(tx, 0)); err != nil {
		return err
	}
	// pgx would send COMMIT even with ctx done; the caller gave up, so
	// nothing fn did may be kept.
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return dbError(ctx, err, "commit", nil)
	}
	done = true
	return nil
}

// inTx is the view of s that fn gets: the same pool, working through tx.
func (s *Store) inTx(tx pgx.Tx, depth int) *Store {
	v := *s
	v.q, v.tx, v.depth = tx, tx, depth
	return &v
}

func (s *Store) savepoint(ctx context.Context, fn func(ctx context.Context, tx store.Store) error) error {
	name := fmt.Sprintf("grove_sp%d", s.depth+1)
	if _, err := s.tx.Exec(ctx, "SAVEPOINT "+name); err != nil {
		return dbError(ctx, err, "savepoint", nil)
	}
	if err := fn(ctx, s.inTx(s.tx, s.depth+1)); err != nil {
		// ROLLBACK TO keeps the savepoint open; RELEASE closes it.
		if _, rbErr := s.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+name+"; RELEASE SAVEPOINT "+name); rbErr != nil {
			return fmt.Errorf("%w (rolling back savepoint: %v)", err, rbErr)
		}
		return err
	}
	if _, err := s.tx.Exec(ctx, "RELEASE SAVEPOINT "+name); err != nil {
		return dbError(ctx, err, "release savepoint", nil)
	}
	return nil
}

// changedOne checks that an update or delete touched a row.
func changedOne(ctx context.Context, tag pgconn.CommandTag, err error, what string, fk error) error {
	if err != nil {
		return dbError(ctx, err, what, fk)
	}
	if tag.RowsAffected() == 0 {
		return grove.Errorf(grove.ErrNotFound, "%s: not found", what)
	}
	return nil
}

// collect scans every row and closes rows.
func collect[T any](ctx context.Context, rows pgx.Rows, scan func(sqlrow.Scanner) (*T, error), what string) ([]*T, error) {
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, dbError(ctx, err, what, nil)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, err, what, nil)
	}
	return out, nil
}

// noRows reports whether err says a single-row query found nothing.
func noRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
