package gitrepo

// SavedPrefix is where the work of a workspace saved before eviction is
// kept in its user's work repository: refs/grove/saved/<workspace id>.
const SavedPrefix = "refs/grove/saved/"

// SnapshotName reports whether s may name a saved snapshot (the engine
// uses workspace ids).
func SnapshotName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
