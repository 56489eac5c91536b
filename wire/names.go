package wire

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/grove-dev/grove"
)

// File names are bytes, and JSON strings are UTF-8: encoding/json would
// turn a name's invalid bytes into U+FFFD, and the file could then be
// neither told apart from others nor addressed. On the wire such names
// use a reversible escape:
//
//   - a byte that is not part of valid UTF-8 is written \xHH (HH: two
//     lowercase hex digits, 80 to ff);
//   - in a name that needs escaping, or that contains text the decoder
//     would read as an escape (\\, or \x followed by 8-f and a hex digit),
//     every backslash is written \\.
//
// Every other name — valid UTF-8 without such text, which is nearly all
// of them — is sent unchanged. Paths from callers are decoded the other
// way: \\ is a backslash, \x80 to \xff a raw byte, anything else is taken
// literally, so the raw form (percent-encoded in a URL) works too.

// EscapePath returns the wire form of a file name or path.
func EscapePath(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, `\\`) && !hasByteEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			const hex = "0123456789abcdef"
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&15])
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// UnescapePath is the inverse of EscapePath.
func UnescapePath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == '\\' {
			b.WriteByte('\\')
			i++
			continue
		}
		if v, ok := byteEscape(s[i:]); ok {
			b.WriteByte(v)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// byteEscape decodes a \xHH escape of a byte 0x80-0xff at the start of s.
func byteEscape(s string) (byte, bool) {
	if len(s) < 4 || s[0] != '\\' || s[1] != 'x' {
		return 0, false
	}
	hi, ok1 := hexVal(s[2])
	lo, ok2 := hexVal(s[3])
	if !ok1 || !ok2 || hi < 8 {
		return 0, false
	}
	return hi<<4 | lo, true
}

func hasByteEscape(s string) bool {
	for i := strings.IndexByte(s, '\\'); i >= 0 && i < len(s); {
		if _, ok := byteEscape(s[i:]); ok {
			return true
		}
		j := strings.IndexByte(s[i+1:], '\\')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// EscapeNames wraps svc for a JSON transport: file names and paths in
// results are escaped (EscapePath), and paths in requests unescaped, so
// every route speaks the same escaped form. Wrap the in-process service
// once, at the transport; a client of the HTTP API already speaks it. The
// result implements grove.PullRequester and grove.Debugger exactly when
// svc does.
func EscapeNames(svc grove.Service) grove.Service {
	n := &names{Service: svc}
	pr, isPR := svc.(grove.PullRequester)
	d, isDebug := svc.(grove.Debugger)
	switch {
	case isPR && isDebug:
		return namesPRDebug{namesPR{n, pr}, debugNames{d}}
	case isPR:
		return namesPR{n, pr}
	case isDebug:
		return namesDebug{n, debugNames{d}}
	}
	return n
}

type names struct{ grove.Service }

type namesPR struct {
	*names
	grove.PullRequester
}

func unescapeAll(ps []string) []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = UnescapePath(p)
	}
	return out
}

func (n *names) Exec(ctx context.Context, id string, req grove.ExecRequest) (*grove.ExecResult, error) {
	req.Dir = UnescapePath(req.Dir)
	return n.Service.Exec(ctx, id, req)
}

func (n *names) ExecStream(ctx context.Context, id string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	req.Dir = UnescapePath(req.Dir)
	return n.Service.ExecStream(ctx, id, req, emit)
}

func (n *names) ReadFile(ctx context.Context, id, path string, maxBytes int64) ([]byte, error) {
	return n.Service.ReadFile(ctx, id, UnescapePath(path), maxBytes)
}

func (n *names) WriteFile(ctx context.Context, id, path string, data []byte) error {
	return n.Service.WriteFile(ctx, id, UnescapePath(path), data)
}

func (n *names) DeleteFile(ctx context.Context, id, path string) error {
	return n.Service.DeleteFile(ctx, id, UnescapePath(path))
}

func (n *names) ListDir(ctx context.Context, id, path string, depth int) ([]grove.DirEntry, error) {
	entries, err := n.Service.ListDir(ctx, id, UnescapePath(path), depth)
	for i := range entries {
		entries[i].Path, entries[i].Name = EscapePath(entries[i].Path), EscapePath(entries[i].Name)
	}
	return entries, err
}

func (n *names) Search(ctx context.Context, id string, req grove.SearchRequest) (*grove.SearchResult, error) {
	req.Path = UnescapePath(req.Path)
	res, err := n.Service.Search(ctx, id, req)
	if res != nil {
		for i := range res.Matches {
			res.Matches[i].Path = EscapePath(res.Matches[i].Path)
		}
	}
	return res, err
}

func escapeStatuses(fs []grove.FileStatus) {
	for i := range fs {
		fs[i].Path, fs[i].OrigPath = EscapePath(fs[i].Path), EscapePath(fs[i].OrigPath)
	}
}

func (n *names) Status(ctx context.Context, id string) (*grove.Status, error) {
	st, err := n.Service.Status(ctx, id)
	if st != nil {
		escapeStatuses(st.Staged)
		escapeStatuses(st.Unstaged)
		escapeStatuses(st.Conflicted)
		for i, u := range st.Untracked {
			st.Untracked[i] = EscapePath(u)
		}
	}
	return st, err
}

func (n *names) Diff(ctx context.Context, id string, req grove.DiffRequest) (*grove.Diff, error) {
	req.Paths = unescapeAll(req.Paths)
	d, err := n.Service.Diff(ctx, id, req)
	if d != nil {
		for i := range d.Files {
			d.Files[i].Path, d.Files[i].OrigPath = EscapePath(d.Files[i].Path), EscapePath(d.Files[i].OrigPath)
		}
	}
	return d, err
}

func (n *names) Log(ctx context.Context, id string, limit int, path string) ([]grove.Commit, error) {
	return n.Service.Log(ctx, id, limit, UnescapePath(path))
}

func (n *names) Commit(ctx context.Context, id string, req grove.CommitRequest) (*grove.CommitResult, error) {
	req.Paths = unescapeAll(req.Paths)
	return n.Service.Commit(ctx, id, req)
}

func (n namesPR) CommentPullRequest(ctx context.Context, id string, req grove.CommentRequest) (*grove.Comment, error) {
	req.Path = UnescapePath(req.Path)
	return n.PullRequester.CommentPullRequest(ctx, id, req)
}
