// Package keylock provides in-process keyed locks that honour context
// cancellation. Entries exist only while someone holds or waits for a key,
// so the map never grows with the number of keys ever used.
package keylock

import (
	"context"
	"sync"
)

// RW is a set of reader/writer locks keyed by string. Many readers of one key
// proceed together; a writer excludes everyone else on that key. A waiting
// writer holds back new readers, so a stream of read commands cannot starve
// a write. Different keys never wait for each other.
type RW struct {
	mu    sync.Mutex
	locks map[string]*entry
}

type entry struct {
	refs    int           // holders and waiters; the entry is dropped at zero
	readers int           // current readers
	writer  bool          // a writer holds the key
	waiting int           // writers waiting; new readers queue behind them
	changed chan struct{} // closed and replaced whenever the state changes
}

// Lock takes key exclusively. It returns ctx's error if ctx ends first; then
// nothing is held. The returned func releases the lock.
func (l *RW) Lock(ctx context.Context, key string) (unlock func(), err error) {
	return l.acquire(ctx, key, true)
}

// RLock takes key shared.
func (l *RW) RLock(ctx context.Context, key string) (unlock func(), err error) {
	return l.acquire(ctx, key, false)
}

func (l *RW) acquire(ctx context.Context, key string, exclusive bool) (func(), error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = make(map[string]*entry)
	}
	e := l.locks[key]
	if e == nil {
		e = &entry{changed: make(chan struct{})}
		l.locks[key] = e
	}
	e.refs++
	if exclusive {
		e.waiting++
	}
	for {
		free := !e.writer && (exclusive && e.readers == 0 || !exclusive && e.waiting == 0)
		if free {
			if exclusive {
				e.waiting--
				e.writer = true
			} else {
				e.readers++
			}
			l.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { l.release(key, e, exclusive) }) }, nil
		}
		wait := e.changed
		l.mu.Unlock()
		select {
		case <-wait:
			l.mu.Lock()
		case <-ctx.Done():
			l.mu.Lock()
			if exclusive {
				// Readers held back for this writer may go now.
				e.waiting--
				close(e.changed)
				e.changed = make(chan struct{})
			}
			l.drop(key, e)
			l.mu.Unlock()
			return nil, ctx.Err()
		}
	}
}

func (l *RW) release(key string, e *entry, exclusive bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if exclusive {
		e.writer = false
	} else {
		e.readers--
	}
	close(e.changed)
	e.changed = make(chan struct{})
	l.drop(key, e)
}

// drop forgets one holder or waiter; l.mu must be held.
func (l *RW) drop(key string, e *entry) {
	e.refs--
	if e.refs == 0 {
		delete(l.locks, key)
	}
}

// Len reports how many keys are currently held or awaited; for tests.
func (l *RW) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}
