package gitrepo

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grove-dev/grove"
)

// Git runs the host's git binary the safe way (after gitea's git module):
// options and operands separated by "--" (or --end-of-options), a clean
// environment, hooks and credential helpers disabled through forced config,
// tokens passed only through the environment, stderr classified into
// grove error kinds, and every message redacted. The zero value is usable.
type Git struct {
	// Binary is the git executable; "" finds "git" on PATH.
	Binary string
	// Home is HOME for git: an empty directory Grove owns. "" means
	// /nonexistent, so no ~/.gitconfig, ~/.netrc or credential store is
	// ever consulted.
	Home string
	// Logger receives one debug line per git call, redacted; nil discards.
	Logger *slog.Logger
	// Identity is the default author and committer of Commit.
	Identity Identity
}

// forcedConfig is applied to every git call through GIT_CONFIG_COUNT, which
// outranks every config file, so a repository's own .git/config cannot turn
// hooks, fsmonitor, credential helpers or exotic transports back on.
var forcedConfig = [][2]string{
	{"core.hooksPath", "/dev/null"}, // repository hooks never run on the host
	{"core.fsmonitor", "false"},     // fsmonitor is a program named by config
	{"core.askPass", ""},
	{"credential.helper", ""}, // resets the helper list
	{"protocol.ext.allow", "never"},
	{"protocol.file.allow", "always"}, // local repos are first-class
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"gc.auto", "0"}, // caches are maintained explicitly, never mid-request
}

// git clears GIT_CONFIG_COUNT for the upload-pack and receive-pack it
// starts on a local repository, so those get the settings that matter on
// their own command line.
const (
	hardenedUploadPack  = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false upload-pack"
	hardenedReceivePack = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false receive-pack"
)

// call is one git invocation.
type call struct {
	args     []string // everything after "git"; untrusted values only after "--" or validated
	dir      string   // working directory
	env      []string // extra KEY=VALUE (GIT_DIR, identities)
	stdin    io.Reader
	stdout   io.Writer   // nil: captured and returned
	token    string      // per-call credential, sent as an HTTP header via env config
	config   [][2]string // extra forced config (SourcePolicy.FetchConfig)
	progress io.Writer   // receives redacted stderr lines when set
}

// run executes c and returns its stdout. A non-zero exit becomes an *Error
// whose Kind is classified from stderr.
func (g *Git) run(ctx context.Context, c call) ([]byte, error) {
	red := newRedactor(c.token)
	bin := g.Binary
	if bin == "" {
		bin = "git"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, grove.Errorf(grove.ErrNotInstalled, "git is not installed: %v", err)
	}
	cmd := exec.CommandContext(ctx, path, c.args...)
	cmd.Dir = c.dir
	cmd.Env = append(g.environ(c.token, c.config...), c.env...)
	if c.dir != "" && !hasEnv(c.env, "GIT_DIR") {
		// Calls without an explicit repository (clone) must not discover
		// one above their working directory and read its config.
		cmd.Env = append(cmd.Env, "GIT_CEILING_DIRECTORIES="+filepath.Dir(c.dir))
	}
	cmd.Stdin = c.stdin
	setProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second

	var stdout bytes.Buffer
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	} else {
		cmd.Stdout = &stdout
	}
	stderr := &tailBuffer{max: 64 << 10}
	if c.progress != nil {
		pw := &lineRedactor{w: c.progress, red: red}
		defer pw.flush()
		cmd.Stderr = io.MultiWriter(stderr, pw)
	} else {
		cmd.Stderr = stderr
	}

	start := time.Now()
	err = cmd.Run()
	dur := time.Since(start)
	log := g.logger()
	if err == nil {
		log.Debug("git", "args", red.args(c.args), "dir", c.dir, "duration", dur)
		return stdout.Bytes(), nil
	}
	gerr := &Error{Args: red.args(c.args), Stderr: red.redact(strings.TrimSpace(stderr.String())), ExitCode: -1}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		gerr.ExitCode = exit.ExitCode()
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		gerr.Kind = grove.ErrTimeout
	case ctx.Err() != nil:
		gerr.Kind = ctx.Err()
	default:
		gerr.Kind = classify(gerr.Stderr)
	}
	if gerr.ExitCode < 0 && ctx.Err() == nil {
		gerr.Stderr = red.redact(err.Error())
	}
	log.Debug("git failed", "args", gerr.Args, "dir", c.dir, "duration", dur, "exit", gerr.ExitCode, "stderr", gerr.Stderr)
	return stdout.Bytes(), gerr
}

func (g *Git) logger() *slog.Logger {
	if g.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return g.Logger
}

// environ builds git's whole environment; nothing is inherited but PATH.
func (g *Git) environ(token string, extra ...[2]string) []string {
	home := g.Home
	if home == "" {
		home = "/nonexistent"
	}
	pathEnv := os.Getenv("PATH")
	if pathEnv == "" {
		pathEnv = "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{
		"PATH=" + pathEnv,
		"HOME=" + home,
		"LANG=C",
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_SSH_COMMAND=ssh -o BatchMode=yes",
		"GIT_LITERAL_PATHSPECS=1", // caller paths are names, never globs or :(magic)
		"GIT_NO_REPLACE_OBJECTS=1",
	}
	cfg := forcedConfig
	if token != "" {
		cfg = append(cfg[:len(cfg):len(cfg)], [2]string{"http.extraHeader", authHeader(token)})
	}
	cfg = append(cfg[:len(cfg):len(cfg)], extra...)
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(cfg)))
	for i, kv := range cfg {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}

