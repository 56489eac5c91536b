package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/sqlite"
	"github.com/grove-dev/grove/store/storetest"
)

func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "grove.db"))
	})
}
