package procexec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

func TestResolveDir(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	must(t, os.Symlink(outside, filepath.Join(root, "out")))
	must(t, os.Symlink("a/b", filepath.Join(root, "in")))
	must(t, os.Symlink("../..", filepath.Join(root, "a", "up")))
	tests := []struct {
		dir  string
		want string
		err  error
	}{
		{"", root, nil},
		{"a/b", filepath.Join(root, "a", "b"), nil},
		{"in", filepath.Join(root, "in"), nil},
		{root + "/a", filepath.Join(root, "a"), nil},
		{"a/../a/./b/", filepath.Join(root, "a", "b"), nil},
		{"..", "", grove.ErrPathOutside},
		{"a/../../x", "", grove.ErrPathOutside},
		{"/", "", grove.ErrPathOutside},
		{root + "x", "", grove.ErrPathOutside},
		{"out", "", grove.ErrPathOutside},
		{"a/up", "", grove.ErrPathOutside},
		{"nope", "", grove.ErrNotFound},
		{"file", "", grove.ErrInvalid},
		{"a\x00b", "", grove.ErrInvalid},
	}
	for _, tt := range tests {
		got, err := ResolveDir(root, tt.dir)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("ResolveDir(%q) = %q, %v; want %v", tt.dir, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ResolveDir(%q) = %q, %v; want %q", tt.dir, got, err, tt.want)
		}
	}
}

// FuzzResolveDir: whatever the caller sends, an accepted directory is
// inside the workspace, lexically and after resolving symlinks.
func FuzzResolveDir(f *testing.F) {
	for _, s := range []string{"", ".", "a", "../x", "/etc", "a/../..", "out/x", "a/up/..", "in", "\x00", "//a//b"} {
		f.Add(s)
	}
	root := f.TempDir()
	outside := f.TempDir()
	must(f, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(f, os.Symlink(outside, filepath.Join(root, "out")))
	must(f, os.Symlink("a/b", filepath.Join(root, "in")))
	must(f, os.Symlink("../..", filepath.Join(root, "a", "up")))
	realRoot, err := filepath.EvalSymlinks(root)
	must(f, err)
	f.Fuzz(func(t *testing.T, dir string) {
		got, err := ResolveDir(root, dir)
		if err != nil {
			if grove.KindOf(err) == nil {
				t.Fatalf("ResolveDir(%q): untyped error %v", dir, err)
			}
			return
		}
		if got != root && !strings.HasPrefix(got, root+"/") {
			t.Fatalf("ResolveDir(%q) = %q escapes lexically", dir, got)
		}
		real, err := filepath.EvalSymlinks(got)
		if err != nil {
			t.Fatalf("accepted dir does not resolve: %v", err)
		}
		if real != realRoot && !strings.HasPrefix(real, realRoot+"/") {
			t.Fatalf("ResolveDir(%q) = %q resolves to %q outside the workspace", dir, got, real)
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
