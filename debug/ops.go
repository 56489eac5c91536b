package debug

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-dap"

	grove "github.com/grove-dev/grove"
)

// Breakpoints replaces the breakpoints of one file.
func (m *Manager) Breakpoints(ctx context.Context, req grove.DebugBreakpointsRequest) (*grove.DebugBreakpointsResult, error) {
	s, err := m.get(req.Session)
	if err != nil {
		return nil, err
	}
	if s.info().State == grove.DebugTerminated {
		return nil, grove.Errorf(grove.ErrConflict, "debug session %s has ended", s.id)
	}
	got, err := m.setBreakpoints(ctx, s, req.SourceBreakpoints)
	if err != nil {
		return nil, err
	}
	// The session's list keeps every file's latest answer.
	s.mu.Lock()
	kept := s.breakpoints[:0]
	for _, bp := range s.breakpoints {
		if bp.File != relPath(s.root, mustConfine(s.root, req.File)) {
			kept = append(kept, bp)
		}
	}
	s.breakpoints = append(kept, got...)
	s.mu.Unlock()
	return &grove.DebugBreakpointsResult{Breakpoints: got}, nil
}

func mustConfine(root, rel string) string {
	p, _ := confine(root, rel)
	return p
}

func (m *Manager) setBreakpoints(ctx context.Context, s *session, sb grove.SourceBreakpoints) ([]grove.Breakpoint, error) {
	if sb.File == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "breakpoints need a file")
	}
	if len(sb.Conditions) > 0 && len(sb.Conditions) != len(sb.Lines) {
		return nil, grove.Errorf(grove.ErrInvalid, "conditions: want one per line (%d), got %d", len(sb.Lines), len(sb.Conditions))
	}
	path, err := confine(s.root, sb.File)
	if err != nil {
		return nil, err
	}
	args := dap.SetBreakpointsArguments{
		Source:      dap.Source{Name: filepath.Base(path), Path: path},
		Breakpoints: make([]dap.SourceBreakpoint, len(sb.Lines)),
	}
	for i, line := range sb.Lines {
		if line < 1 {
			return nil, grove.Errorf(grove.ErrInvalid, "breakpoint line %d: lines start at 1", line)
		}
		args.Breakpoints[i].Line = line
		if len(sb.Conditions) > 0 {
			args.Breakpoints[i].Condition = sb.Conditions[i]
		}
	}
	var body dap.SetBreakpointsResponseBody
	if err := s.c.call(ctx, "setBreakpoints", args, requestTimeout, &body); err != nil {
		return nil, err
	}
	rel := relPath(s.root, path)
	out := make([]grove.Breakpoint, 0, len(body.Breakpoints))
	for i, bp := range body.Breakpoints {
		line := bp.Line
		if line == 0 && i < len(sb.Lines) {
			line = sb.Lines[i]
		}
		out = append(out, grove.Breakpoint{ID: bp.Id, File: rel, Line: line, Verified: bp.Verified, Message: bp.Message})
	}
	return out, nil
}

