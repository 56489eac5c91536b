package tunnel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
)

// drainGrace bounds how long a command's output pipes are read after its
// process exited: a background child that keeps them open must not hold
// the answer back. Completion is the exit, never the end of output.
const drainGrace = time.Second

// procParams describe one process the agent runs on this machine.
type procParams struct {
	argv    []string
	dir     string // absolute
	env     []string
	stdin   []byte        // nil: the null device
	timeout time.Duration // 0: only ctx bounds it
	max     int           // per stream, > 0
	// keep holds the output (under the cap) in the result; without it
	// output only reaches emit (grove.ExecRequest.StreamOnly).
	keep bool
	// emit receives each piece of output that fits under the cap, one
	// call at a time. An error kills the command.
	emit func(grove.Chunk) error
	// started learns the process group id right after the start.
	started func(pgid int)
	// killLeftovers kills the whole group when the command exits, so
	// nothing it left in the background outlives it (Grove's own git and
	// rg commands). The route's commands leave it unset: a server the
	// developer's command started in the background keeps running.
	killLeftovers bool
}

// procResult is how a process ended.
type procResult struct {
	exit                   int // -1: ended by a signal
	signal                 syscall.Signal
	timedOut               bool // its own timeout, or ctx's deadline
	cancelled              bool // ctx cancelled (not its deadline)
	stdout, stderr         []byte
	stdoutOmit, stderrOmit int64
	duration               time.Duration
}

// errStart is a command that could not be started.
type errStart struct{ err error }

func (e errStart) Error() string { return e.err.Error() }
func (e errStart) Unwrap() error { return e.err }

// runProc runs p in a process group of its own and waits for its exit.
// The whole group is killed (SIGKILL) at the timeout, at ctx's end and
// when emit fails. A non-zero exit is a result; the error is for a
// command that did not start (errStart) or an emit failure.
func runProc(ctx context.Context, p procParams) (*procResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir, cmd.Env = p.dir, p.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.stdin != nil {
		cmd.Stdin = bytes.NewReader(p.stdin)
	}
	cmd.WaitDelay = drainGrace // the stdin copier, if a child holds stdin

	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, errStart{err}
	}
	pgid := cmd.Process.Pid
	var exitedMu sync.Mutex
	exited := false
	kill := func() {
		exitedMu.Lock()
		defer exitedMu.Unlock()
		if !exited || p.killLeftovers {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	if p.started != nil {
		p.started(pgid)
	}

	stdout := &capped{max: p.max, keep: p.keep}
	stderr := &capped{max: p.max, keep: p.keep}
	var emitMu sync.Mutex
	var emitErr error
	emitFailed := make(chan struct{})
	emit := func(c grove.Chunk) {
		if p.emit == nil {
			return
		}
		emitMu.Lock()
		defer emitMu.Unlock()
		if emitErr != nil {
			return
		}
		if err := p.emit(c); err != nil {
			emitErr = err
			close(emitFailed)
		}
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go pump(&readers, outR, stdout, grove.Stdout, emit)
	go pump(&readers, errR, stderr, grove.Stderr, emit)
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()

	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()

	var timeoutC <-chan time.Time
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	var (
		res       = &procResult{}
		waitErr   error
		done, dr  bool
		grace     <-chan time.Time
		ctxDone   = ctx.Done()
		emitFailC = (<-chan struct{})(emitFailed)
	)
	for !done || !dr {
		select {
		case waitErr = <-waitDone:
			done = true
			exitedMu.Lock()
			exited = true
			exitedMu.Unlock()
			if p.killLeftovers {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			grace = time.After(drainGrace)
		case <-drained:
			dr = true
			drained = nil
		case <-grace:
			// Something outside the command still holds the pipes.
			outR.Close()
			errR.Close()
			grace = nil
		case <-timeoutC:
			res.timedOut = true
			timeoutC = nil
			kill()
		case <-ctxDone:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				res.timedOut = true
			} else {
				res.cancelled = true
			}
			ctxDone = nil
			kill()
		case <-emitFailC:
			emitFailC = nil
			kill()
		}
	}
	outR.Close()
	errR.Close()
	res.duration = time.Since(start)
	res.stdout, res.stdoutOmit = stdout.result()
	res.stderr, res.stderrOmit = stderr.result()
	res.exit = -1
	if ps := cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.signal = ws.Signal()
		} else {
			res.exit = ps.ExitCode()
		}
	} else if waitErr != nil {
		return nil, waitErr
	}
	emitMu.Lock()
	defer emitMu.Unlock()
	if emitErr != nil {
		return res, emitErr
	}
	return res, nil
}

// pump reads one pipe into its cap, forwarding what fits to emit; the
// rest is counted, and reading goes on so a full pipe never blocks the
// command.
func pump(wg *sync.WaitGroup, r io.Reader, c *capped, s grove.Stream, emit func(grove.Chunk)) {
	defer wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if kept := c.write(buf[:n]); len(kept) > 0 {
				emit(grove.Chunk{Stream: s, Data: bytes.Clone(kept)})
			}
		}
		if err != nil {
			return
		}
	}
}

// capped keeps the first max bytes written to it (when keep is set) and
// counts the rest.
type capped struct {
	mu      sync.Mutex
	max     int
	keep    bool
	kept    int
	buf     []byte
	omitted int64
}

