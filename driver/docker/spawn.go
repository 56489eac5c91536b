package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

var _ driver.Spawner = (*Driver)(nil)

// Spawn implements driver.Spawner: an exec attached to stdin and stdout
// through the hijacked connection (stdcopy separates stdout from stderr),
// as Exec makes it — same image, user, environment, directory, mounts,
// dropped capabilities, no-new-privileges, read-only root and limits — in
// the workspace's debug container rather than the shared one.
//
// Spawned processes are debug adapters and the programs they debug, and a
// debugger needs ptrace, which the shared container's profile removes (it
// hosts every workspace of the (user, project) pair, so tracing would
// reach the other workspaces' commands and the container's init;
// docs/SECURITY.md). The debug container hosts this one workspace — its
// mounts only — and keeps Docker's default profile, tracing included: a
// process there can trace nothing but this workspace's own spawned
// processes. It is made on the first Spawn and removed with the
// workspace's Stop and Destroy. Its /tmp and HOME are its own, and its
// limits (memory, pids) are a second set beside the shared container's.
//
// The wrapper's timeout puts the process in its own group, whose id is
// the exec's pid, so the whole tree dies on Close, on ctx, and when the
// process exits. The container's gate is held only to create the exec,
// not for the process's life.
func (d *Driver) Spawn(ctx context.Context, workspaceID string, req grove.ExecRequest) (driver.Process, error) {
	b, c, err := d.prepare(workspaceID, req)
	if err != nil {
		return nil, err
	}
	if len(req.Stdin) > 0 {
		return nil, grove.Errorf(grove.ErrInvalid, "spawn: the process's stdin is the process handle; request stdin must be empty")
	}
	argv, dir, env := c.argv, c.dir, c.env
	maxErr := req.MaxOutput
	if maxErr <= 0 {
		maxErr = driver.DefaultMaxOutput
	}

	// timeout 0 runs without a bound, and still makes the process group.
	cmd := append([]string{"/bin/sh", "-c", wrapper, "grove-exec", strconv.FormatFloat(req.Timeout.Seconds(), 'f', 3, 64)}, argv...)
	opts := container.ExecOptions{
		User: d.user, WorkingDir: dir, Env: env, Cmd: cmd,
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	}
	db, err := d.debugBox(ctx, b, workspaceID, c.spec)
	if err != nil {
		return nil, err
	}
	created, att, err := d.spawnExec(ctx, db, opts)
	if err != nil {
		return nil, err
	}

	outR, outW := io.Pipe()
	p := &dockerProc{
		d: d, execID: created, att: att, stdout: outR,
		stderr: &capped{max: maxErr, discard: false},
		done:   make(chan struct{}), timeout: req.Timeout,
	}
	copied := make(chan struct{})
	go func() {
		_, err := stdcopy.StdCopy(outW, lockedWriter{&p.errMu, p.stderr}, att.Reader)
		if err == nil {
			err = io.EOF
		}
		outW.CloseWithError(err)
		close(copied)
	}()
	start := time.Now()
	go func() {
		<-copied
		code, pid, err := d.exitCode(created)
		if err == nil && req.Timeout > 0 && (code == 124 || code == 137) && time.Since(start) >= req.Timeout {
			code = 124
		}
		p.code, p.err = code, err
		reapGroup(pid)
		att.Close()
		close(p.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			p.kill()
		case <-p.done:
		}
	}()
	return p, nil
}

