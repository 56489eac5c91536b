package tools

import (
	"strings"
	"testing"
)

// BenchmarkEditLargeFile edits a 200,000-line file with a 200-line
// old_string that matches nowhere but whose lines all occur in the file:
// the worst case of the whitespace-insensitive "did you mean" search.
func BenchmarkEditLargeFile(b *testing.B) {
	content := strings.Repeat("\tx := 1\n", 200_000)
	old := strings.Repeat("\tx := 1\n", 200) + "\tnope\n"
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		if _, err := replaceExact(content, old, "y", false); err == nil {
			b.Fatal("matched")
		}
	}
}
