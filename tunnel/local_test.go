package tunnel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/tunnel"
)

// direct serves l's routes through a Dispatcher, without a server.
type direct struct {
	t *testing.T
	d *tunnel.Dispatcher
	n int
}

func newDirect(t *testing.T, l *tunnel.Local) *direct {
	d := &tunnel.Dispatcher{Workspace: "w", Log: testLog(t), Grace: 200 * time.Millisecond}
	l.Routes(d)
	return &direct{t: t, d: d}
}

func openLocal(t *testing.T, dir string, o tunnel.LocalOptions) *tunnel.Local {
	t.Helper()
	l, err := tunnel.OpenLocalWith(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// call answers endpoint with payload; out, when not nil, receives the
// result of a success.
func (c *direct) call(endpoint string, payload any, timeoutMS int64) tunnel.Message {
	c.t.Helper()
	c.n++
	p, err := json.Marshal(payload)
	if err != nil {
		c.t.Fatal(err)
	}
	m := c.d.Dispatch(context.Background(), tunnel.Message{Type: tunnel.TypeToolCall, CorrelationID: strconv.Itoa(c.n), Endpoint: endpoint, Payload: p, TimeoutMS: timeoutMS})
	if m.Type != tunnel.TypeToolResponse || m.CorrelationID != strconv.Itoa(c.n) {
		c.t.Fatalf("%s: response %+v", endpoint, m)
	}
	return m
}

func (c *direct) ok(endpoint string, payload any, out any) {
	c.t.Helper()
	m := c.call(endpoint, payload, 10000)
	if !m.Success {
		c.t.Fatalf("%s %+v: %+v", endpoint, payload, m.Error)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s: %s: %v", endpoint, m.Result, err)
		}
	}
}

func (c *direct) fails(endpoint string, payload any, code string) *tunnel.Error {
	c.t.Helper()
	m := c.call(endpoint, payload, 10000)
	if m.Success || m.Error == nil || m.Error.Code != code {
		c.t.Fatalf("%s %+v: success %v, %s, error %+v; want %s", endpoint, payload, m.Success, m.Result, m.Error, code)
	}
	return m.Error
}

func TestExecuteRequestFields(t *testing.T) {
	e := newEnv(t, nil)
	e.agent(t.TempDir(), "proj", false, nil)

	x := execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{
		Shell: `printf '%s|' "$GREETING"; cat; echo oops >&2`, Env: map[string]string{"GREETING": "hello"}, Stdin: "from stdin",
	}, 5000))
	if x.Stdout != "hello|from stdin" || x.Stderr != "oops\n" || x.ExitCode != 0 {
		t.Fatalf("env and stdin: %+v", x)
	}
	x = execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{
		Shell: `head -c 5000 /dev/zero | tr '\0' a; head -c 300 /dev/zero | tr '\0' b >&2`, MaxOutput: 1000,
	}, 5000))
	if len(x.Stdout) != 1000 || x.StdoutOmitted != 4000 || len(x.Stderr) != 300 || x.StderrOmitted != 0 || !x.Truncated {
		t.Fatalf("max_output: %d bytes, %d omitted; stderr %d, %d omitted; %v", len(x.Stdout), x.StdoutOmitted, len(x.Stderr), x.StderrOmitted, x.Truncated)
	}
	// A command that reads stdin it was not given sees end of input.
	x = execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"cat"}}, 5000))
	if x.Stdout != "" || x.ExitCode != 0 {
		t.Fatalf("cat without stdin: %+v", x)
	}
	for _, bad := range []tunnel.ExecRequest{
		{Argv: []string{"true"}, Env: map[string]string{"A=B": "x"}},
		{Argv: []string{"true"}, Env: map[string]string{"": "x"}},
		{Argv: []string{"true"}, MaxOutput: -1},
		{Argv: []string{""}},
	} {
		r := e.call(aliceKey, "proj", tunnel.RouteExecute, bad, 5000)
		if r.resp.Success || r.resp.Error.Code != "E_INVALID_ARGUMENT" {
			t.Errorf("%+v: %+v %+v", bad, r.resp, r.resp.Error)
		}
	}
}

func sessionOutput(t *testing.T, c *direct, id string, req tunnel.SessionOutputRequest) tunnel.SessionOutput {
	t.Helper()
	var o tunnel.SessionOutput
	c.ok(tunnel.RouteSessionPrefix+id+"/output", req, &o)
	return o
}

