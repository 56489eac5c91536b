// Package bwrap is the runtime driver that runs each command in a fresh
// bubblewrap sandbox: new user, pid, ipc, uts and (by default) network
// namespaces, system directories read-only, a private /tmp, the workspace
// the only writable host tree, a clean environment and resource limits.
//
// # Workspace isolation
//
// Grove's local workspaces are per-workspace git repositories that borrow
// the repo cache's objects read-only through git alternates (see
// DESIGN.md §3), not worktrees of the cache: a worktree's .git points into
// the cache's shared, writable ref and object store, which a sandbox would
// have to expose. With a repository of its own, a workspace's sandbox
// binds the workspace read-write, the cache's object directory read-only
// (Spec.ReadOnlyPaths), and nothing of any other workspace. `git commit`
// writes new objects and refs into the workspace's own .git.
//
// What host-side git later reads from the workspace's .git must not be
// plantable from inside: Spec.ProtectedPaths (.git/config, .git/hooks,
// .git/objects/info/alternates) are bound read-only over themselves, and
// every directory between the workspace root and a protected path is bound
// over itself too. A bind mount point cannot be renamed or removed, so a
// command cannot sidestep a protected file by moving its parent away
// (`mv .git .git.old && mkdir .git`) and planting a fresh one.
//
// # Resource limits
//
// Limits are applied without an extra process in the launch path: bwrap
// is started with --block-fd and --info-fd; once it reports the sandbox's
// pid, the driver sets RLIMIT_NPROC, RLIMIT_FSIZE and RLIMIT_CPU on it with
// prlimit(2) (and, when it runs as root, moves it into its workspace's
// cgroups), then unblocks it. Every process of the command descends from
// it. The private /tmp is a tmpfs of a bounded size (--size).
//
// As root the driver keeps one cgroup per workspace in the pids, memory and
// cpu controllers (v1 or v2), under one per user:
// <controller>/grove/<user-hash>/w-<workspace>. The workspace's cgroup
// bounds the processes, memory (with swap) and CPU of all of its commands
// together; the user's bounds the processes of all the user's workspaces.
// A command whose process the OOM killer killed has OOMKilled set.
//
// RLIMIT_NPROC counts the processes of one user in one user namespace
// (Linux ≥ 5.14 accounts it per namespace), so with a new user namespace
// per command it bounds exactly that command's processes. The kernel
// exempts real uid 0 from RLIMIT_NPROC, however, so when Grove runs as
// root the process limit is enforced by a pids cgroup instead; without a
// writable pids cgroup a root process cannot bound processes, and
// Capabilities reports Limits=false. A non-root server has no cgroups of
// its own to write: there memory, CPU share and the per-user process limit
// are not enforced (processes are bounded per command), and Capabilities
// reports Limits=true only for what RLIMIT_* and the /tmp size cover.
package bwrap

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/internal/procexec"
)

// Kind is the driver's name.
const Kind = "bwrap"

// Default limits, applied when a Spec leaves a limit zero. No CPU-time
// limit by default: the command timeout bounds wall time already.
const (
	DefaultProcesses     = 512     // per workspace (per command without cgroups)
	DefaultUserProcesses = 2048    // all of one user's workspaces, with cgroups
	DefaultFileSize      = 1 << 30 // one written file
	DefaultMemory        = 4 << 30 // per workspace, memory and swap, with cgroups
	DefaultCPUs          = 2.0     // per workspace, with cgroups
	DefaultTmp           = 1 << 30 // the private /tmp of each command
)

// Options configure a Driver.
type Options struct {
	// Binary is the bwrap executable; empty looks "bwrap" up on PATH.
	Binary string
	// Cgroups is where the cgroup file system is mounted; empty means
	// /sys/fs/cgroup, "none" disables cgroups. They are only used as root,
	// where the driver keeps one cgroup per workspace under
	// <hierarchy>/grove (v1: the pids, memory and cpu hierarchies; v2: the
	// unified one). On cgroup v1 moving a process costs a few milliseconds
	// per hierarchy and command (an RCU grace period), so "none" trades the
	// process, memory and CPU limits (Capabilities.Limits=false) for launch
	// speed.
	Cgroups string
	// SandboxUID and SandboxGID are the unprivileged identity commands run
	// as when Grove runs as root (0: 65534, nobody). A root server's
	// writable workspaces are handed to this uid at Create.
	SandboxUID, SandboxGID int
}

// Driver runs commands in bubblewrap sandboxes.
type Driver struct {
	bin   string
	shell string // bash, or sh where bash is absent
	// cgroups is set as root with a usable pids controller.
	cgroups *cgroups
	nproc   bool // whether a process limit can be enforced at all
	tmpSize bool // bwrap supports --size (a bounded /tmp)
	mounts  []string
	// seccomp is the compiled filter (seccomp.go), given to every sandbox.
	seccomp []byte
	// drop is set when Grove runs as root: the sandbox is built as root
	// (no user namespace, whose uid 0 would still be the host's root for
	// file access) and the command is started through setpriv as uid:gid
	// with no capabilities, no supplementary groups and no_new_privs.
	drop     []string
	uid, gid int

	runtimes *procexec.Registry[struct{}]
}

