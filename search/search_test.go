package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/testenv"
)

func tree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestArgs(t *testing.T) {
	args, err := Args(grove.SearchRequest{Pattern: "--pre=sh", Path: "-rf", Glob: "-x", FixedString: true, CaseInsensitive: true, Context: 2})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(args, "--")
	if i < 0 || !slices.Equal(args[i+1:], []string{"--pre=sh", "-rf"}) {
		t.Errorf("pattern and path must follow --: %q", args)
	}
	for _, want := range []string{"--json", "--fixed-strings", "--ignore-case", "--context=2", "--glob=-x", "--no-config"} {
		if !slices.Contains(args[:i], want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	bad := []grove.SearchRequest{
		{},
		{Pattern: "a\x00b"},
		{Pattern: "x", Path: "../etc"},
		{Pattern: "x", Path: "/etc"},
		{Pattern: "x", Path: ".git"},
		{Pattern: "x", Context: -1},
		{Pattern: "x", Context: MaxContext + 1},
		{Pattern: "x", Offset: -1},
		{Pattern: "x", Glob: "a\nb"},
	}
	for _, req := range bad {
		if _, err := Args(req); err == nil {
			t.Errorf("Args(%+v) accepted", req)
		}
	}
}

func TestRun(t *testing.T) {
	testenv.RequireBinary(t, "rg", "rg")
	dir := tree(t, map[string]string{
		"a.txt":           "one\ntwo foo\nthree\nfour foo\nfive\nsix\nseven\n",
		"sub/b.go":        "package foo\n",
		"bin.dat":         "foo\x00binary",
		"bad\xffname.txt": "caf\xe9 foo\n",
		".hidden":         "foo\n",
		"long.txt":        "foo" + strings.Repeat("x", 5000) + "\n",
		"-dash.txt":       "Foo\n",
	})
	ctx := context.Background()
	tests := []struct {
		name string
		req  grove.SearchRequest
		want []grove.SearchMatch
	}{
		{"context", grove.SearchRequest{Pattern: "foo", Path: "a.txt", Context: 1}, []grove.SearchMatch{
			{Path: "a.txt", Line: 2, Text: "two foo", Before: []string{"one"}, After: []string{"three"}},
			{Path: "a.txt", Line: 4, Text: "four foo", Before: []string{"three"}, After: []string{"five"}},
		}},
		// Overlapping windows: a nearby match is part of the other's context.
		{"overlapping context", grove.SearchRequest{Pattern: "foo", Path: "a.txt", Context: 2}, []grove.SearchMatch{
			{Path: "a.txt", Line: 2, Text: "two foo", Before: []string{"one"}, After: []string{"three", "four foo"}},
			{Path: "a.txt", Line: 4, Text: "four foo", Before: []string{"two foo", "three"}, After: []string{"five", "six"}},
		}},
		{"regex", grove.SearchRequest{Pattern: "^t\\w+ fo+$"}, []grove.SearchMatch{{Path: "a.txt", Line: 2, Text: "two foo"}}},
		{"fixed string", grove.SearchRequest{Pattern: "o f", FixedString: true, Path: "a.txt"}, []grove.SearchMatch{{Path: "a.txt", Line: 2, Text: "two foo"}}},
		{"case insensitive, dash file", grove.SearchRequest{Pattern: "^foo$", CaseInsensitive: true, Glob: "-*"}, []grove.SearchMatch{{Path: "-dash.txt", Line: 1, Text: "Foo"}}},
		{"glob", grove.SearchRequest{Pattern: "foo", Glob: "*.go"}, []grove.SearchMatch{{Path: "sub/b.go", Line: 1, Text: "package foo"}}},
		{"non-UTF-8 name and text", grove.SearchRequest{Pattern: "caf", Glob: "bad*"}, []grove.SearchMatch{{Path: "bad\xffname.txt", Line: 1, Text: "caf\xe9 foo"}}},
		{"long line clipped", grove.SearchRequest{Pattern: "foox", Path: "long.txt"}, []grove.SearchMatch{{Path: "long.txt", Line: 1, Text: "foo" + strings.Repeat("x", MaxLineBytes-3) + "…"}}},
		{"no match", grove.SearchRequest{Pattern: "nothing-matches-this"}, []grove.SearchMatch{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(ctx, dir, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Matches, tt.want) || res.Truncated || res.Total != len(tt.want) {
				t.Errorf("got %#v (total %d truncated %v)\nwant %#v", res.Matches, res.Total, res.Truncated, tt.want)
			}
		})
	}

	t.Run("binary and hidden files skipped", func(t *testing.T) {
		res, err := Run(ctx, dir, grove.SearchRequest{Pattern: "foo"})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Matches {
			if m.Path == "bin.dat" || m.Path == ".hidden" {
				t.Errorf("searched %s", m.Path)
			}
		}
		if len(res.Matches) != 5 {
			t.Errorf("got %d matches, want 5: %+v", len(res.Matches), res.Matches)
		}
	})

	errs := []struct {
		name string
		req  grove.SearchRequest
		kind error
	}{
		{"invalid regex", grove.SearchRequest{Pattern: "foo("}, grove.ErrInvalid},
		{"missing path", grove.SearchRequest{Pattern: "x", Path: "nope"}, grove.ErrNotFound},
		{"escaping path", grove.SearchRequest{Pattern: "x", Path: "../x"}, grove.ErrPathOutside},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(ctx, dir, tt.req)
			if !errors.Is(err, tt.kind) {
				t.Errorf("got %v, want %v", err, tt.kind)
			}
			if tt.kind == grove.ErrInvalid && !strings.Contains(err.Error(), "unclosed group") {
				t.Errorf("regex error %q lacks rg's message", err)
			}
		})
	}
}