func TestAsyncSessions(t *testing.T) {
	dir := t.TempDir()
	l := openLocal(t, dir, tunnel.LocalOptions{})
	c := newDirect(t, l)

	// The call answers at once; the command runs on after it (until the
	// test lets it end).
	var st tunnel.AsyncStarted
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Shell: "echo first; echo err1 >&2; while [ ! -e go ]; do sleep 0.02; done; echo second; exit 4", Async: true}, &st)
	if !strings.HasPrefix(st.SessionID, "s_") {
		t.Fatalf("async: %+v", st)
	}
	o := pollOutput(t, c, st.SessionID, 0, func(o tunnel.SessionOutput) bool { return o.Stdout == "first\n" && o.Stderr == "err1\n" })
	if !o.Running || o.Result != nil {
		t.Fatalf("while running: %+v", o)
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	// Passing the offsets back: only what follows, and the result once
	// it exited.
	o = sessionOutput(t, c, st.SessionID, tunnel.SessionOutputRequest{StdoutOffset: o.StdoutNext, StderrOffset: o.StderrNext, WaitMS: 5000})
	if o.Running || o.Stdout != "second\n" || o.Stderr != "" || o.Result == nil || o.Result.ExitCode != 4 || o.Result.Stdout != "" {
		t.Fatalf("after exit: %+v %+v", o, o.Result)
	}
	if o.StdoutNext != int64(len("first\nsecond\n")) {
		t.Fatalf("next offset %d", o.StdoutNext)
	}
	// Read again from the start: still there.
	if o = sessionOutput(t, c, st.SessionID, tunnel.SessionOutputRequest{}); o.Stdout != "first\nsecond\n" {
		t.Fatalf("re-read: %+v", o)
	}

	// A signal reaches the whole process group.
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Shell: "sleep 30 & echo $! > bg.pid; sleep 30", Async: true}, &st)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(filepath.Join(dir, "bg.pid")); len(b) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "bg.pid"))
	c.fails(tunnel.RouteSessionPrefix+st.SessionID+"/signal", tunnel.SignalRequest{Signal: "STOPIT"}, "E_INVALID_ARGUMENT")
	c.fails(tunnel.RouteSessionPrefix+st.SessionID+"/signal", map[string]any{"signal": "TERM", "extra": 1}, "E_INVALID_ARGUMENT")
	var sig tunnel.SessionOutput
	c.ok(tunnel.RouteSessionPrefix+st.SessionID+"/signal", tunnel.SignalRequest{Signal: "TERM"}, &sig)
	o = sessionOutput(t, c, st.SessionID, tunnel.SessionOutputRequest{WaitMS: 3000})
	if o.Running || o.Result == nil || o.Result.ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("after TERM: %+v %+v", o, o.Result)
	}
	time.Sleep(100 * time.Millisecond)
	if st, err := os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Fatalf("the background sleep survived TERM to the group: %s", st)
	}

	// Its own timeout bounds an async command.
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"sleep", "30"}, Async: true, TimeoutMS: 200}, &st)
	o = sessionOutput(t, c, st.SessionID, tunnel.SessionOutputRequest{WaitMS: 3000})
	if o.Running || o.Result == nil || !o.Result.TimedOut {
		t.Fatalf("async timeout: %+v %+v", o, o.Result)
	}

	// A character split across writes is held back until it is whole.
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Shell: `printf 'a\303'; while [ ! -e go2 ]; do sleep 0.02; done; printf '\251b'`, Async: true}, &st)
	o = pollOutput(t, c, st.SessionID, 0, func(o tunnel.SessionOutput) bool { return o.Stdout == "a" })
	time.Sleep(50 * time.Millisecond) // both bytes were written at once; once more to be sure
	if o = sessionOutput(t, c, st.SessionID, tunnel.SessionOutputRequest{}); !o.Running || o.Stdout != "a" || o.StdoutNext != 1 {
		t.Fatalf("split character while running: %+v", o)
	}
	os.WriteFile(filepath.Join(dir, "go2"), nil, 0o644)
	o = sessionOutput(t, c, st.SessionID, tunnel.SessionOutputRequest{StdoutOffset: o.StdoutNext, WaitMS: 3000})
	if o.Running || o.Stdout != "\u00e9b" || o.StdoutNext != 4 {
		t.Fatalf("split character after exit: %+v", o)
	}

	// Unknown and malformed sessions are no route or no session.
	c.fails(tunnel.RouteSessionPrefix+"s_0123456789abcdef/output", nil, "E_NOT_FOUND")
	c.fails(tunnel.RouteSessionPrefix+"s_0123456789abcdef/signal", tunnel.SignalRequest{Signal: "KILL"}, "E_NOT_FOUND")
	for _, ep := range []string{"../x/output", "s_0123456789abcdef/output/more", "s_0123456789abcdef", "s_0123456789abcdef/kill", "", "/output", "S_0123456789ABCDEF/output", "s_0123456789abcdef\n/output"} {
		c.fails(tunnel.RouteSessionPrefix+ep, nil, "E_NOT_FOUND")
	}
	// A command that does not exist starts no session.
	c.fails(tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"no-such-command-xyz"}, Async: true}, "E_NOT_INSTALLED")
}

