package gitrepo

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

// smartHTTP serves the bare repos under projectRoot with git http-backend,
// requiring Basic auth whose password is token.
func smartHTTP(t *testing.T, projectRoot, token string) *httptest.Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + projectRoot,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"REMOTE_USER=agent", // lets http-backend accept pushes
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pw, ok := r.BasicAuth()
		if !ok || pw != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="grove-test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSmartHTTPTokens(t *testing.T) {
	src, mainHead := sourceRepo(t)
	projectRoot := t.TempDir()
	served := filepath.Join(projectRoot, "octo", "hello.git")
	testGit(t, "", "clone", "-q", "--bare", src, served)
	testGit(t, served, "config", "http.receivepack", "true")

	var rnd [12]byte
	rand.Read(rnd[:])
	token := "ghs_" + hex.EncodeToString(rnd[:])
	srv := smartHTTP(t, projectRoot, token)

	g, logs := newTestGit(t)
	g.Home = t.TempDir()
	// Every git process's argv is recorded by a wrapper around git.
	argvLog := filepath.Join(t.TempDir(), "argv.log")
	g.Binary = gitArgvRecorder(t, argvLog)
	root := t.TempDir()
	c := &Caches{Git: g, Root: root}
	ctx := testCtx(t)
	var progress bytes.Buffer
	var errorTexts []string

	remote, err := ParseRepo(srv.URL+"/octo/hello.git", ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(remote.URL, token) {
		t.Fatal("token in URL")
	}

	// No token and a bad token: authentication failures, not "unavailable".
	for _, tok := range []string{"", "wrong-" + token[:8]} {
		_, err := c.Ensure(ctx, remote, EnsureOptions{Token: tok})
		if !errors.Is(err, grove.ErrAuthFailed) {
			t.Errorf("Ensure with token %q = %v, want ErrAuthFailed", tok, err)
		}
		if err != nil {
			errorTexts = append(errorTexts, err.Error())
		}
	}
	if _, err := os.Stat(c.Path(remote)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed clone left a cache behind")
	}

	// The good token: clone, then an explicit refresh fetch.
	res, err := c.Ensure(ctx, remote, EnsureOptions{Token: token, Ref: "main", Progress: &progress})
	if err != nil || !res.Cloned {
		t.Fatalf("Ensure with the token = %+v, %v", res, err)
	}
	if sha, err := g.ResolveCommit(ctx, res.Path, "main"); err != nil || sha != mainHead {
		t.Errorf("cache main = %s, %v", sha, err)
	}
	testGit(t, src, "branch", "fresh", "main")
	testGit(t, src, "push", "-q", served, "fresh")
	res, err = c.Ensure(ctx, remote, EnsureOptions{Token: token, Refresh: true, Progress: &progress})
	if err != nil || !res.Fetched {
		t.Fatalf("refresh = %+v, %v", res, err)
	}
	if _, err := g.ResolveCommit(ctx, res.Path, "fresh"); err != nil {
		t.Errorf("refresh missed the new branch: %v", err)
	}
	if _, err := c.Ensure(ctx, remote, EnsureOptions{Token: "bad", Refresh: true}); !errors.Is(err, grove.ErrAuthFailed) {
		t.Errorf("fetch with a bad token = %v, want ErrAuthFailed", err)
	} else {
		errorTexts = append(errorTexts, err.Error())
	}

	// Push a workspace branch with the token, from alice's work
	// repository (under the root, so the scan below covers it).
	work := workRepo(t, g, res.Path, "alice")
	ws := filepath.Join(WorkspacesDir(CacheDir(root, remote.ID)), WorkspaceDirName("alice", "c1", "agent/edits-c1"))
	if _, err := g.CreateWorkspace(ctx, res.Path, ws, WorkspaceOptions{Branch: "agent/edits-c1", Base: "main", WorkRepo: work}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "pushed.txt"), "pushed\n")
	commitAll(t, ws, "push me")
	tip := saveBranch(t, g, work, ws, "agent/edits-c1")
	if _, err := g.PushWork(ctx, work, remote.URL, "agent/edits-c1", "", PushOptions{Token: "nope"}); !errors.Is(err, grove.ErrAuthFailed) {
		t.Errorf("push with a bad token = %v, want ErrAuthFailed", err)
	} else {
		errorTexts = append(errorTexts, err.Error())
	}
	pr, err := g.PushWork(ctx, work, remote.URL, "agent/edits-c1", "", PushOptions{Token: token, Progress: &progress})
	if err != nil || !pr.CreatedBranch || pr.RemoteSHA != tip {
		t.Fatalf("push = %+v, %v", pr, err)
	}
	if got := testGit(t, served, "rev-parse", "agent/edits-c1"); got != tip {
		t.Errorf("served branch = %s, want %s", got, tip)
	}
	// A force-with-lease push carries the token the same way.
	if pr, err := g.PushWork(ctx, work, remote.URL, "agent/edits-c1", "", PushOptions{Token: token, ForceWithLease: true}); err != nil || !pr.UpToDate {
		t.Errorf("force-with-lease push = %+v, %v", pr, err)
	}

	// A closed port is unavailable, not an auth failure.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/octo/hello.git"
	l.Close()
	down, err := ParseRepo(closed, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ensure(ctx, down, EnsureOptions{Token: token}); !errors.Is(err, grove.ErrUnavailable) {
		t.Errorf("Ensure against a closed port = %v, want ErrUnavailable", err)
	} else {
		errorTexts = append(errorTexts, err.Error())
	}

	// The token appears nowhere: not on disk under the root or in HOME,
	// not in the logs, progress output or error messages.
	secrets := []string{token, base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token)), base64.StdEncoding.EncodeToString([]byte(token))}
	check := func(where, text string) {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("token found in %s", where)
			}
		}
	}
	for _, dir := range []string{root, g.Home} {
		n := 0
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("read %s: %v", p, err)
				return nil
			}
			n++
			check(p, string(b))
			return nil
		})
		if dir == root && n < 10 {
			t.Errorf("walked only %d files under the root; the scan would prove nothing", n)
		}
	}
	if !strings.Contains(logs.String(), "clone") || !strings.Contains(logs.String(), "push") {
		t.Errorf("logs lack the git calls; the scan would prove nothing:\n%s", logs)
	}
	check("logs", logs.String())
	argv, err := os.ReadFile(argvLog)
	if err != nil || !strings.Contains(string(argv), "push") || !strings.Contains(string(argv), "clone") {
		t.Errorf("argv log lacks the git calls (%v); the scan would prove nothing:\n%s", err, argv)
	}
	check("argv", string(argv))
	check("progress", progress.String())
	for _, e := range errorTexts {
		check("error "+e, e)
	}
	if progress.Len() == 0 {
		t.Errorf("no progress reported for clone/fetch/push")
	}
}

