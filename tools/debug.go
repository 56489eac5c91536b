package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/grove-dev/grove"
)

// The debug_* tools drive Debug Adapter Protocol sessions through the
// Service's grove.Debugger (lldb-dap, dlv, debugpy running in the
// workspace's runtime). They run the agent's program, so like run_command
// they are write tools: listed only for writable workspaces, and none is
// annotated read-only (the catalog's rule: a read-only tool is listed for
// read-only workspaces). debug_context probes adapters by launching them;
// debug_snapshot consumes the program's output since the last one.

// debugMaxWaitS bounds every wait a debug tool asks for; a larger
// timeout_s is lowered to it.
const debugMaxWaitS = 600

// debugTools are the catalog entries, in the order they are listed.
func debugTools() []*Tool {
	return []*Tool{
		withRawConfigSchema(define(Tool{Name: "debug_context", Title: "Debug context", Write: true, Annotations: Annotations{Idempotent: true},
			Description: "Show what can be debugged in this workspace: the launch configurations of .vscode/launch.json, the debug adapters that launch in its runtime " +
				"(lldb-dap for C/C++/Rust, dlv for Go, debugpy for Python) and the native debuggers found. Call it before debug_start.",
		}, debugContext)),
		withEnum(define(Tool{Name: "debug_start", Title: "Start debugging", Write: true, Annotations: Annotations{Destructive: true, OpenWorld: true},
			Description: "Launch a program under a debugger and return its session_id for the other debug_* tools. Give config_name (a launch.json entry), " +
				"config (a whole launch configuration), or language and program (a workspace-relative path to a built binary or script; build it with debug info first, e.g. `cc -g`). " +
				"breakpoints are set before the program runs; stop_on_entry=true pauses at the start. Then debug_continue runs to the next breakpoint and shows the state.",
		}, debugStart), "language", "c", "cpp", "rust", "go", "python"),
		define(Tool{Name: "debug_breakpoints", Title: "Set breakpoints", Write: true, Annotations: Annotations{Idempotent: true},
			Description: "Replace the breakpoints of one source file in a session (lines: [] clears them). Returns each breakpoint as the debugger verified it; " +
				"an unverified one (no code at that line, file not in the program) says why.",
		}, debugBreakpoints),
		define(Tool{Name: "debug_continue", Title: "Continue", Write: true, Annotations: Annotations{Destructive: true},
			Description: "Resume the program and wait (up to timeout_s, default 30) for it to stop at a breakpoint, an exception or its end; returns the snapshot then: " +
				"where it stopped, the locals of the top frame, the call stack, the values of expressions, and the program's new output. " +
				"Still running after timeout_s is a normal result with state running. no_wait=true returns at once.",
		}, debugContinue),
		withEnum(define(Tool{Name: "debug_step", Title: "Step", Write: true, Annotations: Annotations{Destructive: true},
			Description: "Step a paused program: kind=over runs the current line, into enters the call on it, out runs to the caller. Returns the snapshot at the new position. " +
				"Fails with E_NOT_PAUSED while the program runs.",
		}, debugStep), "kind", "over", "into", "out"),
		define(Tool{Name: "debug_snapshot", Title: "Debug snapshot", Write: true, Annotations: Annotations{},
			Description: "Show the state of a paused program: where it stopped, the top frame's locals, the call stack and the values of expressions. " +
				"Waits up to timeout_s (default 10) for the program to stop; E_NOT_PAUSED when it is still running then.",
		}, debugSnapshot),
		define(Tool{Name: "debug_evaluate", Title: "Evaluate expression", Write: true, Annotations: Annotations{},
			Description: "Evaluate an expression in the language of the program in a paused frame (default: the top frame of the stopped thread; frame_id from a snapshot picks another). " +
				"An expression can call functions of the program, which may change its state.",
		}, debugEvaluate),
		define(Tool{Name: "debug_sessions", Title: "Debug sessions", Write: true, Annotations: Annotations{Idempotent: true},
			Description: "List this workspace's debug sessions with their state (running, stopped, terminated).",
		}, debugSessions),
		define(Tool{Name: "debug_stop", Title: "Stop debugging", Write: true, Annotations: Annotations{Destructive: true, Idempotent: true},
			Description: "End a debug session: the program is terminated and the debugger exits. Stopping an ended session is not an error.",
		}, debugStop),
	}
}