// pollOutput reads a running session until ok, for at most 5 s.
func pollOutput(t *testing.T, c *direct, id string, off int64, ok func(tunnel.SessionOutput) bool) tunnel.SessionOutput {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		o := sessionOutput(t, c, id, tunnel.SessionOutputRequest{StdoutOffset: off})
		if ok(o) {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s never got there: %+v", id, o)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAsyncSessionLimit(t *testing.T) {
	l := openLocal(t, t.TempDir(), tunnel.LocalOptions{})
	c := newDirect(t, l)
	for i := 0; i < tunnel.MaxLiveSessions; i++ {
		c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"sleep", "30"}, Async: true}, nil)
	}
	c.fails(tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"sleep", "30"}, Async: true}, "E_RESOURCE_LIMIT")
	start := time.Now()
	l.Close() // kills them all
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %s", d)
	}
}

// The server's cancel kills the command's process group, and the call
// still gets exactly one tool_response.
func TestCancelCall(t *testing.T) {
	dir := t.TempDir()
	l := openLocal(t, dir, tunnel.LocalOptions{})
	d := &tunnel.Dispatcher{Workspace: "w", Log: testLog(t), Grace: 200 * time.Millisecond}
	l.Routes(d)
	d.Handle("/test/ignores-cancel", func(context.Context, json.RawMessage) (any, error) {
		time.Sleep(2 * time.Second)
		return nil, nil
	})
	agentEnd, serverEnd := pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go (&tunnel.Agent{Workspace: "w", D: d, Log: testLog(t)}).Serve(ctx, agentEnd)
	if m, err := serverEnd.Read(ctx); err != nil || m.Type != tunnel.TypeRegister {
		t.Fatalf("register: %+v %v", m, err)
	}
	serverEnd.Write(ctx, tunnel.Message{Type: tunnel.TypeRegistered})

	payload, _ := json.Marshal(tunnel.ExecRequest{Shell: "sleep 30 & echo $! > bg.pid; sleep 30"})
	serverEnd.Write(ctx, tunnel.Message{Type: tunnel.TypeToolCall, CorrelationID: "c1", Endpoint: tunnel.RouteExecute, Payload: payload, TimeoutMS: 20000})
	serverEnd.Write(ctx, tunnel.Message{Type: tunnel.TypeToolCall, CorrelationID: "c2", Endpoint: "/test/ignores-cancel", TimeoutMS: 20000})
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(filepath.Join(dir, "bg.pid")); len(b) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "bg.pid"))
	start := time.Now()
	serverEnd.Write(ctx, tunnel.Message{Type: tunnel.TypeCancel, CorrelationID: "c1"})
	serverEnd.Write(ctx, tunnel.Message{Type: tunnel.TypeCancel, CorrelationID: "c2"})
	serverEnd.Write(ctx, tunnel.Message{Type: tunnel.TypeCancel, CorrelationID: "unknown"})
	got := map[string]tunnel.Message{}
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	for len(got) < 2 {
		m, err := serverEnd.Read(rctx)
		if err != nil {
			break
		}
		if m.Type != tunnel.TypeToolResponse {
			t.Fatalf("unexpected %+v", m)
		}
		if _, dup := got[m.CorrelationID]; dup {
			t.Fatalf("two responses for %s", m.CorrelationID)
		}
		got[m.CorrelationID] = m
	}
	if len(got) != 2 {
		t.Fatalf("responses: %+v", got)
	}
	for _, id := range []string{"c1", "c2"} {
		if m := got[id]; m.Success || m.Error == nil || m.Error.Code != "E_CANCELLED" {
			t.Fatalf("%s: %+v %+v", id, m, m.Error)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("answers after %s", d)
	}
	// And nothing more: exactly one response each.
	qctx, qcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer qcancel()
	if m, err := serverEnd.Read(qctx); err == nil {
		t.Fatalf("a further message: %+v", m)
	}
	if st, err := os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Fatalf("the command's group survived the cancel: %s", st)
	}
}

