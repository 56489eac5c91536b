package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The test binary doubles as the grove binary: with GROVE_CLI_MAIN set it
// runs main, so the tests exercise real exit codes, stdout and stderr.
func TestMain(m *testing.M) {
	if os.Getenv("GROVE_CLI_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type cliEnv struct {
	t    *testing.T
	root string
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func (e *cliEnv) run(stdin string, args ...string) cliResult {
	e.t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GROVE_CLI_MAIN=1", "GROVE_ROOT="+e.root, "GROVE_USER=cli",
		"GROVE_RUNTIME=subprocess", "GROVE_ALLOW_UNISOLATED=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return cliResult{code, out.String(), errb.String()}
}

func (e *cliEnv) ok(stdin string, args ...string) string {
	e.t.Helper()
	r := e.run(stdin, args...)
	if r.code != 0 {
		e.t.Fatalf("grove %v: exit %d\n%s", args, r.code, r.stderr)
	}
	return r.stdout
}

func gitRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", dir},
		{"-C", dir, "commit", "-q", "--allow-empty", "-m", "root"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

func TestCLIContract(t *testing.T) {
	e := &cliEnv{t: t, root: t.TempDir()}
	repo := gitRepo(t)

	var ws map[string]any
	out := e.ok("", "ws", "acquire", "--repo", repo, "--user", "u1", "--project", "p", "--conversation", "c1", "--json")
	if err := json.Unmarshal([]byte(out), &ws); err != nil {
		t.Fatalf("acquire --json: %v\n%s", err, out)
	}
	for _, k := range []string{"id", "path", "branch", "mode", "writable", "created"} {
		if _, ok := ws[k]; !ok {
			t.Errorf("acquire --json lacks %q: %s", k, out)
		}
	}
	if ws["branch"] != "agent/edits-c1" || ws["mode"] != "edit" || ws["writable"] != true || ws["created"] != true {
		t.Fatalf("acquire --json: %s", out)
	}
	id := ws["id"].(string)

	// exec passes output through and exits with the command's own code.
	r := e.run("", "exec", id, "--", "sh", "-c", "echo to-out; echo to-err >&2; exit 7")
	if r.code != 7 || r.stdout != "to-out\n" || !strings.Contains(r.stderr, "to-err") {
		t.Fatalf("exec: %+v", r)
	}

	e.ok("line one\n", "write", id, "docs/note.txt")
	if got := e.ok("", "read", id, "docs/note.txt"); got != "line one\n" {
		t.Fatalf("read: %q", got)
	}

	var st map[string]any
	if err := json.Unmarshal([]byte(e.ok("", "git", "status", id, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st["clean"] != false || st["branch"] != "agent/edits-c1" {
		t.Fatalf("status: %v", st)
	}
	var c map[string]any
	if err := json.Unmarshal([]byte(e.ok("", "git", "commit", id, "-m", "add note", "--json")), &c); err != nil {
		t.Fatal(err)
	}
	if sha, _ := c["sha"].(string); len(sha) != 40 {
		t.Fatalf("commit --json: %v", c)
	}

	// Failures exit non-zero with one line naming the kind.
	for _, tc := range []struct {
		args []string
		code string
	}{
		{[]string{"read", id, "../../etc/passwd"}, "E_PATH_OUTSIDE_WORKSPACE"},
		{[]string{"ws", "show", "ws_0000000000000000"}, "E_NOT_FOUND"},
		{[]string{"ws", "acquire", "--repo", "--upload-pack=x", "--conversation", "c"}, "E_INVALID_ARGUMENT"},
		// The same user's second workspace on a branch they hold (another
		// user may hold the same branch name: branches are per user).
		{[]string{"ws", "acquire", "--repo", repo, "--user", "u1", "--project", "p", "--conversation", "c9", "--branch", "agent/edits-c1"}, "E_CONFLICT"},
	} {
		r := e.run("", tc.args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code == 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "grove: "+tc.code+": ") {
			t.Errorf("grove %v: exit %d, stderr %q; want one line with %s", tc.args, r.code, r.stderr, tc.code)
		}
	}

	// Re-acquire is the same workspace.
	var again map[string]any
	json.Unmarshal([]byte(e.ok("", "ws", "acquire", "--repo", repo, "--user", "u1", "--project", "p", "--conversation", "c1", "--json")), &again)
	if again["id"] != id || again["created"] != false {
		t.Fatalf("re-acquire: %v", again)
	}
}

func TestConfigRedactsSecrets(t *testing.T) {
	e := &cliEnv{t: t, root: t.TempDir()}
	t.Setenv("GROVE_GIT_TOKEN", "ghp_supersecret123")
	t.Setenv("GROVE_API_KEY", "grove_topsecret456")
	t.Setenv("GROVE_LOCKS", "redis://:lockpw123@127.0.0.1:6379")
	out := e.ok("", "config", "--json")
	if strings.Contains(out, "supersecret") || strings.Contains(out, "topsecret") || strings.Contains(out, "lockpw123") {
		t.Fatalf("config printed a secret: %s", out)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if m["root"] != e.root || m["git_token"] != "(set, redacted)" || m["runtime"] != "subprocess" || m["store"] != "sqlite" || !strings.HasPrefix(m["locks"], "redis://") {
		t.Fatalf("config: %v", m)
	}
}

func TestEvictPassReportsAsJSON(t *testing.T) {
	e := &cliEnv{t: t, root: t.TempDir()}
	repo := gitRepo(t)
	e.ok("", "ws", "acquire", "--repo", repo, "--mode", "analysis", "--json")
	t.Setenv("GROVE_EVICT_ANALYSIS_TTL", "1ns")
	var rep map[string]any
	if err := json.Unmarshal([]byte(e.ok("", "evict", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if d, _ := rep["destroyed_workspaces"].([]any); len(d) != 1 {
		t.Fatalf("evict with a 1ns analysis TTL: %v", rep)
	}
	if out := e.ok("", "ws", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("workspace still listed: %s", out)
	}
}

// Usage mistakes are the caller's, not internal errors.
func TestUsageErrorsAreInvalidArgument(t *testing.T) {
	e := &cliEnv{t: t, root: t.TempDir()}
	for _, args := range [][]string{
		{"repo", "ensure", "-oops/x"},
		{"bogus"},
		{"repo", "bogus"},
		{"ws", "acquire"},                 // a required flag missing
		{"ws", "show"},                    // an argument missing
		{"keys", "create", "--nope", "u"}, // an unknown long flag
	} {
		r := e.run("", args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code == 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "grove: E_INVALID_ARGUMENT: ") {
			t.Errorf("grove %v: exit %d, stderr %q; want one E_INVALID_ARGUMENT line", args, r.code, r.stderr)
		}
	}
}

// The README's first server step runs on a machine with no data root yet.
func TestKeysCreateMakesTheRoot(t *testing.T) {
	e := &cliEnv{t: t, root: filepath.Join(t.TempDir(), "not", "yet")}
	out := e.ok("", "keys", "create", "--user", "alice")
	if !strings.HasPrefix(strings.TrimSpace(out), "grove_") {
		t.Fatalf("keys create printed %q", out)
	}
	if fi, err := os.Stat(e.root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("root: %v %v", fi, err)
	}
}

// Commands run with GROVE_SANDBOX_PATH, or by default the standard
// directories plus the toolchains found on this host.
func TestSandboxPath(t *testing.T) {
	e := &cliEnv{t: t, root: t.TempDir()}
	var cfg map[string]string
	if err := json.Unmarshal([]byte(e.ok("", "config", "--json")), &cfg); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/usr/local/go/bin", "/usr/local/cargo/bin"} {
		_, err := os.Stat(d)
		if has := strings.Contains(":"+cfg["sandbox_path"]+":", ":"+d+":"); has != (err == nil) {
			t.Errorf("sandbox_path %q: has %s = %v, exists = %v", cfg["sandbox_path"], d, has, err == nil)
		}
	}
	if !strings.Contains(cfg["sandbox_path"], "/usr/bin") {
		t.Errorf("sandbox_path %q lacks /usr/bin", cfg["sandbox_path"])
	}
	repo := gitRepo(t)
	var ws map[string]any
	json.Unmarshal([]byte(e.ok("", "ws", "acquire", "--repo", repo, "--conversation", "p", "--json")), &ws)
	if out := e.ok("", "exec", ws["id"].(string), "--", "sh", "-c", "echo $PATH"); strings.TrimSpace(out) != cfg["sandbox_path"] {
		t.Errorf("default PATH in the sandbox %q, want %q", out, cfg["sandbox_path"])
	}
	t.Setenv("GROVE_SANDBOX_PATH", "/opt/custom/bin:/usr/bin:/bin")
	if out := e.ok("", "exec", ws["id"].(string), "--", "sh", "-c", "echo $PATH"); strings.TrimSpace(out) != "/opt/custom/bin:/usr/bin:/bin" {
		t.Errorf("GROVE_SANDBOX_PATH in the sandbox: %q", out)
	}
}
