package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/postgres"
	"github.com/grove-dev/grove/store/storetest"
)

// baseDSN is the test server's database (scripts/services.sh prints it);
// without one the tests skip, or fail where GROVE_TEST_REQUIRE names
// postgres.
func baseDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("GROVE_TEST_POSTGRES_DSN")
	testenv.Require(t, "postgres", dsn != "", "GROVE_TEST_POSTGRES_DSN unset (eval \"$(scripts/services.sh start)\")")
	return dsn
}

// admin runs one statement on the test database outside any store.
func admin(t testing.TB, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, baseDSN(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// newSchema creates an empty schema of the test's own, dropped at the end
// of the test, and returns a DSN whose search_path selects it: every test
// store starts empty and no two tests see each other's rows or locks.
func newSchema(t testing.TB) string {
	t.Helper()
	dsn := baseDSN(t)
	var b [8]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin(t, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { admin(t, "DROP SCHEMA "+schema+" CASCADE") })
	return withParam(t, dsn, "search_path", schema)
}

func withParam(t testing.TB, dsn, key, value string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("GROVE_TEST_POSTGRES_DSN must be a postgres:// URL: %v", err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func open(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, newSchema(t)) })
}

func TestKeyConformance(t *testing.T) {
	storetest.RunKeys(t, func(t *testing.T) store.Store { return open(t, newSchema(t)) })
}