// spawnExec creates and attaches an exec, starting (or, stopped behind the
// driver's back, restarting) the container first. It holds the gate only
// while it does so.
func (d *Driver) spawnExec(ctx context.Context, b *box, opts container.ExecOptions) (string, types.HijackedResponse, error) {
	b.gate.RLock()
	defer b.gate.RUnlock()
	b.mu.Lock()
	needStart := !b.running
	b.mu.Unlock()
	if needStart {
		if err := d.start(ctx, b); err != nil {
			return "", types.HijackedResponse{}, err
		}
	}
	created, err := d.cli.ContainerExecCreate(ctx, b.id, opts)
	if err != nil && strings.Contains(err.Error(), "is not running") {
		b.mu.Lock()
		b.running = false
		b.mu.Unlock()
		if err = d.start(ctx, b); err == nil {
			created, err = d.cli.ContainerExecCreate(ctx, b.id, opts)
		}
	}
	if err != nil {
		return "", types.HijackedResponse{}, d.execErr(ctx, err)
	}
	att, err := d.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", types.HijackedResponse{}, d.execErr(ctx, err)
	}
	return created.ID, att, nil
}

// debugBox returns workspaceID's debug container, creating it (for spec,
// on the shared box b's user and project) when there is none.
func (d *Driver) debugBox(ctx context.Context, b *box, workspaceID string, spec driver.Spec) (*box, error) {
	d.mu.Lock()
	db := d.debug[workspaceID]
	if db == nil {
		sum := sha256.Sum256([]byte(workspaceID))
		db = &box{
			name: "grove-dbg-" + hex.EncodeToString(sum[:8]), user: b.user, project: b.project,
			specs: map[string]driver.Spec{}, stopped: map[string]bool{}, debug: true,
		}
		d.debug[workspaceID] = db
	}
	d.mu.Unlock()
	db.gate.Lock()
	defer db.gate.Unlock()
	d.mu.Lock()
	current := d.debug[workspaceID] == db
	d.mu.Unlock()
	if !current {
		// Stop or Destroy removed it meanwhile: make no container that
		// nothing would remove.
		return nil, grove.Errorf(grove.ErrConflict, "workspace %s's runtime is stopping", workspaceID)
	}
	db.mu.Lock()
	exists := db.id != ""
	db.mu.Unlock()
	if exists {
		return db, nil // spawnExec starts it if it stopped
	}
	if err := d.recreate(ctx, db, map[string]driver.Spec{workspaceID: spec}); err != nil {
		return nil, err
	}
	return db, nil
}

// removeDebugBox removes workspaceID's debug container, if any, killing
// its processes.
func (d *Driver) removeDebugBox(ctx context.Context, workspaceID string) error {
	d.mu.Lock()
	db := d.debug[workspaceID]
	delete(d.debug, workspaceID)
	d.mu.Unlock()
	if db == nil {
		return nil
	}
	db.gate.Lock()
	defer db.gate.Unlock()
	return d.recreate(ctx, db, map[string]driver.Spec{})
}

type dockerProc struct {
	d       *Driver
	execID  string
	att     types.HijackedResponse
	stdout  *io.PipeReader
	errMu   sync.Mutex
	stderr  *capped
	timeout time.Duration

	done chan struct{}
	code int
	err  error

	closeOnce sync.Once
}

func (p *dockerProc) kill() {
	select {
	case <-p.done:
	default:
		p.d.killExec(p.execID)
	}
}

func (p *dockerProc) Stdin() io.WriteCloser { return stdinConn{p} }
func (p *dockerProc) Stdout() io.Reader     { return p.stdout }

func (p *dockerProc) Stderr() []byte {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return append([]byte(nil), p.stderr.buf...)
}

func (p *dockerProc) Wait() (int, error) {
	<-p.done
	return p.code, p.err
}

func (p *dockerProc) Close() error {
	p.closeOnce.Do(func() {
		p.kill()
		select {
		case <-p.done:
		case <-time.After(killGrace):
			// The engine did not end the stream; cut it.
			p.att.Close()
			<-p.done
		}
		p.stdout.Close()
	})
	return nil
}

// stdinConn is the write half of the hijacked connection; Close half-closes
// it, so the process reads end of file.
type stdinConn struct{ p *dockerProc }

func (s stdinConn) Write(b []byte) (int, error) { return s.p.att.Conn.Write(b) }
func (s stdinConn) Close() error                { return s.p.att.CloseWrite() }

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