// Every new route's failure is an answer.
func TestLocalRoutesAnswer(t *testing.T) {
	l := openLocal(t, t.TempDir(), tunnel.LocalOptions{})
	c := newDirect(t, l)
	c.d.Handle("/test/panic", func(context.Context, json.RawMessage) (any, error) { panic("boom") })
	for _, tc := range []struct {
		ep      string
		payload any
		code    string
	}{
		{tunnel.RouteSessionPrefix + "s_0000000000000000/output", nil, "E_NOT_FOUND"},
		{tunnel.RouteSessionPrefix + "s_0000000000000000/output", map[string]any{"stdout_offset": -1}, "E_INVALID_ARGUMENT"},
		{tunnel.RouteSessionPrefix + "nope", nil, "E_NOT_FOUND"},
		{tunnel.RouteSessionPrefix + "s_0000000000000000/signal", map[string]any{"signal": 9}, "E_INVALID_ARGUMENT"},
		{tunnel.RouteList, map[string]any{"path": "missing"}, "E_NOT_FOUND"},
		{tunnel.RouteList, map[string]any{"path": "../"}, "E_PATH_OUTSIDE_WORKSPACE"},
		{tunnel.RouteDelete, map[string]any{}, "E_INVALID_ARGUMENT"},
		{tunnel.RouteSearch, map[string]any{}, "E_INVALID_ARGUMENT"},
		{tunnel.RouteSearch, map[string]any{"pattern": "x", "bogus": 1}, "E_INVALID_ARGUMENT"},
		{tunnel.RouteGitStatus, map[string]any{"x": 1}, "E_INVALID_ARGUMENT"},
		{tunnel.RouteGitCommit, map[string]any{"message": ""}, "E_INVALID_ARGUMENT"},
		{tunnel.RouteGitDiff, map[string]any{"base_ref": "--output=/tmp/x"}, "E_INVALID_ARGUMENT"},
		{"/test/panic", nil, "E_INTERNAL"},
	} {
		c.fails(tc.ep, tc.payload, tc.code)
	}
	// A command killed at the call's deadline answers with what it printed.
	m := c.call(tunnel.RouteExecute, tunnel.ExecRequest{Shell: "echo partial; sleep 30"}, 300)
	var x tunnel.ExecResult
	if json.Unmarshal(m.Result, &x); !m.Success || !x.TimedOut || x.Stdout != "partial\n" {
		t.Fatalf("timeout: %+v %+v", m, x)
	}
	// A wait_ms longer than the call is cut by the call's deadline.
	var st tunnel.AsyncStarted
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"sleep", "30"}, Async: true}, &st)
	start := time.Now()
	m = c.call(tunnel.RouteSessionPrefix+st.SessionID+"/output", tunnel.SessionOutputRequest{WaitMS: 60000}, 300)
	if !m.Success || time.Since(start) > 2*time.Second {
		t.Fatalf("long wait_ms: %+v after %s", m, time.Since(start))
	}
}

