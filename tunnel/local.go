package tunnel

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/internal/procexec"
)

// Limits of the local routes.
const (
	MaxFileBytes   = 8 << 20 // fs/read and fs/write content
	MaxOutputBytes = 1 << 20 // each of a command's stdout and stderr
)

// Local is the directory a tunnel agent serves, and its routes.
type Local struct {
	ReadOnly bool

	fs        *fsops.FS
	tmpDir    string // removed by Close when Local made it
	workspace string
	log       *slog.Logger
	term      *terminal // nil: no mirror
	sessions  sessions
	dbg       localDebug
	closeOnce sync.Once
	closeErr  error
}

// LocalOptions configure OpenLocalWith.
type LocalOptions struct {
	ReadOnly bool
	// Workspace is the registered name: the terminal's tmux session is
	// grove-<Workspace>, and it is on the log lines.
	Workspace string
	// Terminal is the mirror of the commands; without Workspace, or
	// Disabled, there is none. A read-only tunnel runs no command and has
	// none either.
	Terminal TerminalOptions
	Log      *slog.Logger // nil discards
}

// OpenLocal confines every route to dir, with no terminal mirror (see
// OpenLocalWith).
func OpenLocal(dir string, readOnly bool) (*Local, error) {
	return OpenLocalWith(dir, LocalOptions{ReadOnly: readOnly})
}

// OpenLocalWith confines every route to dir. Writes keep their temporary
// files in a directory of their own outside dir on the same filesystem
// (under os.TempDir() when that is, else beside dir), as fsops requires; a
// read-only Local has none.
func OpenLocalWith(dir string, o LocalOptions) (*Local, error) {
	l, err := openLocal(dir, o.ReadOnly)
	if err != nil {
		return nil, err
	}
	l.workspace, l.log = o.Workspace, o.Log
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.log = l.log.With("workspace", o.Workspace)
	if !o.ReadOnly && o.Workspace != "" && !o.Terminal.Disabled {
		if l.term, err = openTerminal(o.Workspace, l.fs.Dir(), o.Terminal, l.log); err != nil {
			l.log.Warn("tunnel: no terminal mirror", "err", err)
			l.term = nil
		}
	}
	return l, nil
}

func openLocal(dir string, readOnly bool) (*Local, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("tunnel: %s is not a directory", dir)
	}
	l := &Local{ReadOnly: readOnly, log: slog.New(slog.DiscardHandler)}
	if readOnly {
		l.fs, err = fsops.Open(real, fsops.Options{})
		return l, err
	}
	// First choice: the system's temporary directory, if it is on the
	// checkout's filesystem; then a hidden directory beside the checkout.
	if tmp, err := os.MkdirTemp("", "grove-tunnel-"); err == nil {
		if l.fs, err = fsops.Open(real, fsops.Options{TempDir: tmp}); err == nil {
			l.tmpDir = tmp
			return l, nil
		}
		os.Remove(tmp)
	}
	tmp := filepath.Join(filepath.Dir(real), "."+filepath.Base(real)+".grove-tunnel-tmp")
	if l.fs, err = fsops.Open(real, fsops.Options{TempDir: tmp}); err != nil {
		return nil, err
	}
	l.tmpDir = tmp
	return l, nil
}

// Dir is the served directory, symlinks resolved.
func (l *Local) Dir() string { return l.fs.Dir() }

// TerminalWhere says how the developer watches the agent's commands (a
// tmux attach command and the log file), or "" without a mirror.
func (l *Local) TerminalWhere() string {
	if l.term == nil {
		return ""
	}
	return l.term.Where()
}

// Close kills the async commands still running, ends the terminal
// mirror, releases the directory and removes the temporary directory (if
// empty).
func (l *Local) Close() error {
	l.closeOnce.Do(func() {
		l.sessions.killAll()
		l.closeDebug()
		l.term.close()
		l.closeErr = l.fs.Close()
		if l.tmpDir != "" {
			os.Remove(l.tmpDir)
		}
	})
	return l.closeErr
}

// Routes adds the local routes to d.
func (l *Local) Routes(d *Dispatcher) {
	d.Handle(RouteExecute, l.execute)
	d.HandlePrefix(RouteSessionPrefix, l.sessionRoute)
	d.Handle(RouteRead, l.read)
	d.Handle(RouteWrite, l.write)
	d.Handle(RouteList, l.list)
	d.Handle(RouteDelete, l.delete)
	d.Handle(RouteSearch, l.search)
	d.Handle(RouteGitStatus, l.gitStatus)
	d.Handle(RouteGitDiff, l.gitDiff)
	d.Handle(RouteGitLog, l.gitLog)
	d.Handle(RouteGitCommit, l.gitCommit)
	l.debugRoutes(d)
}

