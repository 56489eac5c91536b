package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/tools"
	"github.com/grove-dev/grove/wire"
)

// Limits bound what one connection, client address, key or user can make
// the server hold. Zero fields take the defaults below; docs/SECURITY.md
// ("Limits") lists each with what a caller sees when it is hit.
type Limits struct {
	// Connections (enforced by Server.Listener).
	MaxConns      int // open connections in total; default 512
	MaxConnsPerIP int // open connections per client address; default 64

	// Requests (enforced by Server.HTTPServer and the handlers).
	MaxHeaderBytes int           // request line and headers; default 64 KiB
	BodyTimeout    time.Duration // to receive a request body once the headers are in; default 30s
	WriteTimeout   time.Duration // for any one write of the response to make progress; default 60s
	SSEKeepAlive   time.Duration // comment sent on an idle event stream; default 15s

	// Work: one slot per exec, SSE stream, tool call, MCP tool call,
	// search and large read or write. Per user is Options.MaxExecPerUser.
	MaxSlots int // in total, all users; default 64

	MaxOutput       int   // exec max_output cap, bytes per stream; default 8 MiB
	MaxMCPBatch     int   // JSON-RPC messages in one MCP request; default 8
	LargeBody       int64 // file reads and writes over this take a slot; default 1 MiB
	MaxSearchOffset int   // search offset + max_results; default 10000

	// RevokeCheck is how often keys with work in flight are re-checked
	// against the store (revocation by another process); default 2s.
	RevokeCheck time.Duration

	// AuthFailures failed authentications per minute from one address
	// before it is refused for a back-off starting at AuthBackoff and
	// doubling up to a minute; defaults 10 and 2s.
	AuthFailures int
	AuthBackoff  time.Duration
}

// URL path limits; fixed, as no legitimate request comes near them.
const (
	maxPathBytes    = 4096
	maxPathSegments = 256
	maxNameBytes    = 255 // one path component, as on Linux file systems
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxConns, 512)
	def(&l.MaxConnsPerIP, 64)
	def(&l.MaxHeaderBytes, 64<<10)
	defD(&l.BodyTimeout, 30*time.Second)
	defD(&l.WriteTimeout, 60*time.Second)
	defD(&l.SSEKeepAlive, 15*time.Second)
	def(&l.MaxSlots, 64)
	def(&l.MaxOutput, 8<<20)
	def(&l.MaxMCPBatch, 8)
	def(&l.MaxSearchOffset, 10000)
	def(&l.AuthFailures, 10)
	defD(&l.AuthBackoff, 2*time.Second)
	defD(&l.RevokeCheck, 2*time.Second)
	if l.LargeBody <= 0 {
		l.LargeBody = 1 << 20
	}
	return l
}

// slots is the one gate every way of running work passes: a per-user and a
// global count of work in flight. It never queues — a queue would hold
// connections open — so a full gate answers at once.
type slots struct {
	mu      sync.Mutex
	perUser int
	total   int
	used    int
	byUser  map[string]int
}

func (s *slots) acquire(user string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.byUser[user]
	switch {
	case n >= s.perUser:
		return nil, slotError(fmt.Sprintf("user %s already runs %d commands, tool calls or searches, the most allowed at once", user, s.perUser))
	case s.used >= s.total:
		return nil, slotError(fmt.Sprintf("the server already runs %d commands, tool calls or searches, the most allowed at once", s.total))
	}
	if s.byUser == nil {
		s.byUser = map[string]int{}
	}
	s.byUser[user] = n + 1
	s.used++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.used--
			if s.byUser[user]--; s.byUser[user] <= 0 {
				delete(s.byUser, user)
			}
		})
	}, nil
}

// slotError is a tool error so MCP shows the code and hint to the model;
// its kind makes it 429 over HTTP.
func slotError(msg string) error {
	return &tools.Error{Code: "E_RESOURCE_LIMIT", Msg: msg, Hint: "wait for one to finish (or kill a background process) and retry", Err: grove.ErrResourceLimit}
}