// withEnum restricts a string input to values, in the schema every
// transport validates.
func withEnum(t *Tool, prop string, values ...string) *Tool {
	p := t.InputSchema.Properties[prop]
	if p == nil {
		panic(fmt.Sprintf("tools: %s has no input %s", t.Name, prop))
	}
	for _, v := range values {
		p.Enum = append(p.Enum, v)
	}
	var err error
	if t.input, err = t.InputSchema.Resolve(nil); err != nil {
		panic(fmt.Sprintf("tools: resolve %s input schema: %v", t.Name, err))
	}
	return t
}

// withRawConfigSchema describes LaunchConfig.Raw (a json.RawMessage, which
// the schema inference takes for a byte array) as the JSON object it is.
func withRawConfigSchema(t *Tool) *Tool {
	c := t.OutputSchema.Properties["configurations"]
	if c == nil || c.Items == nil || c.Items.Properties["raw"] == nil {
		panic("tools: debug_context output schema has no configurations[].raw")
	}
	c.Items.Properties["raw"] = &jsonschema.Schema{Type: "object", Description: "the configuration as written in launch.json"}
	return t
}

// debugger is the Service's grove.Debugger, or E_NOT_SUPPORTED.
func (c *call) debugger() (grove.Debugger, error) {
	d, ok := c.svc.(grove.Debugger)
	if !ok {
		return nil, &Error{Code: "E_NOT_SUPPORTED", Msg: "this Grove server does not support debugging",
			Hint: "debug with run_command instead: print statements, or a batch debugger such as `gdb -batch -ex run -ex bt ./prog`", Err: grove.ErrNotSupported}
	}
	return d, nil
}

// debugWait turns timeout_s into the request's timeout: 0 keeps the
// debugger's default, over the maximum is lowered to it.
func debugWait(s int) time.Duration {
	return time.Duration(min(s, debugMaxWaitS)) * time.Second
}

// sessionError adds what to do about an unknown session.
func sessionError(err error) error {
	if errors.Is(err, grove.ErrNotFound) {
		return withHint(err, "debug_sessions lists this workspace's sessions; start one with debug_start")
	}
	return err
}

type DebugContextInput struct{}

func debugContext(ctx context.Context, c *call, _ DebugContextInput) (grove.DebugContext, string, error) {
	d, err := c.debugger()
	if err != nil {
		return grove.DebugContext{}, "", err
	}
	dc, err := d.DebugContext(ctx, c.ws)
	if err != nil {
		return grove.DebugContext{}, "", err
	}
	return *dc, debugContextText(dc), nil
}

func debugContextText(dc *grove.DebugContext) string {
	var b strings.Builder
	if len(dc.Adapters) == 0 {
		b.WriteString("no debug adapter launches in this runtime (lldb-dap, dlv and debugpy were looked for)\n")
	} else {
		b.WriteString("debug adapters:\n")
		for _, a := range dc.Adapters {
			fmt.Fprintf(&b, "  %s", a.Name)
			if a.Version != "" {
				fmt.Fprintf(&b, " %s", a.Version)
			}
			fmt.Fprintf(&b, " — languages %s; launch.json types %s\n", strings.Join(a.Languages, ", "), strings.Join(a.Types, ", "))
		}
	}
	if len(dc.Configurations) == 0 {
		b.WriteString("no launch configurations (.vscode/launch.json): start with language and program\n")
	} else {
		b.WriteString("launch configurations (.vscode/launch.json), for config_name:\n")
		for _, lc := range dc.Configurations {
			fmt.Fprintf(&b, "  %q — type %s, %s\n", lc.Name, lc.Type, lc.Request)
		}
	}
	if len(dc.NativeDebuggers) > 0 {
		names := make([]string, 0, len(dc.NativeDebuggers))
		for n := range dc.NativeDebuggers {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "native debuggers: %s\n", strings.Join(names, ", "))
	}
	for _, p := range dc.Problems {
		fmt.Fprintf(&b, "problem: %s\n", p)
	}
	return b.String()
}

// DebugBreakpointSpec is the breakpoints of one file.
type DebugBreakpointSpec struct {
	File       string   `json:"file" jsonschema:"source file relative to the workspace root"`
	Lines      []int    `json:"lines" jsonschema:"1-based line numbers"`
	Conditions []string `json:"conditions,omitempty" jsonschema:"one condition per line, in the program's language (empty string for none)"`
}

