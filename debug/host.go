// Package debug runs Debug Adapter Protocol sessions on a workspace. It is
// transport-neutral: a Host says where adapters run (the developer's
// machine behind a tunnel, or a workspace's sandboxed runtime) and the
// Manager speaks DAP to them, implementing grove.Debugger's semantics for
// one workspace.
package debug

import (
	"context"
	"io"
	"net"
	"time"
)

// Process is a running adapter: its stdin and stdout, and Close, which kills
// it and waits.
type Process interface {
	io.Reader // adapter's stdout
	io.Writer // adapter's stdin
	Close() error
}

// Host is where adapters run: the developer's machine (tunnel) or a
// workspace's runtime (bwrap/Docker sandbox).
type Host interface {
	// Root is the workspace directory as the adapter sees it (absolute).
	Root() string
	// Run runs a short command to completion (probes, compiler checks) in
	// Root with a timeout.
	Run(ctx context.Context, argv []string, timeout time.Duration) (stdout, stderr string, exitCode int, err error)
	// Spawn starts a long-lived process (the adapter) in dir
	// (workspace-relative, "" = root) with env added, stdin/stdout piped.
	Spawn(ctx context.Context, argv []string, env map[string]string, dir string) (Process, error)
	// ReadFile reads a workspace-relative file confined to the workspace
	// (launch.json); grove.ErrNotFound when absent.
	ReadFile(ctx context.Context, rel string) ([]byte, error)
}

// Dialer is an optional Host capability: dialing a TCP address as seen from
// where the adapter runs. Delve's DAP server only listens on TCP, so Go
// debugging needs it; a Host without it cannot run dlv.
type Dialer interface {
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// stderrTailer is an optional Process capability: the end of the adapter's
// stderr, which says why an adapter died better than "EOF" does.
type stderrTailer interface {
	StderrTail() string
}

// processKiller is implemented by hosts whose process ids the adapter's
// "process" event names (LocalHost: same pid namespace). A sandboxed
// host needs none: the program dies with the adapter's sandbox.
type processKiller interface {
	KillProcess(pid int)
}