func TestListAndDelete(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src", "deep"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("aaa"), 0o644)
	os.WriteFile(filepath.Join(dir, "src", "b.go"), []byte("package b"), 0o644)
	os.WriteFile(filepath.Join(dir, "src", "deep", "c.go"), []byte("package c"), 0o644)
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref"), 0o644)
	os.Symlink("/etc", filepath.Join(dir, "etc-link"))
	l := openLocal(t, dir, tunnel.LocalOptions{})
	c := newDirect(t, l)

	var res tunnel.ListResult
	c.ok(tunnel.RouteList, tunnel.ListRequest{}, &res)
	var names []string
	for _, e := range res.Entries {
		names = append(names, fmt.Sprintf("%s:%v", e.Path, e.IsDir))
	}
	if got := strings.Join(names, " "); got != "src:true a.txt:false etc-link:false" {
		t.Fatalf("depth 1: %s", got)
	}
	c.ok(tunnel.RouteList, tunnel.ListRequest{Path: "src", Depth: 2}, &res)
	names = nil
	for _, e := range res.Entries {
		names = append(names, e.Path)
	}
	if got := strings.Join(names, " "); got != "src/deep src/b.go src/deep/c.go" {
		t.Fatalf("src depth 2: %s", got)
	}
	c.fails(tunnel.RouteList, tunnel.ListRequest{Path: ".git"}, "E_PATH_OUTSIDE_WORKSPACE")
	c.fails(tunnel.RouteList, tunnel.ListRequest{Path: "etc-link"}, "E_PATH_OUTSIDE_WORKSPACE")
	c.fails(tunnel.RouteList, tunnel.ListRequest{Path: "a.txt"}, "E_INVALID_ARGUMENT")

	c.ok(tunnel.RouteDelete, tunnel.DeleteRequest{Path: "src/b.go"}, nil)
	if _, err := os.Stat(filepath.Join(dir, "src", "b.go")); !os.IsNotExist(err) {
		t.Fatalf("b.go: %v", err)
	}
	c.fails(tunnel.RouteDelete, tunnel.DeleteRequest{Path: "src/b.go"}, "E_NOT_FOUND")
	c.fails(tunnel.RouteDelete, tunnel.DeleteRequest{Path: "src"}, "E_IS_DIRECTORY")
	c.fails(tunnel.RouteDelete, tunnel.DeleteRequest{Path: ".git/HEAD"}, "E_PATH_OUTSIDE_WORKSPACE")
	c.fails(tunnel.RouteDelete, tunnel.DeleteRequest{Path: "../x"}, "E_PATH_OUTSIDE_WORKSPACE")
	c.ok(tunnel.RouteDelete, tunnel.DeleteRequest{Path: "etc-link"}, nil) // the link, not /etc
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal(err)
	}

	ro := newDirect(t, openLocal(t, dir, tunnel.LocalOptions{ReadOnly: true}))
	ro.fails(tunnel.RouteDelete, tunnel.DeleteRequest{Path: "a.txt"}, "E_READ_ONLY_WORKSPACE")
	ro.ok(tunnel.RouteList, tunnel.ListRequest{}, &res)
}

