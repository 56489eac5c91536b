package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/client"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/mcpserver"
	"github.com/grove-dev/grove/provider/local"
	"github.com/grove-dev/grove/store/memory"
	"github.com/grove-dev/grove/tools"
)

// fakeDebugger is the engine with a grove.Debugger that returns fixed
// typed values, for the transport: the real debuggers are tested where
// they are implemented. Session "busy" is running (ErrNotPaused), "gone"
// unknown, "block" waits for unblock; language "cobol" has no adapter.
type fakeDebugger struct {
	grove.Service
	mu      sync.Mutex
	last    any
	entered chan struct{}
	unblock chan struct{}
}

func (f *fakeDebugger) record(v any) {
	f.mu.Lock()
	f.last = v
	f.mu.Unlock()
}

func (f *fakeDebugger) lastRequest() any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *fakeDebugger) session(s string) error {
	switch s {
	case "busy":
		return grove.Errorf(grove.ErrNotPaused, "session %s is running", s)
	case "gone":
		return grove.Errorf(grove.ErrNotFound, "debug session %s not found", s)
	case "block":
		f.entered <- struct{}{}
		<-f.unblock
	}
	return nil
}

var (
	exitZero     = 0
	debugStarted = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	debugSnap    = grove.DebugSnapshot{
		Session: "dbg_1", State: grove.DebugStopped, StopReason: "breakpoint", ThreadID: 1,
		Threads: []grove.DebugThread{{ID: 1, Name: "main"}},
		Frames: []grove.StackFrame{{ID: 1000, Name: "add_numbers", File: "add_numbers.c", Line: 4, Column: 5, Scopes: []grove.DebugScope{
			{Name: "Locals", Variables: []grove.DebugVariable{{Name: "a", Value: "2", Type: "int"}, {Name: "b", Value: "3", Type: "int"}}}}},
			{ID: 1001, Name: "main", File: "add_numbers.c", Line: 9}},
		Evaluations: []grove.DebugEvaluation{{Expression: "a + b", Result: "5", Type: "int"}},
		Output:      "starting\n",
	}
	debugCtx = grove.DebugContext{
		Configurations:  []grove.LaunchConfig{{Name: "Debug add", Type: "lldb-dap", Request: "launch", Raw: json.RawMessage(`{"name":"Debug add","type":"lldb-dap","request":"launch","program":"add"}`)}},
		Adapters:        []grove.DebugAdapter{{Name: "lldb-dap", Types: []string{"lldb-dap", "lldb"}, Languages: []string{"c", "cpp", "rust"}, Path: "/usr/bin/lldb-dap", Version: "18.1.8"}},
		NativeDebuggers: map[string]string{"gdb": "/usr/bin/gdb"},
		Problems:        []string{".vscode/launch.json: trailing garbage"},
	}
)

func (f *fakeDebugger) DebugContext(context.Context, string) (*grove.DebugContext, error) {
	c := debugCtx
	return &c, nil
}

func (f *fakeDebugger) DebugStart(_ context.Context, id string, req grove.DebugStartRequest) (*grove.DebugSession, error) {
	f.record(req)
	if req.Language == "cobol" || req.ConfigName == "cobol" {
		return nil, grove.Errorf(grove.ErrDebugAdapterUnavailable, "no debug adapter for cobol in this runtime")
	}
	return &grove.DebugSession{ID: "dbg_1", Workspace: id, Adapter: "lldb-dap", Program: req.Program, State: grove.DebugStopped, StopReason: "entry",
		StartedAt: debugStarted, Breakpoints: []grove.Breakpoint{{ID: 1, File: "add_numbers.c", Line: 4, Verified: true}}}, nil
}