func decode(payload json.RawMessage, v any) error {
	if len(payload) == 0 || string(payload) == "null" {
		payload = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return grove.Errorf(grove.ErrInvalid, "payload: %s", clip(err.Error(), 200))
	}
	return nil
}

func (l *Local) execute(ctx context.Context, payload json.RawMessage) (any, error) {
	if l.ReadOnly {
		return nil, grove.Errorf(grove.ErrReadOnly, "this tunnel is read-only: commands are refused")
	}
	var req ExecRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	var argv []string
	cmdline := req.Shell
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return nil, grove.Errorf(grove.ErrInvalid, "give argv or shell, not both")
	case len(req.Argv) > 0:
		if req.Argv[0] == "" {
			return nil, grove.Errorf(grove.ErrInvalid, "argv[0] is empty")
		}
		argv, cmdline = req.Argv, shellQuote(req.Argv)
	case req.Shell != "":
		argv = []string{"/bin/sh", "-c", req.Shell}
	default:
		return nil, grove.Errorf(grove.ErrInvalid, "argv or shell is required")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, grove.Errorf(grove.ErrInvalid, "the command contains a NUL byte")
		}
	}
	if err := procexec.CheckEnv(req.Env); err != nil {
		return nil, err
	}
	if req.TimeoutMS < 0 || req.MaxOutput < 0 {
		return nil, grove.Errorf(grove.ErrInvalid, "timeout_ms and max_output must not be negative")
	}
	dir, err := l.dirOf(req.Cwd)
	if err != nil {
		return nil, err
	}
	maxOut := req.MaxOutput
	if maxOut <= 0 || maxOut > MaxOutputBytes {
		maxOut = MaxOutputBytes
	}
	env := withEnv(agentEnv(), req.Env)
	// The developer's own machine: a server the command starts in the
	// background keeps running after it exits.
	p := procexec.Params{MaxOutput: maxOut, KeepBackground: true}
	if req.Stdin != "" {
		p.Stdin = []byte(req.Stdin)
	}
	var mirror *mirrorCmd
	if !req.Hidden {
		note := ""
		if req.Async {
			note = "async"
		}
		mirror = l.term.begin(cmdline, note)
	}
	if req.Async {
		return l.startAsync(req, argv, dir, env, p, mirror)
	}
	p.Timeout = MaxAsyncTimeout
	if req.TimeoutMS > 0 {
		p.Timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	runCtx := ctx
	if dl, ok := ctx.Deadline(); ok {
		// The call's deadline is the command's timeout as well.
		p.Timeout = max(min(p.Timeout, time.Until(dl)), time.Millisecond)
		var cancel context.CancelFunc
		runCtx, cancel = withoutDeadline(ctx)
		defer cancel()
	}
	if mirror != nil {
		p.Emit = func(c grove.Chunk) error { mirror.output(c.Data); return nil }
	}
	r, err := run(runCtx, argv, dir, env, p)
	switch {
	case errors.Is(err, context.Canceled):
		if mirror != nil {
			mirror.t.write([]byte("[cancelled: the command was killed]\n"))
		}
		return nil, &Error{Code: "E_CANCELLED", Message: "the call was cancelled; the command was killed"}
	case err != nil:
		return nil, l.startFailed(argv, mirror, err)
	}
	res := execResult(r)
	mirror.end(res, res.Truncated)
	return res, nil
}

// execResult is the route's rendering of a command's end.
func execResult(r *grove.ExecResult) ExecResult {
	return ExecResult{
		ExitCode: r.ExitCode, Stdout: strings.ToValidUTF8(string(r.Stdout), "\uFFFD"), Stderr: strings.ToValidUTF8(string(r.Stderr), "\uFFFD"),
		DurationMS: r.Duration.Milliseconds(), TimedOut: r.TimedOut,
		Truncated: r.Truncated, StdoutOmitted: r.StdoutOmitted, StderrOmitted: r.StderrOmitted,
	}
}

