package tunnel

import (
	"github.com/grove-dev/grove"
)

// The routes a local agent serves, and their payloads and results. Nothing
// else is callable. Names follow the hand-off of the system Grove
// re-implements; results reuse Grove's own types where one exists, so a
// tunnel workspace answers the catalog in the same shape as a server one.
const (
	// Terminal.
	RouteExecute = "/api/terminal/execute" // ExecRequest → ExecResult (sync) or AsyncStarted (async)
	// RouteSessionPrefix + "<id>/output" → SessionOutput;
	// RouteSessionPrefix + "<id>/signal" (SignalRequest) → SessionOutput.
	RouteSessionPrefix = "/api/terminal/sessions/"

	// Files.
	RouteRead   = "/api/fs/read"   // ReadRequest → ReadResult
	RouteWrite  = "/api/fs/write"  // WriteRequest → WriteResult
	RouteList   = "/api/fs/list"   // ListRequest → ListResult
	RouteDelete = "/api/fs/delete" // DeleteRequest → {}

	// Search: grove.SearchRequest → grove.SearchResult (rg, as in a runtime).
	RouteSearch = "/api/search"

	// Git, run by the developer's own git in the directory, parsed as in
	// a runtime (provider/execpath).
	RouteGitStatus = "/api/git/status" // {} → grove.Status
	RouteGitDiff   = "/api/git/diff"   // grove.DiffRequest → grove.Diff
	RouteGitLog    = "/api/git/log"    // LogRequest → LogResult
	RouteGitCommit = "/api/git/commit" // grove.CommitRequest → grove.CommitResult

	// Debugging (DAP), payloads and results as grove.Debugger's.
	RouteDebugContext  = "/api/workspace/debug-context" // {} → grove.DebugContext
	RouteDebugStart    = "/api/debug/start-session"     // grove.DebugStartRequest → grove.DebugSession
	RouteDebugBreak    = "/api/debug/set-breakpoints"   // grove.DebugBreakpointsRequest → grove.DebugBreakpointsResult
	RouteDebugSnapshot = "/api/debug/snapshot"          // grove.DebugSnapshotRequest → grove.DebugSnapshot
	RouteDebugStepOver = "/api/debug/step-over"         // grove.DebugStepRequest (kind ignored) → grove.DebugSnapshot
	RouteDebugStepInto = "/api/debug/step-into"         // likewise
	RouteDebugStepOut  = "/api/debug/step-out"          // likewise
	RouteDebugEvaluate = "/api/debug/evaluate"          // grove.DebugEvaluateRequest → grove.DebugEvaluation
	RouteDebugContinue = "/api/debug/continue"          // grove.DebugContinueRequest → grove.DebugSnapshot
	RouteDebugSessions = "/api/debug/list-sessions"     // {} → DebugSessionsResult
	RouteDebugStop     = "/api/debug/stop-session"      // DebugStopRequest → {}
)

// ExecRequest is /api/terminal/execute's payload: argv, or shell (run by
// /bin/sh -c), never both.
type ExecRequest struct {
	Argv      []string          `json:"argv,omitempty"`
	Shell     string            `json:"shell,omitempty"`
	Cwd       string            `json:"cwd,omitempty"` // relative to the directory
	Env       map[string]string `json:"env,omitempty"` // added to the agent's environment
	Stdin     string            `json:"stdin,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
	// MaxOutput caps each stream (bytes); 0 or more than MaxOutputBytes:
	// MaxOutputBytes.
	MaxOutput int `json:"max_output,omitempty"`
	// Async starts the command and answers at once with its session id;
	// its output is read with RouteSessionPrefix+"<id>/output".
	Async bool `json:"async,omitempty"`
	// Hidden runs the command without mirroring it into the developer's
	// terminal (tmux session grove-<workspace>, or the agent's log).
	Hidden bool `json:"hidden,omitempty"`
}

// ExecResult is its result. The command completed when its process
// exited; output, or its absence, plays no part.
type ExecResult struct {
	ExitCode      int    `json:"exit_code"`
	Stdout        string `json:"stdout"`
	Stderr        string `json:"stderr"`
	DurationMS    int64  `json:"duration_ms"`
	TimedOut      bool   `json:"timed_out"`
	Truncated     bool   `json:"truncated,omitempty"`
	StdoutOmitted int64  `json:"stdout_omitted,omitempty"`
	StderrOmitted int64  `json:"stderr_omitted,omitempty"`
}

// AsyncStarted answers an async execute.
type AsyncStarted struct {
	SessionID string `json:"session_id"`
}

// SessionOutput is an async command's state: its output so far (from
// Offset of each stream: the bytes already returned are not repeated when
// the caller passes the offsets back) and, once it exited, its result.
type SessionOutput struct {
	SessionID string `json:"session_id"`
	Running   bool   `json:"running"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	// StdoutNext and StderrNext are the offsets to pass back for the
	// output that follows.
	StdoutNext int64 `json:"stdout_next_offset"`
	StderrNext int64 `json:"stderr_next_offset"`
	// Result is set once it exited: exit code, duration, timed_out and the
	// omitted counts; its stdout and stderr are empty (the output is
	// above, from the offsets).
	Result *ExecResult `json:"result,omitempty"`
}

// SessionOutputRequest is the optional payload of .../output.
type SessionOutputRequest struct {
	StdoutOffset int64 `json:"stdout_offset,omitempty"`
	StderrOffset int64 `json:"stderr_offset,omitempty"`
	// WaitMS waits up to this long for the command to exit before
	// answering (bounded by the call's timeout).
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// SignalRequest is .../signal's payload: "INT", "TERM", "KILL", "HUP",
// "QUIT", "USR1" or "USR2", sent to the command's process group.
type SignalRequest struct {
	Signal string `json:"signal"`
}

// ReadRequest is /api/fs/read's payload.
type ReadRequest struct {
	Path string `json:"path"`
}

// ReadResult: content is UTF-8 text, or base64 when encoding says so.
type ReadResult struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"` // "utf-8" or "base64"
	Size     int64  `json:"size"`
}

// WriteRequest is /api/fs/write's payload.
type WriteRequest struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty"` // "" / "utf-8" or "base64"
}

// WriteResult is its result.
type WriteResult struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

// ListRequest is /api/fs/list's payload.
type ListRequest struct {
	Path  string `json:"path,omitempty"`
	Depth int    `json:"depth,omitempty"` // as grove.Service.ListDir
}

// ListResult is its result.
type ListResult struct {
	Entries []grove.DirEntry `json:"entries"`
}

// DeleteRequest is /api/fs/delete's payload.
type DeleteRequest struct {
	Path string `json:"path"`
}

// LogRequest is /api/git/log's payload.
type LogRequest struct {
	Limit int    `json:"limit,omitempty"`
	Path  string `json:"path,omitempty"`
}

// LogResult is its result.
type LogResult struct {
	Commits []grove.Commit `json:"commits"`
}

// DebugSessionsResult is /api/debug/list-sessions' result.
type DebugSessionsResult struct {
	Sessions []grove.DebugSession `json:"sessions"`
}

// DebugStopRequest is /api/debug/stop-session's payload.
type DebugStopRequest struct {
	Session string `json:"session_id"`
}