var _ driver.Driver = (*Driver)(nil)

// Available reports whether a bwrap binary is on PATH.
func Available() bool {
	_, err := exec.LookPath("bwrap")
	return err == nil
}

// New returns a bwrap driver, or an error wrapping grove.ErrNotInstalled
// when bwrap is absent.
func New(opt Options) (*Driver, error) {
	bin := opt.Binary
	if bin == "" {
		bin = "bwrap"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, grove.Errorf(grove.ErrNotInstalled, "bwrap: bubblewrap is not installed (Debian package bubblewrap)")
	}
	d := &Driver{bin: path, shell: "sh", runtimes: procexec.NewRegistry[struct{}](Kind)}
	if _, err := os.Stat("/bin/bash"); err == nil {
		d.shell = "bash"
	}
	d.mounts = systemMounts()
	if d.seccomp, err = compileFilter(); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		d.uid, d.gid = opt.SandboxUID, opt.SandboxGID
		if d.uid == 0 {
			d.uid = 65534
		}
		if d.gid == 0 {
			d.gid = 65534
		}
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			return nil, grove.Errorf(grove.ErrNotInstalled, "bwrap: a root server drops sandboxes to uid %d with setpriv (Debian package util-linux), which is not installed", d.uid)
		}
		d.drop = []string{setpriv, fmt.Sprintf("--reuid=%d", d.uid), fmt.Sprintf("--regid=%d", d.gid),
			"--clear-groups", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"}
	}
	d.tmpSize = supportsSize(path)
	d.nproc = os.Geteuid() != 0
	if os.Geteuid() == 0 && opt.Cgroups != "none" {
		d.cgroups = findCgroups(opt.Cgroups)
		d.nproc = d.cgroups != nil
		if d.cgroups != nil {
			d.cgroups.cleanup()
		}
	}
	return d, nil
}

// supportsSize reports whether bwrap knows --size (0.8 and later).
func supportsSize(bin string) bool {
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	return strings.Contains(string(out), "--size")
}

// Close releases what the driver holds between commands; workspaces'
// cgroups stay until Destroy (or the next New cleans up the empty ones).
// The driver must not be used afterwards.
func (d *Driver) Close() error {
	return nil
}

// Kind implements driver.Driver.
func (d *Driver) Kind() string { return Kind }

// Capabilities implements driver.Driver.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{
		Isolated:      true,
		AllowMutating: true,
		Network:       []driver.NetworkMode{driver.NetworkNone, driver.NetworkDefault},
		Limits:        d.nproc && d.tmpSize && (d.cgroups == nil || d.cgroups.complete()),
		Streaming:     true,
	}
}

