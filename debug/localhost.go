package debug

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	grove "github.com/grove-dev/grove"
)

// LocalHost is a Host on this machine confined to one directory. Every
// process it starts leads its own process group, killed whole on Close, so
// an adapter's helpers (lldb-server, the debuggee) die with it.
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, nil
}

// Run runs argv in Root, killing its whole process group on timeout.
func (h *LocalHost) Run(ctx context.Context, argv []string, timeout time.Duration) (string, string, int, error) {
	env := h.environ(nil)
	cmd, err := h.command(argv, env, h.dir)
	if err != nil {
		return "", "", -1, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Background helpers holding our pipes must not keep Run waiting.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return "", "", -1, grove.Errorf(grove.ErrUnavailable, "%s: %v", argv[0], err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		return stdout.String(), stderr.String(), -1, grove.Errorf(grove.ErrTimeout, "%s: timed out after %s", argv[0], timeout)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return stdout.String(), stderr.String(), exit.ExitCode(), nil
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return stdout.String(), stderr.String(), -1, grove.Errorf(grove.ErrUnavailable, "%s: %v", argv[0], err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode(), nil
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

// Spawn starts argv in dir with its stdio piped. Pipes are made by hand
// (not cmd.StdoutPipe) so that reaping the process never closes stdout
// under a reader still draining the adapter's last messages.
func (h *LocalHost) Spawn(ctx context.Context, argv []string, env map[string]string, dir string) (Process, error) {
	wd, err := confine(h.dir, dir)
	if err != nil {
		return nil, err
	}
	cmd, err := h.command(argv, h.environ(env), wd)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, grove.Errorf(grove.ErrUnavailable, "%s: %v", argv[0], err)
	}
	p := &localProcess{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{})}
	go p.drainStderr(errR)
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
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

// stderrTailMax bounds the adapter stderr kept for error messages.
const stderrTailMax = 4096

type localProcess struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	exited chan struct{}

	mu   sync.Mutex
	tail []byte
	once sync.Once
}

func (p *localProcess) Read(b []byte) (int, error)  { return p.stdout.Read(b) }
func (p *localProcess) Write(b []byte) (int, error) { return p.stdin.Write(b) }

func (p *localProcess) drainStderr(r io.ReadCloser) {
	defer r.Close()
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.tail = append(p.tail, buf[:n]...)
			if len(p.tail) > stderrTailMax {
				p.tail = p.tail[len(p.tail)-stderrTailMax:]
			}
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// StderrTail is the end of the process's stderr.
func (p *localProcess) StderrTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.TrimSpace(string(p.tail))
}

// Pid is the process id (its process group's too).
func (p *localProcess) Pid() int { return p.cmd.Process.Pid }

// Close kills the process group and reaps the process.
func (p *localProcess) Close() error {
	p.once.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
		}
		p.stdout.Close()
	})
	return nil
}

// KillProcess kills the debuggee the adapter reported when its session
// ends. It is called right after the adapter was killed, so the id has had
// no time to be reused by an unrelated process of the developer's.
func (h *LocalHost) KillProcess(pid int) {
	if pid > 1 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