func (c *capped) write(p []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := max(c.max-c.kept, 0)
	keep := p[:min(len(p), room)]
	c.kept += len(keep)
	if c.keep {
		c.buf = append(c.buf, keep...)
	}
	c.omitted += int64(len(p) - len(keep))
	return keep
}

func (c *capped) result() ([]byte, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf == nil {
		return []byte{}, c.omitted
	}
	return c.buf, c.omitted
}

// cleanEnv is the environment of the commands Grove runs for itself (git,
// rg): the agent's PATH, HOME (the developer's git identity and
// configuration), user and locale, then extra. Nothing else of the
// agent's environment — no GIT_DIR, no RIPGREP_CONFIG_PATH, no API key.
func cleanEnv(extra map[string]string) []string {
	m := map[string]string{"TERM": "dumb"}
	for _, k := range []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "XDG_CONFIG_HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			m[k] = v
		}
	}
	if m["PATH"] == "" {
		m["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	for k, v := range extra {
		m[k] = v
	}
	return sortedEnv(m)
}

func sortedEnv(m map[string]string) []string {
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// withEnv is base with extra set (replacing any earlier value).
func withEnv(base []string, extra map[string]string) []string {
	if len(extra) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := extra[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

// checkEnv refuses variable names that are not shell identifiers and
// values with NUL.
func checkEnv(env map[string]string) error {
	for k, v := range env {
		ok := k != ""
		for i, c := range k {
			if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' && i > 0) {
				ok = false
			}
		}
		if !ok {
			return grove.Errorf(grove.ErrInvalid, "invalid environment variable name %q", clip(k, 100))
		}
		if strings.IndexByte(v, 0) >= 0 {
			return grove.Errorf(grove.ErrInvalid, "environment variable %s contains a NUL byte", clip(k, 100))
		}
	}
	return nil
}

// dirOf checks a directory-relative cwd (through fsops: no symlink out,
// no .git) and returns its absolute path.
func (l *Local) dirOf(rel string) (string, error) {
	if rel == "" {
		rel = "."
	}
	clean, err := fsops.CleanPath(rel)
	if err != nil {
		return "", err
	}
	st, err := l.fs.Stat(clean)
	if err != nil {
		return "", err
	}
	if !st.IsDir {
		return "", grove.Errorf(grove.ErrInvalid, "cwd %q is not a directory", clip(rel, 200))
	}
	return filepath.Join(l.fs.Dir(), clean), nil
}

// localExecer runs Grove's own commands (git, rg) in the served directory:
// it is the execpath.Execer and search.StreamExecer of a tunnel, as a
// runtime is of a server workspace. The environment is clean (cleanEnv
// plus the request's), stdin the request's or the null device, the
// command in a process group of its own that is killed whole at the
// timeout and when the command exits. The workspace id is ignored.
type localExecer struct{ l *Local }

// execDefaultTimeout applies to Grove's own commands without a timeout;
// the call's deadline bounds them as well.
const execDefaultTimeout = 10 * time.Minute

func (x localExecer) Exec(ctx context.Context, id string, req grove.ExecRequest) (*grove.ExecResult, error) {
	return x.ExecStream(ctx, id, req, nil)
}

func (x localExecer) ExecStream(ctx context.Context, _ string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	argv := req.Argv
	switch {
	case len(argv) > 0 && req.Shell != "":
		return nil, grove.Errorf(grove.ErrInvalid, "exec: set argv or shell, not both")
	case req.Shell != "":
		argv = []string{"/bin/sh", "-c", req.Shell}
	case len(argv) == 0 || argv[0] == "":
		return nil, grove.Errorf(grove.ErrInvalid, "exec: empty command")
	}
	if err := checkEnv(req.Env); err != nil {
		return nil, err
	}
	dir, err := x.l.dirOf(req.Dir)
	if err != nil {
		return nil, err
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = execDefaultTimeout
	}
	maxOut := req.MaxOutput
	if maxOut <= 0 {
		maxOut = MaxOutputBytes
	}
	p := procParams{
		argv: argv, dir: dir, env: cleanEnv(req.Env), stdin: req.Stdin,
		timeout: timeout, max: maxOut, keep: !(req.StreamOnly && emit != nil),
		emit: emit, killLeftovers: true,
	}
	r, err := runProc(ctx, p)
	var se errStart
	switch {
	case errors.As(err, &se):
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			// As a shell reports it: execpath and search read 127 as
			// "not installed".
			return &grove.ExecResult{ExitCode: 127, Stdout: []byte{}, Stderr: []byte(argv[0] + ": not found\n")}, nil
		}
		return nil, fmt.Errorf("exec: %w", err)
	case err != nil:
		return nil, err
	case r.cancelled:
		return nil, fmt.Errorf("exec: %w", context.Canceled)
	}
	res := &grove.ExecResult{
		ExitCode: r.exit, Stdout: r.stdout, Stderr: r.stderr, TimedOut: r.timedOut,
		StdoutOmitted: r.stdoutOmit, StderrOmitted: r.stderrOmit, Duration: r.duration,
	}
	if r.signal != 0 {
		res.ExitCode = 128 + int(r.signal)
	}
	res.Truncated = res.StdoutOmitted > 0 || res.StderrOmitted > 0
	return res, nil
}