// acquireSlot takes one of the user's work slots, or fails with
// ErrResourceLimit at once.
func (s *Server) acquireSlot(user string) (release func(), err error) {
	return s.slots.acquire(user)
}

// retryAfter is an error that tells the caller when to try again.
type retryAfter struct {
	error
	after time.Duration
}

func (e *retryAfter) Unwrap() error { return e.error }

// setRetryAfter adds Retry-After to 429 and 503 answers: the back-off of
// the error if it carries one, else one second (slots free up as work
// ends; there is no way to know when).
func setRetryAfter(w http.ResponseWriter, err error, status int) {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return
	}
	secs := 1
	var ra *retryAfter
	if errors.As(err, &ra) {
		secs = max(1, int((ra.after+time.Second-1)/time.Second))
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
}

// admit is the front door of every authenticated route: refuse addresses
// in an authentication back-off, authenticate, and tie the request to its
// key so revoking the key cancels it. It runs before any handler reads the
// body; a refused request with a body gets Connection: close, so the
// server does not wait to drain a body nobody will read.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (*caller, *http.Request, func(), bool) {
	addr := clientAddr(r)
	refuse := func(err error) (*caller, *http.Request, func(), bool) {
		if r.ContentLength != 0 {
			w.Header().Set("Connection", "close")
		}
		writeError(w, r, err)
		return nil, r, nil, false
	}
	if d, ok := s.authFail.Allow(addr); !ok {
		return refuse(&retryAfter{grove.Errorf(grove.ErrResourceLimit, "too many failed authentications from this address; retry in %ds", int(d.Seconds())+1), d})
	}
	c, err := s.authenticate(r)
	if err != nil {
		if errors.Is(err, grove.ErrUnauthorized) {
			if d := s.authFail.Fail(addr); d > 0 {
				s.log.LogAttrs(r.Context(), slog.LevelWarn, "authentication back-off", slog.String("client", addr), slog.Duration("backoff", d))
			}
		}
		return refuse(err)
	}
	ctx, done := s.inflight.Track(r.Context(), c.p.KeyID)
	c.bind = func(parent context.Context) (context.Context, context.CancelFunc) {
		return s.inflight.Track(parent, c.p.KeyID)
	}
	return c, r.WithContext(ctx), done, true
}

// revokedCause turns the error of work its key's revocation cancelled into
// that revocation (401), instead of an internal error.
func revokedCause(ctx context.Context, err error) error {
	if err != nil && auth.IsRevoked(context.Cause(ctx)) {
		return context.Cause(ctx)
	}
	return err
}

