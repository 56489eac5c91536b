package gitrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSnapshotKey(t *testing.T) {
	a, b := SnapshotKey("alice|p|github.com|o/r|edit|c1"), SnapshotKey("alice|p|github.com|o/r|edit|c2")
	if a == b {
		t.Fatal("two workspace keys share a snapshot name")
	}
	if a != SnapshotKey("alice|p|github.com|o/r|edit|c1") {
		t.Fatal("a key's snapshot name is not stable")
	}
	if err := ValidateRef(SavedPrefix + a); err != nil || strings.ContainsAny(a, "/.") {
		t.Fatalf("snapshot name %q is not a plain ref component: %v", a, err)
	}
}

func TestDefaultBranchReadsTheCacheHEAD(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ head, want string }{
		{"ref: refs/heads/main\n", "main"},
		{"ref: refs/heads/release/2.x\n", "release/2.x"},
		{"0123456789abcdef0123456789abcdef01234567\n", ""},
	} {
		os.WriteFile(filepath.Join(dir, "HEAD"), []byte(tc.head), 0o644)
		if got, err := DefaultBranch(dir); err != nil || got != tc.want {
			t.Errorf("HEAD %q: got %q %v, want %q", tc.head, got, err, tc.want)
		}
	}
	if _, err := DefaultBranch(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing cache gave no error")
	}
}
