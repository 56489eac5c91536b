// Package filelock is the Locker for several Grove processes on one machine
// sharing a data root — a `grove serve` and the CLI beside it, or two
// shells: keyed reader/writer locks as flock(2) locks on files under a
// directory of the root. The kernel releases them when a process dies, so
// a crash never leaves a key held.
//
// Each key has two files. The lock file carries the reader/writer lock
// itself. The gate file gives writers preference, which flock alone does
// not: a writer holds the gate exclusively while it waits for the lock,
// and a reader passes the gate (shared) before it takes the lock, so new
// readers queue behind a waiting writer.
//
// Waiting polls with LOCK_NB and a short back-off, so ctx is honoured
// without a thread stuck in the kernel. Lock files stay behind after use
// (one pair per key ever used; they are empty).
package filelock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/lock"
)

// Locker keeps its lock files in one directory.
type Locker struct{ dir string }

var _ lock.Locker = (*Locker)(nil)

// New returns a Locker over dir, creating it.
func New(dir string) (*Locker, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, grove.Errorf(grove.ErrUnavailable, "lock directory: %v", err)
	}
	return &Locker{dir: dir}, nil
}

// Lock takes key exclusively.
func (l *Locker) Lock(ctx context.Context, key string) (func(), error) {
	return l.take(ctx, key, true)
}

// RLock takes key shared.
func (l *Locker) RLock(ctx context.Context, key string) (func(), error) {
	return l.take(ctx, key, false)
}

func (l *Locker) paths(key string) (gate, main string) {
	sum := sha256.Sum256([]byte(key))
	name := hex.EncodeToString(sum[:16])
	return filepath.Join(l.dir, name+".gate"), filepath.Join(l.dir, name+".lock")
}

func (l *Locker) take(ctx context.Context, key string, exclusive bool) (func(), error) {
	gatePath, mainPath := l.paths(key)
	gate, err := open(gatePath)
	if err != nil {
		return nil, err
	}
	defer gate.Close() // releases the gate once the lock is held (or given up)
	gateHow := unix.LOCK_SH
	if exclusive {
		gateHow = unix.LOCK_EX
	}
	if err := flock(ctx, gate, gateHow); err != nil {
		return nil, err
	}
	f, err := open(mainPath)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := flock(ctx, f, how); err != nil {
		f.Close()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { f.Close() }) }, nil
}

func open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, grove.Errorf(grove.ErrUnavailable, "open lock file: %v", err)
	}
	return f, nil
}

// flock takes how on f, polling until ctx ends. A ctx already done still
// gets one attempt: an expired ctx is a try-lock (lock.Locker).
func flock(ctx context.Context, f *os.File, how int) error {
	wait := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case !errors.Is(err, unix.EWOULDBLOCK):
			return grove.Errorf(grove.ErrUnavailable, "flock: %v", err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("lock: %w", ctx.Err())
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("lock: %w", ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, 20*time.Millisecond)
	}
}
