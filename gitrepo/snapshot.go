package gitrepo

import (
	"crypto/sha256"
	"encoding/hex"
)

// SavedPrefix is where the work of a workspace saved before eviction is
// kept in its user's work repository: refs/grove/saved/<SnapshotKey>.
const SavedPrefix = "refs/grove/saved/"

// SnapshotKey names the snapshot of the workspace with key wsKey: the same
// name whatever id a later workspace of that key gets, so acquiring the key
// again finds (and restores) what eviction saved.
func SnapshotKey(wsKey string) string {
	sum := sha256.Sum256([]byte(wsKey))
	return "k_" + hex.EncodeToString(sum[:16])
}
