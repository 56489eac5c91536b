package tunnel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/grove-dev/grove"
)

// MaxMessageBytes bounds one frame either way: a file of MaxFileBytes
// (base64 in JSON) plus headroom.
const MaxMessageBytes = 16 << 20

// Subprotocol names this protocol in the WebSocket handshake.
const Subprotocol = "grove-tunnel.v1"

// WS is a Conn over a WebSocket: one JSON text message per Message.
type WS struct{ c *websocket.Conn }

// NewWS wraps c.
func NewWS(c *websocket.Conn) *WS {
	c.SetReadLimit(MaxMessageBytes)
	return &WS{c: c}
}

// Read reads one message. A frame that is not a JSON Message is
// ErrMalformed (the connection stays usable).
func (w *WS) Read(ctx context.Context) (Message, error) {
	typ, b, err := w.c.Read(ctx)
	if err != nil {
		return Message{}, err
	}
	var m Message
	if typ != websocket.MessageText {
		return m, fmt.Errorf("%w: binary frame", ErrMalformed)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return m, nil
}

// Write writes one message.
func (w *WS) Write(ctx context.Context, m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return w.c.Write(ctx, websocket.MessageText, b)
}

// Close closes the connection with a normal closure.
func (w *WS) Close(reason string) error {
	return w.c.Close(websocket.StatusNormalClosure, clip(reason, 100))
}

// Accept upgrades an HTTP request to a tunnel connection.
// Authentication is the caller's (the HTTP API authenticates first).
// Browsers cannot reach it cross-origin: the default origin check allows
// only the server's own host, and a bearer header is required anyway.
func Accept(w http.ResponseWriter, r *http.Request) (*WS, error) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}})
	if err != nil {
		return nil, err
	}
	return NewWS(c), nil
}

// Dial connects to a server's tunnel endpoint (ws:// or wss://, or the
// http(s) equivalents) with an API key.
func Dial(ctx context.Context, url, apiKey string) (*WS, *http.Response, error) {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+apiKey)
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{Subprotocol}})
	if err != nil {
		return nil, resp, err
	}
	return NewWS(c), resp, nil
}

// Run keeps a connected to the server at serverURL (its base URL; the tunnel is
// /v1/tunnel) until ctx ends: it connects, registers, serves, and after a
// lost connection reconnects with a back-off (0.5 s doubling to 30 s),
// registering the same name again — the server then replaces the old
// registration. A refused key or registration ends Run with the error;
// ctx's end makes it return nil.
func Run(ctx context.Context, serverURL, apiKey string, a *Agent) error {
	l := a.Log
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	url := strings.TrimRight(serverURL, "/") + "/v1/tunnel"
	backoff := 500 * time.Millisecond
	for {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ws, resp, err := Dial(dctx, url, apiKey)
		cancel()
		if err == nil {
			start := time.Now()
			err = a.Serve(ctx, ws)
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrRefused) {
				return err
			}
			if time.Since(start) > time.Minute {
				backoff = 500 * time.Millisecond
			}
			l.Warn("tunnel: connection lost; reconnecting", "err", err, "in", backoff)
		} else {
			if ctx.Err() != nil {
				return nil
			}
			if resp != nil && resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests {
				return grove.Errorf(grove.ErrUnauthorized, "the server refused the tunnel: HTTP %d", resp.StatusCode)
			}
			l.Warn("tunnel: cannot connect; retrying", "err", err, "in", backoff)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}
