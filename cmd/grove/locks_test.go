package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/lock/filelock"
	locallock "github.com/grove-dev/grove/lock/local"
	"github.com/grove-dev/grove/lock/pglock"
	"github.com/grove-dev/grove/lock/redislock"
)

func TestOpenLocks(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		wantErr error
		check   func(t *testing.T, l any)
	}{
		{name: "default is file locks under the root", spec: "", check: isFile},
		{name: "file", spec: "file", check: isFile},
		{name: "local", spec: "local", check: isLocal},
		{name: "redis unreachable", spec: "redis://:s3cretpw@127.0.0.1:1", wantErr: grove.ErrUnavailable},
		{name: "unknown never echoes the value", spec: "mysql://u:s3cretpw@h/db", wantErr: grove.ErrInvalid},
		{name: "postgres unreachable", spec: "postgres://u:s3cretpw@127.0.0.1:1/db?connect_timeout=2", wantErr: grove.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, closeLocks, err := openLocks(context.Background(), tc.spec, t.TempDir(), nil)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("want %v, got %v", tc.wantErr, err)
				}
				if strings.Contains(err.Error(), "s3cretpw") {
					t.Fatalf("the password leaked: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer closeLocks()
			tc.check(t, l)
		})
	}
}

func isLocal(t *testing.T, l any) {
	if _, ok := l.(*locallock.Locker); !ok {
		t.Fatalf("got %T, want *local.Locker", l)
	}
}

func TestOpenLocksPostgres(t *testing.T) {
	dsn := os.Getenv("GROVE_TEST_POSTGRES_DSN")
	testenv.Require(t, "postgres", dsn != "", "GROVE_TEST_POSTGRES_DSN is not set")
	l, closeLocks, err := openLocks(context.Background(), dsn, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLocks()
	if _, ok := l.(*pglock.Locker); !ok {
		t.Fatalf("got %T, want *pglock.Locker", l)
	}
}

func TestOpenLocksRedis(t *testing.T) {
	addr := os.Getenv("GROVE_TEST_REDIS_ADDR")
	testenv.Require(t, "redis", addr != "", "GROVE_TEST_REDIS_ADDR is not set")
	l, closeLocks, err := openLocks(context.Background(), "redis://"+addr, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLocks()
	if _, ok := l.(*redislock.Locker); !ok {
		t.Fatalf("got %T, want *redislock.Locker", l)
	}
}

func isFile(t *testing.T, l any) {
	if _, ok := l.(*filelock.Locker); !ok {
		t.Fatalf("got %T, want *filelock.Locker", l)
	}
}
