package httpapi

import (
	"net/http"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/wire"
)

// The debug routes serve the caller's grove.Debugger (auth.Scope forwards
// it after the ownership check, so another user's workspace is 404). The
// calls that launch or drive the program take a work slot, like exec,
// after the cheap checks; listing and stopping sessions do not.

type (
	DebugStartBody    = wire.DebugStartBody
	DebugContinueBody = wire.DebugContinueBody
	DebugStepBody     = wire.DebugStepBody
	DebugSnapshotBody = wire.DebugSnapshotBody
	DebugEvaluateBody = wire.DebugEvaluateBody
	DebugSessionList  = wire.DebugSessionList
)

func (s *Server) debugRoutes(a func(string, handler)) {
	a("GET /v1/workspaces/{id}/debug/context", s.debugContext)
	a("POST /v1/workspaces/{id}/debug/sessions", s.debugStart)
	a("GET /v1/workspaces/{id}/debug/sessions", s.debugSessions)
	a("DELETE /v1/workspaces/{id}/debug/sessions/{sid}", s.debugStop)
	a("POST /v1/workspaces/{id}/debug/sessions/{sid}/breakpoints", s.debugBreakpoints)
	a("POST /v1/workspaces/{id}/debug/sessions/{sid}/continue", s.debugContinue)
	a("POST /v1/workspaces/{id}/debug/sessions/{sid}/step", s.debugStep)
	a("POST /v1/workspaces/{id}/debug/sessions/{sid}/snapshot", s.debugSnapshot)
	a("POST /v1/workspaces/{id}/debug/sessions/{sid}/evaluate", s.debugEvaluate)
}

// debugger is the caller's service as a grove.Debugger after proving the
// workspace is theirs (before a slot is taken); heavy takes a work slot,
// to release when done. Whether an analysis workspace may be debugged is
// the Debugger's to say, as exec's classes are the engine's: the engine
// runs the adapter there under the read-only mount. (The debug_* tools
// are write tools, like run_command, and not listed there.)
func (s *Server) debugger(r *http.Request, c *caller, heavy bool) (grove.Debugger, func(), error) {
	if _, err := c.svc.Get(r.Context(), r.PathValue("id")); err != nil {
		return nil, nil, err
	}
	d, ok := c.svc.(grove.Debugger)
	if !ok {
		return nil, nil, grove.Errorf(grove.ErrNotSupported, "this server does not support debugging")
	}
	if !heavy {
		return d, func() {}, nil
	}
	release, err := s.acquireSlot(c.p.User)
	if err != nil {
		return nil, nil, err
	}
	return d, release, nil
}

// debugTimeout converts a body's timeout_ms, capped like exec's.
func (s *Server) debugTimeout(v int64) (time.Duration, error) {
	if v < 0 {
		return 0, grove.Errorf(grove.ErrInvalid, "timeout_ms must not be negative")
	}
	return min(time.Duration(v)*time.Millisecond, s.opt.MaxTimeout), nil
}

// decodeOptional decodes a body that may be empty.
func decodeOptional(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return Decode(r.Body, v)
}

