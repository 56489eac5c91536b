package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/mcpserver"
	"github.com/grove-dev/grove/tools"
)

// workspaces is a Service that knows two workspaces: ws_rw (edit) and
// ws_ro (analysis). The debug tools call nothing else of it.
type workspaces struct{ grove.Service }

func (workspaces) Get(_ context.Context, id string) (*grove.Workspace, error) {
	switch id {
	case "ws_rw":
		return &grove.Workspace{ID: id, User: "alice", Mode: grove.ModeEdit}, nil
	case "ws_ro":
		return &grove.Workspace{ID: id, User: "alice", Mode: grove.ModeAnalysis}, nil
	}
	return nil, grove.Errorf(grove.ErrNotFound, "workspace %s not found", id)
}

// fakeDebugger returns fixed typed values; session "gone" is unknown,
// session "busy" is running, language "cobol" has no adapter.
type fakeDebugger struct {
	workspaces
	last any // the last request
}

func two() *int { n := 0; return &n }

var snap = grove.DebugSnapshot{
	Session: "dbg_1", State: grove.DebugStopped, StopReason: "breakpoint", ThreadID: 1,
	Threads: []grove.DebugThread{{ID: 1, Name: "main"}},
	Frames: []grove.StackFrame{
		{ID: 1000, Name: "add_numbers", File: "add_numbers.c", Line: 4, Scopes: []grove.DebugScope{
			{Name: "Locals", Variables: []grove.DebugVariable{{Name: "a", Value: "2", Type: "int"}, {Name: "b", Value: "3", Type: "int"}}},
			{Name: "Registers", Variables: []grove.DebugVariable{{Name: "rax", Value: "0x0"}}},
		}},
		{ID: 1001, Name: "main", File: "add_numbers.c", Line: 9, Scopes: []grove.DebugScope{
			{Name: "Locals", Variables: []grove.DebugVariable{{Name: "x", Value: "2", Type: "int"}}},
		}},
	},
	Evaluations: []grove.DebugEvaluation{{Expression: "a + b", Result: "5", Type: "int"}, {Expression: "nope", Error: "use of undeclared identifier 'nope'"}},
	Output:      "starting\n",
}

func (f *fakeDebugger) session(s string) error {
	switch s {
	case "gone":
		return grove.Errorf(grove.ErrNotFound, "debug session %s not found", s)
	case "busy":
		return grove.Errorf(grove.ErrNotPaused, "session %s is running", s)
	}
	return nil
}

func (f *fakeDebugger) DebugContext(context.Context, string) (*grove.DebugContext, error) {
	return &grove.DebugContext{
		Configurations:  []grove.LaunchConfig{{Name: "Debug add", Type: "lldb-dap", Request: "launch", Raw: json.RawMessage(`{"name":"Debug add","type":"lldb-dap","request":"launch","program":"${workspaceFolder}/add"}`)}},
		Adapters:        []grove.DebugAdapter{{Name: "lldb-dap", Types: []string{"lldb-dap", "lldb"}, Languages: []string{"c", "cpp", "rust"}, Path: "/usr/bin/lldb-dap", Version: "18.1.8"}},
		NativeDebuggers: map[string]string{"gdb": "/usr/bin/gdb"},
	}, nil
}

func (f *fakeDebugger) DebugStart(_ context.Context, id string, req grove.DebugStartRequest) (*grove.DebugSession, error) {
	f.last = req
	if req.Language == "cobol" {
		return nil, grove.Errorf(grove.ErrDebugAdapterUnavailable, "no debug adapter for cobol")
	}
	return &grove.DebugSession{ID: "dbg_1", Workspace: id, Adapter: "lldb-dap", Program: req.Program, State: grove.DebugStopped, StopReason: "entry",
		StartedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Breakpoints: []grove.Breakpoint{{ID: 1, File: "add_numbers.c", Line: 4, Verified: true}}}, nil
}

func (f *fakeDebugger) DebugBreakpoints(_ context.Context, _ string, req grove.DebugBreakpointsRequest) (*grove.DebugBreakpointsResult, error) {
	f.last = req
	if err := f.session(req.Session); err != nil {
		return nil, err
	}
	var out grove.DebugBreakpointsResult
	for _, l := range req.Lines {
		out.Breakpoints = append(out.Breakpoints, grove.Breakpoint{File: req.File, Line: l, Verified: l < 100, Message: map[bool]string{true: "no code at this line"}[l >= 100]})
	}
	return &out, nil
}