func (s DebugBreakpointSpec) source() (grove.SourceBreakpoints, error) {
	if strings.TrimSpace(s.File) == "" {
		return grove.SourceBreakpoints{}, invalidf("breakpoints need a file")
	}
	for _, l := range s.Lines {
		if l < 1 {
			return grove.SourceBreakpoints{}, invalidf("breakpoint line %d in %s: lines are 1-based", l, s.File)
		}
	}
	if len(s.Conditions) > 0 && len(s.Conditions) != len(s.Lines) {
		return grove.SourceBreakpoints{}, invalidf("%s: %d conditions for %d lines; give one per line (\"\" for none) or none", s.File, len(s.Conditions), len(s.Lines))
	}
	return grove.SourceBreakpoints{File: s.File, Lines: s.Lines, Conditions: s.Conditions}, nil
}

type DebugStartInput struct {
	ConfigName  string                `json:"config_name,omitempty" jsonschema:"name of a launch configuration in .vscode/launch.json (debug_context lists them)"`
	Config      map[string]any        `json:"config,omitempty" jsonschema:"a whole launch configuration object, as written in launch.json"`
	Language    string                `json:"language,omitempty" jsonschema:"with program: the program's language, which picks the adapter (c, cpp, rust: lldb-dap; go: dlv; python: debugpy)"`
	Program     string                `json:"program,omitempty" jsonschema:"the program to debug, relative to the workspace root: a binary built with debug info, a Go package directory, or a Python script"`
	Args        []string              `json:"args,omitempty" jsonschema:"the program's arguments"`
	Cwd         string                `json:"cwd,omitempty" jsonschema:"working directory relative to the workspace root (default: the root)"`
	Env         map[string]string     `json:"env,omitempty" jsonschema:"extra environment variables"`
	StopOnEntry bool                  `json:"stop_on_entry,omitempty" jsonschema:"pause at the program's entry"`
	Breakpoints []DebugBreakpointSpec `json:"breakpoints,omitempty" jsonschema:"breakpoints set before the program runs"`
	TimeoutS    int                   `json:"timeout_s,omitempty" jsonschema:"seconds to wait for the debugger to launch the program (default 30, max 600)"`
}

func debugStart(ctx context.Context, c *call, in DebugStartInput) (grove.DebugSession, string, error) {
	d, err := c.debugger()
	if err != nil {
		return grove.DebugSession{}, "", err
	}
	if in.ConfigName == "" && in.Config == nil && in.Program == "" {
		return grove.DebugSession{}, "", invalidf("say what to debug: config_name, config, or language and program (debug_context lists the configurations and adapters)")
	}
	req := grove.DebugStartRequest{ConfigName: in.ConfigName, Language: in.Language, Program: in.Program, Args: in.Args, Cwd: in.Cwd,
		Env: in.Env, StopOnEntry: in.StopOnEntry, Timeout: debugWait(in.TimeoutS)}
	if in.Config != nil {
		if req.Config, err = json.Marshal(in.Config); err != nil {
			return grove.DebugSession{}, "", invalidf("config: %v", err)
		}
	}
	for _, s := range in.Breakpoints {
		sb, err := s.source()
		if err != nil {
			return grove.DebugSession{}, "", err
		}
		req.Breakpoints = append(req.Breakpoints, sb)
	}
	s, err := d.DebugStart(ctx, c.ws, req)
	if err != nil {
		return grove.DebugSession{}, "", err
	}
	return *s, sessionText(s), nil
}

func sessionText(s *grove.DebugSession) string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s (%s", s.ID, s.Adapter)
	if s.Program != "" {
		fmt.Fprintf(&b, ", %s", s.Program)
	}
	fmt.Fprintf(&b, "): %s\n", stateText(s.State, s.StopReason, s.ExitCode))
	for _, bp := range s.Breakpoints {
		b.WriteString("  " + breakpointText(bp) + "\n")
	}
	switch s.State {
	case grove.DebugStopped:
		b.WriteString("Next: debug_snapshot to see the state, debug_step or debug_continue to go on.\n")
	case grove.DebugRunning:
		b.WriteString("Next: debug_continue waits for the next breakpoint and shows the state there.\n")
	}
	return b.String()
}

