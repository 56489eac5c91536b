package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/mcpserver"
	"github.com/grove-dev/grove/tools"
)

// mountMCP serves the tool catalog over streamable HTTP: /v1/mcp is
// unbound (tools take workspace_id), /v1/workspaces/{id}/mcp is bound to
// one workspace. Both authenticate like every other route and answer auth
// failures in the API's error shape.
//
// This builds on mcpserver.NewServer rather than mcpserver.HTTPHandler:
// HTTPHandler serves one fixed Service, and here each request needs a
// server over that caller's scoped Service, so another user's workspace_id
// is not found through MCP either. Stateless, like HTTPHandler: no
// session can carry one caller's server to another.
func (s *Server) mountMCP() {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		m, ok := r.Context().Value(mcpKey{}).(*mcpCall)
		if !ok {
			return nil
		}
		return mcpserver.NewServer(m.svc, m.opt)
	}, mcpserver.StreamableOptions())
	serve := func(w http.ResponseWriter, r *http.Request) {
		c, r, done, ok := s.admit(w, r)
		if !ok {
			return
		}
		defer done()
		opt := mcpserver.Options{Tools: s.opt.Tools, Caller: tools.Caller{User: c.p.User, Token: c.token, Bind: c.bind}, CancelWith: r.Context(),
			Gate: func(ctx context.Context, _ string) (context.Context, func(), error) {
				return s.gateMCPCall(ctx, r.Context(), c)
			}}
		if id := r.PathValue("id"); id != "" {
			ws, err := c.svc.Get(r.Context(), id)
			if err != nil {
				writeError(w, r, err)
				return
			}
			writable := ws.Capabilities().Writable
			opt.WorkspaceID, opt.Writable = ws.ID, &writable
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opt.MaxBodyBytes)
		if err := s.checkMCPBatch(r); err != nil {
			writeError(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), mcpKey{}, &mcpCall{svc: c.svc, opt: opt})
		jw := &jsonErrors{ResponseWriter: w}
		h.ServeHTTP(jw, r.WithContext(ctx))
		jw.finish(r)
	}
	s.mux.HandleFunc("/v1/mcp", serve)
	s.mux.HandleFunc("/v1/workspaces/{id}/mcp", serve)
}

type mcpKey struct{}

type mcpCall struct {
	svc grove.Service
	opt mcpserver.Options
}

// jsonErrors turns the SDK's plain-text transport errors (malformed JSON,
// a missing Accept or Content-Type, an unknown method, a GET on this
// stateless endpoint) into the API's error shape with the same status.
// JSON-RPC error responses, which the SDK writes as JSON, pass through.
type jsonErrors struct {
	http.ResponseWriter
	status int // set when the response is being replaced
	text   bytes.Buffer
}

func (j *jsonErrors) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(j.Header().Get("Content-Type"), "text/plain") {
		j.status = code
		j.Header().Del("Content-Type")
		return
	}
	j.ResponseWriter.WriteHeader(code)
}

func (j *jsonErrors) Write(b []byte) (int, error) {
	if j.status != 0 {
		if j.text.Len() < 1024 {
			j.text.Write(b[:min(len(b), 1024)])
		}
		return len(b), nil
	}
	return j.ResponseWriter.Write(b)
}

func (j *jsonErrors) Flush() {
	if f, ok := j.ResponseWriter.(http.Flusher); ok && j.status == 0 {
		f.Flush()
	}
}

func (j *jsonErrors) Unwrap() http.ResponseWriter { return j.ResponseWriter }

func (j *jsonErrors) finish(r *http.Request) {
	if j.status == 0 {
		return
	}
	kind := grove.ErrInvalid
	switch j.status {
	case http.StatusNotFound:
		kind = grove.ErrNotFound
	case http.StatusRequestEntityTooLarge:
		kind = grove.ErrTooLarge
	case http.StatusMethodNotAllowed:
		kind = grove.ErrNotSupported
	}
	msg := "MCP transport: " + clip(strings.TrimSpace(j.text.String()), 300)
	writeJSON(j.ResponseWriter, j.status, errorBody(grove.Errorf(kind, "%s", msg), requestID(r.Context())))
}
