package search

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

func TestParseBytesAndOversized(t *testing.T) {
	huge := strings.Repeat("x", maxRecord+10)
	in := `{"type":"begin","data":{"path":{"bytes":"Li9u/2FtZS50eHQ="}}}
{"type":"match","data":{"path":{"bytes":"Li9u/2FtZS50eHQ="},"lines":{"bytes":"YmFkIP8gZm9vCg=="},"line_number":3,"absolute_offset":0,"submatches":[]}}
{"type":"match","data":{"path":{"text":"./big.js"},"lines":{"text":"` + huge + `\n"},"line_number":7,"absolute_offset":0,"submatches":[]}}
not json at all
{"type":"summary","data":{}}
`
	res, err := Parse(strings.NewReader(in), grove.SearchRequest{Pattern: "foo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 2 || res.Total != 2 {
		t.Fatalf("got %+v", res)
	}
	if m := res.Matches[0]; m.Path != "n\xffame.txt" || m.Text != "bad \xff foo" || m.Line != 3 {
		t.Errorf("bytes record parsed as %#v", m)
	}
	// The oversized record's path comes from the begin record before it
	// (here the bytes one, as big.js has no begin), its line from its tail.
	if m := res.Matches[1]; m.Line != 7 || !strings.Contains(m.Text, "too long") {
		t.Errorf("oversized record parsed as %+v", m)
	}
}

func TestParseCountsBeyondPage(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"begin","data":{"path":{"text":"f"}}}` + "\n")
	for i := 1; i <= 50; i++ {
		b.WriteString(`{"type":"match","data":{"path":{"text":"f"},"lines":{"text":"m\n"},"line_number":` + itoa(i) + `}}` + "\n")
	}
	res, err := Parse(strings.NewReader(b.String()), grove.SearchRequest{Pattern: "m", Offset: 10, MaxResults: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 5 || res.Matches[0].Line != 11 || !res.Truncated || res.NextOffset != 15 || res.Total != 50 {
		t.Errorf("got %d matches from line %d, truncated %v next %d total %d", len(res.Matches), res.Matches[0].Line, res.Truncated, res.NextOffset, res.Total)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"type":"begin","data":{"path":{"text":"a"}}}
{"type":"context","data":{"path":{"text":"a"},"lines":{"text":"x\n"},"line_number":1}}
{"type":"match","data":{"path":{"text":"a"},"lines":{"text":"foo\n"},"line_number":2}}
{"type":"match","data":{"path":{"bytes":"/w=="},"lines":{"bytes":"/w=="},"line_number":2}}
{"type":"end","data":{"path":{"text":"a"}}}`), 1, 0, 2)
	f.Fuzz(func(t *testing.T, in []byte, context, offset, max int) {
		req := grove.SearchRequest{Pattern: "x", Context: context % (MaxContext + 1), Offset: offset % 50, MaxResults: max}
		if req.Context < 0 || req.Offset < 0 {
			return
		}
		res, err := Parse(strings.NewReader(string(in)), req)
		if err != nil {
			if !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		limit := req.MaxResults
		if limit <= 0 {
			limit = DefaultMaxResults
		}
		if len(res.Matches) > min(limit, MaxResults) || res.Total < len(res.Matches)+req.Offset && len(res.Matches) > 0 {
			t.Fatalf("page of %d, total %d for %+v", len(res.Matches), res.Total, req)
		}
		for _, m := range res.Matches {
			if len(m.Before) > req.Context || len(m.After) > req.Context {
				t.Fatalf("context beyond %d: %+v", req.Context, m)
			}
		}
	})
}