func (f *fakeDebugger) DebugContinue(_ context.Context, _ string, req grove.DebugContinueRequest) (*grove.DebugSnapshot, error) {
	f.last = req
	if err := f.session(req.Session); err != nil {
		return nil, err
	}
	if req.NoWait || req.Timeout == time.Second {
		return &grove.DebugSnapshot{Session: req.Session, State: grove.DebugRunning}, nil
	}
	s := snap
	return &s, nil
}

func (f *fakeDebugger) DebugStep(_ context.Context, _ string, req grove.DebugStepRequest) (*grove.DebugSnapshot, error) {
	f.last = req
	if err := f.session(req.Session); err != nil {
		return nil, err
	}
	s := snap
	return &s, nil
}

func (f *fakeDebugger) DebugSnapshot(_ context.Context, _ string, req grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	f.last = req
	if err := f.session(req.Session); err != nil {
		return nil, err
	}
	s := snap
	return &s, nil
}

func (f *fakeDebugger) DebugEvaluate(_ context.Context, _ string, req grove.DebugEvaluateRequest) (*grove.DebugEvaluation, error) {
	f.last = req
	if err := f.session(req.Session); err != nil {
		return nil, err
	}
	return &grove.DebugEvaluation{Expression: req.Expression, Result: "5", Type: "int"}, nil
}

func (f *fakeDebugger) DebugSessions(_ context.Context, id string) ([]grove.DebugSession, error) {
	return []grove.DebugSession{{ID: "dbg_1", Workspace: id, Adapter: "lldb-dap", Program: "add", State: grove.DebugTerminated, ExitCode: two(),
		StartedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}}, nil
}

func (f *fakeDebugger) DebugStop(_ context.Context, _, session string) error {
	return f.session(session)
}

var _ grove.Debugger = (*fakeDebugger)(nil)