func TestRunSymlinkOutside(t *testing.T) {
	testenv.RequireBinary(t, "rg", "rg")
	outside := tree(t, map[string]string{"secret": "password foo\n"})
	dir := tree(t, map[string]string{"a": "foo\n"})
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), dir, grove.SearchRequest{Pattern: "password", Path: "out"}); !errors.Is(err, grove.ErrPathOutside) {
		t.Errorf("search through outside symlink: %v, want ErrPathOutside", err)
	}
	res, err := Run(context.Background(), dir, grove.SearchRequest{Pattern: "password"})
	if err != nil || len(res.Matches) != 0 {
		t.Errorf("whole-tree search followed the symlink: %+v, %v", res, err)
	}
}

func TestRunPagination(t *testing.T) {
	testenv.RequireBinary(t, "rg", "rg")
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("d%d/f%02d.txt", i%3, i)] = strings.Repeat("match here\nno\n", 7)
	}
	dir := tree(t, files)
	ctx := context.Background()
	all, err := Run(ctx, dir, grove.SearchRequest{Pattern: "match", Context: 1, MaxResults: MaxResults})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Matches) != 210 || all.Truncated || all.Total != 210 {
		t.Fatalf("one page: %d matches, total %d, truncated %v", len(all.Matches), all.Total, all.Truncated)
	}
	var paged []grove.SearchMatch
	offset, pages := 0, 0
	for {
		res, err := Run(ctx, dir, grove.SearchRequest{Pattern: "match", Context: 1, MaxResults: 25, Offset: offset})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		paged = append(paged, res.Matches...)
		if !res.Truncated {
			break
		}
		if res.NextOffset != offset+25 || res.Total <= res.NextOffset {
			t.Fatalf("page at %d: next %d total %d", offset, res.NextOffset, res.Total)
		}
		offset = res.NextOffset
	}
	if pages != 9 || !reflect.DeepEqual(paged, all.Matches) {
		t.Errorf("%d pages; paged results differ from one big page", pages)
	}
}

func TestRunNotInstalled(t *testing.T) {
	dir := t.TempDir()
	_, err := Runner{Binary: "/nonexistent/rg"}.Run(context.Background(), dir, grove.SearchRequest{Pattern: "x"})
	if !errors.Is(err, grove.ErrNotInstalled) || !strings.Contains(err.Error(), "install ripgrep") {
		t.Errorf("got %v, want ErrNotInstalled naming ripgrep", err)
	}
}

// TestRunIgnoresCallerStdin: rg reads stdin instead of the tree when no
// path is given and stdin is a pipe; Run must search the tree regardless.
func TestRunIgnoresCallerStdin(t *testing.T) {
	testenv.RequireBinary(t, "rg", "rg")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.WriteString("foo from stdin\n")
	w.Close()
	saved := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = saved }()
	dir := tree(t, map[string]string{"a": "foo\n"})
	res, err := Run(context.Background(), dir, grove.SearchRequest{Pattern: "foo"})
	if err != nil || len(res.Matches) != 1 || res.Matches[0].Path != "a" {
		t.Errorf("got %+v, %v", res, err)
	}
}
