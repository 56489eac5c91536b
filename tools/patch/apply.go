package patch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/grove-dev/grove"
)

// Fuzz is how loosely a hunk's context had to be matched.
type Fuzz int

const (
	FuzzExact         Fuzz = iota // byte for byte
	FuzzTrailingSpace             // trailing whitespace ignored
	FuzzSpace                     // leading and trailing whitespace ignored
)

func (f Fuzz) String() string {
	switch f {
	case FuzzExact:
		return "exact"
	case FuzzTrailingSpace:
		return "ignore-trailing-whitespace"
	case FuzzSpace:
		return "ignore-whitespace"
	}
	return fmt.Sprintf("fuzz(%d)", int(f))
}

// Change is the computed effect of one file operation.
type Change struct {
	Action Action
	Path   string
	MoveTo string
	Hunks  int
	Fuzz   Fuzz // the loosest level any hunk of this file needed
	// Old is the content before the patch, nil when the file did not exist.
	Old []byte
	// New is the content after the patch, nil when the file is deleted (or
	// moved away from Path).
	New []byte
}

// ReadFunc returns a file's content, or an error wrapping grove.ErrNotFound
// when it does not exist.
type ReadFunc func(path string) ([]byte, error)

// Apply is ApplyContext without a deadline.
func Apply(p *Patch, read ReadFunc) ([]Change, error) {
	return ApplyContext(context.Background(), p, read)
}

// ApplyContext computes the effect of p on the files read returns. It
// succeeds for every file or fails as a whole; nothing is written. Later
// operations see the effect of earlier ones on the same path. Errors wrap
// grove.ErrInvalid (context not found, ambiguous, more than MaxFileOps or
// MaxHunks), grove.ErrNotFound (updating or deleting a missing file),
// grove.ErrConflict (adding an existing file), grove.ErrResourceLimit (more
// than MaxLineVisits of searching) or are ctx's error.
//
// Successive Updates of one file edit a single line buffer, so memory is
// bounded by the files touched, not by the number of operations. For the
// same reason every Change's New is its destination's content after the
// whole patch (shared, not copied, between the Changes that write it; nil
// if a later operation removes it): writing the Changes in order leaves
// the same files as applying the operations one by one.
func ApplyContext(ctx context.Context, p *Patch, read ReadFunc) ([]Change, error) {
	if err := checkCounts(p); err != nil {
		return nil, err
	}
	m := newMatcher(ctx, lineBudget)
	defer func() {
		if hook := onVisits; hook != nil {
			hook(m.visits)
		}
	}()
	// state holds the virtual file system after each operation.
	state := map[string]*vfile{}
	get := func(path string) (*vfile, error) {
		if f, ok := state[path]; ok {
			return f, nil
		}
		b, err := read(path)
		f := &vfile{}
		switch {
		case errors.Is(err, grove.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			if b == nil {
				b = []byte{}
			}
			f.orig, f.data, f.exists = b, b, true
		}
		state[path] = f
		return f, nil
	}
	var out []Change
	for i, op := range p.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := get(op.Path)
		if err != nil {
			return nil, fmt.Errorf("file %d (%s): %w", i+1, op.Path, err)
		}
		c := Change{Action: op.Action, Path: op.Path, MoveTo: op.MoveTo, Hunks: len(op.Hunks), Old: f.orig}
		switch op.Action {
		case Add:
			if f.exists {
				return nil, grove.Errorf(grove.ErrConflict, "*** Add File: %s: the file already exists; use *** Update File to change it", op.Path)
			}
			f.set([]byte(op.Content))
		case Delete:
			if !f.exists {
				return nil, grove.Errorf(grove.ErrNotFound, "*** Delete File: %s: no such file", op.Path)
			}
			f.remove()
		case Update:
			if !f.exists {
				return nil, grove.Errorf(grove.ErrNotFound, "*** Update File: %s: no such file", op.Path)
			}
			fuzz, err := applyHunks(m, op.Path, f.lines(), op.Hunks)
			if err != nil {
				return nil, err
			}
			c.Fuzz = fuzz
			if op.MoveTo != "" && op.MoveTo != op.Path {
				dst, err := get(op.MoveTo)
				if err != nil {
					return nil, fmt.Errorf("file %d (%s): %w", i+1, op.MoveTo, err)
				} else if dst.exists {
					return nil, grove.Errorf(grove.ErrConflict, "*** Move to: %s: the destination already exists", op.MoveTo)
				}
				dst.exists, dst.doc, dst.data = true, f.doc, nil
				f.remove()
			}
		default:
			return nil, grove.Errorf(grove.ErrInvalid, "file %d: unknown action %q", i+1, op.Action)
		}
		out = append(out, c)
	}
	// Each path's final content is built once and shared.
	final := map[string][]byte{}
	for path, f := range state {
		if f.exists {
			final[path] = f.bytes()
		}
	}
	for i := range out {
		c := &out[i]
		dst := c.Path
		if c.MoveTo != "" && c.MoveTo != c.Path {
			dst = c.MoveTo
		}
		if c.Action != Delete {
			c.New = final[dst]
		}
	}
	return out, nil
}

