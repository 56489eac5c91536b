package driver

import (
	"context"
	"io"

	"github.com/grove-dev/grove"
)

// Spawner is the optional half of the runtime port for long-lived,
// interactive processes: a debug adapter speaking the Debug Adapter
// Protocol over its stdin and stdout, say. A runtime that implements it
// runs the process under exactly the sandbox, identity, environment and
// limits an Exec of the same request would get; only the I/O differs.
//
// # Spawn contract
//
//   - The request is validated as for Exec (argv or shell, Dir confined to
//     the workspace, environment names, the runtime's refusal of mutating
//     classes). Stdin must be empty: the process's stdin is the Process.
//   - Timeout, when set, bounds the process's life; zero means no bound
//     besides ctx and Close (unlike Exec, whose zero means the default).
//   - MaxOutput bounds the stderr kept (Process.Stderr); 0: the driver
//     default. Bytes past it are dropped, and stderr never blocks the
//     process.
//   - A program that does not exist is a process that exits at once with
//     127 (its reason on stderr), as with Exec.
//   - When ctx ends, on Close, and when the process exits, its whole
//     process tree dies: nothing it started outlives it.
//   - Closing the Process's stdin gives the process end of file.
type Spawner interface {
	Spawn(ctx context.Context, workspaceID string, req grove.ExecRequest) (Process, error)
}

// Process is a spawned process. Its methods are safe for concurrent use;
// Stdout is meant for one reader and Stdin for one writer at a time.
type Process interface {
	// Stdin is the process's standard input; Close gives it end of file.
	Stdin() io.WriteCloser
	// Stdout is the process's standard output, unbuffered: an unread
	// stdout eventually blocks the process. It ends (io.EOF) when the
	// process and everything it started have exited.
	Stdout() io.Reader
	// Stderr returns the stderr captured so far (bounded by MaxOutput).
	Stderr() []byte
	// Wait blocks until the process has exited and returns its exit code
	// (128+signal when it was killed, 124 when its Timeout ended it).
	Wait() (int, error)
	// Close kills the process's whole tree, waits for it and releases the
	// pipes. Closing twice is not an error.
	Close() error
}
