package rmtree

import (
	"os"
	"path/filepath"
	"testing"
)

// A directory moved out from under the walk (by a process an agent left
// behind) makes RemoveAll stop instead of climbing into, and emptying, a
// directory outside the tree.
func TestClimbChecksWhereItCameFrom(t *testing.T) {
	base := t.TempDir()
	tree := filepath.Join(base, "tree")
	deep := filepath.Join(tree, "a", "b", "c")
	if err := os.MkdirAll(filepath.Join(deep, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(deep, "d", "f"), []byte("x"), 0o644)
	keep := filepath.Join(base, "keep.txt") // beside the tree, never to be deleted
	os.WriteFile(keep, []byte("precious"), 0o644)

	testHookDescended = func(down []string) {
		if len(down) == 4 { // inside a/b/c/d: move c to the base, above the tree
			os.Rename(deep, filepath.Join(base, "moved"))
		}
	}
	defer func() { testHookDescended = nil }()
	if err := RemoveAll(tree); err == nil {
		t.Fatal("the walk climbed through a moved directory without noticing")
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "precious" {
		t.Fatalf("a file outside the tree was deleted: %v", err)
	}
}
