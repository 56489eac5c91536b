package debug

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	grove "github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/procexec"
)

// LocalHost is a Host on this machine confined to one directory. Every
// process it starts leads its own process group, killed whole on Close, so
// an adapter's helpers die with it (a debuggee lldb starts outside the
// group is killed by KillProcess).
type LocalHost struct {
	dir string
	// Env, when non-nil, replaces os.Environ() as the base environment
	// (GROVE_API_KEY is still removed). Tests use it to hide adapters
	// from PATH.
	Env []string
}

// NewLocalHost returns a LocalHost rooted at dir, which must exist.
func NewLocalHost(dir string) (*LocalHost, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "workspace dir %q: %v", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	st, err := os.Stat(abs)
	if err != nil || !st.IsDir() {
		return nil, grove.Errorf(grove.ErrNotFound, "workspace dir %q is not a directory", dir)
	}
	return &LocalHost{dir: abs}, nil
}

// Root is the workspace directory.
func (h *LocalHost) Root() string { return h.dir }

// environ is the base environment plus add, minus Grove's own secret: the
// debuggee is agent code and must not see the API key.
func (h *LocalHost) environ(add map[string]string) []string {
	base := h.Env
	if base == nil {
		base = os.Environ()
	}
	out := make([]string, 0, len(base)+len(add))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GROVE_API_KEY" {
			continue
		}
		if _, over := add[k]; over {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range add {
		out = append(out, k+"="+v)
	}
	return out
}

// lookPath finds name on env's PATH rather than this process's, so that a
// Host's environment decides which adapters exist.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", grove.Errorf(grove.ErrNotInstalled, "%s: not found on PATH", name)
}

func (h *LocalHost) command(argv []string, env []string, dir string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, grove.Errorf(grove.ErrInvalid, "empty command")
	}
	bin, err := lookPath(argv[0], env)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = env
	cmd.Dir = dir
	return cmd, nil
}

// runMaxOutput bounds each stream of a Run (probes print a line or two).
const runMaxOutput = 1 << 20

// Run runs argv in Root through procexec (the process core of Grove's
// local runtimes): its own process group, killed whole at the timeout and
// when the command exits.
func (h *LocalHost) Run(ctx context.Context, argv []string, timeout time.Duration) (string, string, int, error) {
	cmd, err := h.command(argv, h.environ(nil), h.dir)
	if err != nil {
		return "", "", -1, err
	}
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	res, err := procexec.Run(ctx, cmd, procexec.Params{Timeout: timeout, MaxOutput: runMaxOutput})
	var se *procexec.StartError
	switch {
	case errors.As(err, &se):
		return "", "", -1, grove.Errorf(grove.ErrUnavailable, "%s: %v", argv[0], se.Err)
	case err != nil:
		return "", "", -1, err
	case res.TimedOut:
		return string(res.Stdout), string(res.Stderr), -1, grove.Errorf(grove.ErrTimeout, "%s: timed out after %s", argv[0], timeout)
	}
	return string(res.Stdout), string(res.Stderr), res.ExitCode, nil
}

// confine resolves a workspace-relative path, refusing escapes.
func confine(root, rel string) (string, error) {
	if rel == "" {
		return root, nil
	}
	p := rel
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	if p != root && !strings.HasPrefix(p, root+string(filepath.Separator)) {
		return "", grove.Errorf(grove.ErrPathOutside, "%q is outside the workspace", rel)
	}
	return p, nil
}

// Spawn starts argv in dir with its stdio piped, through procexec.Spawn:
// its own process group, killed whole on Close and when the adapter exits.
// ctx bounds the start only: the adapter lives until Close.
func (h *LocalHost) Spawn(ctx context.Context, argv []string, env map[string]string, dir string) (Process, error) {
	wd, err := confine(h.dir, dir)
	if err != nil {
		return nil, err
	}
	cmd, err := h.command(argv, h.environ(env), wd)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := procexec.Spawn(context.WithoutCancel(ctx), cmd, procexec.SpawnParams{MaxStderr: stderrKeep})
	if err != nil {
		return nil, grove.Errorf(grove.ErrUnavailable, "%s: %v", argv[0], err)
	}
	return &localProcess{p: p}, nil
}

// ReadFile reads a file confined to the workspace.
func (h *LocalHost) ReadFile(ctx context.Context, rel string) ([]byte, error) {
	p, err := confine(h.dir, rel)
	if err != nil {
		return nil, err
	}
	// A symlink inside the tree may still point out of it.
	if real, err := filepath.EvalSymlinks(p); err == nil {
		if _, err := confine(h.dir, real); err != nil {
			return nil, err
		}
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, grove.Errorf(grove.ErrNotFound, "%s not found", rel)
	}
	if err != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "%s: %v", rel, err)
	}
	return b, nil
}

// Dial dials addr from this machine.
func (h *LocalHost) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// stderrKeep bounds the adapter stderr kept; stderrTailMax is how much of
// its end error messages show.
const (
	stderrKeep    = 256 << 10
	stderrTailMax = 4096
)

// localProcess is a procexec.Proc as a Process.
type localProcess struct{ p *procexec.Proc }

func (l *localProcess) Read(b []byte) (int, error) {
	n, err := l.p.Stdout().Read(b)
	if err != nil && n == 0 && !errors.Is(err, io.EOF) {
		return 0, io.EOF // a closed process reads as ended
	}
	return n, err
}

func (l *localProcess) Write(b []byte) (int, error) { return l.p.Stdin().Write(b) }

// StderrTail is the end of the process's stderr.
func (l *localProcess) StderrTail() string {
	b := l.p.Stderr()
	if len(b) > stderrTailMax {
		b = b[len(b)-stderrTailMax:]
	}
	return strings.TrimSpace(string(b))
}

// Pid is the process id (its process group's too).
func (l *localProcess) Pid() int { return l.p.Pid() }

// Close kills the process group and reaps the process.
func (l *localProcess) Close() error { return l.p.Close() }

// KillProcess kills the debuggee the adapter reported when its session
// ends. It is called right after the adapter was killed, so the id has had
// no time to be reused by an unrelated process of the developer's.
func (h *LocalHost) KillProcess(pid int) {
	if pid > 1 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
