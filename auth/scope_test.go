package auth

import (
	"context"
	"errors"
	"testing"

	"github.com/grove-dev/grove"
)

// recorder records the requests Scope passes on; other methods are not
// called by the test.
type recorder struct {
	grove.Service
	ensure  grove.EnsureRepoRequest
	acquire grove.AcquireRequest
}

func (r *recorder) EnsureRepo(_ context.Context, req grove.EnsureRepoRequest) (*grove.RepoCache, error) {
	r.ensure = req
	return &grove.RepoCache{}, nil
}

func (r *recorder) Acquire(_ context.Context, req grove.AcquireRequest) (*grove.Workspace, bool, error) {
	r.acquire = req
	return &grove.Workspace{}, true, nil
}

// TestScopeActsAsTheKeysUser: the engine checks repository access with the
// credentials of the user Scope names, whatever the request claims.
func TestScopeActsAsTheKeysUser(t *testing.T) {
	rec := &recorder{}
	s := Scope(rec, Principal{User: "bob"})
	if _, err := s.EnsureRepo(context.Background(), grove.EnsureRepoRequest{Repo: "octo/private", User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if rec.ensure.User != "bob" {
		t.Errorf("EnsureRepo acted as %q, want bob", rec.ensure.User)
	}
	if _, _, err := s.Acquire(context.Background(), grove.AcquireRequest{Repo: "octo/private", User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if rec.acquire.User != "bob" {
		t.Errorf("Acquire acted as %q, want bob", rec.acquire.User)
	}
}

// debugService is a Service with a grove.Debugger: Get knows one workspace
// of alice's, and every debug call is counted.
type debugService struct {
	grove.Service
	calls int
}

func (d *debugService) Get(_ context.Context, id string) (*grove.Workspace, error) {
	if id != "ws_a" {
		return nil, grove.Errorf(grove.ErrNotFound, "workspace %s not found", id)
	}
	return &grove.Workspace{ID: id, User: "alice"}, nil
}

func (d *debugService) DebugContext(context.Context, string) (*grove.DebugContext, error) {
	d.calls++
	return &grove.DebugContext{}, nil
}
func (d *debugService) DebugStart(context.Context, string, grove.DebugStartRequest) (*grove.DebugSession, error) {
	d.calls++
	return &grove.DebugSession{ID: "s1"}, nil
}
func (d *debugService) DebugBreakpoints(context.Context, string, grove.DebugBreakpointsRequest) (*grove.DebugBreakpointsResult, error) {
	d.calls++
	return &grove.DebugBreakpointsResult{}, nil
}
func (d *debugService) DebugContinue(context.Context, string, grove.DebugContinueRequest) (*grove.DebugSnapshot, error) {
	d.calls++
	return &grove.DebugSnapshot{}, nil
}
func (d *debugService) DebugStep(context.Context, string, grove.DebugStepRequest) (*grove.DebugSnapshot, error) {
	d.calls++
	return &grove.DebugSnapshot{}, nil
}
func (d *debugService) DebugSnapshot(context.Context, string, grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	d.calls++
	return &grove.DebugSnapshot{}, nil
}
func (d *debugService) DebugEvaluate(context.Context, string, grove.DebugEvaluateRequest) (*grove.DebugEvaluation, error) {
	d.calls++
	return &grove.DebugEvaluation{}, nil
}
func (d *debugService) DebugSessions(context.Context, string) ([]grove.DebugSession, error) {
	d.calls++
	return nil, nil
}
func (d *debugService) DebugStop(context.Context, string, string) error { d.calls++; return nil }

// TestScopeDebugger: the scoped service is a grove.Debugger exactly when
// the wrapped one is, and user B cannot debug user A's workspace — every
// method answers ErrNotFound, like an unknown id, without reaching the
// debugger.
func TestScopeDebugger(t *testing.T) {
	if _, ok := Scope(&recorder{}, Principal{User: "bob"}).(grove.Debugger); ok {
		t.Fatal("a Service without a Debugger became one")
	}
	ctx := context.Background()
	svc := &debugService{}
	calls := func(d grove.Debugger) []error {
		_, e1 := d.DebugContext(ctx, "ws_a")
		_, e2 := d.DebugStart(ctx, "ws_a", grove.DebugStartRequest{Language: "c", Program: "a.out"})
		_, e3 := d.DebugBreakpoints(ctx, "ws_a", grove.DebugBreakpointsRequest{Session: "s1"})
		_, e4 := d.DebugContinue(ctx, "ws_a", grove.DebugContinueRequest{Session: "s1"})
		_, e5 := d.DebugStep(ctx, "ws_a", grove.DebugStepRequest{Session: "s1", Kind: "over"})
		_, e6 := d.DebugSnapshot(ctx, "ws_a", grove.DebugSnapshotRequest{Session: "s1"})
		_, e7 := d.DebugEvaluate(ctx, "ws_a", grove.DebugEvaluateRequest{Session: "s1", Expression: "a"})
		_, e8 := d.DebugSessions(ctx, "ws_a")
		e9 := d.DebugStop(ctx, "ws_a", "s1")
		return []error{e1, e2, e3, e4, e5, e6, e7, e8, e9}
	}
	bob, ok := Scope(svc, Principal{User: "bob"}).(grove.Debugger)
	if !ok {
		t.Fatal("the scoped service is not a grove.Debugger")
	}
	for i, err := range calls(bob) {
		if !errors.Is(err, grove.ErrNotFound) {
			t.Errorf("bob's call %d on alice's workspace: %v, want ErrNotFound", i, err)
		}
	}
	if svc.calls != 0 {
		t.Fatalf("bob reached the debugger %d times", svc.calls)
	}
	for _, p := range []Principal{{User: "alice"}, {User: "ops", Admin: true}} {
		svc.calls = 0
		for i, err := range calls(Scope(svc, p).(grove.Debugger)) {
			if err != nil {
				t.Errorf("%s's call %d: %v", p.User, i, err)
			}
		}
		if svc.calls != 9 {
			t.Errorf("%s reached the debugger %d times, want 9", p.User, svc.calls)
		}
	}
	// With a PullRequester too, both survive the scope.
	both := Scope(struct {
		*debugService
		grove.PullRequester
	}{svc, nil}, Principal{User: "alice"})
	if _, ok := both.(grove.Debugger); !ok {
		t.Error("Debugger lost next to PullRequester")
	}
	if _, ok := both.(grove.PullRequester); !ok {
		t.Error("PullRequester lost next to Debugger")
	}
}
