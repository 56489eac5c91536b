package grove

import (
	"context"
	"encoding/json"
	"time"
)

// This file holds the debugging port: Debug Adapter Protocol sessions on a
// workspace. The engine runs the adapter inside the workspace's runtime
// (the adapter and the program are agent code, under the same sandbox as
// any command); a tunnel workspace runs it on the developer's machine. The
// HTTP API, its Go client and the MCP tools (debug_*) speak these types.

// Debugger is the debugging half of the catalog. Every method names a
// workspace (ErrNotFound for unknown ids, as in Service); session ids are
// the ones DebugStart returned and are scoped to that workspace. A
// workspace's sessions end when it is released, destroyed or evicted.
type Debugger interface {
	// DebugContext reports what can be debugged here: the launch
	// configurations of .vscode/launch.json and the adapters that really
	// launch in this workspace's runtime.
	DebugContext(ctx context.Context, id string) (*DebugContext, error)
	// DebugStart launches (or attaches) a program under an adapter and
	// returns once the adapter is configured: breakpoints given in the
	// request are set before the program runs. ErrDebugAdapterUnavailable
	// when the adapter cannot be launched, at once.
	DebugStart(ctx context.Context, id string, req DebugStartRequest) (*DebugSession, error)
	// DebugBreakpoints replaces the breakpoints of one source file.
	DebugBreakpoints(ctx context.Context, id string, req DebugBreakpointsRequest) (*DebugBreakpointsResult, error)
	// DebugContinue resumes the program and, unless NoWait, waits
	// (bounded) for it to stop or end, returning the snapshot then.
	DebugContinue(ctx context.Context, id string, req DebugContinueRequest) (*DebugSnapshot, error)
	// DebugStep steps one thread (over, into or out) and returns the
	// snapshot at the new position. ErrNotPaused on a running program.
	DebugStep(ctx context.Context, id string, req DebugStepRequest) (*DebugSnapshot, error)
	// DebugSnapshot waits (bounded by Timeout) for the program to be
	// stopped and returns threads, frames, scopes, locals and the
	// requested expressions; ErrNotPaused when it is still running then.
	DebugSnapshot(ctx context.Context, id string, req DebugSnapshotRequest) (*DebugSnapshot, error)
	// DebugEvaluate evaluates an expression in a stopped frame.
	DebugEvaluate(ctx context.Context, id string, req DebugEvaluateRequest) (*DebugEvaluation, error)
	// DebugSessions lists the workspace's sessions.
	DebugSessions(ctx context.Context, id string) ([]DebugSession, error)
	// DebugStop ends a session: the program is terminated and the adapter
	// exits. Stopping a session that already ended is not an error.
	DebugStop(ctx context.Context, id, session string) error
}

// Debug session states.
const (
	DebugRunning    = "running"
	DebugStopped    = "stopped" // paused at a breakpoint, step, entry or exception
	DebugTerminated = "terminated"
)

// DebugContext is what DebugContext reports.
type DebugContext struct {
	// Configurations are .vscode/launch.json's entries (JSONC: comments
	// and trailing commas allowed), each kept whole in Raw.
	Configurations []LaunchConfig `json:"configurations"`
	// Adapters are the debug adapters that launched when probed here.
	Adapters []DebugAdapter `json:"debug_adapters"`
	// NativeDebuggers are debugger programs found (gdb, lldb, dlv), by
	// name, with their paths; being listed does not mean an adapter.
	NativeDebuggers map[string]string `json:"native_debuggers,omitempty"`
	// Problems are reasons a launch.json or an adapter probe failed.
	Problems []string `json:"problems,omitempty"`
}

// LaunchConfig is one launch configuration.
type LaunchConfig struct {
	Name    string          `json:"name"`
	Type    string          `json:"type"`
	Request string          `json:"request"`
	Raw     json.RawMessage `json:"raw"`
}

// DebugAdapter is an adapter that launched when probed.
type DebugAdapter struct {
	Name      string   `json:"name"`      // "lldb-dap", "dlv", "debugpy"
	Types     []string `json:"types"`     // launch.json types it serves: "lldb-dap", "lldb", "cppdbg", "go", "debugpy", "python"
	Languages []string `json:"languages"` // "c", "cpp", "rust", "go", "python"
	Path      string   `json:"path"`
	Version   string   `json:"version,omitempty"`
}

