// Package local is the in-process Locker: keyed reader/writer locks in
// memory, for a single Grove process. Two processes using it do not see each
// other's locks; use lock/pglock for that.
package local

import (
	"context"

	"github.com/grove-dev/grove/internal/keylock"
	"github.com/grove-dev/grove/lock"
)

// Locker is an in-memory lock.Locker. The zero value is ready to use and
// must not be copied after first use.
type Locker struct {
	rw keylock.RW
}

var _ lock.Locker = (*Locker)(nil)

// New returns an empty Locker.
func New() *Locker { return &Locker{} }

// Lock takes key exclusively.
func (l *Locker) Lock(ctx context.Context, key string) (func(), error) {
	return l.rw.Lock(ctx, key)
}

// RLock takes key shared.
func (l *Locker) RLock(ctx context.Context, key string) (func(), error) {
	return l.rw.RLock(ctx, key)
}

// Len reports how many keys are held or awaited; tests use it to prove
// nothing leaks.
func (l *Locker) Len() int { return l.rw.Len() }
