package procexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/grove-dev/grove"
)

// TimeoutExitCode is the exit code of a command killed by its timeout, as
// coreutils timeout(1) reports it.
const TimeoutExitCode = 124

// drainGrace bounds how long output pipes are read after the command and
// its process group are gone. Only a process that left the group (setsid)
// can still hold them; it must not hold the caller hostage.
const drainGrace = 500 * time.Millisecond

// Params are the per-command knobs of Run.
type Params struct {
	Stdin     []byte
	Timeout   time.Duration // > 0
	MaxOutput int           // per stream, > 0
	// Emit, when set, receives each piece of output that fits under the
	// cap, from the goroutine that called Run. An error kills the command.
	Emit func(grove.Chunk) error
	// StreamOnly keeps emitted output out of the result (see
	// grove.ExecRequest.StreamOnly).
	StreamOnly bool
	// Started runs right after the process started and before output is
	// read; the bwrap driver uses it to apply limits to the blocked
	// sandbox before letting it go. An error kills the command.
	Started func(pid int) error
	// KeepBackground leaves the rest of the command's process group
	// running when the command exits: a developer's command on their own
	// machine (grove tunnel) may start a server with '&' and expect it to
	// stay. Timeouts, ctx and Emit failures still kill the whole group
	// while the command runs.
	KeepBackground bool
}

// StartError is a command that could not be started (no such program, not
// executable, a bad directory). It wraps exec's error.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Run starts cmd in a new process group, feeds it stdin, captures capped
// output and waits for it, killing the whole group on timeout, on ctx
// cancellation, on an Emit error, and when the command exits (leftover
// background processes do not outlive their command, unless
// KeepBackground).
//
// cmd must be unstarted with Stdin, Stdout and Stderr unset. A non-zero
// exit is a result: a timeout is TimeoutExitCode with TimedOut set, a
// signal 128+its number. Run's error is for the command not starting
// (*StartError), ctx being done (wrapping ctx.Err()), or Emit/Started
// failing.
func Run(ctx context.Context, cmd *exec.Cmd, p Params) (*grove.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// The command (bwrap, or a plain process) dies with Grove, however
	// Grove dies: bwrap's --die-with-parent only ties the sandboxed
	// program to bwrap itself.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if len(p.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(p.Stdin)
	}
	// Wait also waits for the stdin copier; a command that never reads
	// stdin and leaves a child holding it must not block Wait forever.
	cmd.WaitDelay = drainGrace

	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("exec: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, &StartError{err}
	}
	pgid := cmd.Process.Pid
	var exited bool // set by the loop below, which is the only caller of kill
	kill := func() {
		if !exited || !p.KeepBackground {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}

	discard := p.StreamOnly && p.Emit != nil
	stdout := &capped{max: p.MaxOutput, discard: discard}
	stderr := &capped{max: p.MaxOutput, discard: discard}
	var chunks chan grove.Chunk
	if p.Emit != nil {
		chunks = make(chan grove.Chunk)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	stopEmit := make(chan struct{}) // closed when Run stops receiving chunks
	go pump(&readers, outR, stdout, grove.Stdout, chunks, stopEmit)
	go pump(&readers, errR, stderr, grove.Stderr, chunks, stopEmit)
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()

	var startErr error
	if p.Started != nil {
		if err := p.Started(pgid); err != nil {
			kill()
			startErr = err
		}
	}

	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()

	timer := time.NewTimer(p.Timeout)
	defer timer.Stop()
	var (
		waitErr         error
		drained         bool
		timedOut        bool
		ctxErr, emitErr error
		grace           <-chan time.Time
		ctxDone         = ctx.Done()
		timeoutC        = timer.C
	)
	for !exited || !drained {
		select {
		case c := <-chunks:
			if emitErr == nil {
				if err := p.Emit(c); err != nil {
					emitErr = err
					kill()
				}
			}
		case waitErr = <-waitDone:
			exited = true
			kill() // leftovers of the command's group die with it (unless KeepBackground)
			grace = time.After(drainGrace)
		case <-readersDone:
			drained = true
			readersDone = nil
		case <-grace:
			// Something outside the group still holds the pipes.
			outR.Close()
			errR.Close()
			grace = nil
		case <-timeoutC:
			timedOut = true
			timeoutC = nil
			kill()
		case <-ctxDone:
			ctxErr = ctx.Err()
			ctxDone = nil
			kill()
		}
	}
	close(stopEmit)
	outR.Close()
	errR.Close()

	switch {
	case startErr != nil:
		return nil, startErr
	case ctxErr != nil:
		return nil, fmt.Errorf("exec: %w", ctxErr)
	case emitErr != nil:
		return nil, emitErr
	}
	res := &grove.ExecResult{Duration: time.Since(start), TimedOut: timedOut}
	res.Stdout, res.StdoutOmitted = stdout.result()
	res.Stderr, res.StderrOmitted = stderr.result()
	res.Truncated = res.StdoutOmitted > 0 || res.StderrOmitted > 0
	switch {
	case timedOut:
		res.ExitCode = TimeoutExitCode
	default:
		res.ExitCode = exitCode(cmd.ProcessState, waitErr)
	}
	return res, nil
}

// exitCode follows the shell convention: 128+signal for a signalled
// process.
func exitCode(ps *os.ProcessState, waitErr error) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := ps.ExitCode(); code >= 0 {
		return code
	}
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// pump reads one pipe into its cap. The part under the cap is forwarded to
// chunks (when streaming) as a private copy; the rest is only counted, and
// reading continues so the command is never blocked by a full pipe.
func pump(wg *sync.WaitGroup, r io.Reader, c *capped, s grove.Stream, chunks chan<- grove.Chunk, stop <-chan struct{}) {
	defer wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			kept := c.write(buf[:n])
			if chunks != nil && len(kept) > 0 {
				select {
				case chunks <- grove.Chunk{Stream: s, Data: bytes.Clone(kept)}:
				case <-stop:
				}
			}
		}
		if err != nil {
			return
		}
	}
}
