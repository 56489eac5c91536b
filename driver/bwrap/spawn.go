package bwrap

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/internal/procexec"
)

var _ driver.Spawner = (*Driver)(nil)

// Spawn implements driver.Spawner. The process runs in the sandbox Exec
// builds for the same request — the same command line (prepare), seccomp
// filter, uid drop, limits and cgroup (launch) — with its stdin and
// stdout piped to the caller. Killing bwrap's process group takes the
// whole sandbox along: bwrap's child dies with it (--die-with-parent) and
// with it the sandbox's pid namespace.
func (d *Driver) Spawn(ctx context.Context, workspaceID string, req grove.ExecRequest) (driver.Process, error) {
	timeout, maxStderr, err := procexec.ValidateSpawn(req)
	if err != nil {
		return nil, err
	}
	args, l, cg, err := d.prepare(workspaceID, req)
	if err != nil {
		return nil, err
	}
	cmd, started, release, err := d.launch(args, l, cg)
	if err != nil {
		return nil, err
	}
	p, err := procexec.Spawn(ctx, cmd, procexec.SpawnParams{
		Timeout: timeout, MaxStderr: maxStderr, Started: started, Release: release,
	})
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, grove.Errorf(grove.ErrNotInstalled, "bwrap: %v", err)
		}
		return nil, err
	}
	return spawned{p}, nil
}

// spawned maps bwrap's own report that the program could not be executed
// to the shell's exit codes, as Exec does (mapExecFailure).
type spawned struct{ *procexec.Proc }

func (s spawned) Wait() (int, error) {
	code, err := s.Proc.Wait()
	if err != nil || code != 1 {
		return code, err
	}
	stderr := string(s.Stderr())
	if strings.HasPrefix(stderr, "bwrap: execvp ") {
		switch {
		case strings.Contains(stderr, "No such file or directory"):
			return 127, nil
		case strings.Contains(stderr, "Permission denied"):
			return 126, nil
		}
	}
	return code, nil
}
