// Package pglock is the lock.Locker for several Grove processes or hosts
// sharing one PostgreSQL database: session-level advisory locks.
//
// Each key hashes to the two-int form of an advisory lock (64 bits of
// SHA-256, so distinct keys practically never share a lock; if they did,
// the cost would be needless waiting, never a missed exclusion). Lock maps
// to pg_advisory_lock, RLock to pg_advisory_lock_shared. PostgreSQL's lock
// manager queues a request that conflicts with one already waiting, which
// gives the writer preference the port asks for.
//
// A held lock pins one connection of a bounded pool until unlock, because
// session locks belong to the connection: unlock runs the matching
// pg_advisory_unlock* and returns the connection to the pool. The pool's
// size is therefore the number of keys this process can hold or await at
// once; an attempt that finds it exhausted waits Options.PoolWait for a
// connection and then fails with grove.ErrResourceLimit instead of waiting
// for ever (a request holding one key and wanting a second could otherwise
// deadlock the process against its own pool).
//
// If a pinned connection dies while held, the server releases the lock
// (lost lock, see lock.Locker); the holder learns of it at unlock, which
// logs a warning.
package pglock

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/lock"
)

// Options tune a Locker; the zero value is sensible.
type Options struct {
	// MaxConns bounds the pool, and so the keys held or awaited at once by
	// this process. 0 takes pool_max_conns from the DSN, else
	// DefaultMaxConns.
	MaxConns int32
	// PoolWait is how long an attempt waits for a free connection before it
	// fails with grove.ErrResourceLimit; 0 means DefaultPoolWait.
	PoolWait time.Duration
	// Logger receives lost-lock warnings; nil discards them.
	Logger *slog.Logger
}

// Defaults for Options.
const (
	DefaultMaxConns = 32
	DefaultPoolWait = 5 * time.Second
)

// opTimeout bounds server round trips that run without the caller's ctx:
// a try with an expired ctx, and unlock.
const opTimeout = 5 * time.Second

// Locker is a lock.Locker over PostgreSQL advisory locks. It is safe for
// concurrent use; Close it when done.
type Locker struct {
	pool     *pgxpool.Pool
	poolWait time.Duration
	log      *slog.Logger
}