func connectDebug(t *testing.T, svc grove.Service, ws string) *mcp.ClientSession {
	t.Helper()
	ts := tools.New(tools.Options{})
	t.Cleanup(ts.Close)
	srv := mcpserver.NewServer(svc, mcpserver.Options{Tools: ts, WorkspaceID: ws, Caller: tools.Caller{User: "alice"}})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

var debugToolNames = []string{"debug_context", "debug_start", "debug_breakpoints", "debug_continue", "debug_step", "debug_snapshot", "debug_evaluate", "debug_sessions", "debug_stop"}

// TestDebugTools drives every debug tool through the MCP server with the
// SDK's client, over a fake grove.Debugger: the text the model reads, the
// structured result (checked against the declared output schema), the
// requests the Debugger gets, and the errors with their hints.
func TestDebugTools(t *testing.T) {
	f := &fakeDebugger{}
	cs := connectDebug(t, f, "ws_rw")
	listed, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*jsonschema.Resolved{}
	for _, tl := range listed.Tools {
		b, _ := json.Marshal(tl.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s output schema: %v", tl.Name, err)
		}
		out[tl.Name] = r
	}
	for _, n := range debugToolNames {
		if out[n] == nil {
			t.Errorf("%s is not listed for a writable workspace", n)
		}
	}

	call := func(name string, args map[string]any) (bool, string, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: protocol error %v", name, err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		var sc map[string]any
		if !res.IsError {
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &sc)
			if err := out[name].Validate(sc); err != nil {
				t.Errorf("%s: structured result does not match its output schema: %v\n%s", name, err, b)
			}
		}
		return res.IsError, text, sc
	}
	ok := func(name string, args map[string]any, has ...string) map[string]any {
		t.Helper()
		isErr, text, sc := call(name, args)
		if isErr {
			t.Fatalf("%s: %s", name, text)
		}
		for _, h := range has {
			if !strings.Contains(text, h) {
				t.Errorf("%s: text lacks %q:\n%s", name, h, text)
			}
		}
		return sc
	}
	fails := func(name string, args map[string]any, code, hint string) {
		t.Helper()
		isErr, text, _ := call(name, args)
		if !isErr || !strings.HasPrefix(text, code+": ") || !strings.Contains(text, hint) {
			t.Errorf("%s %v: want %s with %q, got isError=%v %q", name, args, code, hint, isErr, text)
		}
	}

	sc := ok("debug_context", nil, "lldb-dap 18.1.8", `"Debug add" — type lldb-dap, launch`, "native debuggers: gdb")
	if cfg := sc["configurations"].([]any)[0].(map[string]any); cfg["raw"].(map[string]any)["program"] == nil {
		t.Errorf("raw launch configuration lost: %v", cfg)
	}

	ok("debug_start", map[string]any{"language": "c", "program": "add", "args": []string{"1"}, "timeout_s": 5000,
		"breakpoints": []any{map[string]any{"file": "add_numbers.c", "lines": []int{4}}}},
		"session dbg_1 (lldb-dap, add): stopped (entry)", "breakpoint add_numbers.c:4 verified")
	if req := f.last.(grove.DebugStartRequest); req.Timeout != 600*time.Second || len(req.Breakpoints) != 1 || req.Breakpoints[0].Lines[0] != 4 || req.Args[0] != "1" {
		t.Errorf("start request = %+v", req)
	}
	ok("debug_start", map[string]any{"config": map[string]any{"type": "lldb-dap", "request": "launch", "program": "add"}}, "session dbg_1")
	if req := f.last.(grove.DebugStartRequest); !strings.Contains(string(req.Config), `"program":"add"`) || req.Timeout != 0 {
		t.Errorf("start request with config = %+v", req)
	}
	fails("debug_start", map[string]any{}, "E_INVALID_ARGUMENT", "config_name, config, or language and program")
	fails("debug_start", map[string]any{"language": "java", "program": "a"}, "E_INVALID_ARGUMENT", "")
	fails("debug_start", map[string]any{"language": "c", "program": "a", "breakpoints": []any{map[string]any{"file": "a.c", "lines": []int{0}}}}, "E_INVALID_ARGUMENT", "1-based")
	fails("debug_start", map[string]any{"language": "c", "program": "a", "timeout_s": -1}, "E_INVALID_ARGUMENT", "")

	ok("debug_breakpoints", map[string]any{"session_id": "dbg_1", "file": "add_numbers.c", "lines": []int{4, 120}, "conditions": []string{"a > 1", ""}},
		"breakpoint add_numbers.c:4 verified", "breakpoint add_numbers.c:120 NOT verified: no code at this line")
	if req := f.last.(grove.DebugBreakpointsRequest); req.Session != "dbg_1" || req.Conditions[0] != "a > 1" {
		t.Errorf("breakpoints request = %+v", req)
	}
	ok("debug_breakpoints", map[string]any{"session_id": "dbg_1", "file": "add_numbers.c", "lines": []int{}}, "no breakpoints in add_numbers.c")
	fails("debug_breakpoints", map[string]any{"session_id": "dbg_1", "file": "a.c", "lines": []int{1}, "conditions": []string{"x", "y"}}, "E_INVALID_ARGUMENT", "one per line")
	fails("debug_breakpoints", map[string]any{"session_id": "gone", "file": "a.c", "lines": []int{1}}, "E_NOT_FOUND", "debug_sessions lists")

	want := []string{"stopped (breakpoint) at add_numbers.c:4 in add_numbers\n", "add_numbers\n  a = 2 (int)\n  b = 3 (int)\n  (1 registers, in the structured result)", "#1 main at add_numbers.c:9 — x = 2 [frame_id 1001]",
		"a + b = 5 (int)", "nope: error: use of undeclared identifier", "--- program output ---\nstarting\n"}
	sc = ok("debug_continue", map[string]any{"session_id": "dbg_1", "expressions": []string{"a + b"}}, want...)
	if sc["frames"].([]any)[0].(map[string]any)["scopes"].([]any)[0].(map[string]any)["variables"].([]any)[0].(map[string]any)["name"] != "a" {
		t.Errorf("structured snapshot: %v", sc)
	}
	ok("debug_continue", map[string]any{"session_id": "dbg_1", "timeout_s": 1}, "running\n(still running after 1s")
	ok("debug_continue", map[string]any{"session_id": "dbg_1", "no_wait": true}, "running")

	ok("debug_step", map[string]any{"session_id": "dbg_1", "kind": "over"}, want[0])
	if req := f.last.(grove.DebugStepRequest); req.Kind != "over" {
		t.Errorf("step request = %+v", req)
	}
	fails("debug_step", map[string]any{"session_id": "dbg_1", "kind": "sideways"}, "E_INVALID_ARGUMENT", "")
	fails("debug_step", map[string]any{"session_id": "dbg_1"}, "E_INVALID_ARGUMENT", "kind")
	fails("debug_step", map[string]any{"session_id": "busy", "kind": "into"}, "E_NOT_PAUSED",
		"Hint: the program is running: call debug_continue with a breakpoint set, or debug_snapshot with a longer timeout")

	ok("debug_snapshot", map[string]any{"session_id": "dbg_1", "timeout_s": 3, "max_frames": 5}, want...)
	if req := f.last.(grove.DebugSnapshotRequest); req.Timeout != 3*time.Second || req.MaxFrames != 5 {
		t.Errorf("snapshot request = %+v", req)
	}
	fails("debug_snapshot", map[string]any{"session_id": "busy"}, "E_NOT_PAUSED", "debug_continue")

	ok("debug_evaluate", map[string]any{"session_id": "dbg_1", "expression": "a + b", "frame_id": 1001}, "a + b = 5 (int)")
	if req := f.last.(grove.DebugEvaluateRequest); req.FrameID != 1001 {
		t.Errorf("evaluate request = %+v", req)
	}
	fails("debug_evaluate", map[string]any{"session_id": "dbg_1", "expression": " "}, "E_INVALID_ARGUMENT", "empty")

	ok("debug_sessions", nil, "dbg_1 lldb-dap add: terminated (exit code 0) (started 12:00:00)")
	ok("debug_stop", map[string]any{"session_id": "dbg_1"}, "session dbg_1 stopped")
	fails("debug_stop", map[string]any{"session_id": "gone"}, "E_NOT_FOUND", "debug_start")

	fails("debug_start", map[string]any{"language": "cobol", "program": "a"}, "E_INVALID_ARGUMENT", "") // not in the enum
	f2 := &adapterless{fakeDebugger: f}
	cs2 := connectDebug(t, f2, "ws_rw")
	res, err := cs2.CallTool(context.Background(), &mcp.CallToolParams{Name: "debug_start", Arguments: map[string]any{"language": "go", "program": "."}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.HasPrefix(text, "E_DEBUG_ADAPTER_UNAVAILABLE: ") ||
		!strings.Contains(text, "Hint: debug_adapter_unavailable: install lldb-dap / dlv / debugpy in the runtime, or see debug_context") {
		t.Errorf("adapter unavailable: %q", text)
	}
}

// adapterless has no adapter for any language.
type adapterless struct{ *fakeDebugger }

func (a *adapterless) DebugStart(context.Context, string, grove.DebugStartRequest) (*grove.DebugSession, error) {
	return nil, grove.Errorf(grove.ErrDebugAdapterUnavailable, "dlv is not installed in the runtime")
}

// TestDebugToolsGating: debug tools are write tools like run_command —
// not listed for a read-only workspace, refused there with
// E_READ_ONLY_WORKSPACE — and a Service without a grove.Debugger answers
// E_NOT_SUPPORTED.
func TestDebugToolsGating(t *testing.T) {
	ro := connectDebug(t, &fakeDebugger{}, "ws_ro")
	res, err := ro.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if strings.HasPrefix(tl.Name, "debug_") {
			t.Errorf("%s listed for a read-only workspace", tl.Name)
		}
	}
	r, err := ro.CallTool(context.Background(), &mcp.CallToolParams{Name: "debug_context", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if text := r.Content[0].(*mcp.TextContent).Text; !r.IsError || !strings.HasPrefix(text, "E_READ_ONLY_WORKSPACE") {
		t.Errorf("debug_context on a read-only workspace: %q", text)
	}

	plain := connectDebug(t, workspaces{}, "ws_rw")
	for _, name := range debugToolNames {
		args := map[string]any{"session_id": "dbg_1", "kind": "over", "expression": "a", "file": "a.c", "lines": []int{1}, "language": "c", "program": "a"}
		// Each tool gets only the inputs it has.
		ts := tools.New(tools.Options{})
		tl, _ := ts.Lookup(name)
		ts.Close()
		for k := range args {
			if tl.InputSchema.Properties[k] == nil {
				delete(args, k)
			}
		}
		r, err := plain.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if text := r.Content[0].(*mcp.TextContent).Text; !r.IsError || !strings.HasPrefix(text, "E_NOT_SUPPORTED: ") {
			t.Errorf("%s without a Debugger: %q", name, text)
		}
	}
}
