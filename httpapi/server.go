// Package httpapi serves grove.Service as resource-oriented JSON under /v1,
// with bearer API keys, Server-Sent Events for streaming exec, the agent
// tool catalog, MCP over streamable HTTP and an OpenAPI 3.1 document.
//
// Every request is authenticated, then served through auth.Scope, so one
// user never sees another's workspaces (they answer 404 like unknown ids).
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/tools"
	"github.com/grove-dev/grove/tunnel"
	"github.com/grove-dev/grove/wire"
)

// Authenticator turns a bearer secret into a principal; *auth.Keys is one.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (auth.Principal, error)
}

// Options configure a Server. Service, Tools and Auth are required.
type Options struct {
	Service grove.Service
	Tools   *tools.Toolset
	Auth    Authenticator
	Logger  *slog.Logger // access log and internal errors; nil discards

	MaxBodyBytes   int64         // JSON bodies; default 1 MiB
	MaxFileBytes   int64         // file uploads and reads; default 32 MiB
	MaxExecPerUser int           // concurrent exec, tool and MCP calls per user; default 8
	MaxTimeout     time.Duration // cap on exec timeout_ms; default 30 min
	// Ready reports readiness for /readyz; nil means always ready.
	Ready func(ctx context.Context) error
	// Limits bound connections, requests and work; see limits.go.
	Limits Limits
	// Tunnels holds the users' local-mode tunnels (docs/TUNNEL.md); nil
	// makes one with default heartbeats.
	Tunnels *tunnel.Registry
}

// Server is the HTTP API. It is an http.Handler.
type Server struct {
	opt      Options
	mux      *http.ServeMux
	log      *slog.Logger
	lim      Limits
	slots    *slots
	authFail *auth.FailureLimiter
	inflight *auth.Inflight
	tunnels  *tunnel.Registry
}

var _ http.Handler = (*Server)(nil)

// New returns a Server.
func New(opt Options) *Server {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = 1 << 20
	}
	if opt.MaxFileBytes <= 0 {
		opt.MaxFileBytes = 32 << 20
	}
	if opt.MaxExecPerUser <= 0 {
		opt.MaxExecPerUser = 8
	}
	if opt.MaxTimeout <= 0 {
		opt.MaxTimeout = 30 * time.Minute
	}
	s := &Server{opt: opt, mux: http.NewServeMux(), log: opt.Logger, lim: opt.Limits.withDefaults()}
	s.slots = &slots{perUser: opt.MaxExecPerUser, total: s.lim.MaxSlots}
	s.authFail = &auth.FailureLimiter{Max: s.lim.AuthFailures, Backoff: s.lim.AuthBackoff}
	s.inflight = &auth.Inflight{Every: s.lim.RevokeCheck}
	if rc, ok := opt.Auth.(interface {
		Revoked(ctx context.Context, ids []string) ([]string, error)
	}); ok {
		s.inflight.Check = rc.Revoked
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.tunnels = opt.Tunnels
	if s.tunnels == nil {
		s.tunnels = &tunnel.Registry{Log: s.log}
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) })
	m.HandleFunc("GET /readyz", s.readyz)
	m.HandleFunc("GET /v1/openapi.json", serveOpenAPI)

	a := func(pattern string, h handler) { m.Handle(pattern, s.authed(h, s.opt.MaxBodyBytes)) }
	a("POST /v1/workspaces", s.acquire)
	a("GET /v1/workspaces", s.list)
	a("GET /v1/workspaces/{id}", s.show)
	a("DELETE /v1/workspaces/{id}", s.destroy)
	a("POST /v1/workspaces/{id}/release", s.release)
	a("POST /v1/workspaces/{id}/pin", s.pin)
	a("POST /v1/workspaces/{id}/exec", s.exec)
	a("GET /v1/workspaces/{id}/files/{path...}", s.readFile)
	// File bodies are raw bytes with their own, larger limit.
	m.Handle("PUT /v1/workspaces/{id}/files/{path...}", s.authed(s.writeFile, s.opt.MaxFileBytes))
	a("DELETE /v1/workspaces/{id}/files/{path...}", s.deleteFile)
	a("GET /v1/workspaces/{id}/tree", s.tree)
	a("GET /v1/workspaces/{id}/search", s.search)
	a("GET /v1/workspaces/{id}/git/status", s.gitStatus)
	a("GET /v1/workspaces/{id}/git/diff", s.gitDiff)
	a("GET /v1/workspaces/{id}/git/log", s.gitLog)
	a("POST /v1/workspaces/{id}/git/commit", s.gitCommit)
	a("POST /v1/workspaces/{id}/git/push", s.gitPush)
	a("POST /v1/workspaces/{id}/pulls", s.createPull)
	a("POST /v1/workspaces/{id}/pulls/{number}/comments", s.commentPull)
	a("POST /v1/workspaces/{id}/tools/{name}", s.callTool)
	s.debugRoutes(a)
	a("GET /v1/repos", s.listRepos)
	a("POST /v1/repos", s.ensureRepo)
	a("DELETE /v1/repos/{id}", s.removeRepo)
	a("GET /v1/tunnel", s.tunnelConnect)
	a("GET /v1/tunnels", s.listTunnels)
	a("POST /v1/tunnels/{name}/call", s.tunnelCall)
	s.mountMCP()
	// Anything else under /v1 gets the error shape, not the mux's text.
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, grove.Errorf(grove.ErrNotFound, "no such endpoint: %s %s", r.Method, clip(r.URL.Path, 200)))
	})
}

