package tools

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A 200-line old_string whose lines all occur in a 1M-line file but never
// in that order: the old whitespace-insensitive search compared about
// 1M × 200 lines (about 5 s); the linear one hashes each line once. The
// time bound is generous: benchmarks measure speed.
func TestEditNoMatchLargeFile(t *testing.T) {
	content := strings.Repeat("\tx := 1\n", 1_000_000)
	old := strings.Repeat("\tx := 1\n", 200) + "\tnope\n"
	start := time.Now()
	_, err := replaceExact(content, old, "y", false)
	var te *Error
	if !errors.As(err, &te) || te.Code != "E_NOT_FOUND" {
		t.Fatalf("err = %v, want E_NOT_FOUND", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	// The whitespace-insensitive match is still found, at the end.
	_, err = replaceExact(content+"  nope\n", strings.Repeat("x := 1\n", 200)+"nope", "y", false)
	if !errors.As(err, &te) || !strings.Contains(te.Hint, "matches at line 999801 if whitespace is ignored") {
		t.Fatalf("err = %v", err)
	}
}

func TestEditCancelled(t *testing.T) {
	content := strings.Repeat("\tx := 1\n", 100_000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, old := range []string{"\tx := 1\n\tx := 2", "\tx := 1\n"} {
		if _, err := replaceExactContext(ctx, content, old, "y", true); !errors.Is(err, context.Canceled) || Code(err) != "E_CANCELLED" {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	}
}
