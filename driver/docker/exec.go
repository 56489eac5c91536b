package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// wrapper runs every command: it drops what Docker adds to the environment
// (HOSTNAME) unless asked for, then execs coreutils timeout, which puts the
// command in its own process group and on expiry signals that whole group
// (TERM, then KILL after 2 s) — the command's processes die, the container
// and other commands do not. The exec's pid is then the group's id, which is
// how cancellation kills the group from outside.
const wrapper = `t=$1; shift; [ -n "$GROVE_KEEP_HOSTNAME" ] || unset HOSTNAME; unset GROVE_KEEP_HOSTNAME; exec timeout -k 2 "$t" "$@"`

// killGrace is how long past the timeout the server waits for the in-box
// timeout before it kills the group itself.
const killGrace = 5 * time.Second

// prepared is a request checked and placed in its workspace's container.
type prepared struct {
	spec driver.Spec
	argv []string
	dir  string // absolute, inside the workspace
	env  []string
}

// prepare finds workspaceID's container and checks req against this
// runtime: the command class (a read-only workspace is a read-only mount:
// commands run and their writes fail there, as the conformance suite
// expects), the command line, the directory, the environment and the
// bounds.
func (d *Driver) prepare(workspaceID string, req grove.ExecRequest) (*box, prepared, error) {
	b, err := d.lookup(workspaceID)
	if err != nil {
		return nil, prepared{}, err
	}
	if d.ro && (req.Class == "" || req.Class.Mutating()) {
		return nil, prepared{}, grove.Errorf(grove.ErrRejected, "%s commands are not allowed on this runtime", classOf(req))
	}
	b.mu.Lock()
	spec := b.specs[workspaceID]
	b.mu.Unlock()
	c := prepared{spec: spec}
	if c.argv, err = commandLine(req); err != nil {
		return nil, prepared{}, err
	}
	if c.dir, err = confine(spec.WorkDir, req.Dir); err != nil {
		return nil, prepared{}, err
	}
	if c.env, err = requestEnv(req.Env); err != nil {
		return nil, prepared{}, err
	}
	if req.Timeout < 0 || req.MaxOutput < 0 {
		return nil, prepared{}, grove.Errorf(grove.ErrInvalid, "negative timeout or output cap")
	}
	return b, c, nil
}

// Exec implements driver.Driver.
func (d *Driver) Exec(ctx context.Context, workspaceID string, req grove.ExecRequest) (*grove.ExecResult, error) {
	return d.ExecStream(ctx, workspaceID, req, nil)
}

