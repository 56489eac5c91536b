package fsops

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestListDir(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"b.txt", "a.txt", "z/deep/f", "m/f", "caf\xe9", ".git/HEAD", "z/.git", ".hidden"} {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte("12345"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("/etc", filepath.Join(dir, "etclink"))
	fsys, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()

	tests := []struct {
		name       string
		rel        string
		depth, max int
		want       []string
		truncated  bool
	}{
		{"depth 1", "", 1, 0, []string{"m", "z", ".hidden", "a.txt", "b.txt", "caf\xe9", "etclink"}, false},
		{"depth 2 breadth first", ".", 2, 0, []string{"m", "z", ".hidden", "a.txt", "b.txt", "caf\xe9", "etclink", "m/f", "z/deep"}, false},
		{"depth 3", ".", 3, 0, []string{"m", "z", ".hidden", "a.txt", "b.txt", "caf\xe9", "etclink", "m/f", "z/deep", "z/deep/f"}, false},
		{"capped", ".", 3, 3, []string{"m", "z", ".hidden"}, true},
		{"cap equals size", "z", 5, 2, []string{"z/deep", "z/deep/f"}, false},
		{"subdir", "z", 1, 0, []string{"z/deep"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, truncated, err := fsys.ListDir(tt.rel, tt.depth, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Path)
				if e.Name != filepath.Base(e.Path) || (!e.IsDir && e.Name == "a.txt" && e.Size != 5) {
					t.Errorf("bad entry %+v", e)
				}
			}
			if !slices.Equal(got, tt.want) || truncated != tt.truncated {
				t.Errorf("got %q truncated=%v, want %q truncated=%v", got, truncated, tt.want, tt.truncated)
			}
		})
	}
	if _, _, err := fsys.ListDir("a.txt", 1, 0); err == nil {
		t.Error("listing a file succeeded")
	}
}
