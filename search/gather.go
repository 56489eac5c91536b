package search

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/grove-dev/grove"
)

// DefaultGatherLimit is how many matches the parallel path reads before it
// gives up for the sorted, early-stopping walk: past it, parsing rg's
// output costs more than walking on one thread saves.
const DefaultGatherLimit = 50_000

// errTooMany tells Run to fall back to the sorted walk.
var errTooMany = errors.New("search: too many matches to gather")

// gatherer reads rg's parallel, unsorted output, in which each file's
// records still arrive together (begin … end), and keeps only the files
// that can hold the first need matches in path order: when the files
// other than the last in path order already hold need matches, the last
// is dropped. Memory is bounded by the page plus one file. At the end the
// kept files are replayed, in rg's --sort=path order, through the same
// parser the sorted walk uses, so both paths give the same page.
type gatherer struct {
	req   grove.SearchRequest
	limit int // give up past this many matches
	need  int // offset + page + 1 (the one that shows there are more)
	kept  fileHeap
	held  int // matches in kept files
	total int // every match seen, kept or not
	cur   *file
}

type file struct {
	path    string
	recs    []record
	matches int
	closing int // records still stored after the file passed need matches
}

type record struct{ rec, tail []byte }

func newGatherer(req grove.SearchRequest, limit int) *gatherer {
	return &gatherer{req: req, limit: limit, need: req.Offset + req.MaxResults + 1}
}

var (
	typeBegin = []byte(`{"type":"begin"`)
	typeEnd   = []byte(`{"type":"end"`)
	typeMatch = []byte(`{"type":"match"`)
)

// consume implements sink.
func (g *gatherer) consume(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		rec, tail, err := readRecord(br)
		if len(rec) > 0 || tail != nil {
			if gerr := g.record(rec, tail); gerr != nil {
				return gerr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (g *gatherer) record(rec, tail []byte) error {
	switch {
	case bytes.HasPrefix(rec, typeBegin):
		var b rgRecord
		if json.Unmarshal(rec, &b) != nil {
			return nil
		}
		g.cur = &file{path: cleanRgPath(b.Data.Path.String())}
	case g.cur == nil:
		return nil // summary, or a record outside a file
	case bytes.HasPrefix(rec, typeEnd):
		g.cur.recs = append(g.cur.recs, record{rec: rec})
		g.keep(g.cur)
		g.cur = nil
		return nil
	case rec == nil || bytes.HasPrefix(rec, typeMatch):
		// An oversized record (rec == nil) is always a match line.
		g.total++
		g.cur.matches++
		if g.total > g.limit {
			return errTooMany
		}
		if g.cur.matches == g.need+1 {
			// This file alone fills the page; keep only the context lines
			// that may still belong to the page's last match.
			g.cur.closing = g.req.Context
		}
	}
	if g.cur.matches <= g.need || g.cur.closing > 0 {
		if g.cur.matches > g.need {
			g.cur.closing--
		}
		g.cur.recs = append(g.cur.recs, record{rec, tail})
	}
	return nil
}

// keep adds f and drops the files last in path order that the page cannot
// reach.
func (g *gatherer) keep(f *file) {
	if f.matches == 0 {
		return
	}
	heap.Push(&g.kept, f)
	g.held += min(f.matches, g.need)
	for len(g.kept) > 1 && g.held-min(g.kept[0].matches, g.need) >= g.need {
		last := heap.Pop(&g.kept).(*file)
		g.held -= min(last.matches, g.need)
	}
}

// complete implements sink: the gatherer always reads to the end.
func (g *gatherer) complete() bool { return false }

// matches implements sink.
func (g *gatherer) matches() int { return g.total }

// result implements sink.
func (g *gatherer) result() *grove.SearchResult {
	files := slices.Clone([]*file(g.kept))
	slices.SortFunc(files, func(a, b *file) int { return comparePaths(a.path, b.path) })
	p := newParser(g.req)
	for _, f := range files {
		for _, r := range f.recs {
			p.record(r.rec, r.tail)
		}
	}
	res := p.result()
	// The dropped files' matches count too: the total is exact.
	res.Total = g.total
	res.Truncated = g.total > g.req.Offset+len(res.Matches)
	if res.Truncated {
		res.NextOffset = g.req.Offset + len(res.Matches)
	}
	return res
}

// comparePaths orders paths as rg --sort=path walks them: directory by
// directory, each directory's entries by name.
func comparePaths(a, b string) int {
	for {
		ha, ra, okA := strings.Cut(a, "/")
		hb, rb, okB := strings.Cut(b, "/")
		if c := strings.Compare(ha, hb); c != 0 {
			return c
		}
		if !okA || !okB {
			return strings.Compare(a, b)
		}
		a, b = ra, rb
	}
}

// fileHeap keeps the kept file last in path order on top.
type fileHeap []*file

func (h fileHeap) Len() int           { return len(h) }
func (h fileHeap) Less(i, j int) bool { return comparePaths(h[i].path, h[j].path) > 0 }
func (h fileHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *fileHeap) Push(x any)        { *h = append(*h, x.(*file)) }
func (h *fileHeap) Pop() any {
	old := *h
	f := old[len(old)-1]
	*h = old[:len(old)-1]
	return f
}