func (s *Server) debugContext(w http.ResponseWriter, r *http.Request, c *caller) error {
	d, release, err := s.debugger(r, c, true)
	if err != nil {
		return err
	}
	defer release()
	dc, err := d.DebugContext(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if dc.Configurations == nil {
		dc.Configurations = []grove.LaunchConfig{}
	}
	if dc.Adapters == nil {
		dc.Adapters = []grove.DebugAdapter{}
	}
	writeJSON(w, 200, dc)
	return nil
}

func (s *Server) debugStart(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b DebugStartBody
	if err := Decode(r.Body, &b); err != nil {
		return err
	}
	req := b.Request()
	var err error
	if req.Timeout, err = s.debugTimeout(b.TimeoutMS); err != nil {
		return err
	}
	d, release, err := s.debugger(r, c, true)
	if err != nil {
		return err
	}
	defer release()
	sess, err := d.DebugStart(r.Context(), r.PathValue("id"), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, sess)
	return nil
}

func (s *Server) debugSessions(w http.ResponseWriter, r *http.Request, c *caller) error {
	d, _, err := s.debugger(r, c, false)
	if err != nil {
		return err
	}
	ss, err := d.DebugSessions(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if ss == nil {
		ss = []grove.DebugSession{}
	}
	writeJSON(w, 200, DebugSessionList{Sessions: ss})
	return nil
}

func (s *Server) debugStop(w http.ResponseWriter, r *http.Request, c *caller) error {
	d, _, err := s.debugger(r, c, false)
	if err != nil {
		return err
	}
	return noContent(w, d.DebugStop(r.Context(), r.PathValue("id"), r.PathValue("sid")))
}

func (s *Server) debugBreakpoints(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b grove.SourceBreakpoints
	if err := Decode(r.Body, &b); err != nil {
		return err
	}
	d, release, err := s.debugger(r, c, true)
	if err != nil {
		return err
	}
	defer release()
	res, err := d.DebugBreakpoints(r.Context(), r.PathValue("id"), grove.DebugBreakpointsRequest{Session: r.PathValue("sid"), SourceBreakpoints: b})
	if err != nil {
		return err
	}
	if res.Breakpoints == nil {
		res.Breakpoints = []grove.Breakpoint{}
	}
	writeJSON(w, 200, res)
	return nil
}

func (s *Server) debugContinue(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b DebugContinueBody
	if err := decodeOptional(r, &b); err != nil {
		return err
	}
	timeout, err := s.debugTimeout(b.TimeoutMS)
	if err != nil {
		return err
	}
	d, release, err := s.debugger(r, c, true)
	if err != nil {
		return err
	}
	defer release()
	snap, err := d.DebugContinue(r.Context(), r.PathValue("id"), grove.DebugContinueRequest{Session: r.PathValue("sid"), ThreadID: b.ThreadID,
		NoWait: b.NoWait, Timeout: timeout, Expressions: b.Expressions})
	if err != nil {
		return err
	}
	writeJSON(w, 200, snap)
	return nil
}

func (s *Server) debugStep(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b DebugStepBody
	if err := Decode(r.Body, &b); err != nil {
		return err
	}
	switch b.Kind {
	case "over", "into", "out":
	default:
		return grove.Errorf(grove.ErrInvalid, "kind: want over, into or out")
	}
	timeout, err := s.debugTimeout(b.TimeoutMS)
	if err != nil {
		return err
	}
	d, release, err := s.debugger(r, c, true)
	if err != nil {
		return err
	}
	defer release()
	snap, err := d.DebugStep(r.Context(), r.PathValue("id"), grove.DebugStepRequest{Session: r.PathValue("sid"), Kind: b.Kind, ThreadID: b.ThreadID,
		Timeout: timeout, Expressions: b.Expressions})
	if err != nil {
		return err
	}
	writeJSON(w, 200, snap)
	return nil
}

func (s *Server) debugSnapshot(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b DebugSnapshotBody
	if err := decodeOptional(r, &b); err != nil {
		return err
	}
	timeout, err := s.debugTimeout(b.TimeoutMS)
	if err != nil {
		return err
	}
	if b.MaxFrames < 0 || b.MaxVariables < 0 {
		return grove.Errorf(grove.ErrInvalid, "max_frames and max_variables must not be negative")
	}
	d, release, err := s.debugger(r, c, true)
	if err != nil {
		return err
	}
	defer release()
	snap, err := d.DebugSnapshot(r.Context(), r.PathValue("id"), grove.DebugSnapshotRequest{Session: r.PathValue("sid"), Timeout: timeout,
		Expressions: b.Expressions, MaxFrames: b.MaxFrames, MaxVariables: b.MaxVariables})
	if err != nil {
		return err
	}
	writeJSON(w, 200, snap)
	return nil
}

func (s *Server) debugEvaluate(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b DebugEvaluateBody
	if err := Decode(r.Body, &b); err != nil {
		return err
	}
	if b.Expression == "" {
		return grove.Errorf(grove.ErrInvalid, "expression is required")
	}
	d, release, err := s.debugger(r, c, true)
	if err != nil {
		return err
	}
	defer release()
	ev, err := d.DebugEvaluate(r.Context(), r.PathValue("id"), grove.DebugEvaluateRequest{Session: r.PathValue("sid"), Expression: b.Expression, FrameID: b.FrameID})
	if err != nil {
		return err
	}
	writeJSON(w, 200, ev)
	return nil
}
