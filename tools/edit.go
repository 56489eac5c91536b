package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/tools/patch"
)

// editResult is the pure outcome of an exact-string edit.
type editResult struct {
	content      string
	replacements int
	firstLine    int // 1-based line where the first replacement starts
	newLines     int // lines spanned by one replacement
}

// replaceExact is replaceExactContext without a deadline.
func replaceExact(content, old, new string, replaceAll bool) (editResult, error) {
	return replaceExactContext(context.Background(), content, old, new, replaceAll)
}

// replaceExactContext replaces old with new in content. It refuses what
// agents get wrong: old == new, an empty old, zero matches (naming the
// closest candidate) and several matches without replaceAll (naming their
// lines). Its work is linear in len(content)+len(old) (strings.Count and
// strings.Index; the whitespace-insensitive search hashes each line once)
// apart from the closest-line search, which is bounded; it returns ctx's
// error once ctx ends.
func replaceExactContext(ctx context.Context, content, old, new string, replaceAll bool) (editResult, error) {
	if err := ctx.Err(); err != nil {
		return editResult{}, err
	}
	if old == "" {
		return editResult{}, invalidf("old_string is empty; use write_file to create or overwrite a whole file")
	}
	if old == new {
		return editResult{}, invalidf("old_string and new_string are identical; nothing would change")
	}
	n := strings.Count(content, old)
	if n == 0 && strings.Contains(content, "\r\n") && !strings.Contains(old, "\r\n") && strings.Contains(old, "\n") {
		// The file uses CRLF and the model wrote LF: match in the file's
		// own line endings.
		crOld := strings.ReplaceAll(old, "\n", "\r\n")
		if c := strings.Count(content, crOld); c > 0 {
			old, new, n = crOld, strings.ReplaceAll(new, "\n", "\r\n"), c
		}
	}
	if n == 0 {
		return editResult{}, noMatch(ctx, content, old)
	}
	if err := ctx.Err(); err != nil {
		return editResult{}, err
	}
	if n > 1 && !replaceAll {
		lines := matchLines(content, old, 20)
		more := ""
		if n > len(lines) {
			more = fmt.Sprintf(" (showing %d)", len(lines))
		}
		return editResult{}, &Error{
			Code: "E_INVALID_ARGUMENT",
			Msg:  fmt.Sprintf("old_string matches %d times, at lines %s%s", n, joinInts(lines), more),
			Hint: "include more surrounding lines in old_string so it matches once, or set replace_all=true",
			Err:  grove.ErrInvalid,
		}
	}
	idx := strings.Index(content, old)
	r := editResult{
		replacements: 1,
		firstLine:    strings.Count(content[:idx], "\n") + 1,
		newLines:     max(1, strings.Count(new, "\n")+1),
	}
	if replaceAll {
		r.content = strings.ReplaceAll(content, old, new)
		r.replacements = n
	} else {
		r.content = content[:idx] + new + content[idx+len(old):]
	}
	return r, nil
}

func matchLines(content, old string, limit int) []int {
	var out []int
	off := 0
	for len(out) < limit {
		i := strings.Index(content[off:], old)
		if i < 0 {
			break
		}
		out = append(out, strings.Count(content[:off+i], "\n")+1)
		off += i + max(1, len(old))
	}
	return out
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// noMatch explains a zero-match edit: a whitespace-only difference if
// there is one, otherwise the line most like old_string's first line.
// It returns ctx's error instead once ctx ends.
func noMatch(ctx context.Context, content, old string) error {
	e := &Error{Code: "E_NOT_FOUND", Msg: "old_string was not found in the file", Err: grove.ErrNotFound}
	lines := splitLines(content)
	want := splitLines(old)
	at, err := findTrimmed(ctx, lines, want)
	if err != nil {
		return err
	}
	if at > 0 {
		e.Hint = fmt.Sprintf("it matches at line %d if whitespace is ignored; copy the exact indentation from read_file (without the line-number prefix)", at)
		return e
	}
	first := ""
	for _, l := range want {
		if strings.TrimSpace(l) != "" {
			first = strings.TrimSpace(l)
			break
		}
	}
	// levenshtein compares at most 200 bytes of each side, and the
	// distance is at least the difference of the lengths: lines that
	// cannot beat the best so far are skipped.
	best, bestD := 0, -1
	firstLen := min(len(first), 200)
	for i, l := range lines {
		if i >= 20000 {
			break
		}
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		l = strings.TrimSpace(l)
		if bestD >= 0 {
			if diff := firstLen - min(len(l), 200); diff >= bestD || -diff >= bestD {
				continue
			}
		}
		d := levenshtein(first, l)
		if bestD < 0 || d < bestD {
			best, bestD = i+1, d
		}
	}
	if best > 0 && bestD <= max(3, len(first)/2) {
		e.Hint = fmt.Sprintf("the closest line is %d: %q; read_file around it and copy old_string exactly", best, clip(strings.TrimSpace(lines[best-1]), 200))
	} else {
		e.Hint = "read_file the region you want to change and copy old_string exactly (without the line-number prefix)"
	}
	return e
}

// findTrimmed returns the 1-based line where want matches lines with each
// line's surrounding whitespace ignored, or 0, in time linear in
// len(lines)+len(want).
func findTrimmed(ctx context.Context, lines, want []string) (int, error) {
	i, err := patch.IndexLines(ctx, lines, want, strings.TrimSpace)
	return i + 1, err
}

// snippet shows lines [from-ctx, to+ctx] of content, numbered.
func snippet(content string, from, to, ctx int) string {
	lines := splitLines(content)
	return numbered(lines, max(1, from-ctx), min(len(lines), to+ctx))
}
