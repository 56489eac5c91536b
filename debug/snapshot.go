package debug

import (
	"context"
	"strings"

	"github.com/google/go-dap"

	grove "github.com/grove-dev/grove"
)

// scopeFrames is how many top frames carry their scopes and variables:
// the current function and its caller cover most questions without the
// cost of walking every frame.
const scopeFrames = 2

// snapshot describes the session as it is now: state and output, and when
// stopped the stopped thread's frames, the top frames' variables and the
// requested expressions.
func (m *Manager) snapshot(ctx context.Context, s *session, req grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	s.mu.Lock()
	snap := &grove.DebugSnapshot{Session: s.id, State: s.state, StopReason: s.stopReason, ThreadID: s.threadID, ExitCode: s.exitCode}
	if s.state == grove.DebugStopped {
		s.shown = s.stops
	}
	s.mu.Unlock()
	if snap.State != grove.DebugStopped {
		snap.StopReason, snap.ThreadID = "", 0
		snap.Output = s.takeOutput()
		return snap, nil
	}
	maxFrames := req.MaxFrames
	if maxFrames <= 0 {
		maxFrames = 20
	}
	maxVars := req.MaxVariables
	if maxVars <= 0 {
		maxVars = 100
	}
	threads, err := s.threads(ctx)
	if err != nil {
		return nil, err
	}
	snap.Threads = threads
	if snap.ThreadID == 0 && len(threads) > 0 {
		snap.ThreadID = threads[0].ID
		s.mu.Lock()
		s.threadID = snap.ThreadID
		s.mu.Unlock()
	}
	frames, err := s.frames(ctx, snap.ThreadID, maxFrames)
	if err != nil {
		return nil, err
	}
	for i, f := range frames {
		sf := grove.StackFrame{ID: f.Id, Name: f.Name, Line: f.Line, Column: f.Column}
		if f.Source != nil {
			sf.File = relPath(s.root, f.Source.Path)
			if sf.File == "" {
				sf.File = f.Source.Name
			}
		}
		if i < scopeFrames {
			sf.Scopes = s.scopes(ctx, f.Id, maxVars)
		}
		snap.Frames = append(snap.Frames, sf)
	}
	if len(frames) > 0 {
		for _, e := range req.Expressions {
			if strings.TrimSpace(e) == "" {
				continue
			}
			snap.Evaluations = append(snap.Evaluations, s.evaluate(ctx, e, frames[0].Id))
		}
	}
	snap.Output = s.takeOutput()
	return snap, nil
}

// scopes reads a frame's scopes and their variables. Expensive scopes,
// registers and globals are left out: they are large and rarely the
// question; a failure leaves a scope empty rather than failing the
// snapshot.
func (s *session) scopes(ctx context.Context, frame, maxVars int) []grove.DebugScope {
	var body dap.ScopesResponseBody
	if err := s.c.call(ctx, "scopes", dap.ScopesArguments{FrameId: frame}, requestTimeout, &body); err != nil {
		return nil
	}
	var out []grove.DebugScope
	for _, sc := range body.Scopes {
		name := strings.ToLower(sc.Name)
		if sc.Expensive || strings.Contains(name, "register") || strings.Contains(name, "global") || sc.VariablesReference == 0 {
			continue
		}
		ds := grove.DebugScope{Name: sc.Name, Variables: []grove.DebugVariable{}}
		var vars dap.VariablesResponseBody
		if err := s.c.call(ctx, "variables", dap.VariablesArguments{VariablesReference: sc.VariablesReference}, requestTimeout, &vars); err == nil {
			for _, v := range vars.Variables {
				// debugpy groups dunders and functions under pseudo
				// variables; they are noise in a snapshot.
				if v.Name == "special variables" || v.Name == "function variables" || v.Name == "class variables" {
					continue
				}
				if len(ds.Variables) >= maxVars {
					break
				}
				ds.Variables = append(ds.Variables, grove.DebugVariable{Name: v.Name, Value: v.Value, Type: v.Type})
			}
		}
		out = append(out, ds)
	}
	return out
}
