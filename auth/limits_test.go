package auth_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/store/memory"
)

func TestInflightRevokeCancelsTrackedWork(t *testing.T) {
	var in auth.Inflight
	a1, done1 := in.Track(context.Background(), "key_a")
	a2, done2 := in.Track(context.Background(), "key_a")
	b, doneB := in.Track(context.Background(), "key_b")
	defer doneB()
	in.Revoke("key_a")
	for _, ctx := range []context.Context{a1, a2} {
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		if ctx.Err() == nil || !auth.IsRevoked(context.Cause(ctx)) || !errors.Is(context.Cause(ctx), grove.ErrUnauthorized) {
			t.Errorf("revoked key's work: err %v cause %v", ctx.Err(), context.Cause(ctx))
		}
	}
	if b.Err() != nil {
		t.Error("another key's work was cancelled")
	}
	done1()
	done2()
	if n := in.Active(); n != 1 {
		t.Errorf("active keys: %d, want 1", n)
	}
	doneB()
	if n := in.Active(); n != 0 {
		t.Errorf("active keys after done: %d", n)
	}
}

// A key revoked in the store by another process is found by the sweep,
// which runs only while work is tracked.
func TestInflightSweepFindsStoreRevocation(t *testing.T) {
	st := memory.New()
	keys := &auth.Keys{Store: st}
	ctx := context.Background()
	rec, _, err := keys.Create(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	var checks atomic.Int32
	in := &auth.Inflight{Every: 20 * time.Millisecond, Check: func(ctx context.Context, ids []string) ([]string, error) {
		checks.Add(1)
		return keys.Revoked(ctx, ids)
	}}
	before := runtime.NumGoroutine()
	work, done := in.Track(ctx, rec.ID)
	time.Sleep(60 * time.Millisecond)
	if work.Err() != nil {
		t.Fatal("cancelled before revocation")
	}
	if err := keys.Revoke(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-work.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("revocation in the store did not cancel the work")
	}
	done()
	// With nothing tracked the sweep goroutine ends and stops asking.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	n := checks.Load()
	time.Sleep(100 * time.Millisecond)
	if checks.Load() != n || runtime.NumGoroutine() > before {
		t.Errorf("the sweep goes on with nothing tracked: checks %d→%d, goroutines %d (before %d)", n, checks.Load(), runtime.NumGoroutine(), before)
	}
}

func TestFailureLimiterBacksOff(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &auth.FailureLimiter{Max: 3, Backoff: time.Second, MaxBackoff: 4 * time.Second, Now: func() time.Time { return now }}
	for i := range 2 {
		if d := l.Fail("192.0.2.1"); d != 0 {
			t.Fatalf("failure %d: back-off %s", i+1, d)
		}
	}
	if d := l.Fail("192.0.2.1:4444"); d != time.Second { // the port does not matter
		t.Fatalf("third failure: back-off %s, want 1s", d)
	}
	if d, ok := l.Allow("192.0.2.1"); ok || d != time.Second {
		t.Errorf("in back-off: %s %v", d, ok)
	}
	if _, ok := l.Allow("192.0.2.2"); !ok {
		t.Error("another address is limited")
	}
	now = now.Add(1100 * time.Millisecond)
	if _, ok := l.Allow("192.0.2.1"); !ok {
		t.Error("still limited after the back-off")
	}
	// The next round doubles, up to the maximum.
	var d time.Duration
	for range 3 {
		d = l.Fail("192.0.2.1")
	}
	if d != 2*time.Second {
		t.Errorf("second back-off %s, want 2s", d)
	}
	for range 9 {
		d = l.Fail("192.0.2.1")
	}
	if d != 4*time.Second {
		t.Errorf("capped back-off %s, want 4s", d)
	}
	// IPv6 counts per /64.
	l6 := &auth.FailureLimiter{Max: 2, Now: func() time.Time { return now }}
	l6.Fail("[2001:db8::1]:1")
	l6.Fail("[2001:db8::2]:1")
	if _, ok := l6.Allow("2001:db8::3"); ok {
		t.Error("IPv6 /64 not limited as one")
	}
}

func TestFailureLimiterBoundedMemory(t *testing.T) {
	l := &auth.FailureLimiter{MaxEntries: 100}
	for i := range 1000 {
		l.Fail("10.0." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250))
	}
	if n := l.Len(); n > 100 {
		t.Errorf("%d entries kept, max 100", n)
	}
}
