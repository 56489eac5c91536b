// Package wire holds the JSON types of Grove's HTTP API, shared by the
// server (httpapi) and the Go client (client). It imports only the
// standard library and the root grove package, so a program that only
// wants the client does not compile in the server, the MCP SDK, the tool
// catalog or the store.
package wire

import (
	"time"

	"github.com/grove-dev/grove"
)

// Requests decode strictly on the server: unknown fields are errors.

// AcquireBody is POST /v1/workspaces. The user comes from the API key.
type AcquireBody struct {
	Repo         string     `json:"repo"`
	Project      string     `json:"project"`
	Mode         grove.Mode `json:"mode,omitempty"` // empty: inferred, see grove.InferMode
	Conversation string     `json:"conversation,omitempty"`
	Task         string     `json:"task,omitempty"`
	Ref          string     `json:"ref,omitempty"`
	Branch       string     `json:"branch,omitempty"`
	Token        string     `json:"token,omitempty"` // per call, never stored or logged
	Refresh      bool       `json:"refresh,omitempty"`
}

// EnsureRepoBody is POST /v1/repos.
type EnsureRepoBody struct {
	Repo    string `json:"repo"`
	Ref     string `json:"ref,omitempty"`
	Token   string `json:"token,omitempty"`
	Refresh bool   `json:"refresh,omitempty"`
}

// PinBody is POST /v1/workspaces/{id}/pin; an empty body pins.
type PinBody struct {
	Pinned *bool `json:"pinned,omitempty"`
}

// ExecBody is POST /v1/workspaces/{id}/exec. Stdin and output are text;
// invalid UTF-8 in output is replaced with U+FFFD.
type ExecBody struct {
	Argv      []string           `json:"argv,omitempty"`
	Shell     string             `json:"shell,omitempty"`
	Dir       string             `json:"dir,omitempty"`
	Env       map[string]string  `json:"env,omitempty"`
	Stdin     string             `json:"stdin,omitempty"`
	TimeoutMS int64              `json:"timeout_ms,omitempty"`
	MaxOutput int                `json:"max_output,omitempty"`
	Class     grove.CommandClass `json:"class,omitempty"`
}

// Request converts the body to the service's request.
func (b ExecBody) Request() grove.ExecRequest {
	r := grove.ExecRequest{Argv: b.Argv, Shell: b.Shell, Dir: b.Dir, Env: b.Env, Timeout: time.Duration(b.TimeoutMS) * time.Millisecond, MaxOutput: b.MaxOutput, Class: b.Class}
	if b.Stdin != "" {
		r.Stdin = []byte(b.Stdin)
	}
	return r
}

// ExecBodyOf is the inverse of Request, for the client.
func ExecBodyOf(r grove.ExecRequest) ExecBody {
	return ExecBody{Argv: r.Argv, Shell: r.Shell, Dir: r.Dir, Env: r.Env, Stdin: string(r.Stdin), TimeoutMS: r.Timeout.Milliseconds(), MaxOutput: r.MaxOutput, Class: r.Class}
}

// ExecResponse is an exec result, and the data of the SSE "exit" event.
type ExecResponse struct {
	ExitCode      int    `json:"exit_code"`
	Stdout        string `json:"stdout"`
	Stderr        string `json:"stderr"`
	TimedOut      bool   `json:"timed_out"`
	Truncated     bool   `json:"truncated"`
	StdoutOmitted int64  `json:"stdout_omitted,omitempty"`
	StderrOmitted int64  `json:"stderr_omitted,omitempty"`
	DurationMS    int64  `json:"duration_ms"`
	// TimeoutCappedMS is set when timeout_ms was over the server's cap:
	// the command ran under this timeout instead of being refused.
	TimeoutCappedMS int64 `json:"timeout_capped_ms,omitempty"`
}

// ExecResponseOf converts a result for the wire.
func ExecResponseOf(r *grove.ExecResult) ExecResponse {
	return ExecResponse{ExitCode: r.ExitCode, Stdout: string(r.Stdout), Stderr: string(r.Stderr), TimedOut: r.TimedOut, Truncated: r.Truncated,
		StdoutOmitted: r.StdoutOmitted, StderrOmitted: r.StderrOmitted, DurationMS: r.Duration.Milliseconds(), TimeoutCappedMS: r.CappedTimeout.Milliseconds()}
}

// Result converts back, for the client.
func (e ExecResponse) Result() *grove.ExecResult {
	return &grove.ExecResult{ExitCode: e.ExitCode, Stdout: []byte(e.Stdout), Stderr: []byte(e.Stderr), TimedOut: e.TimedOut, Truncated: e.Truncated,
		StdoutOmitted: e.StdoutOmitted, StderrOmitted: e.StderrOmitted, Duration: time.Duration(e.DurationMS) * time.Millisecond,
		CappedTimeout: time.Duration(e.TimeoutCappedMS) * time.Millisecond}
}

// ChunkEvent is the data of the SSE "stdout" and "stderr" events.
type ChunkEvent struct {
	Data string `json:"data"`
}

// PushBody is POST /v1/workspaces/{id}/git/push.
type PushBody struct {
	Token          string `json:"token,omitempty"`
	ForceWithLease bool   `json:"force_with_lease,omitempty"`
	SetUpstream    bool   `json:"set_upstream,omitempty"`
}

// ToolResponse is POST /v1/workspaces/{id}/tools/{name}.
type ToolResponse struct {
	Text       string `json:"text"`
	Structured any    `json:"structured,omitempty"`
}

// Lists are wrapped in objects so they can grow fields (pagination).
type (
	WorkspaceList struct {
		Workspaces []*grove.Workspace `json:"workspaces"`
	}
	RepoList struct {
		Repos []*grove.RepoCache `json:"repos"`
	}
	Tree struct {
		Entries []grove.DirEntry `json:"entries"`
	}
	CommitLog struct {
		Commits []grove.Commit `json:"commits"`
	}
)

// ErrorBody is the one error shape of the API.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is a caller-safe error: Code is grove.Code of the kind.
type ErrorDetail struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// PullRequestBody is POST /v1/workspaces/{id}/pulls. The git token may
// also come in the X-Git-Token header.
type PullRequestBody struct {
	Title     string   `json:"title"`
	Body      string   `json:"body,omitempty"`
	Base      string   `json:"base,omitempty"`
	Draft     bool     `json:"draft,omitempty"`
	Reviewers []string `json:"reviewers,omitempty"`
	Labels    []string `json:"labels,omitempty"`
	Token     string   `json:"token,omitempty"`
}

// PullCommentBody is POST /v1/workspaces/{id}/pulls/{number}/comments.
type PullCommentBody struct {
	Body     string `json:"body"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
	CommitID string `json:"commit_id,omitempty"`
	Token    string `json:"token,omitempty"`
}
