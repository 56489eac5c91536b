// Package drivertest is the conformance suite every runtime driver runs.
//
// An adapter's test is a few lines:
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, drivertest.Harness{
//			New:  func(t *testing.T) driver.Driver { return mydriver.New(...) },
//			Spec: func(t *testing.T, dir string) driver.Spec { return driver.Spec{User: "u", Project: "p"} },
//		})
//	}
//
// The suite checks the contract written on driver.Driver: lifecycle,
// the clean environment, working-directory confinement, stdin, timeouts
// that kill the whole process tree, output caps, exit 127, cancellation,
// streaming and concurrency, interactive processes (driver.Spawner, when
// implemented), hibernation and destruction keeping a git
// repository's files and branch. Cases for optional capabilities (isolation
// — including two users' separation and the workspace-isolation attack on
// the repo cache and a sibling workspace —, network none, limits) run only
// when the driver's Capabilities claim them, and skip saying so otherwise,
// so a driver that claims a capability is held to it.
//
// The suite assumes a local workspace: a host directory that the runtime
// sees at the same path. It writes and inspects files there from the test
// process to verify what commands did.
package drivertest

import (
	"testing"

	"github.com/grove-dev/grove/driver"
)

// Harness is how an adapter plugs into the suite. Keep additions to it
// optional so existing adapters keep compiling.
type Harness struct {
	// New returns the driver under test, configured to accept mutating
	// commands. It is called once per case; cleanup belongs to t.Cleanup.
	New func(t *testing.T) driver.Driver
	// Spec returns a runtime spec for a workspace whose files are in dir, a
	// host directory the suite has already filled (empty, or a git clone
	// made by host git for the isolation attack). The suite then sets
	// WorkspaceID (unique per case), WorkDir (dir) and Writable (true), and
	// overrides User, Network, Limits, ReadOnlyPaths and ProtectedPaths for
	// the cases that test them; everything else (Project, Image, ...) is the
	// adapter's. Spec is also the adapter's setup hook for the tree: an
	// adapter whose commands run as another uid than the test process hands
	// dir to that uid here (docker, when the tests run as root).
	Spec func(t *testing.T, dir string) driver.Spec
	// Restricted optionally returns a driver configured to refuse mutating
	// commands. When nil, the refusal case runs only if New's driver
	// itself reports AllowMutating=false.
	Restricted func(t *testing.T) driver.Driver
	// HostAddress optionally returns the host address a sandbox with
	// network "default" reaches the test process at (a container's
	// 127.0.0.1 is its own). Nil means 127.0.0.1.
	HostAddress func(t *testing.T) string
}

// Run runs the conformance suite against h.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Spec == nil {
		t.Fatal("drivertest: Harness.New and Harness.Spec are required")
	}
	s := &suite{h: h}
	cases := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"Lifecycle/CreateIdempotent", s.createIdempotent},
		{"Lifecycle/GetUnknown", s.getUnknown},
		{"Lifecycle/StopThenExecResumes", s.stopThenExec},
		{"Lifecycle/DestroyKeepsWorkspace", s.destroyKeepsFiles},
		{"Lifecycle/HibernateKeepsFilesAndBranch", s.hibernateKeepsBranch},
		{"Exec/Forms", s.execForms},
		{"Exec/InvalidRequest", s.invalidRequest},
		{"Exec/CleanEnvironment", s.cleanEnv},
		{"Exec/WorkingDirectory", s.workingDir},
		{"Exec/Stdin", s.stdin},
		{"Exec/MissingBinary", s.missingBinary},
		{"Exec/Timeout", s.timeout},
		{"Exec/OutputCap", s.outputCap},
		{"Exec/OutputFlood", s.outputFlood},
		{"Exec/ContextCancel", s.ctxCancel},
		{"Exec/Streaming", s.streaming},
		{"Exec/StreamEmitError", s.emitError},
		{"Exec/ConcurrentWorkspaces", s.concurrent},
		{"Capabilities/RejectMutating", s.rejectMutating},
		{"Capabilities/Isolated", s.isolated},
		{"Isolation/UsersSeparated", s.usersSeparated},
		{"Isolation/WorkspaceAttack", s.workspaceAttack},
		{"Privileges/NoCapabilities", s.privNoCapabilities},
		{"Privileges/MountAttacks", s.privMounts},
		{"Privileges/Syscalls", s.privSyscalls},
		{"Privileges/PtraceAnotherCommand", s.privPtraceOut},
		{"Privileges/HostProcess", s.privHostProcess},
		{"Capabilities/NetworkNone", s.networkNone},
		{"Capabilities/ProcessLimit", s.processLimit},
		{"Capabilities/FileSizeLimit", s.fileSizeLimit},
		{"Capabilities/CPULimit", s.cpuLimit},
		{"Spawn/Echo", s.spawnEcho},
		{"Spawn/CloseKills", s.spawnCloseKills},
		{"Spawn/MissingBinary", s.spawnMissingBinary},
		{"Spawn/Isolation", s.spawnIsolation},
	}
	for _, c := range cases {
		t.Run(c.name, c.fn)
	}
}
