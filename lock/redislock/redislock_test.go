package redislock_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/lock"
	"github.com/grove-dev/grove/lock/locktest"
	"github.com/grove-dev/grove/lock/redislock"
)

func serverURL(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("GROVE_TEST_REDIS_ADDR")
	testenv.Require(t, "redis", addr != "", "GROVE_TEST_REDIS_ADDR unset (scripts/services.sh start)")
	return "redis://" + addr
}

// run is a namespace shared by the Lockers one test opens (they stand for
// processes on one server) and by nothing else.
var run = func() string { var b [6]byte; rand.Read(b[:]); return hex.EncodeToString(b[:]) }()

func open(t *testing.T, opts redislock.Options) *redislock.Locker {
	t.Helper()
	opts.Prefix = "grovetest:" + run + ":" + t.Name() + ":"
	l, err := redislock.Open(context.Background(), serverURL(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Suite{
		Open:        func(t *testing.T) lock.Locker { return open(t, redislock.Options{}) },
		Distributed: true,
	})
}

// A process that dies holding a lock frees it after one lease.
func TestLeaseOfADeadHolderExpires(t *testing.T) {
	dead := open(t, redislock.Options{TTL: 300 * time.Millisecond})
	if _, err := dead.Lock(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	dead.Close() // renewal stops failing silently; the lease runs out
	alive := open(t, redislock.Options{TTL: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t0 := time.Now()
	unlock, err := alive.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("the dead holder's lease never expired: %v", err)
	}
	unlock()
	if waited := time.Since(t0); waited > 2*time.Second {
		t.Fatalf("waited %s for a 300ms lease", waited)
	}
}

// Renewal keeps a lock held far past its lease while the holder lives.
func TestRenewalKeepsALiveLock(t *testing.T) {
	a := open(t, redislock.Options{TTL: 300 * time.Millisecond})
	b := open(t, redislock.Options{TTL: 300 * time.Millisecond})
	unlock, err := a.Lock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := b.RLock(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a reader got in while a renewed writer held the key: %v", err)
	}
}

// A lease removed behind the holder's back is reported as lost at unlock.
func TestLostLeaseIsLogged(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	l := open(t, redislock.Options{Logger: slog.New(slog.NewTextHandler(&lockedWriter{&logs, &mu}, nil))})
	unlock, err := l.Lock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("GROVE_TEST_REDIS_ADDR")})
	defer rdb.Close()
	if err := rdb.Del(context.Background(), "grovetest:"+run+":"+t.Name()+":k:w").Err(); err != nil {
		t.Fatal(err)
	}
	unlock()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "lock lost") {
		t.Fatalf("no loss logged: %q", logs.String())
	}
}

func TestUnreachableServer(t *testing.T) {
	_, err := redislock.Open(context.Background(), "redis://127.0.0.1:1", redislock.Options{})
	if !errors.Is(err, grove.ErrUnavailable) {
		t.Fatalf("want ErrUnavailable, got %v", err)
	}
	if _, err := redislock.Open(context.Background(), "not a url", redislock.Options{}); !errors.Is(err, grove.ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