func (l *Local) startFailed(argv []string, mirror *mirrorCmd, err error) error {
	var se *procexec.StartError
	if notFound(err) {
		err = grove.Errorf(grove.ErrNotInstalled, "%s: command not found", clip(argv[0], 200))
	} else if errors.As(err, &se) {
		err = grove.Errorf(grove.ErrInvalid, "starting the command: %s", clip(err.Error(), 300))
	}
	if mirror != nil {
		mirror.t.write([]byte("[not started: " + errorOf(err).Message + "]\n"))
	}
	return err
}

// startAsync starts p as a session and answers with its id. The command
// runs on after the call answered, bounded by its own timeout (at most
// MaxAsyncTimeout) and by the agent's life.
func (l *Local) startAsync(req ExecRequest, argv []string, dir string, env []string, p procexec.Params, mirror *mirrorCmd) (any, error) {
	p.Timeout = MaxAsyncTimeout
	if req.TimeoutMS > 0 {
		p.Timeout = min(time.Duration(req.TimeoutMS)*time.Millisecond, MaxAsyncTimeout)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{id: newSessionID(), started: time.Now(), running: true, done: make(chan struct{}), cancel: cancel}
	if err := l.sessions.add(s); err != nil {
		cancel()
		if mirror != nil {
			mirror.t.write([]byte("[refused: " + err.Error() + "]\n"))
		}
		return nil, err
	}
	p.StreamOnly = true // the session holds the output
	p.Emit = func(c grove.Chunk) error {
		mirror.output(c.Data)
		return s.append(c)
	}
	started := make(chan error, 1)
	p.Started = func(pgid int) error {
		s.mu.Lock()
		s.pgid = pgid
		s.mu.Unlock()
		started <- nil
		return nil
	}
	log := l.log.With("session_id", s.id)
	go func() {
		defer cancel()
		r, err := run(ctx, argv, dir, env, p)
		finish := func(res *ExecResult) {
			s.mu.Lock()
			s.result, s.running, s.finishedAt = res, false, time.Now()
			s.mu.Unlock()
			close(s.done)
		}
		if errors.Is(err, context.Canceled) {
			// killAll: the agent is stopping.
			finish(&ExecResult{ExitCode: 128 + int(syscall.SIGKILL), DurationMS: time.Since(s.started).Milliseconds()})
			log.Info("tunnel: async command killed: the agent is stopping")
			return
		}
		if err != nil {
			finish(&ExecResult{ExitCode: -1})
			select {
			case started <- l.startFailed(argv, mirror, err):
				// Not started: the call answers with the error, and
				// there is no session.
				l.sessions.remove(s.id)
			default:
				log.Warn("tunnel: async command failed", "err", clip(err.Error(), 300))
			}
			return
		}
		res := execResult(r)
		res.Stdout, res.Stderr = "", ""
		mirror.end(res, res.Truncated)
		finish(&res)
		log.Info("tunnel: async command ended", "exit_code", res.ExitCode, "timed_out", res.TimedOut, "duration_ms", res.DurationMS)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	log.Info("tunnel: async command started", "timeout_ms", p.Timeout.Milliseconds())
	return AsyncStarted{SessionID: s.id}, nil
}

// agentEnv is the agent's environment without its API key: the commands
// the server asks for never see it.
func agentEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GROVE_API_KEY=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (l *Local) read(ctx context.Context, payload json.RawMessage) (any, error) {
	var req ReadRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	b, err := l.fs.ReadFile(req.Path, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	fc := ReadResult{Path: req.Path, Size: int64(len(b)), Encoding: "utf-8", Content: string(b)}
	if !utf8.Valid(b) {
		fc.Encoding, fc.Content = "base64", base64.StdEncoding.EncodeToString(b)
	}
	return fc, nil
}

func (l *Local) write(ctx context.Context, payload json.RawMessage) (any, error) {
	if l.ReadOnly {
		return nil, grove.Errorf(grove.ErrReadOnly, "this tunnel is read-only: writes are refused")
	}
	var req WriteRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	data := []byte(req.Content)
	switch req.Encoding {
	case "", "utf-8":
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(req.Content); err != nil {
			return nil, grove.Errorf(grove.ErrInvalid, "content is not valid base64")
		}
	default:
		return nil, grove.Errorf(grove.ErrInvalid, "encoding must be utf-8 or base64")
	}
	if len(data) > MaxFileBytes {
		return nil, grove.Errorf(grove.ErrTooLarge, "content is over %d bytes", MaxFileBytes)
	}
	if err := l.fs.WriteFile(req.Path, data, 0o644); err != nil {
		return nil, err
	}
	return WriteResult{Path: req.Path, Bytes: len(data)}, nil
}
