package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/grove-dev/grove"
)

// Caller is who is calling: the user the transport authenticated and the
// per-call token for the git host. The token is used for the call only and
// never appears in results, errors or logs.
type Caller struct {
	User  string
	Token string
	// Bind ties work that outlives the call (background processes) to the
	// caller's credentials: the context it returns ends when parent does
	// or when the caller's key is revoked; cancel releases it. Nil: such
	// work lives until the Toolset closes.
	Bind func(parent context.Context) (ctx context.Context, cancel context.CancelFunc)
}

type callerKey struct{}

// WithCaller attaches the caller to ctx; workspace_open and git_push use it.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

func callerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// isBinary uses git's heuristic: a NUL byte in the first 8000 bytes.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// splitLines splits text into lines without their terminators; a final
// newline does not start an extra line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// maxLineLen bounds a single shown line: minified files would otherwise
// blow the window.
const maxLineLen = 2000

// numbered renders lines[from-1:to] as "%6d\t" + line.
func numbered(lines []string, from, to int) string {
	var b strings.Builder
	for i := from; i <= to && i <= len(lines); i++ {
		l := strings.TrimSuffix(lines[i-1], "\r")
		if len(l) > maxLineLen {
			l = l[:maxLineLen] + fmt.Sprintf(" … [line truncated, %d bytes]", len(lines[i-1]))
		}
		fmt.Fprintf(&b, "%6d\t%s\n", i, l)
	}
	return b.String()
}

// relPath makes a caller's path workspace-relative and refuses escapes
// that can be seen lexically. Paths reaching the runtime as command
// arguments need this; the Service checks its own paths (including
// symlinks) again.
func (c *call) relPath(ctx context.Context, p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if strings.ContainsRune(p, 0) {
		return "", invalidf("path contains a NUL byte")
	}
	if path.IsAbs(p) {
		ws, err := c.svc.Get(ctx, c.ws)
		if err != nil {
			return "", err
		}
		root := strings.TrimSuffix(ws.LocalPath, "/")
		switch {
		case root != "" && p == root:
			return ".", nil
		case root != "" && strings.HasPrefix(p, root+"/"):
			p = strings.TrimPrefix(p, root+"/")
		default:
			return "", grove.Errorf(grove.ErrPathOutside, "%q is outside the workspace", p)
		}
	}
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", grove.Errorf(grove.ErrPathOutside, "%q is outside the workspace", p)
	}
	return p, nil
}

// headTail keeps the first and last bytes of a stream and counts what it
// drops in between, so a long command's beginning (the command echo, the
// first error) and its end (the summary) both survive.
type headTail struct {
	headMax, tailMax int
	head, tail       []byte
	total            int64
}

func newHeadTail(max int) *headTail {
	h := max / 2
	return &headTail{headMax: h, tailMax: max - h}
}

func (h *headTail) Write(p []byte) (int, error) {
	n := len(p)
	h.total += int64(n)
	if room := h.headMax - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 {
		h.tail = append(h.tail, p...)
		// Trim lazily to keep appends amortised O(1).
		if len(h.tail) > 2*h.tailMax {
			h.tail = append(h.tail[:0], h.tail[len(h.tail)-h.tailMax:]...)
		}
	}
	return n, nil
}

// omitted is how many bytes were dropped.
func (h *headTail) omitted() int64 {
	return h.total - int64(len(h.head)) - int64(min(len(h.tail), h.tailMax))
}

func (h *headTail) String() string {
	tail := h.tail
	if len(tail) > h.tailMax {
		tail = tail[len(tail)-h.tailMax:]
	}
	if o := h.omitted(); o > 0 {
		return fmt.Sprintf("%s\n[… %d bytes omitted …]\n%s", h.head, o, tail)
	}
	return string(h.head) + string(tail)
}