// Continue resumes the program and, unless NoWait, waits for it to stop or
// end.
func (m *Manager) Continue(ctx context.Context, req grove.DebugContinueRequest) (*grove.DebugSnapshot, error) {
	s, err := m.get(req.Session)
	if err != nil {
		return nil, err
	}
	info := s.info()
	if info.State == grove.DebugTerminated {
		return m.snapshot(ctx, s, grove.DebugSnapshotRequest{Session: s.id})
	}
	thread := req.ThreadID
	if thread == 0 {
		thread = s.lastThread()
	}
	// A program that reached a breakpoint nobody has been shown yet (it
	// ran there on its own after start) is not resumed past it: continue
	// means "run to the next stop the caller has not seen", which is what
	// an agent that set a breakpoint and called continue expects. The
	// hand-off's "session is running, expected paused" came from the
	// opposite race.
	if s.unseenStop() {
		return m.snapshot(ctx, s, grove.DebugSnapshotRequest{Session: s.id, Expressions: req.Expressions})
	}
	// A program already running is waited for, not continued again.
	wasStopped, after := s.resumed()
	if wasStopped {
		args := dap.ContinueArguments{ThreadId: thread, SingleThread: req.ThreadID != 0}
		if err := s.c.call(ctx, "continue", args, requestTimeout, nil); err != nil {
			return nil, err
		}
	}
	if req.NoWait {
		return &grove.DebugSnapshot{Session: s.id, State: s.info().State, Output: s.takeOutput()}, nil
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if _, err := s.wait(ctx, after, timeout); err != nil {
		return nil, err
	}
	return m.snapshot(ctx, s, grove.DebugSnapshotRequest{Session: s.id, Expressions: req.Expressions})
}

// Step steps one thread and returns the snapshot where it stopped.
func (m *Manager) Step(ctx context.Context, req grove.DebugStepRequest) (*grove.DebugSnapshot, error) {
	var command string
	switch req.Kind {
	case "over", "next", "":
		command = "next"
	case "into", "in":
		command = "stepIn"
	case "out":
		command = "stepOut"
	default:
		return nil, grove.Errorf(grove.ErrInvalid, "step kind %q: want over, into or out", req.Kind)
	}
	s, err := m.get(req.Session)
	if err != nil {
		return nil, err
	}
	if err := s.requireStopped(); err != nil {
		return nil, err
	}
	thread := req.ThreadID
	if thread == 0 {
		thread = s.lastThread()
	}
	if thread == 0 {
		threads, err := s.threads(ctx)
		if err != nil {
			return nil, err
		}
		if len(threads) > 0 {
			thread = threads[0].ID
		}
	}
	_, after := s.resumed()
	// The same struct serves next, stepIn and stepOut.
	args := dap.NextArguments{ThreadId: thread}
	if err := s.c.call(ctx, command, args, requestTimeout, nil); err != nil {
		return nil, err
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if _, err := s.wait(ctx, after, timeout); err != nil {
		return nil, err
	}
	return m.snapshot(ctx, s, grove.DebugSnapshotRequest{Session: s.id, Expressions: req.Expressions})
}

// Snapshot waits for the program to stop and describes it.
func (m *Manager) Snapshot(ctx context.Context, req grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	s, err := m.get(req.Session)
	if err != nil {
		return nil, err
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	state, err := s.wait(ctx, -1, timeout)
	if err != nil {
		return nil, err
	}
	if state == grove.DebugRunning {
		return nil, grove.Errorf(grove.ErrNotPaused, "the program is still running after %s; set a breakpoint, or continue with a timeout", timeout)
	}
	return m.snapshot(ctx, s, req)
}

// Evaluate evaluates an expression in a stopped frame.
func (m *Manager) Evaluate(ctx context.Context, req grove.DebugEvaluateRequest) (*grove.DebugEvaluation, error) {
	s, err := m.get(req.Session)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Expression) == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "expression is empty")
	}
	if err := s.requireStopped(); err != nil {
		return nil, err
	}
	frame := req.FrameID
	if frame == 0 {
		frames, err := s.frames(ctx, s.lastThread(), 1)
		if err != nil {
			return nil, err
		}
		if len(frames) == 0 {
			return nil, grove.Errorf(grove.ErrNotPaused, "the stopped thread has no frames")
		}
		frame = frames[0].Id
	}
	ev := s.evaluate(ctx, req.Expression, frame)
	return &ev, nil
}

func (s *session) requireStopped() error {
	switch s.info().State {
	case grove.DebugRunning:
		return grove.Errorf(grove.ErrNotPaused, "the program is running; wait for a breakpoint (snapshot) first")
	case grove.DebugTerminated:
		return grove.Errorf(grove.ErrNotPaused, "the program has terminated")
	}
	return nil
}

func (s *session) lastThread() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.threadID
}

func (s *session) threads(ctx context.Context) ([]grove.DebugThread, error) {
	var body dap.ThreadsResponseBody
	if err := s.c.call(ctx, "threads", nil, requestTimeout, &body); err != nil {
		return nil, err
	}
	out := make([]grove.DebugThread, len(body.Threads))
	for i, t := range body.Threads {
		out[i] = grove.DebugThread{ID: t.Id, Name: t.Name}
	}
	return out, nil
}

func (s *session) frames(ctx context.Context, thread, max int) ([]dap.StackFrame, error) {
	var body dap.StackTraceResponseBody
	args := dap.StackTraceArguments{ThreadId: thread, StartFrame: 0, Levels: max}
	if err := s.c.call(ctx, "stackTrace", args, requestTimeout, &body); err != nil {
		return nil, err
	}
	if len(body.StackFrames) > max {
		body.StackFrames = body.StackFrames[:max]
	}
	return body.StackFrames, nil
}

func (s *session) evaluate(ctx context.Context, expr string, frame int) grove.DebugEvaluation {
	ev := grove.DebugEvaluation{Expression: expr}
	var body dap.EvaluateResponseBody
	args := dap.EvaluateArguments{Expression: expr, FrameId: frame, Context: s.adapter.evalContext}
	if err := s.c.call(ctx, "evaluate", args, requestTimeout, &body); err != nil {
		ev.Error = strings.TrimPrefix(err.Error(), "evaluate: ")
		return ev
	}
	ev.Result, ev.Type = body.Result, body.Type
	return ev
}

// relPath shows a path inside the workspace relative to it; others as
// they are.
func relPath(root, p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return p
	}
	rel, err := filepath.Rel(root, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return p
	}
	return rel
}