// Create implements driver.Driver. A runtime is only a recorded spec: each
// command gets its own sandbox, so there is nothing to start.
func (d *Driver) Create(ctx context.Context, spec driver.Spec) (*driver.Runtime, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	if d.drop != nil && spec.Writable {
		if err := handOver(spec.WorkDir, d.uid, d.gid); err != nil {
			return nil, err
		}
	}
	rt, err := d.runtimes.Create(spec, nil)
	if err != nil {
		return nil, err
	}
	if d.cgroups != nil {
		// Made once here; each command only enters it.
		if _, err := d.cgroups.workspace(rt.Spec.User, rt.Spec.WorkspaceID, limitsOf(rt.Spec.Limits)); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

func checkSpec(spec driver.Spec) error {
	if spec.WorkspaceID == "" {
		return grove.Errorf(grove.ErrInvalid, "bwrap: empty workspace id")
	}
	if !filepath.IsAbs(spec.WorkDir) || filepath.Clean(spec.WorkDir) == "/" {
		return grove.Errorf(grove.ErrInvalid, "bwrap: workspace directory must be an absolute host path")
	}
	if st, err := os.Stat(spec.WorkDir); err != nil || !st.IsDir() {
		return grove.Errorf(grove.ErrNotFound, "bwrap: workspace directory does not exist")
	}
	switch spec.Network {
	case "", driver.NetworkNone, driver.NetworkDefault:
	default:
		return grove.Errorf(grove.ErrNotSupported, "bwrap: network mode %q", spec.Network)
	}
	for _, p := range spec.ReadOnlyPaths {
		if !filepath.IsAbs(p) {
			return grove.Errorf(grove.ErrInvalid, "bwrap: read-only path %q is not absolute", p)
		}
	}
	for _, p := range spec.ProtectedPaths {
		if !filepath.IsAbs(p) || !strings.HasPrefix(filepath.Clean(p), filepath.Clean(spec.WorkDir)+"/") {
			return grove.Errorf(grove.ErrInvalid, "bwrap: protected path %q is not inside the workspace", p)
		}
	}
	l := spec.Limits
	if l.Processes < 0 || l.UserProcesses < 0 || l.FileSize < 0 || l.CPUTime < 0 || l.MemoryBytes < 0 || l.CPUs < 0 || l.TmpBytes < 0 {
		return grove.Errorf(grove.ErrInvalid, "bwrap: negative limit")
	}
	return nil
}

// Get implements driver.Driver.
func (d *Driver) Get(ctx context.Context, workspaceID string) (*driver.Runtime, error) {
	return d.runtimes.Get(workspaceID)
}

// Start implements driver.Driver.
func (d *Driver) Start(ctx context.Context, workspaceID string) error {
	return d.runtimes.SetState(workspaceID, driver.StateRunning)
}

// Stop implements driver.Driver. Sandboxes live only as long as their
// command, so stopping only records the state.
func (d *Driver) Stop(ctx context.Context, workspaceID string) error {
	return d.runtimes.SetState(workspaceID, driver.StateStopped)
}

// Destroy implements driver.Driver; the workspace's files stay.
func (d *Driver) Destroy(ctx context.Context, workspaceID string) error {
	d.runtimes.Remove(workspaceID)
	if d.cgroups != nil {
		d.cgroups.remove(workspaceID)
	}
	return nil
}

// Exec implements driver.Driver.
func (d *Driver) Exec(ctx context.Context, workspaceID string, req grove.ExecRequest) (*grove.ExecResult, error) {
	return d.ExecStream(ctx, workspaceID, req, nil)
}

// ExecStream implements driver.Driver. Only output under the cap is
// emitted; the rest is counted in the result.
func (d *Driver) ExecStream(ctx context.Context, workspaceID string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	timeout, maxOutput, err := procexec.Validate(req)
	if err != nil {
		return nil, err
	}
	args, l, cg, err := d.prepare(workspaceID, req)
	if err != nil {
		return nil, err
	}
	res, err := d.run(ctx, args, l, cg, procexec.Params{
		Stdin: req.Stdin, Timeout: timeout, MaxOutput: maxOutput, Emit: emit, StreamOnly: req.StreamOnly,
	})
	if err != nil {
		return nil, err
	}
	mapExecFailure(res)
	return res, nil
}

// prepare is what Exec and Spawn share: the runtime's spec, the confined
// directory, the protected paths in place, the workspace's cgroup and
// bwrap's command line for req.
func (d *Driver) prepare(workspaceID string, req grove.ExecRequest) (args []string, l limits, cg *wsCgroup, err error) {
	spec, _, err := d.runtimes.Resume(workspaceID)
	if err != nil {
		return nil, l, nil, err
	}
	dir, err := procexec.ResolveDir(spec.WorkDir, req.Dir)
	if err != nil {
		return nil, l, nil, err
	}
	if err := ensureProtected(spec); err != nil {
		return nil, l, nil, err
	}
	l = limitsOf(spec.Limits)
	argv := req.Argv
	if req.Shell != "" {
		argv = []string{d.shell, "-c", req.Shell}
	}
	if d.cgroups != nil {
		if cg, err = d.cgroups.workspace(spec.User, spec.WorkspaceID, l); err != nil {
			return nil, l, nil, err
		}
	}
	return d.args(spec, dir, procexec.Env(sandboxHome, req.Env), argv), l, cg, nil
}

// ensureProtected makes sure every protected path exists before the
// sandbox starts: one that is missing could otherwise be created from
// inside (a hooks directory with a pre-commit hook). A missing one is
// created as an empty directory, read-only to the sandbox.
func ensureProtected(spec driver.Spec) error {
	for _, p := range spec.ProtectedPaths {
		if st, err := os.Lstat(p); err == nil {
			if st.Mode()&os.ModeSymlink != 0 {
				// bwrap would follow it and bind whatever it names.
				return grove.Errorf(grove.ErrInvalid, "bwrap: protected path %s is a symlink", filepath.Base(p))
			}
			continue
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("bwrap: protected path: %w", err)
		}
	}
	return nil
}

// RawCommand is the bubblewrap command line Exec runs for argv in the
// workspace's runtime — the same sandbox, seccomp filter and identity —
// without Grove's limits, timeout and output handling. `grove bench`
// launches it to compare Exec with the raw tool; the caller runs it once
// (it carries the filter's descriptor) and calls done afterwards.
func (d *Driver) RawCommand(workspaceID string, argv []string) (cmd *exec.Cmd, done func(), err error) {
	spec, _, err := d.runtimes.Resume(workspaceID)
	if err != nil {
		return nil, nil, err
	}
	filter, err := filterFile(d.seccomp)
	if err != nil {
		return nil, nil, err
	}
	cmd = exec.Command(d.bin, d.args(spec, spec.WorkDir, procexec.Env(sandboxHome, nil), argv)...)
	cmd.ExtraFiles = []*os.File{nil, nil, filter} // --seccomp 5
	return cmd, func() { filter.Close() }, nil
}