// ExecStream implements driver.Driver. Output flows from the engine's socket
// through stdcopy straight into emit, so at most one demultiplexed frame is
// buffered and a slow emit slows the command down.
func (d *Driver) ExecStream(ctx context.Context, workspaceID string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	b, c, err := d.prepare(workspaceID, req)
	if err != nil {
		return nil, err
	}
	argv, dir, env := c.argv, c.dir, c.env
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = driver.DefaultTimeout
	}
	maxOut := req.MaxOutput
	if maxOut <= 0 {
		maxOut = driver.DefaultMaxOutput
	}

	b.gate.RLock()
	defer b.gate.RUnlock()
	b.mu.Lock()
	needStart := !b.running
	delete(b.stopped, workspaceID)
	b.mu.Unlock()
	if needStart {
		if err := d.start(ctx, b); err != nil {
			return nil, err
		}
	}

	cmd := append([]string{"/bin/sh", "-c", wrapper, "grove-exec", strconv.FormatFloat(timeout.Seconds(), 'f', 3, 64)}, argv...)
	opts := container.ExecOptions{
		User: d.user, WorkingDir: dir, Env: env, Cmd: cmd,
		AttachStdout: true, AttachStderr: true, AttachStdin: req.Stdin != nil,
	}
	start := time.Now()
	created, err := d.cli.ContainerExecCreate(ctx, b.id, opts)
	if err != nil && strings.Contains(err.Error(), "is not running") {
		// Stopped behind our back (engine restart, docker stop): resume.
		b.mu.Lock()
		b.running = false
		b.mu.Unlock()
		if err = d.start(ctx, b); err == nil {
			created, err = d.cli.ContainerExecCreate(ctx, b.id, opts)
		}
	}
	if err != nil {
		return nil, d.execErr(ctx, err)
	}
	att, err := d.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, d.execErr(ctx, err)
	}
	defer att.Close()

	if req.Stdin != nil {
		go func() {
			// The command may exit without reading; the write then fails
			// and closing the attachment ends this goroutine.
			_, _ = att.Conn.Write(req.Stdin)
			_ = att.CloseWrite()
		}()
	}

	discard := req.StreamOnly && emit != nil
	stdout := &capped{max: maxOut, discard: discard, stream: grove.Stdout, emit: emit}
	stderr := &capped{max: maxOut, discard: discard, stream: grove.Stderr, emit: emit}
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		copied <- err
	}()

	backstop := time.NewTimer(timeout + killGrace)
	defer backstop.Stop()
	var ctxErr error
	hostTimedOut := false
	select {
	case err = <-copied:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	case <-backstop.C:
		hostTimedOut = true
	}
	if ctxErr != nil || hostTimedOut {
		d.killExec(created.ID)
		att.Close()
		err = <-copied
	}
	res := &grove.ExecResult{
		Stdout: stdout.buf, Stderr: stderr.buf,
		StdoutOmitted: stdout.omitted, StderrOmitted: stderr.omitted,
		Truncated: stdout.omitted > 0 || stderr.omitted > 0,
	}
	if ctxErr != nil {
		res.Duration = time.Since(start)
		return res, ctxErr
	}
	var emitErr *emitError
	if errors.As(err, &emitErr) {
		d.killExec(created.ID)
		return res, emitErr.err
	}
	code, pid, err := d.exitCode(created.ID)
	res.Duration = time.Since(start)
	if err != nil {
		return res, d.execErr(ctx, err)
	}
	res.ExitCode = code
	// timeout exits 124 when the command ignored nothing, 137 when it had to
	// follow up with KILL; the elapsed time tells a timeout from a command
	// that merely exits with those codes.
	if hostTimedOut || ((code == 124 || code == 137) && res.Duration >= timeout) {
		res.TimedOut, res.ExitCode = true, 124
	}
	// What the command left running in its group goes with it.
	reapGroup(pid)
	return res, nil
}

func classOf(req grove.ExecRequest) grove.CommandClass {
	if req.Class == "" {
		return grove.ClassWrite
	}
	return req.Class
}

func commandLine(req grove.ExecRequest) ([]string, error) {
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return nil, grove.Errorf(grove.ErrInvalid, "exactly one of argv and shell")
	case len(req.Argv) > 0:
		if req.Argv[0] == "" {
			return nil, grove.Errorf(grove.ErrInvalid, "empty program name")
		}
		for _, a := range req.Argv {
			if strings.IndexByte(a, 0) >= 0 {
				return nil, grove.Errorf(grove.ErrInvalid, "argument contains NUL")
			}
		}
		return req.Argv, nil
	case req.Shell != "":
		if strings.IndexByte(req.Shell, 0) >= 0 {
			return nil, grove.Errorf(grove.ErrInvalid, "shell command contains NUL")
		}
		return []string{"/bin/bash", "-c", req.Shell}, nil
	default:
		return nil, grove.Errorf(grove.ErrInvalid, "exactly one of argv and shell")
	}
}