var _ lock.Locker = (*Locker)(nil)

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value string) and checks that it answers.
func Open(ctx context.Context, dsn string, opts Options) (*Locker, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, grove.Errorf(grove.ErrInvalid, "pglock: %v", err)
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(dsn, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.MinConns = 0
	cfg.ConnConfig.RuntimeParams["application_name"] = "grove-locks"
	// pgx's default reaction to a cancelled ctx is to break the socket.
	// A lock wait on the server would then stay queued — holding back
	// readers behind a writer nobody waits for — until granted. A cancel
	// request aborts the wait on the server instead.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 2 * time.Second}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, grove.Errorf(grove.ErrUnavailable, "pglock: %v", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pglock: connect: %w: %w", grove.ErrUnavailable, err)
	}
	l := &Locker{pool: pool, poolWait: opts.PoolWait, log: opts.Logger}
	if l.poolWait <= 0 {
		l.poolWait = DefaultPoolWait
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l, nil
}

// Close closes the pool. Call it only when no lock is held: it waits for
// pinned connections to come back.
func (l *Locker) Close() { l.pool.Close() }

// Lock takes key exclusively (pg_advisory_lock).
func (l *Locker) Lock(ctx context.Context, key string) (func(), error) {
	return l.acquire(ctx, key, true)
}

// RLock takes key shared (pg_advisory_lock_shared).
func (l *Locker) RLock(ctx context.Context, key string) (func(), error) {
	return l.acquire(ctx, key, false)
}

type sqls struct{ try, wait, unlock string }

var (
	exclusiveSQL = sqls{
		"SELECT pg_try_advisory_lock($1::int4, $2::int4)",
		"SELECT pg_advisory_lock($1::int4, $2::int4)",
		"SELECT pg_advisory_unlock($1::int4, $2::int4)",
	}
	sharedSQL = sqls{
		"SELECT pg_try_advisory_lock_shared($1::int4, $2::int4)",
		"SELECT pg_advisory_lock_shared($1::int4, $2::int4)",
		"SELECT pg_advisory_unlock_shared($1::int4, $2::int4)",
	}
)

// keyOf hashes key to the two int4 halves of an advisory lock id.
func keyOf(key string) (int32, int32) {
	sum := sha256.Sum256([]byte(key))
	return int32(binary.BigEndian.Uint32(sum[0:4])), int32(binary.BigEndian.Uint32(sum[4:8]))
}

func (l *Locker) acquire(ctx context.Context, key string, exclusive bool) (func(), error) {
	q := sharedSQL
	if exclusive {
		q = exclusiveSQL
	}
	hi, lo := keyOf(key)

	// With ctx already done the caller asks for a try-lock: the round trips
	// still need a live context, bounded on their own.
	live := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		live, cancel = context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		defer cancel()
	}

	conn, err := l.conn(live)
	if err != nil {
		if ctx.Err() != nil && live == ctx {
			return nil, fmt.Errorf("lock %q: %w", key, ctx.Err())
		}
		return nil, err
	}

	var ok bool
	if err := conn.QueryRow(live, q.try, hi, lo).Scan(&ok); err != nil {
		discard(conn)
		if live == ctx && ctx.Err() != nil {
			return nil, fmt.Errorf("lock %q: %w", key, ctx.Err())
		}
		return nil, fmt.Errorf("lock %q: %w: %w", key, grove.ErrUnavailable, err)
	}
	if ok {
		return l.unlocker(conn, q.unlock, hi, lo, key), nil
	}
	if ctx.Err() != nil {
		conn.Release()
		return nil, fmt.Errorf("lock %q is held: %w", key, ctx.Err())
	}

	_, err = conn.Exec(ctx, q.wait, hi, lo)
	if ctx.Err() != nil {
		// The wait was cancelled on the server, or the lock was granted
		// just as ctx ended; closing the session drops it either way.
		discard(conn)
		return nil, fmt.Errorf("lock %q: %w", key, ctx.Err())
	}
	if err != nil {
		discard(conn)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "40P01" {
			return nil, grove.Errorf(grove.ErrConflict, "lock %q: deadlock detected between processes", key)
		}
		return nil, fmt.Errorf("lock %q: %w: %w", key, grove.ErrUnavailable, err)
	}
	return l.unlocker(conn, q.unlock, hi, lo, key), nil
}

// conn takes a pool connection, waiting at most PoolWait.
func (l *Locker) conn(ctx context.Context) (*pgxpool.Conn, error) {
	wctx, cancel := context.WithTimeout(ctx, l.poolWait)
	defer cancel()
	conn, err := l.pool.Acquire(wctx)
	if err == nil {
		return conn, nil
	}
	if ctx.Err() == nil && wctx.Err() != nil {
		if st := l.pool.Stat(); st.AcquiredConns() >= st.MaxConns() {
			return nil, grove.Errorf(grove.ErrResourceLimit, "pglock: all %d lock connections are in use", st.MaxConns())
		}
	}
	return nil, fmt.Errorf("pglock: connect: %w: %w", grove.ErrUnavailable, err)
}

func (l *Locker) unlocker(conn *pgxpool.Conn, unlockSQL string, hi, lo int32, key string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			var released bool
			err := conn.QueryRow(ctx, unlockSQL, hi, lo).Scan(&released)
			if err != nil || !released {
				// The session ended (and the server freed the lock) or is
				// unusable; either way the lock may have been lost while
				// held. Dropping the session guarantees it is gone.
				l.log.Warn("pglock: lock lost or not released cleanly; dropping its connection", "key", key, "err", err)
				discard(conn)
				return
			}
			conn.Release()
		})
	}
}

// discard closes conn instead of returning it to the pool; the server
// frees every lock the session held or awaited.
func discard(conn *pgxpool.Conn) {
	c := conn.Hijack()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}
