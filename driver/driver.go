// Package driver defines the runtime port: the compute that runs commands
// against a workspace. Adapters live in child packages (subprocess, bwrap,
// docker, ...) and all pass the conformance suite in drivertest.
//
// # Terms
//
// A Runtime is attached to exactly one workspace and is identified by that
// workspace's id. Backends may share physical resources between runtimes
// (the docker driver runs one container per (user, project) and every
// workspace of that pair inside it), but the port speaks per workspace.
//
// # Lifecycle
//
//	Create -> (Start) -> Exec* -> Stop -> (Exec resumes) -> Destroy
//
// Create is idempotent: creating a runtime that exists returns it. Exec on a
// stopped runtime starts it first. Stop keeps all state needed to resume;
// Destroy removes the runtime and never the workspace's files.
//
// # Exec contract
//
//   - The environment is clean: PATH, HOME, LANG=C.UTF-8 and TERM=dumb plus
//     exactly what the request names. Nothing is inherited from the host.
//   - The working directory is the workspace root or a directory inside it;
//     a Dir that escapes the workspace is ErrPathOutside.
//   - Every command has a timeout. On timeout the whole process tree dies,
//     output captured so far is kept, ExitCode is 124 and TimedOut is true.
//   - Each stream is capped at MaxOutput bytes; bytes past the cap are
//     counted in StdoutOmitted/StderrOmitted and Truncated is set.
//   - A program that does not exist gives ExitCode 127, not an error.
//   - Cancelling ctx kills the command and returns ctx's error.
//   - A non-zero exit is a result, not an error.
//
// # Errors
//
// Methods return errors wrapping the kinds of package grove:
// grove.ErrNotFound for an unknown runtime, grove.ErrInvalid for a malformed
// request, grove.ErrRejected for a command the runtime refuses (a mutating
// command on a runtime that does not allow them), grove.ErrUnavailable when
// the backend cannot be reached.
//
// # Concurrency
//
// All methods are safe for concurrent use. Serialising mutating commands on
// one workspace is the engine's job, not the driver's.
package driver

import (
	"context"
	"time"

	"github.com/grove-dev/grove"
)

// Driver is a runtime backend.
type Driver interface {
	// Kind names the backend: "subprocess", "bwrap", "docker", ...
	Kind() string
	// Capabilities reports what this backend really provides.
	Capabilities() Capabilities
	// Create makes (or returns the existing) runtime for spec.WorkspaceID.
	Create(ctx context.Context, spec Spec) (*Runtime, error)
	// Get returns the runtime of a workspace, or grove.ErrNotFound.
	Get(ctx context.Context, workspaceID string) (*Runtime, error)
	// Start makes the runtime ready to exec; starting a running runtime is a no-op.
	Start(ctx context.Context, workspaceID string) error
	// Stop hibernates the runtime, keeping what is needed to resume.
	Stop(ctx context.Context, workspaceID string) error
	// Destroy removes the runtime; the workspace's files stay. Destroying a
	// runtime that does not exist is not an error.
	Destroy(ctx context.Context, workspaceID string) error
	// Exec runs one command to completion and returns its capped output.
	Exec(ctx context.Context, workspaceID string, req grove.ExecRequest) (*grove.ExecResult, error)
	// ExecStream runs one command and calls emit, from one goroutine, for
	// each chunk of output as it arrives. emit blocking applies
	// back-pressure to the command; an error from emit kills the command
	// and is returned. The result carries the same capped output as Exec.
	ExecStream(ctx context.Context, workspaceID string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error)
}

// Capabilities describes a backend truthfully; the engine uses it to refuse
// unsafe combinations (a writable workspace on an unisolated runtime).
type Capabilities struct {
	Isolated      bool          // commands cannot touch the host beyond the workspace
	AllowMutating bool          // mutating command classes are accepted
	Network       []NetworkMode // network modes supported
	Persistent    bool          // Stop/resume keeps processes' filesystem state outside the workspace
	Limits        bool          // enforces Limits
	Streaming     bool          // ExecStream delivers output as it happens
}

// NetworkMode is a runtime's network access.
type NetworkMode string

const (
	NetworkNone    NetworkMode = "none"    // no interfaces but loopback
	NetworkLimited NetworkMode = "limited" // allow-listed egress only
	NetworkDefault NetworkMode = "default" // ordinary networking
)

// Limits bound what commands may consume. Zero values mean the driver's
// default.
type Limits struct {
	Processes     int           // max processes (RLIMIT_NPROC / pids; per workspace where the backend has cgroups)
	UserProcesses int           // max processes of all of one user's workspaces together, where supported
	FileSize      int64         // max bytes of one written file (RLIMIT_FSIZE)
	CPUTime       time.Duration // CPU seconds per command (RLIMIT_CPU)
	MemoryBytes   int64         // memory limit (memory and swap) per workspace or container, where supported
	CPUs          float64       // CPU share, where supported
	TmpBytes      int64         // size of a sandbox's private /tmp, where supported
}

// Spec is what a driver needs to create a runtime for one workspace.
type Spec struct {
	WorkspaceID string
	User        string
	Project     string
	// WorkDir is the workspace's host path, the only writable tree besides a
	// private /tmp. Empty for remote workspaces.
	WorkDir string
	// ReadOnlyPaths are host paths the sandbox must see read-only at the
	// same path (the repo cache's object store, which the workspace's git
	// alternates point to).
	ReadOnlyPaths []string
	// ProtectedPaths lie inside WorkDir and must stay read-only inside the
	// sandbox (the workspace repo's .git/config and .git/hooks, so a
	// command cannot plant configuration that host-side git would run).
	ProtectedPaths []string
	Writable       bool
	Network        NetworkMode
	Limits         Limits
	Image          string // container backends
}

// State of a runtime.
type State string

const (
	StateRunning State = "running"
	StateStopped State = "stopped"
)

// Runtime is a driver's view of one workspace's runtime.
type Runtime struct {
	WorkspaceID string
	Kind        string
	BackendID   string // e.g. a container id; empty for process backends
	State       State
	Spec        Spec
}

// Defaults applied when a request leaves them zero.
const (
	DefaultTimeout   = 120 * time.Second
	DefaultMaxOutput = 1 << 20
)