func TestSearch(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg not installed")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "co")
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "a.go"), []byte("package a\n// needle one\nfunc A() {}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("no\nNeedle two\n"), 0o644)
	os.WriteFile(filepath.Join(root, "outside.txt"), []byte("needle outside\n"), 0o644)
	os.Symlink(root, filepath.Join(dir, "up"))
	t.Setenv("RIPGREP_CONFIG_PATH", filepath.Join(root, "rgrc")) // the clean environment ignores it
	os.WriteFile(filepath.Join(root, "rgrc"), []byte("--invert-match\n"), 0o644)
	c := newDirect(t, openLocal(t, dir, tunnel.LocalOptions{ReadOnly: true}))

	var res grove.SearchResult
	c.ok(tunnel.RouteSearch, grove.SearchRequest{Pattern: "needle", CaseInsensitive: true}, &res)
	if len(res.Matches) != 2 || res.Matches[0].Path != "b.txt" || res.Matches[1].Path != "src/a.go" || res.Matches[1].Line != 2 || res.Total != 2 {
		t.Fatalf("matches: %+v", res)
	}
	c.ok(tunnel.RouteSearch, grove.SearchRequest{Pattern: "needle", Path: "src", Context: 1}, &res)
	if len(res.Matches) != 1 || res.Matches[0].Text != "// needle one" || len(res.Matches[0].Before) != 1 {
		t.Fatalf("in src: %+v", res)
	}
	c.ok(tunnel.RouteSearch, grove.SearchRequest{Pattern: "absent-xyz"}, &res)
	if len(res.Matches) != 0 {
		t.Fatalf("absent: %+v", res)
	}
	c.fails(tunnel.RouteSearch, grove.SearchRequest{Pattern: "needle", Path: "up"}, "E_PATH_OUTSIDE_WORKSPACE")
	c.fails(tunnel.RouteSearch, grove.SearchRequest{Pattern: "needle", Path: "../"}, "E_PATH_OUTSIDE_WORKSPACE")
	c.fails(tunnel.RouteSearch, grove.SearchRequest{Pattern: "needle", Path: "missing"}, "E_NOT_FOUND")
	c.fails(tunnel.RouteSearch, grove.SearchRequest{Pattern: "(unclosed"}, "E_INVALID_ARGUMENT")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestGitRoutes(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "config", "user.name", "Dev Eloper")
	git(t, dir, "config", "user.email", "dev@example.com")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644)
	git(t, dir, "add", "a.txt")
	git(t, dir, "commit", "-q", "-m", "first")
	// A hook that would leave a mark: Grove's commits do not run hooks.
	os.WriteFile(filepath.Join(dir, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\ntouch \"$GIT_DIR/../hook-ran\"\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new\n"), 0o644)
	t.Setenv("GIT_DIR", "/nonexistent") // the agent's own git environment does not leak in

	l := openLocal(t, dir, tunnel.LocalOptions{})
	c := newDirect(t, l)
	var st grove.Status
	c.ok(tunnel.RouteGitStatus, nil, &st)
	if st.Branch != "main" || st.Clean || len(st.Unstaged) != 1 || st.Unstaged[0].Path != "a.txt" || len(st.Untracked) != 1 || st.Untracked[0] != "new.txt" {
		t.Fatalf("status: %+v", st)
	}
	var diff grove.Diff
	c.ok(tunnel.RouteGitDiff, grove.DiffRequest{}, &diff)
	if len(diff.Files) != 1 || diff.Files[0].Path != "a.txt" || diff.Files[0].Additions != 1 || !strings.Contains(diff.Patch, "+two") {
		t.Fatalf("diff: %+v", diff)
	}
	c.ok(tunnel.RouteGitDiff, grove.DiffRequest{StatOnly: true, Paths: []string{"a.txt"}}, &diff)
	if len(diff.Files) != 1 || diff.Patch != "" {
		t.Fatalf("stat-only diff: %+v", diff)
	}
	var cr grove.CommitResult
	c.ok(tunnel.RouteGitCommit, grove.CommitRequest{Message: "second", Paths: []string{"a.txt"}}, &cr)
	if cr.FilesChanged != 1 || cr.Insertions != 1 || git(t, dir, "rev-parse", "HEAD") != cr.SHA {
		t.Fatalf("commit: %+v", cr)
	}
	if who := git(t, dir, "log", "-1", "--format=%an <%ae> / %cn <%ce>"); who != "Dev Eloper <dev@example.com> / Dev Eloper <dev@example.com>" {
		t.Fatalf("identity: %s", who)
	}
	if _, err := os.Stat(filepath.Join(dir, "hook-ran")); err == nil {
		t.Fatal("the pre-commit hook ran")
	}
	c.fails(tunnel.RouteGitCommit, grove.CommitRequest{Message: "again", Paths: []string{"a.txt"}}, "E_NOTHING_TO_COMMIT")
	var lg tunnel.LogResult
	c.ok(tunnel.RouteGitLog, tunnel.LogRequest{Limit: 5}, &lg)
	if len(lg.Commits) != 2 || lg.Commits[0].Subject != "second" || lg.Commits[0].SHA != cr.SHA || lg.Commits[1].Subject != "first" {
		t.Fatalf("log: %+v", lg)
	}
	c.ok(tunnel.RouteGitDiff, grove.DiffRequest{BaseRef: "HEAD~1"}, &diff)
	if len(diff.Files) != 1 || diff.Files[0].Path != "a.txt" {
		t.Fatalf("diff from HEAD~1: %+v", diff)
	}
	c.fails(tunnel.RouteGitLog, tunnel.LogRequest{Path: "../x"}, "E_PATH_OUTSIDE_WORKSPACE")

	// Read-only: status, diff, log and search allowed; commit refused.
	ro := newDirect(t, openLocal(t, dir, tunnel.LocalOptions{ReadOnly: true}))
	ro.ok(tunnel.RouteGitStatus, nil, &st)
	ro.ok(tunnel.RouteGitDiff, grove.DiffRequest{}, &diff)
	ro.ok(tunnel.RouteGitLog, tunnel.LogRequest{}, &lg)
	ro.fails(tunnel.RouteGitCommit, grove.CommitRequest{Message: "x"}, "E_READ_ONLY_WORKSPACE")
	if n := git(t, dir, "rev-list", "--count", "HEAD"); n != "2" {
		t.Fatalf("%s commits", n)
	}

	// Not a repository: an answer, not a hang.
	plain := newDirect(t, openLocal(t, t.TempDir(), tunnel.LocalOptions{}))
	plain.fails(tunnel.RouteGitStatus, nil, "E_NOT_FOUND")
	c.fails(tunnel.RouteGitDiff, grove.DiffRequest{BaseRef: "no-such-branch"}, "E_NOT_FOUND")
}

