package wire

import (
	"context"
	"encoding/json"
	"time"

	"github.com/grove-dev/grove"
)

// The debug routes' bodies (docs/API.md, "Debugging"). The session id is in
// the path, and waits are milliseconds (timeout_ms) like exec's.

// DebugStartBody is POST /v1/workspaces/{id}/debug/sessions.
type DebugStartBody struct {
	Config      json.RawMessage           `json:"config,omitempty"`
	ConfigName  string                    `json:"config_name,omitempty"`
	Language    string                    `json:"language,omitempty"`
	Program     string                    `json:"program,omitempty"`
	Args        []string                  `json:"args,omitempty"`
	Cwd         string                    `json:"cwd,omitempty"`
	Env         map[string]string         `json:"env,omitempty"`
	StopOnEntry bool                      `json:"stop_on_entry,omitempty"`
	Breakpoints []grove.SourceBreakpoints `json:"breakpoints,omitempty"`
	TimeoutMS   int64                     `json:"timeout_ms,omitempty"`
}

// Request converts the body to the service's request.
func (b DebugStartBody) Request() grove.DebugStartRequest {
	return grove.DebugStartRequest{Config: b.Config, ConfigName: b.ConfigName, Language: b.Language, Program: b.Program, Args: b.Args,
		Cwd: b.Cwd, Env: b.Env, StopOnEntry: b.StopOnEntry, Breakpoints: b.Breakpoints, Timeout: ms(b.TimeoutMS)}
}

// DebugStartBodyOf is the inverse of Request, for the client.
func DebugStartBodyOf(r grove.DebugStartRequest) DebugStartBody {
	return DebugStartBody{Config: r.Config, ConfigName: r.ConfigName, Language: r.Language, Program: r.Program, Args: r.Args,
		Cwd: r.Cwd, Env: r.Env, StopOnEntry: r.StopOnEntry, Breakpoints: r.Breakpoints, TimeoutMS: r.Timeout.Milliseconds()}
}

// DebugBreakpointsBody is POST .../debug/sessions/{sid}/breakpoints: the
// breakpoints of one file, replacing the ones set before.
type DebugBreakpointsBody = grove.SourceBreakpoints

// DebugContinueBody is POST .../debug/sessions/{sid}/continue.
type DebugContinueBody struct {
	ThreadID    int      `json:"thread_id,omitempty"`
	NoWait      bool     `json:"no_wait,omitempty"`
	TimeoutMS   int64    `json:"timeout_ms,omitempty"`
	Expressions []string `json:"expressions,omitempty"`
}

// DebugStepBody is POST .../debug/sessions/{sid}/step.
type DebugStepBody struct {
	Kind        string   `json:"kind"`
	ThreadID    int      `json:"thread_id,omitempty"`
	TimeoutMS   int64    `json:"timeout_ms,omitempty"`
	Expressions []string `json:"expressions,omitempty"`
}

// DebugSnapshotBody is POST .../debug/sessions/{sid}/snapshot; an empty
// body takes the defaults.
type DebugSnapshotBody struct {
	TimeoutMS    int64    `json:"timeout_ms,omitempty"`
	Expressions  []string `json:"expressions,omitempty"`
	MaxFrames    int      `json:"max_frames,omitempty"`
	MaxVariables int      `json:"max_variables,omitempty"`
}

// DebugEvaluateBody is POST .../debug/sessions/{sid}/evaluate.
type DebugEvaluateBody struct {
	Expression string `json:"expression"`
	FrameID    int    `json:"frame_id,omitempty"`
}

// DebugSessionList is GET /v1/workspaces/{id}/debug/sessions.
type DebugSessionList struct {
	Sessions []grove.DebugSession `json:"sessions"`
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// debugNames is the name escaping of grove.Debugger (EscapeNames): paths
// in requests are unescaped, paths in results escaped.
type debugNames struct{ d grove.Debugger }

func unescapeBreakpoints(bs []grove.SourceBreakpoints) []grove.SourceBreakpoints {
	if bs == nil {
		return nil
	}
	out := make([]grove.SourceBreakpoints, len(bs))
	for i, b := range bs {
		b.File = UnescapePath(b.File)
		out[i] = b
	}
	return out
}

func escapeBreakpoints(bs []grove.Breakpoint) {
	for i := range bs {
		bs[i].File = EscapePath(bs[i].File)
	}
}

func escapeSession(s *grove.DebugSession) {
	if s != nil {
		s.Program = EscapePath(s.Program)
		escapeBreakpoints(s.Breakpoints)
	}
}

func escapeSnapshot(s *grove.DebugSnapshot) {
	if s != nil {
		for i := range s.Frames {
			s.Frames[i].File = EscapePath(s.Frames[i].File)
		}
	}
}

func (n debugNames) DebugContext(ctx context.Context, id string) (*grove.DebugContext, error) {
	return n.d.DebugContext(ctx, id)
}

func (n debugNames) DebugStart(ctx context.Context, id string, req grove.DebugStartRequest) (*grove.DebugSession, error) {
	req.Program, req.Cwd = UnescapePath(req.Program), UnescapePath(req.Cwd)
	req.Breakpoints = unescapeBreakpoints(req.Breakpoints)
	s, err := n.d.DebugStart(ctx, id, req)
	escapeSession(s)
	return s, err
}

func (n debugNames) DebugBreakpoints(ctx context.Context, id string, req grove.DebugBreakpointsRequest) (*grove.DebugBreakpointsResult, error) {
	req.File = UnescapePath(req.File)
	r, err := n.d.DebugBreakpoints(ctx, id, req)
	if r != nil {
		escapeBreakpoints(r.Breakpoints)
	}
	return r, err
}

func (n debugNames) DebugContinue(ctx context.Context, id string, req grove.DebugContinueRequest) (*grove.DebugSnapshot, error) {
	s, err := n.d.DebugContinue(ctx, id, req)
	escapeSnapshot(s)
	return s, err
}

func (n debugNames) DebugStep(ctx context.Context, id string, req grove.DebugStepRequest) (*grove.DebugSnapshot, error) {
	s, err := n.d.DebugStep(ctx, id, req)
	escapeSnapshot(s)
	return s, err
}

func (n debugNames) DebugSnapshot(ctx context.Context, id string, req grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	s, err := n.d.DebugSnapshot(ctx, id, req)
	escapeSnapshot(s)
	return s, err
}

func (n debugNames) DebugEvaluate(ctx context.Context, id string, req grove.DebugEvaluateRequest) (*grove.DebugEvaluation, error) {
	return n.d.DebugEvaluate(ctx, id, req)
}

func (n debugNames) DebugSessions(ctx context.Context, id string) ([]grove.DebugSession, error) {
	ss, err := n.d.DebugSessions(ctx, id)
	for i := range ss {
		escapeSession(&ss[i])
	}
	return ss, err
}

func (n debugNames) DebugStop(ctx context.Context, id, session string) error {
	return n.d.DebugStop(ctx, id, session)
}

type namesDebug struct {
	*names
	debugNames
}

type namesPRDebug struct {
	namesPR
	debugNames
}

var (
	_ grove.Debugger      = namesDebug{}
	_ grove.Debugger      = namesPRDebug{}
	_ grove.PullRequester = namesPRDebug{}
)
