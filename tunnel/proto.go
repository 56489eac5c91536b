// Package tunnel is Grove's local mode: a small agent on a developer's
// machine (`grove tunnel`) connects out to `grove serve`, registers one
// directory of its own checkout under a workspace name, and answers the
// server's tool calls on it. The protocol (this file) and both ends — the
// server's Registry and the agent's Dispatcher — are transport-neutral:
// they speak Messages over a Conn; WebSocket is the transport Grove uses
// (ws.go). docs/TUNNEL.md is the wire contract and the security model.
//
// The rule the protocol is built around: every tool_call gets exactly one
// tool_response, whatever the handler does (returns nothing, fails,
// panics, hangs past its timeout) and whatever the call names (an unknown
// endpoint, a payload that does not decode). A command that prints
// nothing is answered when its process exits, never inferred from output.
// On the server, a call fails at once with grove.ErrUnavailable when its
// connection dies or is replaced; it never waits out its timeout for an
// answer that cannot come.
package tunnel

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"

	"github.com/grove-dev/grove"
)

// Message types.
const (
	TypeRegister     = "register"      // agent → server, first message
	TypeRegistered   = "registered"    // server → agent, the registration stands
	TypeToolCall     = "tool_call"     // server → agent
	TypeToolResponse = "tool_response" // agent → server
	TypePing         = "ping"          // either way; answered with pong
	TypePong         = "pong"
	TypeError        = "error" // server → agent, then the server closes: registration refused
	// TypeCancel (server → agent, correlation_id): the caller gave up; the
	// agent cancels the handler's context (a command's process group is
	// killed) and still answers the call with its one tool_response.
	TypeCancel = "cancel"
)

// Message is one frame of the protocol: a JSON object whose type says
// which of the other fields it carries.
type Message struct {
	Type string `json:"type"`

	// register
	Workspace string `json:"workspace,omitempty"` // the name the server knows the directory by
	DirLabel  string `json:"dir_label,omitempty"` // for people: which checkout (not a path the server uses)
	ReadOnly  bool   `json:"read_only,omitempty"`

	// registered: how often the server pings. An agent that hears nothing
	// for three of these takes the connection for dead and reconnects.
	HeartbeatMS int64 `json:"heartbeat_ms,omitempty"`

	// tool_call, tool_response
	CorrelationID string          `json:"correlation_id,omitempty"`
	Endpoint      string          `json:"endpoint,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	TimeoutMS     int64           `json:"timeout_ms,omitempty"`
	Success       bool            `json:"success,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	Error         *Error          `json:"error,omitempty"` // tool_response failure; error (registration refused)
}

// Error is a failed call's answer, in Grove's codes (E_…).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Response is what a Call returns: the agent's tool_response.
type Response struct {
	CorrelationID string          `json:"correlation_id"`
	Success       bool            `json:"success"`
	Result        json.RawMessage `json:"result,omitempty"`
	Error         *Error          `json:"error,omitempty"`
}

// Conn is a message transport: one reader and any number of writers at a
// time. Close ends it and makes a blocked Read fail.
type Conn interface {
	Read(ctx context.Context) (Message, error)
	Write(ctx context.Context, m Message) error
	Close(reason string) error
}

// Errors a Conn may return.
var (
	// ErrMalformed is a frame that is not a Message. The connection is
	// still usable.
	ErrMalformed = errors.New("tunnel: malformed message")
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidName reports whether s can name a tunnel workspace: 1 to 64
// letters, digits, '.', '_' or '-', not starting with a punctuation mark.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// errorOf renders err as a protocol Error: its Grove code, and its
// message for errors of a known kind (others are "internal error": their
// text may hold local paths).
func errorOf(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	if grove.KindOf(err) == nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return &Error{Code: "E_TIMEOUT", Message: "deadline exceeded"}
		case errors.Is(err, context.Canceled):
			return &Error{Code: "E_CANCELLED", Message: "cancelled"}
		}
		return &Error{Code: "E_INTERNAL", Message: "internal error"}
	}
	return &Error{Code: grove.Code(err), Message: err.Error()}
}
