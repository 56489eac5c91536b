package tunnel

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/debug"
)

// debugRoutes serves the debug routes (DAP) with adapters launched on this
// machine, in the served directory. Starting a session runs the developer's
// program, so a read-only tunnel refuses it; reading the debug context
// does not run anything but the adapters' own probes.
//
// The sessions belong to the Local, not to one connection: a reconnecting
// agent keeps them, and Close ends them.
func (l *Local) debugRoutes(d *Dispatcher) {
	m := l.debugger()
	d.Handle(RouteDebugContext, func(ctx context.Context, _ json.RawMessage) (any, error) {
		return m.Context(ctx)
	})
	d.Handle(RouteDebugStart, func(ctx context.Context, p json.RawMessage) (any, error) {
		if l.ReadOnly {
			return nil, grove.Errorf(grove.ErrReadOnly, "this tunnel is read-only: debugging runs the program and is refused")
		}
		var req grove.DebugStartRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return m.Start(ctx, req)
	})
	d.Handle(RouteDebugBreak, func(ctx context.Context, p json.RawMessage) (any, error) {
		var req grove.DebugBreakpointsRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return m.Breakpoints(ctx, req)
	})
	d.Handle(RouteDebugSnapshot, func(ctx context.Context, p json.RawMessage) (any, error) {
		var req grove.DebugSnapshotRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return m.Snapshot(ctx, req)
	})
	step := func(kind string) Handler {
		return func(ctx context.Context, p json.RawMessage) (any, error) {
			var req grove.DebugStepRequest
			if err := decode(p, &req); err != nil {
				return nil, err
			}
			req.Kind = kind
			return m.Step(ctx, req)
		}
	}
	d.Handle(RouteDebugStepOver, step("over"))
	d.Handle(RouteDebugStepInto, step("into"))
	d.Handle(RouteDebugStepOut, step("out"))
	d.Handle(RouteDebugEvaluate, func(ctx context.Context, p json.RawMessage) (any, error) {
		var req grove.DebugEvaluateRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return m.Evaluate(ctx, req)
	})
	d.Handle(RouteDebugContinue, func(ctx context.Context, p json.RawMessage) (any, error) {
		var req grove.DebugContinueRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return m.Continue(ctx, req)
	})
	d.Handle(RouteDebugSessions, func(ctx context.Context, _ json.RawMessage) (any, error) {
		return DebugSessionsResult{Sessions: m.Sessions(ctx)}, nil
	})
	d.Handle(RouteDebugStop, func(ctx context.Context, p json.RawMessage) (any, error) {
		var req DebugStopRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return struct{}{}, m.Stop(ctx, req.Session)
	})
}

// localDebug is the Local's debug manager, made on first use.
type localDebug struct {
	once sync.Once
	m    *debug.Manager
}

func (l *Local) debugger() *debug.Manager {
	l.dbg.once.Do(func() {
		host, err := debug.NewLocalHost(l.fs.Dir())
		if err != nil {
			// The directory is open already; NewLocalHost only fails on a
			// path it cannot make absolute.
			panic(err)
		}
		l.dbg.m = debug.NewManager(host, debug.Options{Workspace: l.workspace, Log: l.log})
	})
	return l.dbg.m
}

// closeDebug stops every debug session (adapters and debuggees).
// Running the once first waits for a manager being made and keeps one
// from being made after Close.
func (l *Local) closeDebug() {
	l.dbg.once.Do(func() {})
	if l.dbg.m != nil {
		l.dbg.m.Close()
	}
}
