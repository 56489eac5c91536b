// Package subprocess is the runtime driver that runs commands as plain host
// processes. It exists for development and tests: it gives a clean
// environment, confines the working directory, enforces timeouts and output
// caps and kills whole process groups, but it is not a sandbox. It reports
// Isolated=false and refuses mutating commands unless Options.AllowMutating
// is set, so write-capable work never silently runs unisolated.
package subprocess

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/internal/procexec"
)

// Kind is the driver's name.
const Kind = "subprocess"

// Options configure a Driver.
type Options struct {
	// AllowMutating accepts write, install and test commands. Leave it
	// false unless unisolated writes are acceptable (tests, development).
	AllowMutating bool
	// HomeRoot is where each runtime's private HOME directory is made;
	// empty means os.TempDir().
	HomeRoot string
}

// Driver runs commands as host processes.
type Driver struct {
	opt      Options
	runtimes *procexec.Registry[string] // extra: the runtime's private HOME
}

var _ driver.Driver = (*Driver)(nil)

// New returns a subprocess driver.
func New(opt Options) *Driver {
	return &Driver{opt: opt, runtimes: procexec.NewRegistry[string](Kind)}
}

// Kind implements driver.Driver.
func (d *Driver) Kind() string { return Kind }

// Capabilities implements driver.Driver.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{
		Isolated:      false,
		AllowMutating: d.opt.AllowMutating,
		// A host process shares the host's network; saying "none" would
		// be a lie.
		Network:   []driver.NetworkMode{driver.NetworkDefault},
		Streaming: true,
	}
}

// Create implements driver.Driver.
func (d *Driver) Create(ctx context.Context, spec driver.Spec) (*driver.Runtime, error) {
	if spec.WorkspaceID == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "subprocess: empty workspace id")
	}
	if !filepath.IsAbs(spec.WorkDir) {
		return nil, grove.Errorf(grove.ErrInvalid, "subprocess: workspace directory must be an absolute host path")
	}
	if st, err := os.Stat(spec.WorkDir); err != nil || !st.IsDir() {
		return nil, grove.Errorf(grove.ErrNotFound, "subprocess: workspace directory does not exist")
	}
	if spec.Network != "" && spec.Network != driver.NetworkDefault {
		return nil, grove.Errorf(grove.ErrNotSupported, "subprocess: network mode %q cannot be enforced by host processes", spec.Network)
	}
	return d.runtimes.Create(spec, func() (string, error) {
		home, err := os.MkdirTemp(d.opt.HomeRoot, "grove-home-")
		if err != nil {
			return "", fmt.Errorf("subprocess: home directory: %w", err)
		}
		return home, nil
	})
}

// Get implements driver.Driver.
func (d *Driver) Get(ctx context.Context, workspaceID string) (*driver.Runtime, error) {
	return d.runtimes.Get(workspaceID)
}

// Start implements driver.Driver.
func (d *Driver) Start(ctx context.Context, workspaceID string) error {
	return d.runtimes.SetState(workspaceID, driver.StateRunning)
}

// Stop implements driver.Driver. Host processes hold no state between
// commands, so stopping only records the state.
func (d *Driver) Stop(ctx context.Context, workspaceID string) error {
	return d.runtimes.SetState(workspaceID, driver.StateStopped)
}

// Destroy implements driver.Driver. It removes the private HOME, never the
// workspace.
func (d *Driver) Destroy(ctx context.Context, workspaceID string) error {
	home, ok := d.runtimes.Remove(workspaceID)
	if !ok {
		return nil
	}
	if err := os.RemoveAll(home); err != nil {
		return fmt.Errorf("subprocess: remove home: %w", err)
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
	if err := procexec.Reject(d.opt.AllowMutating, req); err != nil {
		return nil, err
	}
	timeout, maxOutput, err := procexec.Validate(req)
	if err != nil {
		return nil, err
	}
	spec, home, err := d.runtimes.Resume(workspaceID)
	if err != nil {
		return nil, err
	}
	dir, err := procexec.ResolveDir(spec.WorkDir, req.Dir)
	if err != nil {
		return nil, err
	}
	env := procexec.Env(home, req.Env)
	cmd, missing := command(req, env, dir)
	if missing != nil {
		return missing, nil
	}
	return procexec.Run(ctx, cmd, procexec.Params{
		Stdin: req.Stdin, Timeout: timeout, MaxOutput: maxOutput, Emit: emit, StreamOnly: req.StreamOnly,
	})
}

var _ driver.Spawner = (*Driver)(nil)

// Spawn implements driver.Spawner: a host process like Exec's (clean
// environment, confined directory, private HOME, process-group kill), with
// its stdin and stdout piped to the caller.
func (d *Driver) Spawn(ctx context.Context, workspaceID string, req grove.ExecRequest) (driver.Process, error) {
	if err := procexec.Reject(d.opt.AllowMutating, req); err != nil {
		return nil, err
	}
	timeout, maxStderr, err := procexec.ValidateSpawn(req)
	if err != nil {
		return nil, err
	}
	spec, home, err := d.runtimes.Resume(workspaceID)
	if err != nil {
		return nil, err
	}
	dir, err := procexec.ResolveDir(spec.WorkDir, req.Dir)
	if err != nil {
		return nil, err
	}
	cmd, missing := command(req, procexec.Env(home, req.Env), dir)
	if missing != nil {
		return procexec.Exited(missing.ExitCode, missing.Stderr), nil
	}
	return procexec.Spawn(ctx, cmd, procexec.SpawnParams{Timeout: timeout, MaxStderr: maxStderr})
}
