package tunnel

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/internal/procexec"
)

// run runs argv in dir with env through procexec: a process group of its
// own, capped output, the whole group killed at the timeout, at ctx's end
// and when emit fails — the same core as Grove's local runtimes, so a
// command through the tunnel ends, and reports its end, exactly as it
// would in a workspace (exit 124 at a timeout, 128+n for signal n).
func run(ctx context.Context, argv []string, dir string, env []string, p procexec.Params) (*grove.ExecResult, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	return procexec.Run(ctx, cmd, p)
}

// notFound reports whether err is a command that could not start because
// its program does not exist.
func notFound(err error) bool {
	var se *procexec.StartError
	return errors.As(err, &se) && (errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist))
}

// withoutDeadline is ctx without its deadline: cancelling ctx still
// cancels it, but ctx's deadline passing does not. The execute route turns
// the call's deadline into the command's own timeout, so that a command
// that runs out of time answers with its output and timed_out instead of
// an error.
func withoutDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel(context.Cause(ctx))
		}
	})
	return c, func() { stop(); cancel(nil) }
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
	timeout, maxOut, err := procexec.Validate(req)
	if err != nil {
		return nil, err
	}
	argv := req.Argv
	if req.Shell != "" {
		argv = []string{"/bin/sh", "-c", req.Shell}
	}
	dir, err := x.l.dirOf(req.Dir)
	if err != nil {
		return nil, err
	}
	if req.Timeout <= 0 {
		timeout = execDefaultTimeout
	}
	if req.MaxOutput <= 0 {
		maxOut = MaxOutputBytes
	}
	res, err := run(ctx, argv, dir, cleanEnv(req.Env), procexec.Params{
		Stdin: req.Stdin, Timeout: timeout, MaxOutput: maxOut, Emit: emit, StreamOnly: req.StreamOnly,
	})
	if notFound(err) {
		// As a shell reports it: execpath and search read 127 as "not
		// installed".
		return &grove.ExecResult{ExitCode: 127, Stdout: []byte{}, Stderr: []byte(argv[0] + ": not found\n")}, nil
	}
	return res, err
}