// checkCounts enforces MaxFileOps and MaxHunks on a Patch that did not
// come from Parse.
func checkCounts(p *Patch) error {
	if len(p.Files) > MaxFileOps {
		return grove.Errorf(grove.ErrInvalid, "the patch has %d file operations; the limit is %d (MaxFileOps): split it", len(p.Files), MaxFileOps)
	}
	hunks := 0
	for _, f := range p.Files {
		hunks += len(f.Hunks)
	}
	if hunks > MaxHunks {
		return grove.Errorf(grove.ErrInvalid, "the patch has %d hunks; the limit is %d (MaxHunks): split it", hunks, MaxHunks)
	}
	return nil
}

// vfile is one path of the virtual file system: its content before the
// patch and now, as bytes or, once an Update touched it, as lines.
type vfile struct {
	orig   []byte // nil when absent before the patch
	exists bool
	data   []byte // the content, when doc is nil
	doc    *doc
}

func (f *vfile) set(b []byte) { f.exists, f.data, f.doc = true, b, nil }
func (f *vfile) remove()      { f.exists, f.data, f.doc = false, nil, nil }

func (f *vfile) lines() *doc {
	if f.doc == nil {
		f.doc = parseDoc(string(f.data))
		f.data = nil
	}
	return f.doc
}

func (f *vfile) bytes() []byte {
	if f.doc == nil {
		return f.data
	}
	return f.doc.bytes()
}

// doc is a file as lines, with its line ending. spare is the previous
// lines' backing array, reused by the next edit.
type doc struct {
	lines, spare []string
	crlf         bool
	trailingNL   bool
}

func parseDoc(content string) *doc {
	d := &doc{crlf: strings.Contains(content, "\r\n")}
	if d.crlf {
		content = strings.ReplaceAll(content, "\r\n", "\n")
	}
	d.trailingNL = strings.HasSuffix(content, "\n")
	if content != "" {
		d.lines = strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	}
	return d
}

func (d *doc) bytes() []byte {
	nl := "\n"
	if d.crlf {
		nl = "\r\n"
	}
	n := 0
	for _, l := range d.lines {
		n += len(l) + len(nl)
	}
	b := make([]byte, 0, n)
	for i, l := range d.lines {
		if i > 0 {
			b = append(b, nl...)
		}
		b = append(b, l...)
	}
	if len(d.lines) > 0 && d.trailingNL {
		b = append(b, nl...)
	}
	return b
}

// splice applies edits (in file order, not overlapping) into the spare
// buffer and swaps it in. The result is what re-reading the written file
// would give: an emptied file loses its line ending and final newline, and
// a file that was empty gains a final newline.
func (d *doc) splice(edits []edit) {
	wasEmpty := len(d.lines) == 0
	out := d.spare[:0]
	prev := 0
	oddCR := false
	for _, e := range edits {
		out = append(out, d.lines[prev:e.at]...)
		out = append(out, e.ins...)
		prev = e.at + e.del
		for _, l := range e.ins {
			oddCR = oddCR || strings.Contains(l, "\r")
		}
	}
	out = append(out, d.lines[prev:]...)
	clear(d.lines)
	d.spare, d.lines = d.lines[:0], out
	if len(out) == 0 {
		d.crlf, d.trailingNL = false, false
		return
	}
	d.trailingNL = d.trailingNL || wasEmpty
	d.crlf = d.crlf && (len(out) > 1 || d.trailingNL)
	if oddCR {
		// An inserted line ending in "\r" may change how the file's
		// line endings read back: take the slow, exact way.
		*d = *parseDoc(string(d.bytes()))
	}
}