// clientAddr is the TCP peer's IP. X-Forwarded-For is not trusted: a
// proxy in front of Grove must do its own per-client limiting.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// checkPathLimits refuses URL paths too long, too deep, or with a
// component longer than any file name can be, before anything else reads
// them — and before a file system answers ENAMETOOLONG as an internal
// error. The same component bound applies to the path query parameter.
func checkPathLimits(r *http.Request) error {
	p := r.URL.Path
	if len(p) > maxPathBytes || len(r.URL.RawPath) > 3*maxPathBytes {
		return grove.Errorf(grove.ErrInvalid, "request path is over %d bytes", maxPathBytes)
	}
	if strings.Count(p, "/") > maxPathSegments {
		return grove.Errorf(grove.ErrInvalid, "request path has over %d components", maxPathSegments)
	}
	if err := checkNames(p); err != nil {
		return err
	}
	if q := r.URL.Query()["path"]; len(q) > 0 {
		if len(q) > maxPathSegments {
			return grove.Errorf(grove.ErrInvalid, "over %d path parameters", maxPathSegments)
		}
		for _, v := range q {
			if len(v) > maxPathBytes {
				return grove.Errorf(grove.ErrInvalid, "path parameter is over %d bytes", maxPathBytes)
			}
			if err := checkNames(v); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkNames(p string) error {
	for seg := range strings.SplitSeq(p, "/") {
		if len(seg) > maxNameBytes {
			return grove.Errorf(grove.ErrInvalid, "path component %q is over %d bytes", clip(seg, 32), maxNameBytes)
		}
	}
	return nil
}

// bodyTimeoutError is a request body that did not arrive within
// Limits.BodyTimeout: 408.
type bodyTimeoutError struct{ error }

func (e *bodyTimeoutError) Unwrap() error { return e.error }

// deadlineBody bounds how long a request body may take to arrive, with a
// read deadline on the connection set when the handler starts. Reaching
// the end of the body clears it: a deadline left on the connection would
// later cancel the request (net/http's background read treats it as the
// client going away) while a long command runs.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	cleared bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return n, &bodyTimeoutError{grove.Errorf(grove.ErrTimeout, "request body not received within %s", b.timeout)}
		}
		if !b.cleared {
			b.cleared = true
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

// withBodyDeadline installs deadlineBody on requests that have a body.
func (s *Server) withBodyDeadline(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(s.lim.BodyTimeout)) != nil {
		return // not a net/http connection (tests with a recorder)
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, timeout: s.lim.BodyTimeout}
}

// extendWrite moves the connection's write deadline WriteTimeout past now.
// The recorder calls it before every write and flush, so a response may
// take as long as it needs — a 30-minute command, an event stream — while
// any single write to a client that stopped reading fails after
// WriteTimeout and frees the connection and the work behind it.
func (r *recorder) extendWrite() {
	if r.writeTimeout <= 0 {
		return
	}
	if r.rc == nil {
		r.rc = http.NewResponseController(r.ResponseWriter)
	}
	_ = r.rc.SetWriteDeadline(time.Now().Add(r.writeTimeout))
}

// checkMCPBatch refuses a JSON-RPC batch of more than MaxMCPBatch
// messages before the MCP server sees it. Each call in a batch also takes
// its own slot; this bounds how much one request can queue up behind
// them. The body (already capped at MaxBodyBytes) is read here and handed
// on.
func (s *Server) checkMCPBatch(r *http.Request) error {
	if r.Method != http.MethodPost {
		return nil
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil
	}
	var batch []json.RawMessage
	if json.Unmarshal(trimmed, &batch) != nil {
		return nil // the MCP server answers malformed JSON itself
	}
	if len(batch) > s.lim.MaxMCPBatch {
		return grove.Errorf(grove.ErrInvalid, "JSON-RPC batch of %d messages; at most %d per request", len(batch), s.lim.MaxMCPBatch)
	}
	return nil
}

// readLarge reads a file of up to limit bytes. Small reads (up to
// LargeBody) run without a slot, so many concurrent small reads stay
// cheap; a file bigger than that is read again under a slot, which bounds
// the memory large reads hold to slots × MaxFileBytes.
func (s *Server) readLarge(r *http.Request, c *caller, limit int64) ([]byte, func(), error) {
	id, path := r.PathValue("id"), r.PathValue("path")
	if limit <= s.lim.LargeBody {
		data, err := c.svc.ReadFile(r.Context(), id, path, limit)
		return data, func() {}, err
	}
	data, err := c.svc.ReadFile(r.Context(), id, path, s.lim.LargeBody)
	if !errors.Is(err, grove.ErrTooLarge) {
		return data, func() {}, err
	}
	release, err := s.acquireSlot(c.p.User)
	if err != nil {
		return nil, nil, err
	}
	data, err = c.svc.ReadFile(r.Context(), id, path, limit)
	if err != nil {
		release()
		return nil, nil, err
	}
	return data, release, nil
}

// writeChunked writes data in pieces so that each write gets its own write
// deadline (see recorder.extendWrite): a slow reader must keep taking
// 1 MiB per WriteTimeout, and one that stops frees the slot.
func writeChunked(w http.ResponseWriter, data []byte) {
	const chunk = 1 << 20
	for len(data) > 0 {
		n := min(len(data), chunk)
		if _, err := w.Write(data[:n]); err != nil {
			return
		}
		data = data[n:]
	}
}

// gateMCPCall admits one MCP tool call: it takes a slot, and ties the
// call's context to the HTTP request's, which ends when the client goes
// away or the key is revoked (the SDK's call context does not follow the
// request in stateless mode).
func (s *Server) gateMCPCall(callCtx, reqCtx context.Context, c *caller) (context.Context, func(), error) {
	release, err := s.acquireSlot(c.p.User)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancelCause(callCtx)
	stop := context.AfterFunc(reqCtx, func() { cancel(context.Cause(reqCtx)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
		release()
	}, nil
}

// writeExecResult writes res as an ExecResponse without building the whole
// JSON document in memory: the output, up to max_output per stream, is
// escaped and written in pieces. The bytes are those json.Marshal of
// ExecResponseOf(res) gives (plus writeJSON's newline); only the memory
// differs — this keeps one copy of the output (the runtime's), where
// converting and marshalling it whole kept three.
func writeExecResult(w http.ResponseWriter, res *grove.ExecResult) {
	shell := *res
	shell.Stdout, shell.Stderr = nil, nil
	doc, err := json.Marshal(wire.ExecResponseOf(&shell))
	const so, se = `"stdout":""`, `"stderr":""`
	i, j := bytes.Index(doc, []byte(so)), bytes.Index(doc, []byte(se))
	if err != nil || i < 0 || j < i {
		writeJSON(w, 200, wire.ExecResponseOf(res)) // the wire type changed shape: the plain way
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.Write(doc[:i+len(so)-1])
	writeJSONStringBody(bw, res.Stdout)
	bw.Write(doc[i+len(so)-1 : j+len(se)-1])
	writeJSONStringBody(bw, res.Stderr)
	bw.Write(doc[j+len(se)-1:])
	bw.WriteByte('\n')
	_ = bw.Flush()
}

// writeJSONStringBody writes b as the inside of a JSON string, escaped as
// json.Marshal escapes a string (invalid UTF-8 becomes U+FFFD), a piece at
// a time. Pieces end at rune starts, so no UTF-8 sequence is split.
func writeJSONStringBody(w io.Writer, b []byte) {
	const piece = 32 << 10
	for len(b) > 0 {
		n := min(len(b), piece)
		for k := n; k > n-utf8.UTFMax && k > 0 && k < len(b); k-- {
			if utf8.RuneStart(b[k]) {
				n = k
				break
			}
		}
		enc, _ := json.Marshal(string(b[:n]))
		w.Write(enc[1 : len(enc)-1])
		b = b[n:]
	}
}

// slotRoutes run git or walk a tree — work like a command — and take a
// slot for the whole request. exec, tools, search, MCP and large file
// reads and uploads take theirs in their handlers, after the cheap checks.
var slotRoutes = map[string]bool{
	"POST /v1/workspaces":                              true, // acquire: clone, fetch, worktree
	"POST /v1/repos":                                   true, // ensure: clone, fetch
	"GET /v1/workspaces/{id}/tree":                     true,
	"GET /v1/workspaces/{id}/git/status":               true,
	"GET /v1/workspaces/{id}/git/diff":                 true,
	"GET /v1/workspaces/{id}/git/log":                  true,
	"POST /v1/workspaces/{id}/git/commit":              true,
	"POST /v1/workspaces/{id}/git/push":                true,
	"POST /v1/workspaces/{id}/pulls":                   true,
	"POST /v1/workspaces/{id}/pulls/{number}/comments": true,
	"POST /v1/tunnels/{name}/call":                     true, // a command or file operation on the user's machine
}
