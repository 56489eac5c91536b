package httpapi

import (
	"context"
	"net/http"

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
	}, &mcp.StreamableHTTPOptions{Stateless: true})
	serve := func(w http.ResponseWriter, r *http.Request) {
		c, r, done, ok := s.admit(w, r)
		if !ok {
			return
		}
		defer done()
		opt := mcpserver.Options{Tools: s.opt.Tools, Caller: tools.Caller{User: c.p.User, Token: c.token, Bind: c.bind},
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
		h.ServeHTTP(w, r.WithContext(ctx))
	}
	s.mux.HandleFunc("/v1/mcp", serve)
	s.mux.HandleFunc("/v1/workspaces/{id}/mcp", serve)
}

type mcpKey struct{}

type mcpCall struct {
	svc grove.Service
	opt mcpserver.Options
}