// confine resolves a workspace-relative directory on the host (the
// workspace is mounted at the same path inside) and refuses one that
// leaves the workspace, through ".." or a symlink.
func confine(root, rel string) (string, error) {
	if rel == "" || rel == "." {
		return root, nil
	}
	if filepath.IsAbs(rel) || strings.IndexByte(rel, 0) >= 0 {
		return "", grove.Errorf(grove.ErrPathOutside, "dir %q", rel)
	}
	clean := filepath.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", grove.Errorf(grove.ErrPathOutside, "dir %q", rel)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", grove.Errorf(grove.ErrNotFound, "workspace directory: %v", err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, clean))
	if err != nil {
		return "", grove.Errorf(grove.ErrNotFound, "dir %q does not exist", rel)
	}
	if real != realRoot && !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return "", grove.Errorf(grove.ErrPathOutside, "dir %q", rel)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", grove.Errorf(grove.ErrInvalid, "dir %q is not a directory", rel)
	}
	// Inside, the workspace is at its unresolved host path.
	return filepath.Join(root, strings.TrimPrefix(real, realRoot)), nil
}

// requestEnv is what the exec adds to the container's clean environment.
// Values travel in the API request, never on an argument list.
func requestEnv(m map[string]string) ([]string, error) {
	env := make([]string, 0, len(m)+1)
	for k, v := range m {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, grove.Errorf(grove.ErrInvalid, "environment variable %q", k)
		}
		if k == "HOSTNAME" {
			env = append(env, "GROVE_KEEP_HOSTNAME=1")
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

// killExec kills the process group of an exec. The group's id is the exec's
// pid (see wrapper), which the engine reports as a host pid; the server
// runs on the engine's host (bind mounts need that) and either is root or
// runs commands under its own uid, so it may signal them.
func (d *Driver) killExec(execID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ins, err := d.cli.ContainerExecInspect(ctx, execID)
	if err != nil || !ins.Running || ins.Pid <= 0 {
		return
	}
	if syscall.Kill(-ins.Pid, syscall.SIGKILL) != nil {
		_ = syscall.Kill(ins.Pid, syscall.SIGKILL)
	}
}

// exitCode waits for the engine to record an exec's exit and returns its
// code and (host) pid.
func (d *Driver) exitCode(execID string) (code, pid int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		ins, err := d.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			return 0, 0, err
		}
		if !ins.Running {
			return ins.ExitCode, ins.Pid, nil
		}
		// The output can end a moment before the engine records the exit.
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// reapGroup kills what is left of a finished command's process group and
// waits until it is gone. A command's background processes do not outlive
// it (nothing outlives its request), and a timed-out group must be gone
// before the result returns: timeout signals the group without waiting,
// and until init reaps them dying processes still count against the pids
// limit, so the container's next command could not fork. The group's id is
// the exec's pid (see wrapper); once the group has no member the kernel
// does not hand that id out, so this cannot hit an unrelated group.
func reapGroup(pid int) {
	if pid <= 0 || syscall.Kill(-pid, syscall.SIGKILL) != nil {
		return
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		if syscall.Kill(-pid, 0) != nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (d *Driver) execErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("docker exec: %v: %w", err, grove.ErrUnavailable)
}

// capped keeps the first max bytes of a stream, counts the rest, and hands
// every piece to emit as it arrives.
type capped struct {
	max     int
	discard bool // count what fits under the cap without keeping it
	kept    int
	buf     []byte
	omitted int64
	stream  grove.Stream
	emit    func(grove.Chunk) error
}

type emitError struct{ err error }

func (e *emitError) Error() string { return e.err.Error() }

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.kept; room > 0 {
		n := min(room, len(p))
		c.kept += n
		if !c.discard {
			c.buf = append(c.buf, p[:n]...)
		}
		c.omitted += int64(len(p) - n)
	} else {
		c.omitted += int64(len(p))
	}
	if c.emit != nil && len(p) > 0 {
		// emit may keep the slice; stdcopy reuses its buffer.
		if err := c.emit(grove.Chunk{Stream: c.stream, Data: append([]byte(nil), p...)}); err != nil {
			return 0, &emitError{err}
		}
	}
	return len(p), nil
}

var _ io.Writer = (*capped)(nil)