// ServeHTTP adds the request id and access log, refuses dot segments
// before the mux can clean (and redirect) them, and dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := r.Header.Get("X-Request-Id")
	if !validRequestID(id) {
		id = newRequestID()
	}
	w.Header().Set("X-Request-Id", id)
	// Everything served here comes over the network: the engine then keeps
	// the server's disk and internal network out of the caller's reach.
	ctx := grove.WithRemoteCaller(r.Context())
	ctx = context.WithValue(ctx, reqIDKey{}, id)
	ctx = context.WithValue(ctx, loggerKey{}, s.log)
	info := &reqInfo{}
	ctx = context.WithValue(ctx, reqInfoKey{}, info)
	r = r.WithContext(ctx)
	rec := &recorder{ResponseWriter: w, status: 200, writeTimeout: s.lim.WriteTimeout}
	s.withBodyDeadline(w, r)
	if err := checkPathLimits(r); err != nil {
		writeError(rec, r, err)
	} else if err := checkURLPath(r); err != nil {
		writeError(rec, r, err)
	} else {
		s.mux.ServeHTTP(rec, r)
	}
	// Method, path, status and who: never headers (Authorization), query
	// values other than the path, or bodies.
	s.log.LogAttrs(ctx, slog.LevelInfo, "http",
		slog.String("request_id", id), slog.String("method", r.Method), slog.String("path", clip(r.URL.Path, 256)),
		slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", time.Since(start)),
		slog.String("user", info.user), slog.String("client", clientAddr(r)))
}

// checkURLPath refuses "." and ".." segments (also when sent as %2e%2e)
// and empty segments. The mux would otherwise answer them with a redirect
// to a cleaned path — a different resource than the one named.
func checkURLPath(r *http.Request) error {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") {
		return grove.Errorf(grove.ErrInvalid, "request path must be absolute")
	}
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		if seg == "." || seg == ".." {
			return grove.Errorf(grove.ErrPathOutside, "path segment %q is not allowed", seg)
		}
		if seg == "" && i != len(segs)-1 {
			return grove.Errorf(grove.ErrInvalid, "empty path segment")
		}
		if strings.ContainsRune(seg, 0) {
			return grove.Errorf(grove.ErrInvalid, "NUL in path")
		}
	}
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.opt.Ready != nil {
		if err := s.opt.Ready(r.Context()); err != nil {
			writeError(w, r, grove.Errorf(grove.ErrUnavailable, "not ready"))
			return
		}
	}
	writeJSON(w, 200, map[string]string{"status": "ready"})
}

// handler serves one authenticated request through the caller's scoped
// service.
type handler func(w http.ResponseWriter, r *http.Request, c *caller) error

type caller struct {
	p     auth.Principal
	svc   grove.Service // scoped to p
	token string        // per-call git token from X-Git-Token, never logged
	// bind ties work that outlives the request (background processes) to
	// the caller's key, so revoking the key ends it.
	bind func(context.Context) (context.Context, context.CancelFunc)
}

// authed authenticates, caps the request body at limit bytes and serves h.
func (s *Server) authed(h handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, r, done, ok := s.admit(w, r)
		if !ok {
			return
		}
		defer done()
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if slotRoutes[r.Pattern] {
			release, err := s.acquireSlot(c.p.User)
			if err != nil {
				writeError(w, r, err)
				return
			}
			defer release()
		}
		if err := h(w, r, c); err != nil {
			writeError(w, r, revokedCause(r.Context(), err))
		}
	})
}

func (s *Server) authenticate(r *http.Request) (*caller, error) {
	// Auth schemes are case-insensitive (RFC 7235 §2.1): "bearer" is Bearer.
	scheme, secret, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		return nil, grove.Errorf(grove.ErrUnauthorized, "missing bearer API key")
	}
	p, err := s.opt.Auth.Authenticate(r.Context(), strings.TrimSpace(secret))
	if err != nil {
		return nil, err
	}
	if info, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok {
		info.user = p.User
	}
	// Names on the wire use wire.EscapePath: JSON cannot carry non-UTF-8 bytes.
	// The caller's live tunnels are workspaces too (mode local), served
	// over their agents; tunnel.Scope sees only this user's.
	svc := tunnel.Scope(auth.Scope(s.opt.Service, p), s.tunnels, p.User)
	return &caller{p: p, svc: wire.EscapeNames(svc), token: r.Header.Get("X-Git-Token")}, nil
}

type reqIDKey struct{}
type loggerKey struct{}
type reqInfoKey struct{}

type reqInfo struct{ user string }

func requestID(ctx context.Context) string { s, _ := ctx.Value(reqIDKey{}).(string); return s }

func loggerFrom(ctx context.Context) *slog.Logger {
	l, _ := ctx.Value(loggerKey{}).(*slog.Logger)
	return l
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r == '-' || r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// recorder remembers the status and size for the access log. It passes
// Flush through, which SSE needs.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool

	writeTimeout time.Duration
	rc           *http.ResponseController
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.extendWrite()
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	r.extendWrite()
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		r.extendWrite()
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