// tmuxEnv gives the test a tmux server of its own: its own TMUX_TMPDIR
// (as tmux itself reads it) and socket name, killed at the end.
func tmuxEnv(t *testing.T) (socket string, tmux func(args ...string) (string, error)) {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed")
	}
	tmp, err := os.MkdirTemp("", "grove-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMUX_TMPDIR", tmp)
	t.Setenv("TMUX", "")
	socket = "grove-test-" + strconv.Itoa(os.Getpid())
	tmux = func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"-L", socket}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { tmux("kill-server"); os.RemoveAll(tmp) })
	return socket, tmux
}

// waitPane polls the pane until it shows all of want.
func waitPane(t *testing.T, tmux func(...string) (string, error), target string, want ...string) string {
	t.Helper()
	var out string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		out, _ = tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", target)
		all := true
		for _, w := range want {
			if !strings.Contains(out, w) {
				all = false
			}
		}
		if all {
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the pane never showed %q:\n%s", want, out)
	return ""
}

func TestTerminalTmux(t *testing.T) {
	socket, tmux := tmuxEnv(t)
	dir := t.TempDir()
	l := openLocal(t, dir, tunnel.LocalOptions{Workspace: "my.proj", Terminal: tunnel.TerminalOptions{TmuxSocket: socket}, Log: testLog(t)})
	if w := l.TerminalWhere(); !strings.Contains(w, "tmux -L "+socket+" attach -t grove-my_proj") {
		t.Fatalf("where: %q", w)
	}
	if out, err := tmux("has-session", "-t", "=grove-my_proj"); err != nil {
		t.Fatalf("no tmux session: %v %s", err, out)
	}
	c := newDirect(t, l)
	var x tunnel.ExecResult
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"sh", "-c", "echo visible-out; echo visible-err >&2; exit 3"}}, &x)
	if x.ExitCode != 3 || x.Stdout != "visible-out\n" || x.Stderr != "visible-err\n" {
		t.Fatalf("mirrored command's own result: %+v", x)
	}
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Shell: "echo hidden-marker", Hidden: true}, nil)
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Shell: "printf no-newline"}, nil)
	var st tunnel.AsyncStarted
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Shell: "echo async-marker", Async: true}, &st)
	sessionOutput(t, c, st.SessionID, tunnel.SessionOutputRequest{WaitMS: 3000})
	out := waitPane(t, tmux, "=grove-my_proj:", "$ sh -c 'echo visible-out; echo visible-err >&2; exit 3'", "visible-out", "visible-err", "[exit 3, ", "no-newline\n[exit 0, ", "$ echo async-marker   # async", "async-marker\n[exit 0")
	t.Logf("pane:\n%s", out)
	if strings.Contains(out, "hidden-marker") {
		t.Fatalf("a hidden command was shown:\n%s", out)
	}
	// The commands ran under the agent, not typed into the pane: its
	// shell history has nothing (the pane runs tail, not a shell).
	if cmd, _ := tmux("display-message", "-p", "-t", "=grove-my_proj:", "#{pane_current_command}"); strings.TrimSpace(cmd) != "tail" {
		t.Fatalf("the pane runs %q", cmd)
	}

	// A second agent of the same name takes the session over: the first
	// one's end leaves it; the second's ends it.
	l2 := openLocal(t, t.TempDir(), tunnel.LocalOptions{Workspace: "my.proj", Terminal: tunnel.TerminalOptions{TmuxSocket: socket}, Log: testLog(t)})
	newDirect(t, l2).ok(tunnel.RouteExecute, tunnel.ExecRequest{Shell: "echo second-agent"}, nil)
	waitPane(t, tmux, "=grove-my_proj:", "$ echo second-agent", "second-agent\n[exit 0")
	l.Close()
	if out, err := tmux("has-session", "-t", "=grove-my_proj"); err != nil {
		t.Fatalf("the first agent's end killed the second's session: %s", out)
	}
	l2.Close()
	if _, err := tmux("has-session", "-t", "=grove-my_proj"); err == nil {
		t.Fatal("the tmux session outlived the agent")
	}
}