func stateText(state, reason string, exit *int) string {
	switch {
	case state == grove.DebugStopped && reason != "":
		return fmt.Sprintf("stopped (%s)", reason)
	case state == grove.DebugTerminated && exit != nil:
		return fmt.Sprintf("terminated (exit code %d)", *exit)
	}
	return state
}

func breakpointText(bp grove.Breakpoint) string {
	s := fmt.Sprintf("breakpoint %s:%d ", bp.File, bp.Line)
	if bp.Verified {
		s += "verified"
	} else {
		s += "NOT verified"
	}
	if bp.Message != "" {
		s += ": " + clipText(bp.Message, 200)
	}
	return s
}

type DebugBreakpointsInput struct {
	SessionID  string   `json:"session_id" jsonschema:"id from debug_start"`
	File       string   `json:"file" jsonschema:"source file relative to the workspace root"`
	Lines      []int    `json:"lines" jsonschema:"1-based line numbers; [] clears the file's breakpoints"`
	Conditions []string `json:"conditions,omitempty" jsonschema:"one condition per line, in the program's language (empty string for none)"`
}

func debugBreakpoints(ctx context.Context, c *call, in DebugBreakpointsInput) (grove.DebugBreakpointsResult, string, error) {
	d, err := c.debugger()
	if err != nil {
		return grove.DebugBreakpointsResult{}, "", err
	}
	sb, err := DebugBreakpointSpec{File: in.File, Lines: in.Lines, Conditions: in.Conditions}.source()
	if err != nil {
		return grove.DebugBreakpointsResult{}, "", err
	}
	r, err := d.DebugBreakpoints(ctx, c.ws, grove.DebugBreakpointsRequest{Session: in.SessionID, SourceBreakpoints: sb})
	if err != nil {
		return grove.DebugBreakpointsResult{}, "", sessionError(err)
	}
	var b strings.Builder
	if len(r.Breakpoints) == 0 {
		fmt.Fprintf(&b, "no breakpoints in %s\n", in.File)
	}
	for _, bp := range r.Breakpoints {
		b.WriteString(breakpointText(bp) + "\n")
	}
	return *r, b.String(), nil
}

type DebugContinueInput struct {
	SessionID   string   `json:"session_id" jsonschema:"id from debug_start"`
	ThreadID    int      `json:"thread_id,omitempty" jsonschema:"thread to resume (default: all threads)"`
	NoWait      bool     `json:"no_wait,omitempty" jsonschema:"return at once with the program running"`
	TimeoutS    int      `json:"timeout_s,omitempty" jsonschema:"seconds to wait for the program to stop (default 30, max 600)"`
	Expressions []string `json:"expressions,omitempty" jsonschema:"expressions to evaluate where it stops"`
}

func debugContinue(ctx context.Context, c *call, in DebugContinueInput) (grove.DebugSnapshot, string, error) {
	d, err := c.debugger()
	if err != nil {
		return grove.DebugSnapshot{}, "", err
	}
	wait := debugWait(in.TimeoutS)
	s, err := d.DebugContinue(ctx, c.ws, grove.DebugContinueRequest{Session: in.SessionID, ThreadID: in.ThreadID, NoWait: in.NoWait, Timeout: wait, Expressions: in.Expressions})
	if err != nil {
		return grove.DebugSnapshot{}, "", sessionError(err)
	}
	if wait == 0 {
		wait = 30 * time.Second
	}
	text := snapshotText(s)
	if s.State == grove.DebugRunning && !in.NoWait {
		text += fmt.Sprintf("(still running after %s: call debug_continue or debug_snapshot again with a longer timeout_s, or set a breakpoint with debug_breakpoints)\n", wait)
	}
	return *s, text, nil
}

type DebugStepInput struct {
	SessionID   string   `json:"session_id" jsonschema:"id from debug_start"`
	Kind        string   `json:"kind" jsonschema:"over: run the current line; into: enter the call on it; out: run to the caller"`
	ThreadID    int      `json:"thread_id,omitempty" jsonschema:"thread to step (default: the one that stopped last)"`
	TimeoutS    int      `json:"timeout_s,omitempty" jsonschema:"seconds to wait for the step to end (default 30, max 600)"`
	Expressions []string `json:"expressions,omitempty" jsonschema:"expressions to evaluate at the new position"`
}

