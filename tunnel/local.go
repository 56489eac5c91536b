package tunnel

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
)

// Limits of the local routes.
const (
	MaxFileBytes   = 8 << 20 // fs/read and fs/write content
	MaxOutputBytes = 1 << 20 // each of a command's stdout and stderr
)

// Local is the directory a tunnel agent serves, and its routes.
type Local struct {
	ReadOnly bool

	fs     *fsops.FS
	tmpDir string // removed by Close when Local made it
}

// OpenLocal confines every route to dir. Writes keep their temporary files
// in a directory of their own outside dir on the same filesystem (under
// os.TempDir() when that is, else beside dir), as fsops requires; a
// read-only Local has none.
func OpenLocal(dir string, readOnly bool) (*Local, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("tunnel: %s is not a directory", dir)
	}
	l := &Local{ReadOnly: readOnly}
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

// Close releases the directory and removes the temporary directory (if
// empty).
func (l *Local) Close() error {
	err := l.fs.Close()
	if l.tmpDir != "" {
		os.Remove(l.tmpDir)
	}
	return err
}

// Routes adds the local routes to d.
func (l *Local) Routes(d *Dispatcher) {
	d.Handle(RouteExecute, l.execute)
	d.Handle(RouteRead, l.read)
	d.Handle(RouteWrite, l.write)
}

func decode(payload json.RawMessage, v any) error {
	if len(payload) == 0 {
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
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return nil, grove.Errorf(grove.ErrInvalid, "give argv or shell, not both")
	case len(req.Argv) > 0:
		argv = req.Argv
	case req.Shell != "":
		argv = []string{"/bin/sh", "-c", req.Shell}
	default:
		return nil, grove.Errorf(grove.ErrInvalid, "argv or shell is required")
	}
	rel := req.Cwd
	if rel == "" {
		rel = "."
	}
	clean, err := fsops.CleanPath(rel)
	if err != nil {
		return nil, err
	}
	st, err := l.fs.Stat(clean)
	if err != nil {
		return nil, err
	}
	if !st.IsDir {
		return nil, grove.Errorf(grove.ErrInvalid, "cwd %q is not a directory", clip(rel, 200))
	}
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}

	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = filepath.Join(l.fs.Dir(), clean)
	cmd.Env = agentEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The whole process group dies at the deadline, not just the leader.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Completion is the process's exit: a background child still holding
	// stdout does not keep the call open past this.
	cmd.WaitDelay = time.Second
	var stdout, stderr capBuffer
	stdout.max, stderr.max = MaxOutputBytes, MaxOutputBytes
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	res := ExecResult{DurationMS: time.Since(start).Milliseconds(), TimedOut: ctx.Err() != nil,
		Stdout: stdout.String(), Stderr: stderr.String(), Truncated: stdout.over || stderr.over}
	var ee *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		if cmd.ProcessState != nil {
			res.ExitCode = cmd.ProcessState.ExitCode()
		}
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode() // -1 when killed by a signal
	case res.TimedOut:
		res.ExitCode = -1
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return nil, grove.Errorf(grove.ErrNotInstalled, "%s: command not found", clip(argv[0], 200))
	default:
		return nil, grove.Errorf(grove.ErrInvalid, "starting the command: %s", clip(err.Error(), 300))
	}
	return res, nil
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

type capBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	max  int
	over bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := c.max - c.b.Len(); room < len(p) {
		c.over = true
		p = p[:max(room, 0)]
	}
	c.b.Write(p)
	return n, nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToValidUTF8(c.b.String(), "\uFFFD")
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
