package search

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/grove-dev/grove"
)

// maxRecord bounds one JSON line held in memory. Longer records (a match
// in a minified file) are skipped through, keeping only their tail.
const maxRecord = 1 << 20

// Parse reads rg --json output and returns the page of matches req asks
// for. Memory is bounded by the page: matches before Offset are counted
// and dropped, and after the page only the count goes on. Total is
// exact when the whole output is read.
func Parse(r io.Reader, req grove.SearchRequest) (*grove.SearchResult, error) {
	req, err := normalise(req)
	if err != nil {
		return nil, err
	}
	p := newParser(req)
	if err := p.readAll(r, nil); err != nil {
		return nil, err
	}
	return p.result(), nil
}

type parser struct {
	req     grove.SearchRequest
	res     grove.SearchResult
	seen    int // matches seen so far, in rg's order
	path    string
	recent  []line // the last Context lines of the current file
	pending []int  // indexes in res.Matches still collecting After lines
}

type line struct {
	n    int
	text string
}

func newParser(req grove.SearchRequest) *parser {
	return &parser{req: req, res: grove.SearchResult{Matches: []grove.SearchMatch{}}}
}

// readAll feeds every record of r to the parser; stop, if not nil, is
// asked after each record whether to stop early.
func (p *parser) readAll(r io.Reader, stop func() bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		rec, tail, err := readRecord(br)
		if len(rec) > 0 || tail != nil {
			p.record(rec, tail)
			if stop != nil && stop() {
				return nil
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

// readRecord returns one line, or, for a line over maxRecord, nil and the
// line's last bytes.
func readRecord(br *bufio.Reader) ([]byte, []byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > maxRecord {
			tail := append([]byte(nil), chunk...)
			for errors.Is(err, bufio.ErrBufferFull) {
				chunk, err = br.ReadSlice('\n')
				tail = append(tail, chunk...)
				if len(tail) > 512 {
					tail = append(tail[:0], tail[len(tail)-256:]...)
				}
			}
			if tail == nil {
				tail = []byte{}
			}
			return nil, tail, err
		}
		buf = append(buf, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return bytes.TrimRight(buf, "\r\n"), nil, err
		}
	}
}

// rgText is rg's encoding of a string that may not be UTF-8.
type rgText struct {
	Text  *string `json:"text"`
	Bytes *string `json:"bytes"`
}

func (t rgText) String() string {
	switch {
	case t.Text != nil:
		return *t.Text
	case t.Bytes != nil:
		b, err := base64.StdEncoding.DecodeString(*t.Bytes)
		if err == nil {
			return string(b)
		}
	}
	return ""
}

type rgRecord struct {
	Type string `json:"type"`
	Data struct {
		Path       rgText `json:"path"`
		Lines      rgText `json:"lines"`
		LineNumber int    `json:"line_number"`
	} `json:"data"`
}

func (p *parser) record(rec, tail []byte) {
	var r rgRecord
	if rec == nil {
		// An oversized record: only a match matters, and its line number
		// follows the (huge) text. Inside a JSON string a quote is always
		// escaped, so this marker cannot come from the text itself.
		i := bytes.LastIndex(tail, []byte(`},"line_number":`))
		if i < 0 {
			return
		}
		num := tail[i+len(`},"line_number":`):]
		end := bytes.IndexFunc(num, func(r rune) bool { return r < '0' || r > '9' })
		if end > 0 {
			r.Data.LineNumber, _ = strconv.Atoi(string(num[:end]))
		}
		r.Type = "match"
		omitted := "[line too long to show]"
		r.Data.Lines.Text = &omitted
		p.line(r, true)
		return
	}
	if err := json.Unmarshal(rec, &r); err != nil {
		return // not one of rg's records: ignore, as rg may add types
	}
	switch r.Type {
	case "begin":
		p.path = cleanRgPath(r.Data.Path.String())
		p.recent, p.pending = p.recent[:0], p.pending[:0]
	case "end":
		p.recent, p.pending = p.recent[:0], p.pending[:0]
	case "match":
		p.line(r, true)
	case "context":
		p.line(r, false)
	}
}

// line handles one match or context line: it completes earlier matches'
// After, becomes a match (with Before from recent lines), and is kept as
// recent context for the next match. Before and After hold the lines
// within Context lines of the match, matching lines included.
func (p *parser) line(r rgRecord, match bool) {
	text := clipLine(strings.TrimRight(r.Data.Lines.String(), "\r\n"))
	n := r.Data.LineNumber
	if r.Data.Path.Text != nil || r.Data.Path.Bytes != nil {
		p.path = cleanRgPath(r.Data.Path.String())
	}
	c := p.req.Context
	kept := p.pending[:0]
	for _, i := range p.pending {
		m := &p.res.Matches[i]
		if n > m.Line && n <= m.Line+c {
			m.After = append(m.After, text)
		}
		if n < m.Line+c {
			kept = append(kept, i)
		}
	}
	p.pending = kept
	if match {
		p.seen++
		idx := p.seen - 1
		switch {
		case idx < p.req.Offset:
		case len(p.res.Matches) < p.req.MaxResults:
			m := grove.SearchMatch{Path: p.path, Line: n, Text: text}
			for _, l := range p.recent {
				if l.n >= n-c && l.n < n {
					m.Before = append(m.Before, l.text)
				}
			}
			p.res.Matches = append(p.res.Matches, m)
			if c > 0 {
				p.pending = append(p.pending, len(p.res.Matches)-1)
			}
		default:
			p.res.Truncated = true
		}
	}
	if c > 0 {
		if len(p.recent) == c {
			p.recent = append(p.recent[:0], p.recent[1:]...)
		}
		p.recent = append(p.recent, line{n, text})
	}
}

// consume implements sink: it stops as soon as the page is done.
func (p *parser) consume(r io.Reader) error { return p.readAll(r, p.pageDone) }

// complete implements sink.
func (p *parser) complete() bool { return p.pageDone() }

// matches implements sink.
func (p *parser) matches() int { return p.seen }

// pageDone reports that the page is full, one more match has shown that
// more exist, and no kept match still waits for After lines.
func (p *parser) pageDone() bool {
	return p.res.Truncated && len(p.pending) == 0
}

func (p *parser) result() *grove.SearchResult {
	res := p.res
	res.Total = p.seen
	if res.Truncated {
		res.NextOffset = p.req.Offset + len(res.Matches)
	}
	return &res
}

// cleanRgPath drops the "./" rg prefixes when searching ".".
func cleanRgPath(s string) string {
	for strings.HasPrefix(s, "./") {
		s = s[2:]
	}
	return s
}

func clipLine(s string) string {
	if len(s) <= MaxLineBytes {
		return s
	}
	cut := MaxLineBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