func (f *fakeDebugger) DebugBreakpoints(_ context.Context, _ string, req grove.DebugBreakpointsRequest) (*grove.DebugBreakpointsResult, error) {
	f.record(req)
	if err := f.session(req.Session); err != nil {
		return nil, err
	}
	out := &grove.DebugBreakpointsResult{}
	for _, l := range req.Lines {
		out.Breakpoints = append(out.Breakpoints, grove.Breakpoint{ID: l, File: req.File, Line: l, Verified: true})
	}
	return out, nil
}

func (f *fakeDebugger) DebugContinue(_ context.Context, _ string, req grove.DebugContinueRequest) (*grove.DebugSnapshot, error) {
	f.record(req)
	if err := f.session(req.Session); err != nil {
		return nil, err
	}
	if req.NoWait {
		return &grove.DebugSnapshot{Session: req.Session, State: grove.DebugRunning}, nil
	}
	s := debugSnap
	return &s, nil
}

func (f *fakeDebugger) DebugStep(_ context.Context, _ string, req grove.DebugStepRequest) (*grove.DebugSnapshot, error) {
	f.record(req)
	if err := f.session(req.Session); err != nil {
		return nil, err
	}
	s := debugSnap
	return &s, nil
}

func (f *fakeDebugger) DebugSnapshot(_ context.Context, _ string, req grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	f.record(req)
	if err := f.session(req.Session); err != nil {
		return nil, err
	}
	s := debugSnap
	return &s, nil
}

func (f *fakeDebugger) DebugEvaluate(_ context.Context, _ string, req grove.DebugEvaluateRequest) (*grove.DebugEvaluation, error) {
	f.record(req)
	if err := f.session(req.Session); err != nil {
		return nil, err
	}
	return &grove.DebugEvaluation{Expression: req.Expression, Result: "5", Type: "int"}, nil
}

func (f *fakeDebugger) DebugSessions(_ context.Context, id string) ([]grove.DebugSession, error) {
	return []grove.DebugSession{{ID: "dbg_1", Workspace: id, Adapter: "lldb-dap", Program: "add", State: grove.DebugTerminated, ExitCode: &exitZero, StartedAt: debugStarted}}, nil
}

func (f *fakeDebugger) DebugStop(_ context.Context, _, sid string) error {
	f.record(sid)
	return f.session(sid)
}

var _ grove.Debugger = (*fakeDebugger)(nil)

// debugFixture is the fixture over the engine wrapped in fakeDebugger,
// with alice's edit workspace ws and analysis workspace ro.
type debugFixture struct {
	*fixture
	dbg    *fakeDebugger
	ws, ro string
}

func newDebugFixture(t *testing.T, opt httpapi.Options) *debugFixture {
	t.Helper()
	var dbg *fakeDebugger
	f := newWrappedFixture(t, opt, func(eng grove.Service) grove.Service {
		dbg = &fakeDebugger{Service: eng, entered: make(chan struct{}, 8), unblock: make(chan struct{})}
		return dbg
	})
	df := &debugFixture{fixture: f, dbg: dbg, ws: "/v1/workspaces/" + f.acquire(t, f.alice, "c1")}
	r := f.do(t, f.alice, "POST", "/v1/workspaces", map[string]any{"repo": f.repo, "project": "p", "mode": "analysis", "ref": "main"})
	if r.status != 201 {
		t.Fatalf("acquire analysis: %d %s", r.status, r.body)
	}
	var ws struct{ ID string }
	json.Unmarshal(r.body, &ws)
	df.ro = "/v1/workspaces/" + ws.ID
	return df
}

