package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestConnectionPragmas: the pragmas are per connection, so every pooled
// connection must have them, not just the first.
func TestConnectionPragmas(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "grove.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Hold several connections at once so the pool must open new ones.
	var conns []*sql.Conn
	for range 3 {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	tests := []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"foreign_keys", "1"},
		{"synchronous", "1"}, // NORMAL
		{"busy_timeout", "5000"},
	}
	for i, c := range conns {
		for _, tc := range tests {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
				t.Fatalf("PRAGMA %s: %v", tc.pragma, err)
			}
			if got != tc.want {
				t.Errorf("connection %d: PRAGMA %s = %s, want %s", i, tc.pragma, got, tc.want)
			}
		}
	}
}
