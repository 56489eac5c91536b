package driver

import "context"

// SandboxLister is an optional Driver capability of runtimes whose
// sandboxes outlive the server that made them (a remote backend): the
// owners whose sandbox is running now, found without starting any.
// Reconciliation uses it to look inside running sandboxes only — waking
// every stopped one at start-up would cost money and time, and one
// unreachable backend must not stop Grove from starting.
type SandboxLister interface {
	RunningSandboxes(ctx context.Context) ([]Owner, error)
}

// Owner is whom a sandbox belongs to: one (user, project) pair.
type Owner struct{ User, Project string }