// gitArgvRecorder writes an executable that appends its arguments, one
// call a line, to logPath and then runs the real git with them.
func gitArgvRecorder(t *testing.T, logPath string) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	p := filepath.Join(t.TempDir(), "git")
	writeFile(t, p, "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '"+logPath+"'\nexec '"+real+"' \"$@\"\n")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRedactor(t *testing.T) {
	tok := "s3cr3t"
	r := newRedactor(tok)
	in := "fatal: " + authHeader(tok) + " and " + tok + " and " + base64.StdEncoding.EncodeToString([]byte(tok))
	out := r.redact(in)
	if strings.Contains(out, tok) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(tok))) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok))) {
		t.Errorf("redact left a secret: %q", out)
	}
	if newRedactor("").redact(in) != in {
		t.Errorf("empty token must redact nothing")
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		stderr string
		want   error
	}{
		{"fatal: Authentication failed for 'https://github.com/o/r/'", grove.ErrAuthFailed},
		{"fatal: could not read Username for 'https://github.com': terminal prompts disabled", grove.ErrAuthFailed},
		{"git@github.com: Permission denied (publickey).", grove.ErrAuthFailed},
		{"fatal: unable to access 'https://x/': The requested URL returned error: 403", grove.ErrAuthFailed},
		{"fatal: unable to access 'https://x/': Could not resolve host: x", grove.ErrUnavailable},
		{"fatal: unable to access 'http://127.0.0.1:1/': Failed to connect to 127.0.0.1 port 1: Connection refused", grove.ErrUnavailable},
		{"remote: Repository not found.\nfatal: repository 'https://github.com/o/r/' not found", grove.ErrNotFound},
		{"fatal: 'x' does not appear to be a git repository", grove.ErrNotFound},
		{"fatal: couldn't find remote ref refs/heads/x", grove.ErrNotFound},
		{"fatal: ambiguous argument 'x': unknown revision or path not in the working tree.", grove.ErrNotFound},
		{" ! [rejected]        main -> main (non-fast-forward)", grove.ErrConflict},
		{" ! [rejected]        main -> main (stale info)", grove.ErrConflict},
		{"something else entirely", nil},
	}
	for _, tt := range tests {
		if got := classify(tt.stderr); got != tt.want {
			t.Errorf("classify(%q) = %v, want %v", tt.stderr, got, tt.want)
		}
	}
}

func TestRunEnvironment(t *testing.T) {
	requireGit(t)
	t.Setenv("GIT_DIR", "/should/not/leak")
	t.Setenv("GIT_ASKPASS", "/bin/false")
	t.Setenv("SSH_ASKPASS", "/bin/false")
	t.Setenv("SECRET_HOST_VAR", "leak")
	g := &Git{}
	out, err := g.run(testCtx(t), call{args: []string{"var", "-l"}, dir: t.TempDir(), token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(out)
	for _, want := range []string{"core.hookspath=/dev/null", "core.fsmonitor=false", "protocol.ext.allow=never", "credential.helper=", "http.extraheader=Authorization: Basic "} {
		if !strings.Contains(cfg, want) {
			t.Errorf("git config lacks %q:\n%s", want, cfg)
		}
	}
	env := strings.Join(g.environ("tok"), "\n")
	for _, bad := range []string{"GIT_DIR=", "GIT_ASKPASS", "SSH_ASKPASS", "SECRET_HOST_VAR"} {
		if strings.Contains(env, bad) {
			t.Errorf("environment carries %s", bad)
		}
	}
	for _, want := range []string{"HOME=/nonexistent", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_SSH_COMMAND=ssh -o BatchMode=yes", "LANG=C"} {
		if !strings.Contains(env, want) {
			t.Errorf("environment lacks %s", want)
		}
	}
}

// A failed clone removes the <host>/<owner>/<name> directories it made,
// and only those.
func TestFailedCloneLeavesNoDirectories(t *testing.T) {
	srv := smartHTTP(t, t.TempDir(), "right-token")
	g, _ := newTestGit(t)
	g.Home = t.TempDir()
	root := t.TempDir()
	keep := filepath.Join(root, "keep")
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Caches{Git: g, Root: root}
	for _, name := range []string{"octo/hello.git", "octo/other.git"} {
		remote, err := ParseRepo(srv.URL+"/"+name, ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Ensure(testCtx(t), remote, EnsureOptions{Token: "wrong-token"}); err == nil {
			t.Fatal("clone with a wrong token succeeded")
		}
	}
	var left []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if p != root && p != keep {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("a failed clone left %v", left)
	}
}
