// Package memory is the in-memory store.Store for tests and throwaway
// runs. It passes the same conformance suite as the durable adapters.
//
// Records are kept as immutable values: every write replaces a map entry
// with a fresh copy and never changes a stored value in place, so a
// transaction can start from a cheap copy of the maps (copy-on-write) and
// a rollback is simply dropping that copy.
package memory

import (
	"context"
	"sync"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory store. The zero value is not usable; call New.
type Store struct {
	db *db
	tx *txn // nil outside a transaction
}

// db is the committed state and the locks guarding it.
type db struct {
	// writer admits one writer at a time — a transaction or a single
	// write — which makes transactions serialisable. It is a channel
	// rather than a mutex so that waiting honours ctx.
	writer chan struct{}

	mu     sync.RWMutex // guards data and closed
	data   *state
	closed bool

	keys keys // API keys; not transactional
}

// txn is the private state of one (possibly nested) transaction.
type txn struct {
	mu   sync.Mutex // fn may share its tx Store between goroutines
	data *state
	done bool
}

// New returns an empty store.
func New() *Store {
	return &Store{db: &db{writer: make(chan struct{}, 1), data: newState()}}
}

// Close makes every later call fail. Closing twice is harmless.
func (s *Store) Close() error {
	if s.tx != nil {
		return grove.Errorf(grove.ErrInvalid, "store: Close inside Tx")
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	s.db.closed = true
	return nil
}

var errClosed = grove.Errorf(grove.ErrUnavailable, "store: closed")

// read runs f on the state this Store sees.
func (s *Store) read(ctx context.Context, f func(*state) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.tx != nil {
		return s.tx.run(f)
	}
	s.db.mu.RLock()
	defer s.db.mu.RUnlock()
	if s.db.closed {
		return errClosed
	}
	return f(s.db.data)
}

// write runs f on the state this Store sees. The state methods check
// everything before they change anything, so a failed f leaves no trace.
func (s *Store) write(ctx context.Context, f func(*state) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.tx != nil {
		return s.tx.run(f)
	}
	if err := s.db.lockWriter(ctx); err != nil {
		return err
	}
	defer s.db.unlockWriter()
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if s.db.closed {
		return errClosed
	}
	return f(s.db.data)
}

func (d *db) lockWriter(ctx context.Context) error {
	select {
	case d.writer <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *db) unlockWriter() { <-d.writer }

func (t *txn) run(f func(*state) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return grove.Errorf(grove.ErrInvalid, "store: transaction already finished")
	}
	return f(t.data)
}

// Tx runs fn on a copy of the state and publishes the copy only if fn
// succeeds. Nested calls copy the enclosing transaction's state the same
// way, so an inner failure undoes only the inner writes.
func (s *Store) Tx(ctx context.Context, fn func(ctx context.Context, tx store.Store) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.tx != nil {
		return s.nestedTx(ctx, fn)
	}
	if err := s.db.lockWriter(ctx); err != nil {
		return err
	}
	defer s.db.unlockWriter()
	s.db.mu.RLock()
	closed, snapshot := s.db.closed, s.db.data.clone()
	s.db.mu.RUnlock()
	if closed {
		return errClosed
	}

	t := &txn{data: snapshot}
	defer t.finish() // also on panic, so a leaked tx Store cannot write
	if err := fn(ctx, &Store{db: s.db, tx: t}); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	data := t.data
	t.mu.Unlock()
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	s.db.data = data
	return nil
}

func (s *Store) nestedTx(ctx context.Context, fn func(ctx context.Context, tx store.Store) error) error {
	s.tx.mu.Lock()
	if s.tx.done {
		s.tx.mu.Unlock()
		return grove.Errorf(grove.ErrInvalid, "store: transaction already finished")
	}
	inner := &txn{data: s.tx.data.clone()}
	s.tx.mu.Unlock()
	defer inner.finish()
	if err := fn(ctx, &Store{db: s.db, tx: inner}); err != nil {
		return err
	}
	inner.mu.Lock()
	data := inner.data
	inner.mu.Unlock()
	s.tx.mu.Lock()
	defer s.tx.mu.Unlock()
	s.tx.data = data
	return nil
}

func (t *txn) finish() {
	t.mu.Lock()
	t.done = true
	t.mu.Unlock()
}
