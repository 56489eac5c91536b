package patch

import (
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

// Apply computes the effect of p on the files read returns. It succeeds for
// every file or fails as a whole; nothing is written. Later operations see
// the effect of earlier ones on the same path. Errors wrap grove.ErrInvalid
// (context not found, ambiguous), grove.ErrNotFound (updating or deleting a
// missing file) or grove.ErrConflict (adding an existing file).
func Apply(p *Patch, read ReadFunc) ([]Change, error) {
	// state holds the virtual file system after each operation; a nil
	// value is a file known to be absent.
	state := map[string][]byte{}
	get := func(path string) ([]byte, bool, error) {
		if b, ok := state[path]; ok {
			return b, b != nil, nil
		}
		b, err := read(path)
		if errors.Is(err, grove.ErrNotFound) {
			state[path] = nil
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if b == nil {
			b = []byte{}
		}
		state[path] = b
		return b, true, nil
	}
	var out []Change
	for i, f := range p.Files {
		cur, exists, err := get(f.Path)
		if err != nil {
			return nil, fmt.Errorf("file %d (%s): %w", i+1, f.Path, err)
		}
		c := Change{Action: f.Action, Path: f.Path, MoveTo: f.MoveTo, Hunks: len(f.Hunks)}
		if exists {
			c.Old = cur
		}
		switch f.Action {
		case Add:
			if exists {
				return nil, grove.Errorf(grove.ErrConflict, "*** Add File: %s: the file already exists; use *** Update File to change it", f.Path)
			}
			c.New = []byte(f.Content)
			state[f.Path] = c.New
		case Delete:
			if !exists {
				return nil, grove.Errorf(grove.ErrNotFound, "*** Delete File: %s: no such file", f.Path)
			}
			state[f.Path] = nil
		case Update:
			if !exists {
				return nil, grove.Errorf(grove.ErrNotFound, "*** Update File: %s: no such file", f.Path)
			}
			next, fuzz, err := applyHunks(f.Path, string(cur), f.Hunks)
			if err != nil {
				return nil, err
			}
			c.Fuzz = fuzz
			c.New = []byte(next)
			if f.MoveTo != "" && f.MoveTo != f.Path {
				if _, dstExists, err := get(f.MoveTo); err != nil {
					return nil, fmt.Errorf("file %d (%s): %w", i+1, f.MoveTo, err)
				} else if dstExists {
					return nil, grove.Errorf(grove.ErrConflict, "*** Move to: %s: the destination already exists", f.MoveTo)
				}
				state[f.Path] = nil
				state[f.MoveTo] = c.New
			} else {
				state[f.Path] = c.New
			}
		default:
			return nil, grove.Errorf(grove.ErrInvalid, "file %d: unknown action %q", i+1, f.Action)
		}
		out = append(out, c)
	}
	return out, nil
}

// applyHunks applies an Update's hunks in order. Each hunk is searched
// from where the previous one ended, so hunks must be in file order.
func applyHunks(path, content string, hunks []Hunk) (string, Fuzz, error) {
	crlf := strings.Contains(content, "\r\n")
	if crlf {
		content = strings.ReplaceAll(content, "\r\n", "\n")
	}
	trailingNL := strings.HasSuffix(content, "\n")
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	if content == "" {
		lines = nil
	}
	var (
		cursor  int
		maxFuzz Fuzz
		edits   []edit
	)
	for hi, h := range hunks {
		for _, a := range h.Anchors {
			at, fz, n := find(lines, []string{a}, cursor, false)
			if n == 0 {
				return "", 0, hunkError(path, hi, h, fmt.Sprintf("anchor line %q not found", clip(a)))
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
			var fz Fuzz
			var n int
			at, fz, n = find(lines, old, cursor, h.EOF)
			if n == 0 {
				return "", 0, hunkError(path, hi, h, "context not found")
			}
			if n > 1 && len(h.Anchors) == 0 && !h.EOF {
				return "", 0, hunkError(path, hi, h, fmt.Sprintf("context is ambiguous: it matches %d places (first at line %d); add an \"@@ <line>\" anchor or more context", n, at+1))
			}
			maxFuzz = max(maxFuzz, fz)
		}
		edits = append(edits, edit{at: at, del: len(old), ins: repl})
		cursor = at + len(old)
	}
	var out []string
	prev := 0
	for _, e := range edits {
		out = append(out, lines[prev:e.at]...)
		out = append(out, e.ins...)
		prev = e.at + e.del
	}
	out = append(out, lines[prev:]...)
	nl := "\n"
	if crlf {
		nl = "\r\n"
	}
	s := strings.Join(out, nl)
	if len(out) > 0 && (trailingNL || content == "") {
		s += nl
	}
	return s, maxFuzz, nil
}

type edit struct {
	at, del int
	ins     []string
}

// find looks for pat in lines at or after start, trying each fuzz level in
// turn, and returns the first match, the level and how many matches that
// level has. atEOF prefers a match ending at the last line.
func find(lines, pat []string, start int, atEOF bool) (at int, fz Fuzz, n int) {
	for fz := FuzzExact; fz <= FuzzSpace; fz++ {
		norm := normalizer(fz)
		if atEOF {
			if i := len(lines) - len(pat); i >= start && matchAt(lines, pat, i, norm) {
				return i, fz, 1
			}
		}
		first := -1
		for i := start; i+len(pat) <= len(lines); i++ {
			if matchAt(lines, pat, i, norm) {
				if first < 0 {
					first = i
				}
				n++
			}
		}
		if n > 0 {
			return first, fz, n
		}
	}
	return 0, 0, 0
}

func matchAt(lines, pat []string, i int, norm func(string) string) bool {
	for j, p := range pat {
		if norm(lines[i+j]) != norm(p) {
			return false
		}
	}
	return true
}

func normalizer(f Fuzz) func(string) string {
	switch f {
	case FuzzTrailingSpace:
		return func(s string) string { return strings.TrimRight(s, " \t\r") }
	case FuzzSpace:
		return strings.TrimSpace
	}
	return func(s string) string { return s }
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