// newWrappedFixture is newFixture with the engine wrapped by wrap.
func newWrappedFixture(t *testing.T, opt httpapi.Options, wrap func(grove.Service) grove.Service) *fixture {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(filepath.Join(root, "rt"), 0o700)
	git := &gitrepo.Git{Home: home, Identity: gitrepo.Identity{Name: "Test Agent", Email: "agent@example.invalid"}}
	prov := local.New(&gitrepo.Caches{Git: git, Root: filepath.Join(root, "repos")}, fsops.Options{})
	drv := subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: filepath.Join(root, "rt")})
	st := memory.New()
	f := &fixture{repo: sourceRepo(t)}
	eng, err := engine.New(engine.Config{Store: st, Provider: prov, Driver: drv, AllowUnisolatedWrites: true,
		DataRoot: root, LocalRepoRoots: []string{filepath.Dir(f.repo)}})
	if err != nil {
		t.Fatal(err)
	}
	keys := &auth.Keys{Store: st}
	ctx := context.Background()
	_, f.alice, _ = keys.Create(ctx, "alice", false)
	_, f.bob, _ = keys.Create(ctx, "bob", false)
	_, f.admin, _ = keys.Create(ctx, "ops", true)
	ts := tools.New(tools.Options{})
	t.Cleanup(ts.Close)
	opt.Service, opt.Tools, opt.Auth = wrap(eng), ts, keys
	f.srv = httptest.NewServer(httpapi.New(opt))
	t.Cleanup(f.srv.Close)
	return f
}

// noDebugger hides every optional interface of the Service it wraps.
type noDebugger struct{ grove.Service }

