package memory_test

import (
	"testing"

	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/memory"
	"github.com/grove-dev/grove/store/storetest"
)

func TestKeyConformance(t *testing.T) {
	storetest.RunKeys(t, func(*testing.T) store.Store { return memory.New() })
}
