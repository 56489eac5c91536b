package pglock_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/lock"
	"github.com/grove-dev/grove/lock/locktest"
	"github.com/grove-dev/grove/lock/pglock"
)

func dsn(t *testing.T) string {
	t.Helper()
	d := os.Getenv("GROVE_TEST_POSTGRES_DSN")
	testenv.Require(t, "postgres", d != "", "GROVE_TEST_POSTGRES_DSN is not set (eval \"$(scripts/services.sh start)\")")
	return d
}

func open(t *testing.T, opts pglock.Options) *pglock.Locker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := pglock.Open(ctx, dsn(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func TestConformance(t *testing.T) {
	dsn(t)
	locktest.Run(t, locktest.Suite{
		Open:        func(t *testing.T) lock.Locker { return open(t, pglock.Options{}) },
		Distributed: true,
	})
}

func TestPoolExhaustedIsResourceLimit(t *testing.T) {
	l := open(t, pglock.Options{MaxConns: 2, PoolWait: 100 * time.Millisecond})
	ctx := context.Background()
	for _, k := range []string{"pool-a", "pool-b"} {
		unlock, err := l.Lock(ctx, "pglock-test:"+k+":"+t.Name())
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
	}
	_, err := l.Lock(ctx, "pglock-test:pool-c:"+t.Name())
	if !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("third key with a pool of two: want ErrResourceLimit, got %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		dsn  string
		want error
	}{
		{"unreachable server", "postgres://grove:s3cretpw@127.0.0.1:1/grove?sslmode=disable&connect_timeout=2", grove.ErrUnavailable},
		{"malformed", "postgres://grove:s3cretpw@127.0.0.1:notaport/grove", grove.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := pglock.Open(ctx, tc.dsn, pglock.Options{})
			if err == nil {
				l.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
			if strings.Contains(err.Error(), "s3cretpw") {
				t.Fatalf("the password leaked into the error: %v", err)
			}
		})
	}
}
