package procexec

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// SpawnParams are the knobs of Spawn.
type SpawnParams struct {
	Timeout   time.Duration // 0: none
	MaxStderr int           // > 0
	// Started runs right after the process started (see Params.Started);
	// an error kills the process and Spawn returns it, with what the
	// process wrote to stderr.
	Started func(pid int) error
	// Release runs once the process has exited (or failed to start), to
	// free what the caller set up for it (descriptors handed to cmd).
	Release func()
}

// ValidateSpawn checks a Spawn request as Validate checks an Exec one and
// returns its timeout (0: none) and stderr cap.
func ValidateSpawn(req grove.ExecRequest) (timeout time.Duration, maxStderr int, err error) {
	if len(req.Stdin) > 0 {
		return 0, 0, grove.Errorf(grove.ErrInvalid, "spawn: the process's stdin is the process handle; request stdin must be empty")
	}
	if _, _, err := Validate(req); err != nil {
		return 0, 0, err
	}
	maxStderr = req.MaxOutput
	if maxStderr == 0 {
		maxStderr = driver.DefaultMaxOutput
	}
	return req.Timeout, maxStderr, nil
}

// Spawn starts cmd in a new process group with its stdin and stdout piped
// to the returned Process, stderr captured (capped) and the whole group
// killed when ctx ends, the timeout passes, Close is called or the process
// exits. cmd must be unstarted with Stdin, Stdout and Stderr unset.
func Spawn(ctx context.Context, cmd *exec.Cmd, p SpawnParams) (*Proc, error) {
	release := func() {
		if p.Release != nil {
			p.Release()
		}
	}
	if err := ctx.Err(); err != nil {
		release()
		return nil, err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL

	var files []*os.File // closed on failure
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	fail := func(err error) (*Proc, error) {
		for _, f := range files {
			f.Close()
		}
		release()
		return nil, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return fail(fmt.Errorf("spawn: %w", err))
	}
	outR, outW, err := pipe()
	if err != nil {
		return fail(fmt.Errorf("spawn: %w", err))
	}
	errR, errW, err := pipe()
	if err != nil {
		return fail(fmt.Errorf("spawn: %w", err))
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	inR.Close()
	outW.Close()
	errW.Close()

	pr := &Proc{
		stdin:   inW,
		stdout:  outR,
		stderr:  &capped{max: p.MaxStderr},
		pgid:    cmd.Process.Pid,
		done:    make(chan struct{}),
		release: release,
	}
	pr.stderrDone = make(chan struct{})
	go func() {
		defer close(pr.stderrDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := errR.Read(buf)
			if n > 0 {
				pr.stderr.write(buf[:n])
			}
			if err != nil {
				errR.Close()
				return
			}
		}
	}()
	go pr.wait(cmd)

	if p.Started != nil {
		if err := p.Started(pr.pgid); err != nil {
			pr.Close()
			if msg := pr.Stderr(); len(msg) > 0 {
				return nil, fmt.Errorf("%w (stderr: %s)", err, msg)
			}
			return nil, err
		}
	}

	// The process dies with ctx and with its timeout.
	go func() {
		var timeout <-chan time.Time
		if p.Timeout > 0 {
			t := time.NewTimer(p.Timeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ctx.Done():
			pr.kill()
		case <-timeout:
			pr.timedOut.Store(true)
			pr.kill()
		case <-pr.done:
		}
	}()
	return pr, nil
}

// Proc is a spawned process (driver.Process).
type Proc struct {
	stdin      *os.File
	stdout     *os.File
	stderr     *capped
	stderrDone chan struct{}
	pgid       int
	release    func()

	done     chan struct{} // closed when the process has been waited for
	code     int
	waitErr  error
	timedOut atomic.Bool

	closeOnce sync.Once
}

var _ driver.Process = (*Proc)(nil)

// kill kills the process's group, unless it was waited for already:
// after that its group id may name someone else's group.
func (p *Proc) kill() {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	}
}

func (p *Proc) wait(cmd *exec.Cmd) {
	err := cmd.Wait()
	// Whatever the process left in its group goes with it.
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	// Its last words on stderr belong to the result (bounded: a process
	// that left the group may hold the pipe).
	select {
	case <-p.stderrDone:
	case <-time.After(drainGrace):
	}
	p.code = exitCode(cmd.ProcessState, err)
	if p.timedOut.Load() {
		p.code = TimeoutExitCode
	}
	if p.code < 0 {
		p.waitErr = err
	}
	p.release()
	close(p.done)
}

// Pid is the process's id, which is also its process group's.
func (p *Proc) Pid() int { return p.pgid }

// Stdin implements driver.Process.
func (p *Proc) Stdin() io.WriteCloser { return p.stdin }

// Stdout implements driver.Process.
func (p *Proc) Stdout() io.Reader { return p.stdout }

// Stderr implements driver.Process.
func (p *Proc) Stderr() []byte {
	b, _ := p.stderr.result()
	return append([]byte(nil), b...)
}

// Wait implements driver.Process.
func (p *Proc) Wait() (int, error) {
	<-p.done
	return p.code, p.waitErr
}

// Close implements driver.Process.
func (p *Proc) Close() error {
	p.closeOnce.Do(func() {
		p.kill()
		<-p.done
		p.stdin.Close()
		p.stdout.Close()
	})
	return nil
}

// Exited returns a Process that has already exited with code, having
// written msg to stderr: what Spawn gives for a program that cannot be run,
// as Exec gives a result.
func Exited(code int, msg []byte) driver.Process {
	return &exited{code: code, msg: append([]byte(nil), msg...)}
}

type exited struct {
	code int
	msg  []byte
}

func (e *exited) Stdin() io.WriteCloser { return nopWriteCloser{} }
func (e *exited) Stdout() io.Reader     { return eofReader{} }
func (e *exited) Stderr() []byte        { return append([]byte(nil), e.msg...) }
func (e *exited) Wait() (int, error)    { return e.code, nil }
func (e *exited) Close() error          { return nil }

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return 0, io.ErrClosedPipe }
func (nopWriteCloser) Close() error                { return nil }

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
