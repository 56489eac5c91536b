// Package patch parses and applies multi-file patches in the
// "*** Begin Patch" format that coding models are trained to write (the
// format of OpenAI's apply_patch tool):
//
//	*** Begin Patch
//	*** Add File: path/new.go
//	+package x
//	*** Delete File: path/old.go
//	*** Update File: path/a.go
//	*** Move to: path/b.go
//	@@ func main() {
//	 	x := 1
//	-	y := 2
//	+	y := 3
//	*** End of File
//	*** End Patch
//
// Parsing is strict about structure and lenient where models are sloppy (a
// blank line inside a hunk is an empty context line; the first hunk of a
// file may omit its "@@"). Applying is pure: it computes every file's new
// content or fails as a whole, and the caller writes the result.
package patch

import (
	"fmt"
	"strings"

	"github.com/grove-dev/grove"
)

// Action says what a file operation does.
type Action string

const (
	Add    Action = "add"
	Delete Action = "delete"
	Update Action = "update"
)

// Patch is a parsed patch: file operations in the order written.
type Patch struct {
	Files []FileOp
}

// FileOp is one "*** Add/Delete/Update File:" section.
type FileOp struct {
	Action Action
	Path   string
	MoveTo string // Update only: the new path
	// Content is the whole new file of an Add, one "+" line per line; it
	// always ends in a newline unless empty.
	Content string
	Hunks   []Hunk // Update only
}

// Hunk is one "@@" section of an Update.
type Hunk struct {
	// Anchors are the texts after "@@" (one per stacked "@@" line): lines
	// to find, in order, before the hunk's context is searched.
	Anchors []string
	Lines   []Line
	// EOF marks a hunk followed by "*** End of File": its context must end
	// at the end of the file.
	EOF bool
}

// Line is one line of a hunk.
type Line struct {
	Op   byte // ' ' context, '-' removed, '+' added
	Text string
}

const (
	beginMarker  = "*** Begin Patch"
	endMarker    = "*** End Patch"
	addPrefix    = "*** Add File: "
	deletePrefix = "*** Delete File: "
	updatePrefix = "*** Update File: "
	movePrefix   = "*** Move to: "
	eofMarker    = "*** End of File"
)