// applyHunks applies an Update's hunks in order to d. Each hunk is
// searched from where the previous one ended, so hunks must be in file
// order. On error d is unchanged.
func applyHunks(m *matcher, path string, d *doc, hunks []Hunk) (Fuzz, error) {
	lines := d.lines
	var (
		cursor  int
		maxFuzz Fuzz
		edits   []edit
	)
	for hi, h := range hunks {
		for _, a := range h.Anchors {
			at, fz, n, err := find(m, lines, []string{a}, cursor, false, false)
			if err != nil {
				return 0, err
			}
			if n == 0 {
				return 0, hunkError(path, hi, h, fmt.Sprintf("anchor line %q not found", clip(a)))
			}
			cursor = at + 1
			maxFuzz = max(maxFuzz, fz)
		}
		var old, repl []string
		for _, l := range h.Lines {
			if l.Op != '+' {
				old = append(old, l.Text)
			}
			if l.Op != '-' {
				repl = append(repl, l.Text)
			}
		}
		var at int
		if len(old) == 0 {
			// A pure insertion goes after the anchor, or at the end.
			at = cursor
			if len(h.Anchors) == 0 || h.EOF {
				at = len(lines)
			}
		} else {
			// Only a hunk without anchor or end-of-file marker must be
			// unique, so only it counts every match.
			unique := len(h.Anchors) == 0 && !h.EOF
			var (
				fz  Fuzz
				n   int
				err error
			)
			at, fz, n, err = find(m, lines, old, cursor, h.EOF, unique)
			if err != nil {
				return 0, err
			}
			if n == 0 {
				return 0, hunkError(path, hi, h, "context not found")
			}
			if n > 1 && unique {
				return 0, hunkError(path, hi, h, fmt.Sprintf("context is ambiguous: it matches %d places (first at line %d); add an \"@@ <line>\" anchor or more context", n, at+1))
			}
			maxFuzz = max(maxFuzz, fz)
		}
		edits = append(edits, edit{at: at, del: len(old), ins: repl})
		cursor = at + len(old)
	}
	d.splice(edits)
	return maxFuzz, nil
}

type edit struct {
	at, del int
	ins     []string
}

// find looks for pat in lines at or after start, trying each fuzz level in
// turn, and returns the first match, the level and how many matches that
// level has (1 unless all). atEOF prefers a match ending at the last line.
func find(m *matcher, lines, pat []string, start int, atEOF, all bool) (at int, fz Fuzz, n int, err error) {
	for fz := FuzzExact; fz <= FuzzSpace; fz++ {
		norm := normalizer(fz)
		if atEOF {
			if i := len(lines) - len(pat); i >= start && equalLines(lines[i:], pat, norm) {
				return i, fz, 1, nil
			}
		}
		first, n, err := m.index(lines[start:], pat, norm, all)
		if err != nil {
			return 0, 0, 0, err
		}
		if n > 0 {
			return start + first, fz, n, nil
		}
	}
	return 0, 0, 0, nil
}

// hunkError quotes the failing hunk so the model can see what it sent.
func hunkError(path string, i int, h Hunk, why string) error {
	var b strings.Builder
	for _, a := range h.Anchors {
		b.WriteString("@@ " + clip(a) + "\n")
	}
	for k, l := range h.Lines {
		if k == 12 {
			fmt.Fprintf(&b, "... (%d more lines)\n", len(h.Lines)-k)
			break
		}
		b.WriteByte(l.Op)
		b.WriteString(clip(l.Text) + "\n")
	}
	return grove.Errorf(grove.ErrInvalid, "*** Update File: %s: hunk %d: %s:\n%s", path, i+1, why, strings.TrimRight(b.String(), "\n"))
}
