package search

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/testenv"
)

// The parallel path must give exactly the pages the sorted walk gives:
// same matches, same order, same context, same totals.
func TestParallelPagesEqualSortedPages(t *testing.T) {
	testenv.RequireBinary(t, "rg", "rg")
	files := map[string]string{}
	// Names whose byte order differs from rg's directory-by-directory
	// order ("a-c" < "a/b" as bytes, but rg walks a/ first).
	for _, name := range []string{"a/b.txt", "a-c.txt", "a.txt", "A/z.txt", "_x.txt", "a/b/c.txt", "dir.with.dot/x.txt", "z.txt"} {
		files[name] = "hit one\nmiss\nhit two\n"
	}
	// One file that alone fills any page, with context around its hits.
	var big strings.Builder
	for i := range 300 {
		fmt.Fprintf(&big, "line %d hit\nfiller %d\n", i, i)
	}
	files["m/big.txt"] = big.String()
	for i := range 60 {
		files[fmt.Sprintf("many/f%02d.txt", i)] = "hit\n"
	}
	dir := tree(t, files)
	ctx := context.Background()
	const all = 8*2 + 300 + 60 // every "hit" line
	for _, tc := range []struct {
		req   grove.SearchRequest
		total int // exact
	}{
		{grove.SearchRequest{Pattern: "hit"}, all},
		{grove.SearchRequest{Pattern: "hit", MaxResults: 7}, all},
		{grove.SearchRequest{Pattern: "hit", MaxResults: 7, Offset: 5}, all},
		{grove.SearchRequest{Pattern: "hit", MaxResults: 50, Offset: 10, Context: 1}, all},
		{grove.SearchRequest{Pattern: "hit", MaxResults: 1000, Context: 2}, all},
		{grove.SearchRequest{Pattern: "hit", MaxResults: 3, Offset: 370, Context: 1}, all},
		{grove.SearchRequest{Pattern: "hit", MaxResults: 10, Offset: 2000}, all},
		{grove.SearchRequest{Pattern: "nothing matches this"}, 0},
		{grove.SearchRequest{Pattern: "hit", Path: "a"}, 4},
	} {
		req := tc.req
		sorted, err := Runner{GatherLimit: -1}.Run(ctx, dir, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{0, 40} { // 40: give up mid-way and fall back
			got, err := Runner{GatherLimit: limit}.Run(ctx, dir, req)
			if err != nil {
				t.Fatal(err)
			}
			// The sorted walk stops at the page, so its Total is a lower
			// bound; the parallel path reads everything and counts exactly.
			if limit == 0 && got.Total != tc.total {
				t.Fatalf("%+v: total %d, want %d", req, got.Total, tc.total)
			}
			if got.Total < sorted.Total {
				t.Fatalf("%+v (limit %d): total %d below the sorted walk's %d", req, limit, got.Total, sorted.Total)
			}
			page, want := *got, *sorted
			page.Total, want.Total = 0, 0
			if !reflect.DeepEqual(page, want) {
				t.Fatalf("%+v (limit %d): parallel\n%+v\nsorted\n%+v", req, limit, got, sorted)
			}
		}
	}
	// And the order is rg's own.
	res, err := Runner{}.Run(ctx, dir, grove.SearchRequest{Pattern: "hit one"})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range res.Matches {
		paths = append(paths, m.Path)
	}
	want := []string{"A/z.txt", "_x.txt", "a/b/c.txt", "a/b.txt", "a-c.txt", "a.txt", "dir.with.dot/x.txt", "z.txt"}
	if !slices.Equal(paths, want) {
		t.Fatalf("order %v, want %v", paths, want)
	}
}

func TestComparePaths(t *testing.T) {
	in := []string{"z", "a.txt", "a/b", "a-c", "a/b/c", "A/z", "a/a"}
	slices.SortFunc(in, comparePaths)
	want := []string{"A/z", "a/a", "a/b", "a/b/c", "a-c", "a.txt", "z"}
	if !slices.Equal(in, want) {
		t.Fatalf("%v, want %v", in, want)
	}
}
