package fsops

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in   string
		want string
		kind error
	}{
		{"", ".", nil},
		{".", ".", nil},
		{"./", ".", nil},
		{"a/b", "a/b", nil},
		{"a//b/./c/", "a/b/c", nil},
		{"a/../b", "b", nil},
		{"%2e%2e/x", "%2e%2e/x", nil},
		{`..\x`, `..\x`, nil}, // a backslash is a name character on Linux
		{"bad\xffname", "bad\xffname", nil},
		{"-rf", "-rf", nil},
		{".gitignore", ".gitignore", nil},
		{"a/.github/x", "a/.github/x", nil},
		{"..", "", grove.ErrPathOutside},
		{"../x", "", grove.ErrPathOutside},
		{"a/../../x", "", grove.ErrPathOutside},
		{"/etc/passwd", "", grove.ErrPathOutside},
		{"/", "", grove.ErrPathOutside},
		{".git", "", grove.ErrPathOutside},
		{".git/hooks/pre-commit", "", grove.ErrPathOutside},
		{"a/../.git/config", "", grove.ErrPathOutside},
		{"sub/.GIT/config", "", grove.ErrPathOutside},
		{"a\x00b", "", grove.ErrInvalid},
		{"a\nb", "", grove.ErrInvalid},
		{"a\x1b[31m", "", grove.ErrInvalid},
		{"a\x7f", "", grove.ErrInvalid},
	}
	for _, tt := range tests {
		got, err := CleanPath(tt.in)
		if tt.kind != nil {
			if !errors.Is(err, tt.kind) {
				t.Errorf("CleanPath(%q) = %q, %v; want %v", tt.in, got, err, tt.kind)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestRel(t *testing.T) {
	tests := []struct {
		root, abs, want string
		kind            error
	}{
		{"/ws", "/ws", ".", nil},
		{"/ws", "/ws/a/b", "a/b", nil},
		{"/ws/", "/ws/a/../b", "b", nil},
		{"/ws", "/wsx/a", "", grove.ErrPathOutside},
		{"/ws", "/etc/passwd", "", grove.ErrPathOutside},
		{"/ws", "/ws/.git/config", "", grove.ErrPathOutside},
		{"/ws", "relative", "", grove.ErrInvalid},
	}
	for _, tt := range tests {
		got, err := Rel(tt.root, tt.abs)
		if tt.kind != nil {
			if !errors.Is(err, tt.kind) {
				t.Errorf("Rel(%q, %q) = %q, %v; want %v", tt.root, tt.abs, got, err, tt.kind)
			}
			if err != nil && strings.Contains(err.Error(), tt.abs) && tt.kind == grove.ErrPathOutside {
				t.Errorf("Rel error %q echoes the host path", err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Rel(%q, %q) = %q, %v; want %q", tt.root, tt.abs, got, err, tt.want)
		}
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"", ".", "a/b", "../x", "a/../../x", "/etc", ".git/x", "a/.git", "x\x00", "%2e%2e", "a/./b//c/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := CleanPath(p)
		if err != nil {
			if !errors.Is(err, grove.ErrPathOutside) && !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("CleanPath(%q): untyped error %v", p, err)
			}
			return
		}
		const root = "/root/ws"
		j := filepath.Join(root, c)
		if j != root && !strings.HasPrefix(j, root+"/") {
			t.Fatalf("CleanPath(%q) = %q escapes: %q", p, c, j)
		}
		for _, part := range strings.Split(c, "/") {
			if part == ".." || strings.EqualFold(part, ".git") {
				t.Fatalf("CleanPath(%q) = %q keeps %q", p, c, part)
			}
		}
		if again, err := CleanPath(c); err != nil || again != c {
			t.Fatalf("CleanPath not idempotent: %q -> %q -> %q, %v", p, c, again, err)
		}
	})
}