// TestDebugRoutes: every debug route with its status, the request the
// Debugger gets, and the errors mapped: another user's workspace 404,
// ErrNotPaused 409 E_NOT_PAUSED, ErrDebugAdapterUnavailable 501 (like
// ErrNotInstalled) E_DEBUG_ADAPTER_UNAVAILABLE, a server without a
// Debugger 501 E_NOT_SUPPORTED. An analysis workspace is passed on: the
// Debugger decides (the engine debugs under the read-only mount).
func TestDebugRoutes(t *testing.T) {
	f := newDebugFixture(t, httpapi.Options{})
	w := f.ws
	type tc struct {
		name, key, method, path string
		body                    any
		status                  int
		code                    string
		want                    any // the request the Debugger got, when set
	}
	start := map[string]any{"language": "c", "program": "add", "args": []string{"1"}, "timeout_ms": 2500, "stop_on_entry": true,
		"breakpoints": []any{map[string]any{"file": "add_numbers.c", "lines": []int{4}}}}
	for _, c := range []tc{
		{"context", f.alice, "GET", w + "/debug/context", nil, 200, "", nil},
		{"start", f.alice, "POST", w + "/debug/sessions", start, 201, "", grove.DebugStartRequest{Language: "c", Program: "add", Args: []string{"1"},
			StopOnEntry: true, Timeout: 2500 * time.Millisecond, Breakpoints: []grove.SourceBreakpoints{{File: "add_numbers.c", Lines: []int{4}}}}},
		{"start, no adapter", f.alice, "POST", w + "/debug/sessions", map[string]any{"language": "cobol", "program": "a"}, 501, "E_DEBUG_ADAPTER_UNAVAILABLE", nil},
		{"start, unknown field", f.alice, "POST", w + "/debug/sessions", map[string]any{"lang": "c"}, 400, "E_INVALID_ARGUMENT", nil},
		{"start, analysis workspace: the Debugger decides", f.alice, "POST", f.ro + "/debug/sessions", map[string]any{"language": "c", "program": "add"}, 201, "",
			grove.DebugStartRequest{Language: "c", Program: "add"}},
		{"sessions", f.alice, "GET", w + "/debug/sessions", nil, 200, "", nil},
		{"breakpoints", f.alice, "POST", w + "/debug/sessions/dbg_1/breakpoints", map[string]any{"file": "a.c", "lines": []int{3, 7}, "conditions": []string{"", "i > 2"}}, 200, "",
			grove.DebugBreakpointsRequest{Session: "dbg_1", SourceBreakpoints: grove.SourceBreakpoints{File: "a.c", Lines: []int{3, 7}, Conditions: []string{"", "i > 2"}}}},
		{"continue", f.alice, "POST", w + "/debug/sessions/dbg_1/continue", map[string]any{"timeout_ms": 1500, "expressions": []string{"a + b"}}, 200, "",
			grove.DebugContinueRequest{Session: "dbg_1", Timeout: 1500 * time.Millisecond, Expressions: []string{"a + b"}}},
		{"continue, empty body", f.alice, "POST", w + "/debug/sessions/dbg_1/continue", nil, 200, "", grove.DebugContinueRequest{Session: "dbg_1"}},
		{"continue, negative timeout", f.alice, "POST", w + "/debug/sessions/dbg_1/continue", map[string]any{"timeout_ms": -1}, 400, "E_INVALID_ARGUMENT", nil},
		{"step", f.alice, "POST", w + "/debug/sessions/dbg_1/step", map[string]any{"kind": "into", "thread_id": 2}, 200, "",
			grove.DebugStepRequest{Session: "dbg_1", Kind: "into", ThreadID: 2}},
		{"step, bad kind", f.alice, "POST", w + "/debug/sessions/dbg_1/step", map[string]any{"kind": "sideways"}, 400, "E_INVALID_ARGUMENT", nil},
		{"step, running", f.alice, "POST", w + "/debug/sessions/busy/step", map[string]any{"kind": "over"}, 409, "E_NOT_PAUSED", nil},
		{"snapshot", f.alice, "POST", w + "/debug/sessions/dbg_1/snapshot", map[string]any{"max_frames": 3, "max_variables": 10}, 200, "",
			grove.DebugSnapshotRequest{Session: "dbg_1", MaxFrames: 3, MaxVariables: 10}},
		{"snapshot, running", f.alice, "POST", w + "/debug/sessions/busy/snapshot", nil, 409, "E_NOT_PAUSED", nil},
		{"evaluate", f.alice, "POST", w + "/debug/sessions/dbg_1/evaluate", map[string]any{"expression": "a + b", "frame_id": 1001}, 200, "",
			grove.DebugEvaluateRequest{Session: "dbg_1", Expression: "a + b", FrameID: 1001}},
		{"evaluate, no expression", f.alice, "POST", w + "/debug/sessions/dbg_1/evaluate", map[string]any{}, 400, "E_INVALID_ARGUMENT", nil},
		{"evaluate, unknown session", f.alice, "POST", w + "/debug/sessions/gone/evaluate", map[string]any{"expression": "a"}, 404, "E_NOT_FOUND", nil},
		{"stop", f.alice, "DELETE", w + "/debug/sessions/dbg_1", nil, 204, "", "dbg_1"},
		{"stop, unknown session", f.alice, "DELETE", w + "/debug/sessions/gone", nil, 404, "E_NOT_FOUND", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.dbg.record(nil)
			r := f.do(t, c.key, c.method, c.path, c.body)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			if c.code != "" {
				if got := r.errCode(t); got != c.code {
					t.Fatalf("code %s, want %s: %s", got, c.code, r.body)
				}
			}
			if c.want != nil && !reflect.DeepEqual(f.dbg.lastRequest(), c.want) {
				t.Fatalf("the Debugger got %#v, want %#v", f.dbg.lastRequest(), c.want)
			}
		})
	}

	// Bob cannot reach alice's workspace, nor its sessions, by any route.
	for _, p := range []struct{ method, path string }{
		{"GET", w + "/debug/context"}, {"POST", w + "/debug/sessions"}, {"GET", w + "/debug/sessions"}, {"DELETE", w + "/debug/sessions/dbg_1"},
		{"POST", w + "/debug/sessions/dbg_1/breakpoints"}, {"POST", w + "/debug/sessions/dbg_1/continue"}, {"POST", w + "/debug/sessions/dbg_1/step"},
		{"POST", w + "/debug/sessions/dbg_1/snapshot"}, {"POST", w + "/debug/sessions/dbg_1/evaluate"},
	} {
		f.dbg.record(nil)
		var body any
		if p.method == "POST" {
			body = map[string]any{}
			switch {
			case strings.HasSuffix(p.path, "/sessions"):
				body = start
			case strings.HasSuffix(p.path, "/step"):
				body = map[string]any{"kind": "over"}
			case strings.HasSuffix(p.path, "/evaluate"):
				body = map[string]any{"expression": "a"}
			case strings.HasSuffix(p.path, "/breakpoints"):
				body = map[string]any{"file": "a.c", "lines": []int{1}}
			}
		}
		r := f.do(t, f.bob, p.method, p.path, body)
		if r.status != 404 || r.errCode(t) != "E_NOT_FOUND" {
			t.Errorf("bob %s %s: %d %s", p.method, p.path, r.status, r.body)
		}
		if got := f.dbg.lastRequest(); got != nil {
			t.Errorf("bob %s %s reached the Debugger with %#v", p.method, p.path, got)
		}
	}

	// The debug tools over HTTP reach the same Debugger through the
	// caller's scoped service.
	r := f.do(t, f.alice, "POST", w+"/tools/debug_snapshot", map[string]any{"session_id": "dbg_1"})
	if r.status != 200 || !strings.Contains(string(r.body), "stopped (breakpoint) at add_numbers.c:4 in add_numbers") {
		t.Fatalf("tools/debug_snapshot: %d %s", r.status, r.body)
	}

	// A server whose Service has no Debugger.
	plain := newWrappedFixture(t, httpapi.Options{}, func(eng grove.Service) grove.Service { return noDebugger{eng} })
	pw := "/v1/workspaces/" + plain.acquire(t, plain.alice, "c1")
	if r := plain.do(t, plain.alice, "GET", pw+"/debug/context", nil); r.status != 501 || r.errCode(t) != "E_NOT_SUPPORTED" {
		t.Fatalf("no Debugger: %d %s", r.status, r.body)
	}
}