func debugStep(ctx context.Context, c *call, in DebugStepInput) (grove.DebugSnapshot, string, error) {
	d, err := c.debugger()
	if err != nil {
		return grove.DebugSnapshot{}, "", err
	}
	s, err := d.DebugStep(ctx, c.ws, grove.DebugStepRequest{Session: in.SessionID, Kind: in.Kind, ThreadID: in.ThreadID, Timeout: debugWait(in.TimeoutS), Expressions: in.Expressions})
	if err != nil {
		return grove.DebugSnapshot{}, "", sessionError(err)
	}
	return *s, snapshotText(s), nil
}

type DebugSnapshotInput struct {
	SessionID    string   `json:"session_id" jsonschema:"id from debug_start"`
	TimeoutS     int      `json:"timeout_s,omitempty" jsonschema:"seconds to wait for the program to stop (default 10, max 600)"`
	Expressions  []string `json:"expressions,omitempty" jsonschema:"expressions to evaluate in the top frame"`
	MaxFrames    int      `json:"max_frames,omitempty" jsonschema:"stack frames to return (default 20)"`
	MaxVariables int      `json:"max_variables,omitempty" jsonschema:"variables per scope (default 100)"`
}

func debugSnapshot(ctx context.Context, c *call, in DebugSnapshotInput) (grove.DebugSnapshot, string, error) {
	d, err := c.debugger()
	if err != nil {
		return grove.DebugSnapshot{}, "", err
	}
	s, err := d.DebugSnapshot(ctx, c.ws, grove.DebugSnapshotRequest{Session: in.SessionID, Timeout: debugWait(in.TimeoutS), Expressions: in.Expressions,
		MaxFrames: in.MaxFrames, MaxVariables: in.MaxVariables})
	if err != nil {
		return grove.DebugSnapshot{}, "", sessionError(err)
	}
	return *s, snapshotText(s), nil
}

