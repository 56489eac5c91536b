package pglock

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/grove-dev/grove/internal/testenv"
)

// TestLostLock kills the session holding a lock, as a server restart or a
// long partition would: the server frees the key for others, and the
// holder's unlock reports the loss instead of failing silently or hanging.
func TestLostLock(t *testing.T) {
	dsn := os.Getenv("GROVE_TEST_POSTGRES_DSN")
	testenv.Require(t, "postgres", dsn != "", "GROVE_TEST_POSTGRES_DSN is not set")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var logs testenv.Buffer
	holder, err := Open(ctx, dsn, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	other, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	key := "pglock-test:lost:" + time.Now().Format(time.RFC3339Nano)
	unlock, err := holder.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	hi, lo := keyOf(key)
	var killed int
	err = admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 2 AND granted
		AND classid = ($1::int4)::bit(32)::int8::oid AND objid = ($2::int4)::bit(32)::int8::oid`, hi, lo).Scan(&killed)
	if err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("found %d sessions holding the lock, want 1", killed)
	}
	// The server freed the key: another process takes it.
	got, err := other.Lock(ctx, key)
	if err != nil {
		t.Fatalf("the key of a dead session stayed held: %v", err)
	}
	got()
	start := time.Now()
	unlock()
	if d := time.Since(start); d > 2*opTimeout {
		t.Fatalf("unlock of a lost lock took %v", d)
	}
	if !strings.Contains(logs.String(), "lock lost") {
		t.Fatalf("the loss was not logged; logs: %q", logs.String())
	}
	// The broken connection was dropped, not pooled: the holder still works.
	again, err := holder.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	again()
}