// DebugStartRequest starts a session from a launch configuration (Config,
// or ConfigName naming one in launch.json) or from Language and Program.
type DebugStartRequest struct {
	Config      json.RawMessage   `json:"config,omitempty"`
	ConfigName  string            `json:"config_name,omitempty"`
	Language    string            `json:"language,omitempty"` // c, cpp, go, python
	Program     string            `json:"program,omitempty"`  // workspace-relative
	Args        []string          `json:"args,omitempty"`
	Cwd         string            `json:"cwd,omitempty"` // workspace-relative
	Env         map[string]string `json:"env,omitempty"`
	StopOnEntry bool              `json:"stop_on_entry,omitempty"`
	// Breakpoints are set before the program runs.
	Breakpoints []SourceBreakpoints `json:"breakpoints,omitempty"`
	// Timeout bounds the launch (adapter start, initialize, launch,
	// configurationDone); 0: a default of 30 s.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// SourceBreakpoints are the breakpoints of one file.
type SourceBreakpoints struct {
	File  string `json:"file"` // workspace-relative
	Lines []int  `json:"lines"`
	// Conditions, when set, has one entry per line ("" for none).
	Conditions []string `json:"conditions,omitempty"`
}

// DebugSession describes a session.
type DebugSession struct {
	ID         string    `json:"id"`
	Workspace  string    `json:"workspace_id"`
	Adapter    string    `json:"adapter"`
	Program    string    `json:"program,omitempty"`
	State      string    `json:"state"` // DebugRunning, DebugStopped, DebugTerminated
	StopReason string    `json:"stop_reason,omitempty"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	// Breakpoints set at start, as the adapter verified them.
	Breakpoints []Breakpoint `json:"breakpoints,omitempty"`
}

// DebugBreakpointsRequest replaces the breakpoints of one file.
type DebugBreakpointsRequest struct {
	Session string `json:"session_id"`
	SourceBreakpoints
}

// DebugBreakpointsResult is the adapter's answer.
type DebugBreakpointsResult struct {
	Breakpoints []Breakpoint `json:"breakpoints"`
}

// Breakpoint is a breakpoint as the adapter verified it.
type Breakpoint struct {
	ID       int    `json:"id,omitempty"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Verified bool   `json:"verified"`
	Message  string `json:"message,omitempty"`
}

// DebugContinueRequest resumes a session.
type DebugContinueRequest struct {
	Session  string `json:"session_id"`
	ThreadID int    `json:"thread_id,omitempty"` // 0: all threads
	// NoWait returns at once with the session running.
	NoWait bool `json:"no_wait,omitempty"`
	// Timeout bounds the wait for the next stop; 0: 30 s. A program still
	// running then is a snapshot with State running, not an error.
	Timeout     time.Duration `json:"timeout,omitempty"`
	Expressions []string      `json:"expressions,omitempty"`
}

// DebugStepRequest steps one thread.
type DebugStepRequest struct {
	Session     string        `json:"session_id"`
	Kind        string        `json:"kind"`                // "over", "into", "out"
	ThreadID    int           `json:"thread_id,omitempty"` // 0: the thread that stopped last
	Timeout     time.Duration `json:"timeout,omitempty"`
	Expressions []string      `json:"expressions,omitempty"`
}

// DebugSnapshotRequest asks for the state of a stopped program.
type DebugSnapshotRequest struct {
	Session string `json:"session_id"`
	// Timeout bounds the wait for a stop; 0: 10 s.
	Timeout     time.Duration `json:"timeout,omitempty"`
	Expressions []string      `json:"expressions,omitempty"`
	MaxFrames   int           `json:"max_frames,omitempty"` // 0: 20
	// MaxVariables bounds each scope's variables; 0: 100.
	MaxVariables int `json:"max_variables,omitempty"`
}

// DebugSnapshot is a session's state; when stopped, the stopped thread's
// frames with their scopes and variables.
type DebugSnapshot struct {
	Session     string            `json:"session_id"`
	State       string            `json:"state"`
	StopReason  string            `json:"stop_reason,omitempty"`
	ThreadID    int               `json:"thread_id,omitempty"`
	ExitCode    *int              `json:"exit_code,omitempty"`
	Threads     []DebugThread     `json:"threads,omitempty"`
	Frames      []StackFrame      `json:"frames,omitempty"`
	Evaluations []DebugEvaluation `json:"evaluations,omitempty"`
	// Output is the program's output the adapter reported since the last
	// snapshot (bounded).
	Output string `json:"output,omitempty"`
}

// DebugThread is one thread of the debuggee.
type DebugThread struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// StackFrame is one frame; the top frames carry their scopes.
type StackFrame struct {
	ID     int          `json:"id"`
	Name   string       `json:"name"`
	File   string       `json:"file,omitempty"` // workspace-relative when inside it
	Line   int          `json:"line,omitempty"`
	Column int          `json:"column,omitempty"`
	Scopes []DebugScope `json:"scopes,omitempty"`
}

// DebugScope is one scope of a frame (Locals, Arguments, Registers…).
type DebugScope struct {
	Name      string          `json:"name"`
	Variables []DebugVariable `json:"variables"`
}

// DebugVariable is one variable.
type DebugVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Type  string `json:"type,omitempty"`
}

// DebugEvaluateRequest evaluates an expression.
type DebugEvaluateRequest struct {
	Session    string `json:"session_id"`
	Expression string `json:"expression"`
	FrameID    int    `json:"frame_id,omitempty"` // 0: the top frame of the stopped thread
}

// DebugEvaluation is an expression's value or the adapter's error.
type DebugEvaluation struct {
	Expression string `json:"expression"`
	Result     string `json:"result,omitempty"`
	Type       string `json:"type,omitempty"`
	Error      string `json:"error,omitempty"`
}
