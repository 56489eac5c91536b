package keylock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWriterExcludesReadersAndWriters(t *testing.T) {
	var l RW
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := l.Lock(context.Background(), "k")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			if n > maxInside.Load() {
				maxInside.Store(n)
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if maxInside.Load() != 1 {
		t.Fatalf("writers overlapped: %d inside at once", maxInside.Load())
	}
	if l.Len() != 0 {
		t.Fatalf("entries leaked: %d", l.Len())
	}
}

func TestReadersShare(t *testing.T) {
	var l RW
	ctx := context.Background()
	u1, _ := l.RLock(ctx, "k")
	done := make(chan struct{})
	go func() {
		u2, err := l.RLock(ctx, "k")
		if err == nil {
			u2()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("second reader waited for the first")
	}
	u1()
}

func TestReaderBlocksWriterUntilReleased(t *testing.T) {
	var l RW
	ctx := context.Background()
	ur, _ := l.RLock(ctx, "k")
	got := make(chan struct{})
	go func() {
		uw, err := l.Lock(ctx, "k")
		if err == nil {
			close(got)
			uw()
		}
	}()
	select {
	case <-got:
		t.Fatal("writer entered while a reader held the key")
	case <-time.After(50 * time.Millisecond):
	}
	ur()
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("writer never entered after the reader left")
	}
}

func TestDifferentKeysDoNotWait(t *testing.T) {
	var l RW
	ctx := context.Background()
	u1, _ := l.Lock(ctx, "a")
	defer u1()
	c, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	u2, err := l.Lock(c, "b")
	if err != nil {
		t.Fatalf("key b waited for key a: %v", err)
	}
	u2()
}

func TestCancelWhileWaiting(t *testing.T) {
	var l RW
	u, _ := l.Lock(context.Background(), "k")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := l.Lock(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want deadline exceeded, got %v", err)
	}
	u()
	if l.Len() != 0 {
		t.Fatalf("a cancelled waiter leaked its entry: %d", l.Len())
	}
	// The key is usable again.
	u2, err := l.Lock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	u2()
}

func TestUnlockTwiceIsHarmless(t *testing.T) {
	var l RW
	u, _ := l.Lock(context.Background(), "k")
	u()
	u()
	u2, _ := l.RLock(context.Background(), "k")
	u3, _ := l.RLock(context.Background(), "k")
	u2()
	u3()
	if l.Len() != 0 {
		t.Fatalf("entries leaked: %d", l.Len())
	}
}

func TestWaitingWriterHoldsBackNewReaders(t *testing.T) {
	var l RW
	ctx := context.Background()
	r1, _ := l.RLock(ctx, "k")
	wrote := make(chan struct{})
	go func() {
		u, err := l.Lock(ctx, "k")
		if err == nil {
			close(wrote)
			u()
		}
	}()
	// Wait until the writer is queued.
	for {
		l.mu.Lock()
		w := l.locks["k"].waiting
		l.mu.Unlock()
		if w == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := l.RLock(c, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a new reader overtook a waiting writer: %v", err)
	}
	r1()
	select {
	case <-wrote:
	case <-time.After(2 * time.Second):
		t.Fatal("writer never got the lock")
	}
}

func TestCancelledWriterReleasesHeldBackReaders(t *testing.T) {
	var l RW
	ctx := context.Background()
	r1, _ := l.RLock(ctx, "k")
	defer r1()
	wctx, cancel := context.WithCancel(ctx)
	werr := make(chan error, 1)
	go func() { _, err := l.Lock(wctx, "k"); werr <- err }()
	for {
		l.mu.Lock()
		w := l.locks["k"].waiting
		l.mu.Unlock()
		if w == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	got := make(chan struct{})
	go func() {
		u, err := l.RLock(ctx, "k")
		if err == nil {
			close(got)
			u()
		}
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-werr; !errors.Is(err, context.Canceled) {
		t.Fatalf("writer: %v", err)
	}
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("a reader held back by a cancelled writer never proceeded")
	}
}