// TestDebugSlots: a debug call waiting for the program holds one of the
// user's work slots, like exec; listing sessions does not need one.
func TestDebugSlots(t *testing.T) {
	f := newDebugFixture(t, httpapi.Options{MaxExecPerUser: 1})
	done := make(chan resp, 1)
	go func() { done <- f.do(t, f.alice, "POST", f.ws+"/debug/sessions/block/continue", nil) }()
	<-f.dbg.entered
	if r := f.do(t, f.alice, "POST", f.ws+"/debug/sessions/dbg_1/snapshot", nil); r.status != 429 {
		t.Errorf("second debug call while the first waits: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "GET", f.ws+"/debug/sessions", nil); r.status != 200 {
		t.Errorf("listing sessions while a call waits: %d %s", r.status, r.body)
	}
	close(f.dbg.unblock)
	if r := <-done; r.status != 200 {
		t.Fatalf("the waiting continue: %d %s", r.status, r.body)
	}
}

// TestDebugClient: client.Client is a grove.Debugger over the routes;
// values and requests survive the round trip, and so do the error kinds.
func TestDebugClient(t *testing.T) {
	f := newDebugFixture(t, httpapi.Options{})
	ctx := context.Background()
	var d grove.Debugger = client.New(f.srv.URL, f.alice, f.srv.Client())
	id := strings.TrimPrefix(f.ws, "/v1/workspaces/")

	dc, err := d.DebugContext(ctx, id)
	if err != nil || !reflect.DeepEqual(dc.Adapters, debugCtx.Adapters) || dc.NativeDebuggers["gdb"] != "/usr/bin/gdb" ||
		len(dc.Configurations) != 1 || !strings.Contains(string(dc.Configurations[0].Raw), `"program":"add"`) {
		t.Fatalf("DebugContext = %+v, %v", dc, err)
	}
	startReq := grove.DebugStartRequest{Config: json.RawMessage(`{"type":"lldb-dap","request":"launch","program":"add"}`), Env: map[string]string{"X": "1"},
		Cwd: "src", Timeout: 3 * time.Second, Breakpoints: []grove.SourceBreakpoints{{File: "add_numbers.c", Lines: []int{4}, Conditions: []string{"a > 1"}}}}
	s, err := d.DebugStart(ctx, id, startReq)
	if err != nil || s.ID != "dbg_1" || !s.StartedAt.Equal(debugStarted) || len(s.Breakpoints) != 1 || !s.Breakpoints[0].Verified {
		t.Fatalf("DebugStart = %+v, %v", s, err)
	}
	if got := f.dbg.lastRequest().(grove.DebugStartRequest); !reflect.DeepEqual(got, startReq) {
		t.Errorf("the Debugger got %+v, want %+v", got, startReq)
	}
	bpReq := grove.DebugBreakpointsRequest{Session: "dbg_1", SourceBreakpoints: grove.SourceBreakpoints{File: "a.c", Lines: []int{2}}}
	if bp, err := d.DebugBreakpoints(ctx, id, bpReq); err != nil || len(bp.Breakpoints) != 1 || bp.Breakpoints[0].Line != 2 {
		t.Fatalf("DebugBreakpoints = %+v, %v", bp, err)
	}
	if got := f.dbg.lastRequest(); !reflect.DeepEqual(got, bpReq) {
		t.Errorf("breakpoints: the Debugger got %+v", got)
	}
	contReq := grove.DebugContinueRequest{Session: "dbg_1", ThreadID: 1, Timeout: 4 * time.Second, Expressions: []string{"a"}}
	if snap, err := d.DebugContinue(ctx, id, contReq); err != nil || !reflect.DeepEqual(*snap, debugSnap) {
		t.Fatalf("DebugContinue = %+v, %v", snap, err)
	}
	if got := f.dbg.lastRequest(); !reflect.DeepEqual(got, contReq) {
		t.Errorf("continue: the Debugger got %+v", got)
	}
	stepReq := grove.DebugStepRequest{Session: "dbg_1", Kind: "out", Timeout: time.Second}
	if snap, err := d.DebugStep(ctx, id, stepReq); err != nil || snap.Frames[0].Scopes[0].Variables[1].Value != "3" {
		t.Fatalf("DebugStep = %+v, %v", snap, err)
	}
	if got := f.dbg.lastRequest(); !reflect.DeepEqual(got, stepReq) {
		t.Errorf("step: the Debugger got %+v", got)
	}
	snapReq := grove.DebugSnapshotRequest{Session: "dbg_1", Timeout: 2 * time.Second, Expressions: []string{"b"}, MaxFrames: 4, MaxVariables: 5}
	if snap, err := d.DebugSnapshot(ctx, id, snapReq); err != nil || snap.State != grove.DebugStopped {
		t.Fatalf("DebugSnapshot = %+v, %v", snap, err)
	}
	if got := f.dbg.lastRequest(); !reflect.DeepEqual(got, snapReq) {
		t.Errorf("snapshot: the Debugger got %+v", got)
	}
	if ev, err := d.DebugEvaluate(ctx, id, grove.DebugEvaluateRequest{Session: "dbg_1", Expression: "a + b", FrameID: 7}); err != nil || ev.Result != "5" {
		t.Fatalf("DebugEvaluate = %+v, %v", ev, err)
	}
	if ss, err := d.DebugSessions(ctx, id); err != nil || len(ss) != 1 || ss[0].ExitCode == nil || *ss[0].ExitCode != 0 {
		t.Fatalf("DebugSessions = %+v, %v", ss, err)
	}
	if err := d.DebugStop(ctx, id, "dbg_1"); err != nil {
		t.Fatal(err)
	}

	bob := client.New(f.srv.URL, f.bob, f.srv.Client())
	for _, k := range []struct {
		name string
		err  error
		kind error
	}{
		{"running", func() error {
			_, err := d.DebugSnapshot(ctx, id, grove.DebugSnapshotRequest{Session: "busy"})
			return err
		}(), grove.ErrNotPaused},
		{"no adapter", func() error {
			_, err := d.DebugStart(ctx, id, grove.DebugStartRequest{Language: "cobol", Program: "a"})
			return err
		}(), grove.ErrDebugAdapterUnavailable},
		{"unknown session", func() error { return d.DebugStop(ctx, id, "gone") }(), grove.ErrNotFound},
		{"other user's workspace", func() error { _, err := bob.DebugSessions(ctx, id); return err }(), grove.ErrNotFound},
	} {
		if !errors.Is(k.err, k.kind) {
			t.Errorf("%s: %v, want %v", k.name, k.err, k.kind)
		}
	}
	if err := d.DebugStop(ctx, id, "busy"); !errors.Is(err, grove.ErrConflict) {
		t.Errorf("ErrNotPaused is not an ErrConflict across the wire: %v", err)
	}
}

// TestDebugOverMCP: the debug tools over the server's MCP endpoints (bound
// and unbound, where bob cannot name alice's workspace), and over an MCP
// server whose Service is client.Client — `grove mcp --server` — where
// the error kinds come back across the wire with the tools' hints.
func TestDebugOverMCP(t *testing.T) {
	f := newDebugFixture(t, httpapi.Options{})
	id := strings.TrimPrefix(f.ws, "/v1/workspaces/")
	cs := f.mcpSession(t, f.alice, f.ws+"/mcp")
	if names := listNames(t, cs); !slices.Contains(names, "debug_start") || !slices.Contains(names, "debug_context") {
		t.Fatalf("bound MCP lists %v", names)
	}
	if isErr, text, sc := call(t, cs, "debug_continue", map[string]any{"session_id": "dbg_1"}); isErr ||
		!strings.HasPrefix(text, "stopped (breakpoint) at add_numbers.c:4 in add_numbers\n  a = 2 (int)\n  b = 3 (int)\n") || sc["state"] != "stopped" {
		t.Fatalf("debug_continue over MCP: %v %q %v", isErr, text, sc)
	}
	ro := f.mcpSession(t, f.alice, f.ro+"/mcp")
	if names := listNames(t, ro); slices.Contains(names, "debug_start") {
		t.Errorf("a read-only workspace lists the debug tools: %v", names)
	}
	bob := f.mcpSession(t, f.bob, "/v1/mcp")
	if isErr, text, _ := call(t, bob, "debug_sessions", map[string]any{"workspace_id": id}); !isErr || !strings.HasPrefix(text, "E_NOT_FOUND: ") {
		t.Errorf("bob's debug_sessions on alice's workspace: %v %q", isErr, text)
	}

	ts := tools.New(tools.Options{})
	t.Cleanup(ts.Close)
	srv := mcpserver.NewServer(client.New(f.srv.URL, f.alice, f.srv.Client()), mcpserver.Options{Tools: ts, WorkspaceID: id, Caller: tools.Caller{User: "alice"}})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	rc, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	if isErr, text, _ := call(t, rc, "debug_snapshot", map[string]any{"session_id": "dbg_1", "expressions": []string{"a + b"}}); isErr || !strings.Contains(text, "a + b = 5 (int)") {
		t.Fatalf("debug_snapshot over the client: %v %q", isErr, text)
	}
	if isErr, text, _ := call(t, rc, "debug_step", map[string]any{"session_id": "busy", "kind": "over"}); !isErr ||
		!strings.HasPrefix(text, "E_NOT_PAUSED: ") || !strings.Contains(text, "Hint: the program is running") {
		t.Errorf("debug_step on a running program over the client: %v %q", isErr, text)
	}
	if isErr, text, _ := call(t, rc, "debug_start", map[string]any{"config_name": "cobol"}); !isErr ||
		!strings.HasPrefix(text, "E_DEBUG_ADAPTER_UNAVAILABLE: ") || !strings.Contains(text, "Hint: debug_adapter_unavailable: install lldb-dap / dlv / debugpy") {
		t.Errorf("debug_start without an adapter over the client: %v %q", isErr, text)
	}
}
