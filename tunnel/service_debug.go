package tunnel

import (
	"context"
	"time"

	"github.com/grove-dev/grove"
)

// The grove.Debugger half of Service: a tunnel workspace's debug sessions
// run on the developer's machine, behind the agent's /api/debug/* routes
// (routes.go); other ids go to inner's Debugger.

// debugger returns inner's Debugger, or an error saying there is none.
func (s *Service) debugger() (grove.Debugger, error) {
	if d, ok := s.Inner.(grove.Debugger); ok {
		return d, nil
	}
	return nil, grove.Errorf(grove.ErrNotSupported, "debugging is not available on this server")
}

// debugTimeout is a call's timeout for a debug request bounded by d (0:
// the request's default, def): the agent gets d plus a margin to answer.
func debugTimeout(d, def time.Duration) time.Duration {
	if d <= 0 {
		d = def
	}
	return d + 15*time.Second
}

func (s *Service) DebugContext(ctx context.Context, id string) (*grove.DebugContext, error) {
	if _, ok := s.tunnelOf(id); !ok {
		d, err := s.debugger()
		if err != nil {
			return nil, err
		}
		return d.DebugContext(ctx, id)
	}
	var r grove.DebugContext
	if err := s.call(ctx, id, RouteDebugContext, nil, 0, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Service) DebugStart(ctx context.Context, id string, req grove.DebugStartRequest) (*grove.DebugSession, error) {
	if _, ok := s.tunnelOf(id); !ok {
		d, err := s.debugger()
		if err != nil {
			return nil, err
		}
		return d.DebugStart(ctx, id, req)
	}
	var r grove.DebugSession
	if err := s.call(ctx, id, RouteDebugStart, req, debugTimeout(req.Timeout, 30*time.Second), &r); err != nil {
		return nil, err
	}
	r.Workspace = id
	return &r, nil
}

func (s *Service) DebugBreakpoints(ctx context.Context, id string, req grove.DebugBreakpointsRequest) (*grove.DebugBreakpointsResult, error) {
	if _, ok := s.tunnelOf(id); !ok {
		d, err := s.debugger()
		if err != nil {
			return nil, err
		}
		return d.DebugBreakpoints(ctx, id, req)
	}
	var r grove.DebugBreakpointsResult
	if err := s.call(ctx, id, RouteDebugBreak, req, 0, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Service) DebugContinue(ctx context.Context, id string, req grove.DebugContinueRequest) (*grove.DebugSnapshot, error) {
	if _, ok := s.tunnelOf(id); !ok {
		d, err := s.debugger()
		if err != nil {
			return nil, err
		}
		return d.DebugContinue(ctx, id, req)
	}
	var r grove.DebugSnapshot
	if err := s.call(ctx, id, RouteDebugContinue, req, debugTimeout(req.Timeout, 30*time.Second), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Service) DebugStep(ctx context.Context, id string, req grove.DebugStepRequest) (*grove.DebugSnapshot, error) {
	if _, ok := s.tunnelOf(id); !ok {
		d, err := s.debugger()
		if err != nil {
			return nil, err
		}
		return d.DebugStep(ctx, id, req)
	}
	var route string
	switch req.Kind {
	case "over", "":
		route = RouteDebugStepOver
	case "into":
		route = RouteDebugStepInto
	case "out":
		route = RouteDebugStepOut
	default:
		return nil, grove.Errorf(grove.ErrInvalid, "step kind %q: want over, into or out", clip(req.Kind, 32))
	}
	var r grove.DebugSnapshot
	if err := s.call(ctx, id, route, req, debugTimeout(req.Timeout, 30*time.Second), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Service) DebugSnapshot(ctx context.Context, id string, req grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	if _, ok := s.tunnelOf(id); !ok {
		d, err := s.debugger()
		if err != nil {
			return nil, err
		}
		return d.DebugSnapshot(ctx, id, req)
	}
	var r grove.DebugSnapshot
	if err := s.call(ctx, id, RouteDebugSnapshot, req, debugTimeout(req.Timeout, 10*time.Second), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Service) DebugEvaluate(ctx context.Context, id string, req grove.DebugEvaluateRequest) (*grove.DebugEvaluation, error) {
	if _, ok := s.tunnelOf(id); !ok {
		d, err := s.debugger()
		if err != nil {
			return nil, err
		}
		return d.DebugEvaluate(ctx, id, req)
	}
	var r grove.DebugEvaluation
	if err := s.call(ctx, id, RouteDebugEvaluate, req, 0, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Service) DebugSessions(ctx context.Context, id string) ([]grove.DebugSession, error) {
	if _, ok := s.tunnelOf(id); !ok {
		d, err := s.debugger()
		if err != nil {
			return nil, err
		}
		return d.DebugSessions(ctx, id)
	}
	var r DebugSessionsResult
	if err := s.call(ctx, id, RouteDebugSessions, nil, 0, &r); err != nil {
		return nil, err
	}
	if r.Sessions == nil {
		r.Sessions = []grove.DebugSession{}
	}
	for i := range r.Sessions {
		r.Sessions[i].Workspace = id
	}
	return r.Sessions, nil
}

func (s *Service) DebugStop(ctx context.Context, id, session string) error {
	if _, ok := s.tunnelOf(id); !ok {
		d, err := s.debugger()
		if err != nil {
			return err
		}
		return d.DebugStop(ctx, id, session)
	}
	return s.call(ctx, id, RouteDebugStop, DebugStopRequest{Session: session}, 0, nil)
}
