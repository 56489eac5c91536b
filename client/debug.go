package client

import (
	"context"
	"net/url"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/wire"
)

var _ grove.Debugger = (*Client)(nil)

// A server without debugging answers ErrNotSupported; an adapter that
// cannot launch, ErrDebugAdapterUnavailable; a running program where a
// stopped one is needed, ErrNotPaused.

func session(id, sid string, rest ...string) string {
	p := ws(id, "/debug/sessions/", url.PathEscape(sid))
	for _, r := range rest {
		p += r
	}
	return p
}

// DebugContext implements grove.Debugger over the HTTP API.
func (c *Client) DebugContext(ctx context.Context, id string) (*grove.DebugContext, error) {
	var r grove.DebugContext
	if _, err := c.call(ctx, "GET", ws(id, "/debug/context"), nil, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DebugStart implements grove.Debugger over the HTTP API.
func (c *Client) DebugStart(ctx context.Context, id string, req grove.DebugStartRequest) (*grove.DebugSession, error) {
	var r grove.DebugSession
	if _, err := c.call(ctx, "POST", ws(id, "/debug/sessions"), nil, wire.DebugStartBodyOf(req), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DebugBreakpoints implements grove.Debugger over the HTTP API.
func (c *Client) DebugBreakpoints(ctx context.Context, id string, req grove.DebugBreakpointsRequest) (*grove.DebugBreakpointsResult, error) {
	var r grove.DebugBreakpointsResult
	if _, err := c.call(ctx, "POST", session(id, req.Session, "/breakpoints"), nil, req.SourceBreakpoints, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DebugContinue implements grove.Debugger over the HTTP API.
func (c *Client) DebugContinue(ctx context.Context, id string, req grove.DebugContinueRequest) (*grove.DebugSnapshot, error) {
	var r grove.DebugSnapshot
	body := wire.DebugContinueBody{ThreadID: req.ThreadID, NoWait: req.NoWait, TimeoutMS: req.Timeout.Milliseconds(), Expressions: req.Expressions}
	if _, err := c.call(ctx, "POST", session(id, req.Session, "/continue"), nil, body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DebugStep implements grove.Debugger over the HTTP API.
func (c *Client) DebugStep(ctx context.Context, id string, req grove.DebugStepRequest) (*grove.DebugSnapshot, error) {
	var r grove.DebugSnapshot
	body := wire.DebugStepBody{Kind: req.Kind, ThreadID: req.ThreadID, TimeoutMS: req.Timeout.Milliseconds(), Expressions: req.Expressions}
	if _, err := c.call(ctx, "POST", session(id, req.Session, "/step"), nil, body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DebugSnapshot implements grove.Debugger over the HTTP API.
func (c *Client) DebugSnapshot(ctx context.Context, id string, req grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	var r grove.DebugSnapshot
	body := wire.DebugSnapshotBody{TimeoutMS: req.Timeout.Milliseconds(), Expressions: req.Expressions, MaxFrames: req.MaxFrames, MaxVariables: req.MaxVariables}
	if _, err := c.call(ctx, "POST", session(id, req.Session, "/snapshot"), nil, body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DebugEvaluate implements grove.Debugger over the HTTP API.
func (c *Client) DebugEvaluate(ctx context.Context, id string, req grove.DebugEvaluateRequest) (*grove.DebugEvaluation, error) {
	var r grove.DebugEvaluation
	body := wire.DebugEvaluateBody{Expression: req.Expression, FrameID: req.FrameID}
	if _, err := c.call(ctx, "POST", session(id, req.Session, "/evaluate"), nil, body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// DebugSessions implements grove.Debugger over the HTTP API.
func (c *Client) DebugSessions(ctx context.Context, id string) ([]grove.DebugSession, error) {
	var r wire.DebugSessionList
	if _, err := c.call(ctx, "GET", ws(id, "/debug/sessions"), nil, nil, &r); err != nil {
		return nil, err
	}
	return r.Sessions, nil
}

// DebugStop implements grove.Debugger over the HTTP API.
func (c *Client) DebugStop(ctx context.Context, id, sid string) error {
	_, err := c.call(ctx, "DELETE", session(id, sid), nil, nil, nil)
	return err
}
