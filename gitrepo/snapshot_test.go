package gitrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSnapshotName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"ws_0123456789abcdef", true},
		{"A_z_9", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"a/b", false},
		{"..", false},
		{"-x", false},
		{"a b", false},
		{"a.lock", false},
		{"é", false},
	} {
		if got := SnapshotName(tc.name); got != tc.ok {
			t.Errorf("SnapshotName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
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