// authHeader is what GitHub (and git http-backend behind Basic auth)
// accepts for an installation or OAuth token.
func authHeader(token string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
}

// Error is a failed git call. Its message names the subcommand and git's
// own (redacted) explanation; Kind is the grove error kind it maps to, or
// nil when stderr matched none.
type Error struct {
	Args     []string
	ExitCode int
	Stderr   string
	Kind     error
}

func (e *Error) Error() string {
	sub := "git"
	if len(e.Args) > 0 {
		sub = "git " + e.Args[0]
	}
	msg := e.Stderr
	if len(msg) > 600 {
		msg = "…" + msg[len(msg)-600:]
	}
	if msg == "" {
		return fmt.Sprintf("%s: exit status %d", sub, e.ExitCode)
	}
	return fmt.Sprintf("%s: %s", sub, msg)
}

func (e *Error) Unwrap() error { return e.Kind }

// classify maps git's stderr onto an error kind. Order matters: an HTTP 403
// also says "unable to access", and must read as an auth failure.
func classify(stderr string) error {
	s := strings.ToLower(stderr)
	has := func(subs ...string) bool {
		for _, sub := range subs {
			if strings.Contains(s, sub) {
				return true
			}
		}
		return false
	}
	switch {
	case has("authentication failed", "could not read username", "could not read password",
		"permission denied (publickey", "returned error: 401", "returned error: 403",
		"invalid username or password", "terminal prompts disabled", "invalid credentials"):
		return grove.ErrAuthFailed
	case has("repository not found", "does not appear to be a git repository", "unknown revision",
		"couldn't find remote ref", "not a valid object name", "bad revision", "invalid reference",
		"not a git repository", "returned error: 404", "no such ref", "not our ref",
		"needed a single revision", "bad object", "does not exist"):
		return grove.ErrNotFound
	case has("could not resolve host", "connection refused", "connection timed out", "timed out",
		"unable to access", "failed to connect", "network is unreachable", "could not connect",
		"connection reset", "the remote end hung up unexpectedly", "no route to host"):
		return grove.ErrUnavailable
	case has("non-fast-forward", "[rejected]", "stale info", "fetch first", "already exists",
		"is already checked out", "cannot lock ref", "unable to create", "file exists"):
		return grove.ErrConflict
	}
	return nil
}

// redactor removes a token and the encodings of it that git might print.
type redactor struct{ secrets []string }

func newRedactor(token string) redactor {
	if token == "" {
		return redactor{}
	}
	enc := base64.StdEncoding
	return redactor{secrets: []string{
		authHeader(token),
		enc.EncodeToString([]byte("x-access-token:" + token)),
		enc.EncodeToString([]byte(token)),
		token,
	}}
}

func (r redactor) redact(s string) string {
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "[REDACTED]")
	}
	return s
}

func (r redactor) args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.redact(a)
	}
	return out
}

// tailBuffer keeps the last max bytes written: git's verdict is at the end
// of stderr, progress noise at the start.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	// Progress meters redraw with '\r'; keep only the final state of each line.
	lines := strings.Split(string(t.buf), "\n")
	for i, l := range lines {
		if j := strings.LastIndexByte(strings.TrimRight(l, "\r"), '\r'); j >= 0 {
			lines[i] = l[j+1:]
		}
	}
	return strings.Join(lines, "\n")
}

// lineRedactor forwards progress to the caller a line (or a '\r'-redrawn
// meter) at a time, so a token split across writes is still redacted.
type lineRedactor struct {
	w   io.Writer
	red redactor
	buf []byte
}

func (l *lineRedactor) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexAny(l.buf, "\r\n")
		if i < 0 {
			break
		}
		line := l.red.redact(string(l.buf[:i+1]))
		l.buf = l.buf[i+1:]
		_, _ = io.WriteString(l.w, line) // a slow or broken progress sink must not fail git
	}
	return len(p), nil
}

func (l *lineRedactor) flush() {
	if len(l.buf) > 0 {
		_, _ = io.WriteString(l.w, l.red.redact(string(l.buf)))
		l.buf = nil
	}
}

func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}

// bareEnv points git at a bare repository explicitly, so a missing or
// broken one is an error rather than a discovery walk into a parent repo.
func bareEnv(barePath string) []string { return []string{"GIT_DIR=" + barePath} }

// workEnv does the same for a workspace.
func workEnv(dir string) []string {
	return []string{"GIT_DIR=" + dir + "/.git", "GIT_WORK_TREE=" + dir}
}

// Classify maps a git error message (for example the stderr of git run
// inside a workspace's runtime) onto a grove error kind, or nil.
func Classify(stderr string) error { return classify(stderr) }
