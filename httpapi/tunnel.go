package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/tunnel"
)

// Local mode (docs/TUNNEL.md): a developer's `grove tunnel` connects to
// GET /v1/tunnel with their API key and registers a directory of their
// own machine under a name. It is then their workspace local-<name> on
// every workspace route, /tools and MCP (tunnel.Scope, wired in
// authenticate), and POST /v1/tunnels/{name}/call reaches its routes
// directly. Tunnels are per user: another user's name is E_NOT_FOUND like
// one never registered. With several servers sharing Redis
// (tunnel.Cluster), both reach a tunnel connected to any of them.

// tunnelConnect upgrades to the tunnel protocol and serves the agent until
// it goes away. The key's revocation ends it (the request context is
// tracked by admit).
func (s *Server) tunnelConnect(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		// Anything but an upgrade gets the API's error shape, not the
		// WebSocket library's text.
		return grove.Errorf(grove.ErrInvalid, "GET /v1/tunnel is the WebSocket endpoint of grove tunnel (docs/TUNNEL.md); send an Upgrade: websocket request")
	}
	ws, err := tunnel.Accept(w, r)
	if err != nil {
		return nil // Accept answered the request itself
	}
	_ = s.tunnels.Serve(r.Context(), c.p.User, ws)
	return nil
}

func (s *Server) listTunnels(w http.ResponseWriter, r *http.Request, c *caller) error {
	list := s.tunnels.ListAll(r.Context(), c.p.User)
	if list == nil {
		list = []tunnel.Info{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tunnels": list})
	return nil
}

// TunnelCallRequest is the body of POST /v1/tunnels/{name}/call.
type TunnelCallRequest struct {
	Endpoint  string          `json:"endpoint"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	TimeoutMS int64           `json:"timeout_ms,omitempty"`
}

// tunnelCall forwards one call to the caller's tunnel and answers with the
// agent's tool_response (200 whatever the agent answered; the HTTP status
// is about reaching it: 404 no such tunnel, 503 it went away, 504 no
// answer).
func (s *Server) tunnelCall(w http.ResponseWriter, r *http.Request, c *caller) error {
	var req TunnelCallRequest
	if err := Decode(r.Body, &req); err != nil {
		return err
	}
	if req.Endpoint == "" {
		return grove.Errorf(grove.ErrInvalid, "endpoint is required")
	}
	timeout := time.Minute
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	timeout = min(timeout, s.opt.MaxTimeout)
	resp, err := s.tunnels.Call(r.Context(), c.p.User, r.PathValue("name"), req.Endpoint, req.Payload, timeout)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}
