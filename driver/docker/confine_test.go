package docker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

func confineRoot(t testing.TB) (root, outside string) {
	base := t.TempDir()
	root = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub", "deep"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(outside, filepath.Join(root, "escape"))
	os.Symlink("sub", filepath.Join(root, "inlink"))
	os.WriteFile(filepath.Join(root, "file"), nil, 0o644)
	return root, outside
}

func TestConfine(t *testing.T) {
	root, _ := confineRoot(t)
	cases := []struct {
		dir  string
		want string // relative to root; "" when an error is expected
		kind error
	}{
		{"", ".", nil},
		{".", ".", nil},
		{"sub", "sub", nil},
		{"sub/deep/..", "sub", nil},
		{"inlink/deep", "sub/deep", nil},
		{"..", "", grove.ErrPathOutside},
		{"sub/../../x", "", grove.ErrPathOutside},
		{"/etc", "", grove.ErrPathOutside},
		{"escape", "", grove.ErrPathOutside},
		{"missing", "", grove.ErrNotFound},
		{"file", "", grove.ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			got, err := confine(root, c.dir)
			if c.kind != nil {
				if !errors.Is(err, c.kind) {
					t.Fatalf("confine(%q) = %q, %v; want %v", c.dir, got, err, c.kind)
				}
				return
			}
			if err != nil || got != filepath.Join(root, c.want) {
				t.Fatalf("confine(%q) = %q, %v; want %s", c.dir, got, err, c.want)
			}
		})
	}
}

func FuzzConfine(f *testing.F) {
	for _, s := range []string{"", "sub", "../x", "escape/..", "inlink/../..", "a\x00b", "/"} {
		f.Add(s)
	}
	root, outside := confineRoot(f)
	f.Fuzz(func(t *testing.T, dir string) {
		got, err := confine(root, dir)
		if err != nil {
			return
		}
		real, err := filepath.EvalSymlinks(got)
		if err != nil {
			t.Fatalf("confine(%q) = %q, which does not resolve: %v", dir, got, err)
		}
		if real != root && !strings.HasPrefix(real, root+"/") || strings.HasPrefix(real, outside) {
			t.Fatalf("confine(%q) = %q escapes to %q", dir, got, real)
		}
	})
}

func FuzzRequestEnv(f *testing.F) {
	f.Add("K", "v")
	f.Add("A=B", "v")
	f.Add("", "")
	f.Add("K", "a\x00b")
	f.Fuzz(func(t *testing.T, k, v string) {
		env, err := requestEnv(map[string]string{k: v})
		if err != nil {
			return
		}
		for _, e := range env {
			name, _, ok := strings.Cut(e, "=")
			if !ok || name == "" || strings.IndexByte(e, 0) >= 0 {
				t.Fatalf("requestEnv let %q through", e)
			}
		}
	})
}
