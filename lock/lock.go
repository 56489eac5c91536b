// Package lock is the port for the keyed locks of DESIGN.md §5: which
// workspace may run a mutating command, which repo cache may be fetched.
// One process uses in-memory locks (lock/local); several processes or hosts
// share PostgreSQL advisory locks (lock/pglock). Which one is configuration:
// the engine only sees a Locker.
package lock

import "context"

// Locker is a set of reader/writer locks named by string keys.
//
// Semantics every adapter provides (lock/locktest checks each):
//
//   - Keys are independent: holding or waiting for one key never delays
//     another (up to resource bounds an adapter documents, such as a pool
//     of connections).
//   - Lock takes a key exclusively: no other holder, shared or exclusive,
//     in this process or any other using the same backend.
//   - RLock takes a key shared: any number of shared holders together,
//     none while an exclusive holder has it. A writer that is waiting holds
//     back new readers, so a stream of readers cannot starve it.
//   - Waiting honours ctx: when ctx ends first, Lock and RLock return an
//     error wrapping ctx.Err() and nothing is held or queued afterwards —
//     no later holder waits for the abandoned attempt.
//   - A ctx that is already done still takes a key that is free at once.
//     That makes an expired ctx a try-lock; the evictor relies on it to
//     skip busy workspaces without waiting.
//   - unlock releases what was taken. It may be called from any goroutine;
//     calls after the first do nothing. It never blocks for long: an
//     adapter that cannot tell its backend drops the backend session
//     instead, which releases the lock there.
//   - A backend failure (server down, pool exhausted) is returned as an
//     error wrapping grove.ErrUnavailable or grove.ErrResourceLimit; the
//     key is then not held.
//
// Lost locks. A distributed lock lives in a backend session: a PostgreSQL
// connection (pglock) or a lease with a TTL (a Redis adapter). If that
// session ends while the lock is held — the server restarts, the network
// partitions longer than the keepalives allow, the lease expires
// unrenewed — the backend frees the key and another process may take it
// while the first holder still believes it holds it. The holder is not
// interrupted; adapters make the window small (a dedicated connection per
// held lock, renewal well before expiry) and log the loss when they
// notice it (at the latest at unlock). Work done under a lock therefore
// still relies on git's own lock files and the store's transactions as the
// last line against corruption; the lock prevents contention, it is not
// the only guard of integrity.
type Locker interface {
	// Lock takes key exclusively and returns the func that releases it.
	Lock(ctx context.Context, key string) (unlock func(), err error)
	// RLock takes key shared and returns the func that releases it.
	RLock(ctx context.Context, key string) (unlock func(), err error)
}