func TestTerminalDisabledAndLogFile(t *testing.T) {
	socket, tmux := tmuxEnv(t)
	off := openLocal(t, t.TempDir(), tunnel.LocalOptions{Workspace: "off", Terminal: tunnel.TerminalOptions{Disabled: true, TmuxSocket: socket}})
	if off.TerminalWhere() != "" {
		t.Fatal("a disabled terminal has a place")
	}
	newDirect(t, off).ok(tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"true"}}, nil)
	if out, err := tmux("has-session", "-t", "=grove-off"); err == nil {
		t.Fatalf("--no-terminal made a session: %s", out)
	}

	l := openLocal(t, t.TempDir(), tunnel.LocalOptions{Workspace: "plain", Terminal: tunnel.TerminalOptions{NoTmux: true, TmuxSocket: socket}})
	w := l.TerminalWhere()
	if !strings.HasPrefix(w, "tail -f ") {
		t.Fatalf("where: %q", w)
	}
	c := newDirect(t, l)
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Shell: "echo in-the-log"}, nil)
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Shell: "echo not-in-the-log", Hidden: true}, nil)
	c.ok(tunnel.RouteExecute, tunnel.ExecRequest{Shell: "head -c 3000 /dev/zero | tr '\\0' z", MaxOutput: 100}, nil)
	b, err := os.ReadFile(strings.TrimPrefix(w, "tail -f "))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if !strings.Contains(log, "$ echo in-the-log\nin-the-log\n[exit 0, ") || strings.Contains(log, "not-in-the-log") {
		t.Fatalf("log file:\n%s", log)
	}
	if !strings.Contains(log, strings.Repeat("z", 100)+"\n[exit 0, ") || strings.Contains(log, strings.Repeat("z", 101)) || !strings.Contains(log, "2900 bytes") {
		t.Fatalf("capped output in the log:\n%s", log)
	}
	l.Close()
	if _, err := os.Stat(strings.TrimPrefix(w, "tail -f ")); !os.IsNotExist(err) {
		t.Fatalf("the log outlived the agent: %v", err)
	}
}

// Every agent line names the workspace once, whoever logs it.
func TestWorkspaceOnEveryLine(t *testing.T) {
	var buf strings.Builder
	log := tunnel.WorkspaceLogger(slog.New(slog.NewTextHandler(&syncWriter{w: &buf}, &slog.HandlerOptions{Level: slog.LevelDebug})), "proj")
	log.Info("reconnect loop line")
	log.With("workspace", "proj").Info("dispatcher line")
	d := &tunnel.Dispatcher{Workspace: "proj", Log: log}
	d.Handle("/x", func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	d.Dispatch(context.Background(), tunnel.Message{Type: tunnel.TypeToolCall, CorrelationID: "c", Endpoint: "/x"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 4 {
		t.Fatalf("lines: %q", lines)
	}
	for _, ln := range lines {
		if strings.Count(ln, "workspace=proj") != 1 {
			t.Errorf("line without exactly one workspace: %s", ln)
		}
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Async commands and their sessions through the server's call route.
func TestAsyncThroughServer(t *testing.T) {
	e := newEnv(t, nil)
	e.agent(t.TempDir(), "proj", false, nil)
	r := e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Shell: "sleep 0.2; echo done", Async: true}, 5000)
	var st tunnel.AsyncStarted
	if !r.resp.Success || json.Unmarshal(r.resp.Result, &st) != nil || st.SessionID == "" {
		t.Fatalf("async: %+v", r.resp)
	}
	r = e.call(aliceKey, "proj", tunnel.RouteSessionPrefix+st.SessionID+"/output", tunnel.SessionOutputRequest{WaitMS: 5000}, 10000)
	var o tunnel.SessionOutput
	if !r.resp.Success || json.Unmarshal(r.resp.Result, &o) != nil || o.Running || o.Stdout != "done\n" || o.Result == nil || o.Result.ExitCode != 0 {
		t.Fatalf("output: %+v %+v", r.resp, o)
	}
	for _, ep := range []string{"s_ffffffffffffffff/output", "s_ffffffffffffffff/signal", "x/output", "s_ffffffffffffffff/../output"} {
		var payload any
		if strings.HasSuffix(ep, "/signal") {
			payload = tunnel.SignalRequest{Signal: "TERM"}
		}
		r = e.call(aliceKey, "proj", tunnel.RouteSessionPrefix+ep, payload, 5000)
		if r.status != 200 || r.resp.Success || r.resp.Error == nil || r.resp.Error.Code != "E_NOT_FOUND" {
			t.Errorf("%s: %d %+v", ep, r.status, r.resp)
		}
	}
}
