package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/storetest"
)

func TestKeyConformance(t *testing.T) {
	storetest.RunKeys(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "grove.db"))
	})
}
