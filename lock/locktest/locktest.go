// Package locktest is the conformance suite every lock.Locker adapter
// passes: a few lines per adapter run the whole contract of lock.Locker.
package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grove-dev/grove/lock"
)

// Suite describes the adapter under test.
type Suite struct {
	// Open returns a Locker. Every call stands for another process: a
	// distributed adapter opens a new client with its own connections.
	Open func(t *testing.T) lock.Locker
	// Distributed says that Lockers from separate Open calls exclude each
	// other. In-memory adapters leave it false: their locks are by design
	// visible only inside one Locker, and the two-process cases skip.
	Distributed bool
}

// blocked is how long a test waits to conclude that an attempt is blocked.
// Long enough for a round trip to a local server, short for the suite.
const blocked = 150 * time.Millisecond

// patience bounds every wait that must succeed.
const patience = 5 * time.Second

// Run runs the conformance suite against s.
func Run(t *testing.T, s Suite) {
	tests := []struct {
		name        string
		distributed bool // needs two Lockers that exclude each other
		run         func(t *testing.T, s Suite, key string)
	}{
		{"Exclusion", false, testExclusion},
		{"ReadersShare", false, testReadersShare},
		{"WriterExcludesReaders", false, testWriterExcludesReaders},
		{"ReaderExcludesWriter", false, testReaderExcludesWriter},
		{"DifferentKeysIndependent", false, testDifferentKeys},
		{"CancelWhileWaitingLeavesNothingHeld", false, testCancelWhileWaiting},
		{"CancelledWriterReleasesHeldBackReaders", false, testCancelledWriter},
		{"TryLockWithExpiredContext", false, testTryLock},
		{"UnlockTwice", false, testUnlockTwice},
		{"WaitingWriterHoldsBackNewReaders", false, testWriterPreference},
		{"TwoInstancesExclude", true, testTwoInstances},
		{"TwoInstancesExclusionUnderContention", true, testTwoInstancesContention},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.distributed && !s.Distributed {
				t.Skip("in-memory adapter: separate Lockers are separate processes and share nothing by design")
			}
			// Distributed backends outlive the test: a fresh key per run
			// keeps runs and parallel packages apart.
			tc.run(t, s, "locktest:"+tc.name+":"+random())
		})
	}
}

func random() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func take(l lock.Locker, exclusive bool) func(context.Context, string) (func(), error) {
	if exclusive {
		return l.Lock
	}
	return l.RLock
}

func mode(exclusive bool) string {
	if exclusive {
		return "Lock"
	}
	return "RLock"
}

// mustTake takes key or fails the test; the lock is released at cleanup
// at the latest.
func mustTake(t *testing.T, l lock.Locker, key string, exclusive bool) func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	unlock, err := take(l, exclusive)(ctx, key)
	if err != nil {
		t.Fatalf("%s(%q): %v", mode(exclusive), key, err)
	}
	t.Cleanup(unlock)
	return unlock
}

// try attempts key with an already expired ctx and reports whether it was
// taken. A refusal must be ctx's error and must come promptly.
func try(t *testing.T, l lock.Locker, key string, exclusive bool) (func(), bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	start := time.Now()
	unlock, err := take(l, exclusive)(ctx, key)
	if d := time.Since(start); d > patience {
		t.Fatalf("try-%s(%q) took %v", mode(exclusive), key, d)
	}
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("try-%s(%q) with an expired ctx: want an error wrapping ctx.Err(), got %v", mode(exclusive), key, err)
		}
		return nil, false
	}
	t.Cleanup(unlock)
	return unlock, true
}

func wantFree(t *testing.T, l lock.Locker, key string, exclusive bool) {
	t.Helper()
	unlock, ok := try(t, l, key, exclusive)
	if !ok {
		t.Fatalf("try-%s(%q) refused on a key that should be free", mode(exclusive), key)
	}
	unlock()
}

func wantBusy(t *testing.T, l lock.Locker, key string, exclusive bool) {
	t.Helper()
	if _, ok := try(t, l, key, exclusive); ok {
		t.Fatalf("try-%s(%q) succeeded on a key that should be held", mode(exclusive), key)
	}
}

// background starts taking key with no deadline; the returned channel
// yields once it holds the key. Whatever it takes is released at cleanup.
func background(t *testing.T, l lock.Locker, key string, exclusive bool) <-chan func() {
	t.Helper()
	got := make(chan func(), 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		unlock, err := take(l, exclusive)(ctx, key)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("background %s(%q): %v", mode(exclusive), key, err)
			}
			return
		}
		got <- unlock
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		select {
		case unlock := <-got:
			unlock()
		default:
		}
	})
	return got
}

func wantWaiting(t *testing.T, got <-chan func(), what string) {
	t.Helper()
	select {
	case unlock := <-got:
		unlock()
		t.Fatalf("%s did not wait", what)
	case <-time.After(blocked):
	}
}

func wantGot(t *testing.T, got <-chan func(), what string) func() {
	t.Helper()
	select {
	case unlock := <-got:
		return unlock
	case <-time.After(patience):
		t.Fatalf("%s never got the lock", what)
		return nil
	}
}