// snapshotText renders a snapshot for the model: where it stopped, the top
// frame's variables, the call stack, the expressions and the new output.
func snapshotText(s *grove.DebugSnapshot) string {
	var b strings.Builder
	b.WriteString(stateText(s.State, s.StopReason, s.ExitCode))
	if len(s.Frames) > 0 {
		top := s.Frames[0]
		if top.File != "" {
			fmt.Fprintf(&b, " at %s:%d", top.File, top.Line)
		}
		fmt.Fprintf(&b, " in %s", top.Name)
	}
	if s.ThreadID != 0 && len(s.Threads) > 1 {
		fmt.Fprintf(&b, " (thread %d of %d)", s.ThreadID, len(s.Threads))
	}
	b.WriteString("\n")
	if len(s.Frames) > 0 {
		writeScopes(&b, s.Frames[0].Scopes)
	}
	if len(s.Frames) > 1 {
		b.WriteString("call stack:\n")
		for i, f := range s.Frames {
			fmt.Fprintf(&b, "  #%d %s", i, f.Name)
			if f.File != "" {
				fmt.Fprintf(&b, " at %s:%d", f.File, f.Line)
			}
			if i > 0 {
				if vs := inlineVars(f.Scopes); vs != "" {
					b.WriteString(" — " + vs)
				}
			}
			fmt.Fprintf(&b, " [frame_id %d]\n", f.ID)
		}
	}
	if len(s.Evaluations) > 0 {
		b.WriteString("expressions:\n")
		for _, e := range s.Evaluations {
			b.WriteString("  " + evaluationText(e) + "\n")
		}
	}
	if s.Output != "" {
		b.WriteString("--- program output ---\n" + s.Output)
		if !strings.HasSuffix(s.Output, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// writeScopes lists a frame's variables: under a heading per scope when
// there are several, registers only counted (they are in the structured
// result).
func writeScopes(b *strings.Builder, scopes []grove.DebugScope) {
	var shown []grove.DebugScope
	registers := -1
	for _, sc := range scopes {
		if strings.EqualFold(sc.Name, "registers") {
			registers = len(sc.Variables)
			continue
		}
		shown = append(shown, sc)
	}
	if registers >= 0 {
		defer fmt.Fprintf(b, "  (%d registers, in the structured result)\n", registers)
	}
	for _, sc := range shown {
		indent := "  "
		if len(shown) > 1 {
			fmt.Fprintf(b, "  %s:\n", sc.Name)
			indent = "    "
		}
		if len(sc.Variables) == 0 && len(shown) > 1 {
			b.WriteString(indent + "(none)\n")
		}
		for _, v := range sc.Variables {
			b.WriteString(indent + variableText(v) + "\n")
		}
	}
}

func variableText(v grove.DebugVariable) string {
	s := v.Name + " = " + clipText(v.Value, 200)
	if v.Type != "" {
		s += " (" + v.Type + ")"
	}
	return s
}

// inlineVars is a caller frame's variables on one line.
func inlineVars(scopes []grove.DebugScope) string {
	var parts []string
	for _, sc := range scopes {
		if strings.EqualFold(sc.Name, "registers") {
			continue
		}
		for _, v := range sc.Variables {
			parts = append(parts, v.Name+" = "+clipText(v.Value, 60))
		}
	}
	if len(parts) > 8 {
		parts = append(parts[:8], fmt.Sprintf("… %d more", len(parts)-8))
	}
	return strings.Join(parts, ", ")
}

func evaluationText(e grove.DebugEvaluation) string {
	if e.Error != "" {
		return e.Expression + ": error: " + clipText(e.Error, 200)
	}
	s := e.Expression + " = " + clipText(e.Result, 500)
	if e.Type != "" {
		s += " (" + e.Type + ")"
	}
	return s
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

type DebugEvaluateInput struct {
	SessionID  string `json:"session_id" jsonschema:"id from debug_start"`
	Expression string `json:"expression" jsonschema:"expression in the program's language"`
	FrameID    int    `json:"frame_id,omitempty" jsonschema:"frame to evaluate in, from a snapshot's call stack (default: the top frame)"`
}

func debugEvaluate(ctx context.Context, c *call, in DebugEvaluateInput) (grove.DebugEvaluation, string, error) {
	d, err := c.debugger()
	if err != nil {
		return grove.DebugEvaluation{}, "", err
	}
	if strings.TrimSpace(in.Expression) == "" {
		return grove.DebugEvaluation{}, "", invalidf("expression is empty")
	}
	e, err := d.DebugEvaluate(ctx, c.ws, grove.DebugEvaluateRequest{Session: in.SessionID, Expression: in.Expression, FrameID: in.FrameID})
	if err != nil {
		return grove.DebugEvaluation{}, "", sessionError(err)
	}
	return *e, evaluationText(*e) + "\n", nil
}

type DebugSessionsInput struct{}

type DebugSessionsOutput struct {
	Sessions []grove.DebugSession `json:"sessions"`
}

func debugSessions(ctx context.Context, c *call, _ DebugSessionsInput) (DebugSessionsOutput, string, error) {
	d, err := c.debugger()
	if err != nil {
		return DebugSessionsOutput{}, "", err
	}
	ss, err := d.DebugSessions(ctx, c.ws)
	if err != nil {
		return DebugSessionsOutput{}, "", err
	}
	if len(ss) == 0 {
		return DebugSessionsOutput{}, "no debug sessions; start one with debug_start\n", nil
	}
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "%s %s", s.ID, s.Adapter)
		if s.Program != "" {
			fmt.Fprintf(&b, " %s", s.Program)
		}
		fmt.Fprintf(&b, ": %s (started %s)\n", stateText(s.State, s.StopReason, s.ExitCode), s.StartedAt.UTC().Format(time.TimeOnly))
	}
	return DebugSessionsOutput{Sessions: ss}, b.String(), nil
}

type DebugStopInput struct {
	SessionID string `json:"session_id" jsonschema:"id from debug_start"`
}

type DebugStopOutput struct {
	SessionID string `json:"session_id"`
	Stopped   bool   `json:"stopped"`
}

func debugStop(ctx context.Context, c *call, in DebugStopInput) (DebugStopOutput, string, error) {
	d, err := c.debugger()
	if err != nil {
		return DebugStopOutput{}, "", err
	}
	if err := d.DebugStop(ctx, c.ws, in.SessionID); err != nil {
		return DebugStopOutput{}, "", sessionError(err)
	}
	return DebugStopOutput{SessionID: in.SessionID, Stopped: true}, fmt.Sprintf("session %s stopped\n", in.SessionID), nil
}