// Parse parses a patch. Errors wrap grove.ErrInvalid and name the line.
// Parse never panics, whatever its input.
// A patch longer than MaxPatchBytes fails with grove.ErrTooLarge, one with
// more than MaxFileOps file operations or MaxHunks hunks with
// grove.ErrInvalid.
func Parse(text string) (*Patch, error) {
	if len(text) > MaxPatchBytes {
		return nil, grove.Errorf(grove.ErrTooLarge, "the patch is %d bytes; the limit is %d (MaxPatchBytes): split it into smaller patches", len(text), MaxPatchBytes)
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	// Models often wrap the patch in blank lines or a heredoc; only
	// surrounding blank lines are forgiven.
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != beginMarker {
		return nil, grove.Errorf(grove.ErrInvalid, "patch must start with %q", beginMarker)
	}
	if strings.TrimSpace(lines[len(lines)-1]) != endMarker {
		return nil, grove.Errorf(grove.ErrInvalid, "patch must end with %q", endMarker)
	}
	p := &parser{lines: lines[1 : len(lines)-1], lineNo: 2}
	out := &Patch{}
	hunks := 0
	for !p.done() {
		if len(out.Files) == MaxFileOps {
			return nil, p.errorf("the patch has more than %d file operations (MaxFileOps); split it into smaller patches", MaxFileOps)
		}
		op, err := p.fileOp()
		if err != nil {
			return nil, err
		}
		if hunks += len(op.Hunks); hunks > MaxHunks {
			return nil, p.errorf("the patch has more than %d hunks (MaxHunks); split it into smaller patches", MaxHunks)
		}
		out.Files = append(out.Files, op)
	}
	if len(out.Files) == 0 {
		return nil, grove.Errorf(grove.ErrInvalid, "patch has no file operations")
	}
	return out, nil
}

type parser struct {
	lines  []string
	i      int
	lineNo int // 1-based number of lines[0] in the original text
}

func (p *parser) done() bool   { return p.i >= len(p.lines) }
func (p *parser) peek() string { return p.lines[p.i] }
func (p *parser) errorf(format string, args ...any) error {
	return grove.Errorf(grove.ErrInvalid, "patch line %d: %s", p.lineNo+p.i, fmt.Sprintf(format, args...))
}

func (p *parser) fileOp() (FileOp, error) {
	line := p.peek()
	switch {
	case strings.HasPrefix(line, addPrefix):
		path, err := p.path(line, addPrefix)
		if err != nil {
			return FileOp{}, err
		}
		p.i++
		var b strings.Builder
		for !p.done() && !isHeader(p.peek()) {
			l := p.peek()
			if !strings.HasPrefix(l, "+") {
				return FileOp{}, p.errorf("every line of an added file must start with '+', got %q", clip(l))
			}
			b.WriteString(l[1:])
			b.WriteByte('\n')
			p.i++
		}
		return FileOp{Action: Add, Path: path, Content: b.String()}, nil
	case strings.HasPrefix(line, deletePrefix):
		path, err := p.path(line, deletePrefix)
		if err != nil {
			return FileOp{}, err
		}
		p.i++
		return FileOp{Action: Delete, Path: path}, nil
	case strings.HasPrefix(line, updatePrefix):
		path, err := p.path(line, updatePrefix)
		if err != nil {
			return FileOp{}, err
		}
		p.i++
		op := FileOp{Action: Update, Path: path}
		if !p.done() && strings.HasPrefix(p.peek(), movePrefix) {
			if op.MoveTo, err = p.path(p.peek(), movePrefix); err != nil {
				return FileOp{}, err
			}
			p.i++
		}
		for !p.done() && !isFileHeader(p.peek()) {
			h, err := p.hunk(len(op.Hunks) == 0)
			if err != nil {
				return FileOp{}, err
			}
			op.Hunks = append(op.Hunks, h)
		}
		if len(op.Hunks) == 0 && op.MoveTo == "" {
			return FileOp{}, p.errorf("update of %q has no hunks", path)
		}
		return op, nil
	}
	return FileOp{}, p.errorf("expected a file header (%q, %q or %q), got %q", addPrefix, deletePrefix, updatePrefix, clip(line))
}

func (p *parser) path(line, prefix string) (string, error) {
	path := strings.TrimSpace(strings.TrimPrefix(line, prefix))
	if path == "" {
		return "", p.errorf("empty path after %q", strings.TrimSpace(prefix))
	}
	return path, nil
}

// hunk parses "@@ anchor" lines followed by body lines. first allows the
// first hunk of a file to start without "@@".
func (p *parser) hunk(first bool) (Hunk, error) {
	var h Hunk
	for !p.done() && isAnchor(p.peek()) {
		if a := strings.TrimSpace(strings.TrimPrefix(p.peek(), "@@")); a != "" {
			h.Anchors = append(h.Anchors, a)
		}
		p.i++
	}
	if len(h.Anchors) == 0 && !first && p.i > 0 && !isAnchor(p.lines[p.i-1]) {
		return Hunk{}, p.errorf("expected \"@@\" to start a hunk, got %q", clip(p.peek()))
	}
	for !p.done() {
		l := p.peek()
		if l == eofMarker {
			h.EOF = true
			p.i++
			break
		}
		if isHeader(l) || isAnchor(l) {
			break
		}
		if l == "" {
			// An editor or model stripped the leading space of an empty
			// context line.
			h.Lines = append(h.Lines, Line{Op: ' '})
			p.i++
			continue
		}
		switch l[0] {
		case ' ', '-', '+':
			h.Lines = append(h.Lines, Line{Op: l[0], Text: l[1:]})
		default:
			return Hunk{}, p.errorf("hunk lines must start with ' ', '-' or '+', got %q", clip(l))
		}
		p.i++
	}
	if len(h.Lines) == 0 {
		return Hunk{}, p.errorf("empty hunk")
	}
	return h, nil
}

func isAnchor(l string) bool { return l == "@@" || strings.HasPrefix(l, "@@ ") }

func isFileHeader(l string) bool {
	return strings.HasPrefix(l, addPrefix) || strings.HasPrefix(l, deletePrefix) || strings.HasPrefix(l, updatePrefix)
}

func isHeader(l string) bool {
	return isFileHeader(l) || strings.HasPrefix(l, movePrefix) || l == eofMarker
}

// clip bounds untrusted text quoted back in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Format writes p in the patch format; Parse(Format(p)) gives p back for
// any p that Parse produced.
func Format(p *Patch) string {
	var b strings.Builder
	b.WriteString(beginMarker + "\n")
	for _, f := range p.Files {
		switch f.Action {
		case Add:
			b.WriteString(addPrefix + f.Path + "\n")
			if f.Content != "" {
				for _, l := range strings.Split(strings.TrimSuffix(f.Content, "\n"), "\n") {
					b.WriteString("+" + l + "\n")
				}
			}
		case Delete:
			b.WriteString(deletePrefix + f.Path + "\n")
		case Update:
			b.WriteString(updatePrefix + f.Path + "\n")
			if f.MoveTo != "" {
				b.WriteString(movePrefix + f.MoveTo + "\n")
			}
			for _, h := range f.Hunks {
				if len(h.Anchors) == 0 {
					b.WriteString("@@\n")
				}
				for _, a := range h.Anchors {
					b.WriteString("@@ " + a + "\n")
				}
				for _, l := range h.Lines {
					b.WriteByte(l.Op)
					b.WriteString(l.Text + "\n")
				}
				if h.EOF {
					b.WriteString(eofMarker + "\n")
				}
			}
		}
	}
	b.WriteString(endMarker + "\n")
	return b.String()
}