func testExclusion(t *testing.T, s Suite, key string) {
	l := s.Open(t)
	exclusion(t, []lock.Locker{l}, key)
}

// exclusion runs writers on key from every Locker in ls and checks that
// never two are inside at once.
func exclusion(t *testing.T, ls []lock.Locker, key string) {
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for i := range 6 {
		l := ls[i%len(ls)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), 4*patience)
				unlock, err := l.Lock(ctx, key)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(5 * time.Millisecond)
				inside.Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Fatalf("writers overlapped: %d inside at once", m)
	}
}

func testReadersShare(t *testing.T, s Suite, key string) {
	l := s.Open(t)
	r1 := mustTake(t, l, key, false)
	r2 := mustTake(t, l, key, false) // would time out if readers excluded each other
	wantBusy(t, l, key, true)
	r1()
	wantBusy(t, l, key, true)
	r2()
	wantFree(t, l, key, true)
}

func testWriterExcludesReaders(t *testing.T, s Suite, key string) {
	l := s.Open(t)
	w := mustTake(t, l, key, true)
	wantBusy(t, l, key, false)
	wantBusy(t, l, key, true)
	reader := background(t, l, key, false)
	wantWaiting(t, reader, "a reader while a writer held the key")
	w()
	wantGot(t, reader, "the reader after the writer left")()
}

func testReaderExcludesWriter(t *testing.T, s Suite, key string) {
	l := s.Open(t)
	r := mustTake(t, l, key, false)
	writer := background(t, l, key, true)
	wantWaiting(t, writer, "a writer while a reader held the key")
	r()
	wantGot(t, writer, "the writer after the reader left")()
}

func testDifferentKeys(t *testing.T, s Suite, key string) {
	l := s.Open(t)
	mustTake(t, l, key+":a", true)
	mustTake(t, l, key+":b", false)
	wantFree(t, l, key+":c", true)
	wantFree(t, l, key+":b", false)
	wantBusy(t, l, key+":a", false)
}

func testCancelWhileWaiting(t *testing.T, s Suite, key string) {
	l := s.Open(t)
	w := mustTake(t, l, key, true)
	for _, exclusive := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), blocked)
		_, err := take(l, exclusive)(ctx, key)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s waiting past its deadline: want DeadlineExceeded, got %v", mode(exclusive), err)
		}
	}
	w()
	// Had an abandoned attempt ended up holding or queued, this would fail.
	wantFree(t, l, key, true)
}

func testCancelledWriter(t *testing.T, s Suite, key string) {
	l := s.Open(t)
	r := mustTake(t, l, key, false)
	ctx, cancel := context.WithTimeout(context.Background(), blocked)
	_, err := l.Lock(ctx, key)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("writer waiting on a reader: want DeadlineExceeded, got %v", err)
	}
	// The abandoned writer must not hold back new readers.
	wantFree(t, l, key, false)
	wantBusy(t, l, key, true)
	r()
	wantFree(t, l, key, true)
}

func testTryLock(t *testing.T, s Suite, key string) {
	l := s.Open(t)
	for _, exclusive := range []bool{true, false} {
		wantFree(t, l, key, exclusive)
	}
	w := mustTake(t, l, key, true)
	wantBusy(t, l, key, true)
	wantBusy(t, l, key, false)
	w()
	r := mustTake(t, l, key, false)
	wantFree(t, l, key, false)
	wantBusy(t, l, key, true)
	r()
}

func testUnlockTwice(t *testing.T, s Suite, key string) {
	l := s.Open(t)
	w := mustTake(t, l, key, true)
	w()
	w()
	r1 := mustTake(t, l, key, false)
	r2 := mustTake(t, l, key, false)
	r1()
	r1() // must not release r2's share
	wantBusy(t, l, key, true)
	r2()
	wantFree(t, l, key, true)
}

func testWriterPreference(t *testing.T, s Suite, key string) {
	l := s.Open(t)
	r := mustTake(t, l, key, false)
	writer := background(t, l, key, true)
	wantWaiting(t, writer, "a writer while a reader held the key")
	wantBusy(t, l, key, false)
	r()
	wantGot(t, writer, "the waiting writer")()
}

func testTwoInstances(t *testing.T, s Suite, key string) {
	a, b := s.Open(t), s.Open(t)
	w := mustTake(t, a, key, true)
	wantBusy(t, b, key, true)
	wantBusy(t, b, key, false)
	w()
	r := mustTake(t, a, key, false)
	wantFree(t, b, key, false)
	wantBusy(t, b, key, true)
	writer := background(t, b, key, true)
	wantWaiting(t, writer, "the second instance's writer")
	r()
	w = wantGot(t, writer, "the second instance's writer")
	wantBusy(t, a, key, false)
	w()
	wantFree(t, a, key, true)
}

func testTwoInstancesContention(t *testing.T, s Suite, key string) {
	exclusion(t, []lock.Locker{s.Open(t), s.Open(t)}, key)
}
