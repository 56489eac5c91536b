// Package storetest is the conformance suite every store.Store adapter
// passes. An adapter's test is a few lines:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
//	}
//
// The suite checks the contract written on package store, nothing more: an
// adapter that passes it can replace any other.
package storetest

import (
	"testing"

	"github.com/grove-dev/grove/store"
)

// Run runs the whole suite. open must return a new, empty store for each
// call; Run closes every store it opens (Close must therefore be safe even
// if the adapter's open also registers its own cleanup).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"RepoCacheCRUD", testRepoCacheCRUD},
		{"WorkspaceCRUD", testWorkspaceCRUD},
		{"RuntimeCRUD", testRuntimeCRUD},
		{"ZeroTimesStayZero", testZeroTimes},
		{"ReturnsCopies", testReturnsCopies},
		{"NotFound", testNotFound},
		{"Invalid", testInvalid},
		{"UniqueKeys", testUniqueKeys},
		{"UniqueKeysOnUpdate", testUniqueKeysOnUpdate},
		{"DetachedWorkspacesShareNoBranch", testDetachedWorkspaces},
		{"BranchUniquePerUser", testBranchPerUser},
		{"DeleteRepoCacheInUse", testDeleteRepoCacheInUse},
		{"WorkspaceNeedsRepoCache", testWorkspaceNeedsRepoCache},
		{"RuntimeNeedsWorkspace", testRuntimeNeedsWorkspace},
		{"ListWorkspacesFilterAndOrder", testListWorkspaces},
		{"ListOrder", testListOrder},
		{"TxCommit", testTxCommit},
		{"TxRollback", testTxRollback},
		{"TxRollbackAfterFailedStep", testTxRollbackAfterFailedStep},
		{"TxNested", testTxNested},
		{"TxPanic", testTxPanic},
		{"ConcurrentReadModifyWrite", testConcurrentRMW},
		{"ConcurrentCreateSameKey", testConcurrentCreate},
		{"CancelledContext", testCancelledContext},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}
