package tunnel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/tools"
	"github.com/grove-dev/grove/tunnel"
)

// fakeAuth maps secrets to users.
type fakeAuth map[string]string

func (f fakeAuth) Authenticate(_ context.Context, secret string) (auth.Principal, error) {
	u, ok := f[secret]
	if !ok {
		return auth.Principal{}, grove.Errorf(grove.ErrUnauthorized, "unknown key")
	}
	return auth.Principal{User: u, KeyID: "k_" + u}, nil
}

const aliceKey, bobKey = "alice-secret", "bob-secret"

type env struct {
	t   *testing.T
	url string
	reg *tunnel.Registry
}

func testLog(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newEnv(t *testing.T, reg *tunnel.Registry) *env {
	t.Helper()
	return newEnvLimits(t, reg, httpapi.Limits{})
}

func newEnvLimits(t *testing.T, reg *tunnel.Registry, lim httpapi.Limits) *env {
	t.Helper()
	if reg == nil {
		reg = &tunnel.Registry{}
	}
	reg.Log = testLog(t)
	ts := tools.New(tools.Options{})
	t.Cleanup(ts.Close)
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Tools: ts, Auth: fakeAuth{aliceKey: "alice", bobKey: "bob"}, Tunnels: reg, Logger: reg.Log, Limits: lim}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, reg: reg}
}

// agent runs the real agent (what `grove tunnel` runs) on dir under name
// for alice, with extra test routes, and waits for its registration.
func (e *env) agent(dir, name string, readOnly bool, extra map[string]tunnel.Handler) context.CancelFunc {
	e.t.Helper()
	local, err := tunnel.OpenLocal(dir, readOnly)
	if err != nil {
		e.t.Fatal(err)
	}
	d := &tunnel.Dispatcher{Workspace: name, Log: testLog(e.t), Grace: 200 * time.Millisecond}
	local.Routes(d)
	for ep, h := range extra {
		d.Handle(ep, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tunnel.Run(ctx, e.url, aliceKey, &tunnel.Agent{Workspace: name, DirLabel: "test", ReadOnly: readOnly, D: d, Log: testLog(e.t)})
	}()
	stop := func() { cancel(); <-done; local.Close() }
	e.t.Cleanup(stop)
	e.waitRegistered("alice", name)
	return cancel
}

func (e *env) waitRegistered(user, name string) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, i := range e.reg.List(user) {
			if i.Workspace == name {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("tunnel %q of %s never registered", name, user)
}

type callResult struct {
	status int
	resp   tunnel.Response
	errMsg struct {
		Error struct{ Code, Message string } `json:"error"`
	}
}

// call goes through POST /v1/tunnels/{name}/call as key's user.
func (e *env) call(key, name, endpoint string, payload any, timeoutMS int64) callResult {
	e.t.Helper()
	p, _ := json.Marshal(payload)
	body, _ := json.Marshal(map[string]any{"endpoint": endpoint, "payload": json.RawMessage(p), "timeout_ms": timeoutMS})
	req, _ := http.NewRequest("POST", e.url+"/v1/tunnels/"+name+"/call", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var r callResult
	r.status = res.StatusCode
	if res.StatusCode == 200 {
		if err := json.Unmarshal(b, &r.resp); err != nil {
			e.t.Fatalf("%s: %v", b, err)
		}
	} else {
		_ = json.Unmarshal(b, &r.errMsg)
	}
	return r
}

func execResult(t *testing.T, r callResult) tunnel.ExecResult {
	t.Helper()
	if r.status != 200 || !r.resp.Success {
		t.Fatalf("call failed: status %d, response %+v, error %+v", r.status, r.resp, r.errMsg)
	}
	var x tunnel.ExecResult
	if err := json.Unmarshal(r.resp.Result, &x); err != nil {
		t.Fatal(err)
	}
	return x
}

// The hand-off's failure: commands that print nothing completed locally
// while the server waited for an answer that never came. Each is answered
// when its process exits.
func TestSilentCommandsAnswer(t *testing.T) {
	e := newEnv(t, nil)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "add.c"), []byte("int add(int a, int b) { return a + b; }\nint main(void) { return add(0, 0); }\n"), 0o644)
	e.agent(dir, "proj", false, nil)

	cases := []struct {
		name string
		req  tunnel.ExecRequest
	}{
		{"true", tunnel.ExecRequest{Argv: []string{"true"}}},
		{"mkdir -p .vscode", tunnel.ExecRequest{Argv: []string{"mkdir", "-p", ".vscode"}}},
		{"sh -c true", tunnel.ExecRequest{Shell: "true"}},
		{"background child holding stdout", tunnel.ExecRequest{Shell: "sleep 5 & true"}},
	}
	if _, err := exec.LookPath("gcc"); err == nil {
		cases = append(cases, struct {
			name string
			req  tunnel.ExecRequest
		}{"gcc -g -o add add.c", tunnel.ExecRequest{Argv: []string{"gcc", "-g", "-o", "add", "add.c"}}})
	} else {
		t.Log("gcc not installed: its case is skipped")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			x := execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, c.req, 20000))
			if x.ExitCode != 0 || x.TimedOut || x.Stdout != "" || x.Stderr != "" {
				t.Fatalf("result %+v", x)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Fatalf("answered after %s", d)
			}
		})
	}
	if st, err := os.Stat(filepath.Join(dir, ".vscode")); err != nil || !st.IsDir() {
		t.Fatalf(".vscode: %v", err)
	}
	if _, err := exec.LookPath("gcc"); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "add")); err != nil {
			t.Fatalf("gcc output: %v", err)
		}
	}
}

func TestExecuteResults(t *testing.T) {
	e := newEnv(t, nil)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	e.agent(dir, "proj", false, nil)

	x := execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Shell: "echo out; echo err >&2; exit 3"}, 5000))
	if x.ExitCode != 3 || x.Stdout != "out\n" || x.Stderr != "err\n" || x.TimedOut {
		t.Fatalf("non-zero exit: %+v", x)
	}
	x = execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"pwd"}, Cwd: "sub"}, 5000))
	if real, _ := filepath.EvalSymlinks(filepath.Join(dir, "sub")); strings.TrimSpace(x.Stdout) != real {
		t.Fatalf("cwd: %q, want %q", x.Stdout, real)
	}
	if r := e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"env"}}, 5000); strings.Contains(execResult(t, r).Stdout, "GROVE_API_KEY") {
		t.Fatal("the agent's API key reached the command's environment")
	}

	// Timeout: the whole process group dies, and the answer says so.
	pidfile := filepath.Join(dir, "grandchild.pid")
	start := time.Now()
	x = execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Shell: "echo before; sleep 30 & echo $! > grandchild.pid; wait", TimeoutMS: 300}, 10000))
	if !x.TimedOut || x.ExitCode != 124 || x.Stdout != "before\n" || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout: %+v after %s (want exit 124, as Grove's own exec)", x, time.Since(start))
	}
	b, _ := os.ReadFile(pidfile)
	pid := strings.TrimSpace(string(b))
	time.Sleep(100 * time.Millisecond)
	if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Fatalf("the background sleep %s outlived the timeout: %s", pid, st)
	}
	// The call's own timeout_ms bounds the command too.
	x = execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"sleep", "30"}}, 300))
	if !x.TimedOut || x.ExitCode != 124 {
		t.Fatalf("call timeout: %+v", x)
	}
	// A signal is 128+n, as Grove's own exec reports it.
	if x = execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Shell: "kill -TERM $$"}, 5000)); x.ExitCode != 143 || x.TimedOut {
		t.Fatalf("killed by TERM: %+v", x)
	}
	// The developer's machine: what a command leaves running in the
	// background (a dev server) outlives it, and the answer does not wait
	// for it even when it holds the output pipes.
	for _, shell := range []string{"sleep 30 >/dev/null 2>&1 & echo $! > bg.pid", "sleep 30 & echo $! > bg.pid"} {
		start = time.Now()
		if x = execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Shell: shell}, 10000)); x.ExitCode != 0 || time.Since(start) > 3*time.Second {
			t.Fatalf("%s: %+v after %s", shell, x, time.Since(start))
		}
		b, _ := os.ReadFile(filepath.Join(dir, "bg.pid"))
		pid := strings.TrimSpace(string(b))
		time.Sleep(100 * time.Millisecond)
		if st, err := os.ReadFile("/proc/" + pid + "/stat"); err != nil || strings.Contains(string(st), ") Z ") {
			t.Fatalf("%s: the background process %s did not outlive its command: %v %s", shell, pid, err, st)
		}
		if n, _ := strconv.Atoi(pid); n > 0 {
			syscall.Kill(n, syscall.SIGKILL)
		}
	}
}

// Every kind of failure is an answer, through the server.
func TestEveryCallAnswered(t *testing.T) {
	e := newEnv(t, nil)
	e.agent(t.TempDir(), "proj", false, map[string]tunnel.Handler{
		"/test/panic": func(context.Context, json.RawMessage) (any, error) { panic("boom") },
		"/test/hang": func(context.Context, json.RawMessage) (any, error) {
			time.Sleep(3 * time.Second) // ignores its context
			return nil, nil
		},
		"/test/error": func(context.Context, json.RawMessage) (any, error) {
			return nil, errors.New("/home/dev/secret path in an internal error")
		},
		"/test/empty": func(context.Context, json.RawMessage) (any, error) { return nil, nil },
	})
	for _, c := range []struct {
		endpoint string
		payload  any
		timeout  int64
		code     string
	}{
		{"/api/nope", map[string]any{}, 5000, "E_NOT_FOUND"},
		{"/test/panic", nil, 5000, "E_INTERNAL"},
		{"/test/hang", nil, 200, "E_TIMEOUT"},
		{"/test/error", nil, 5000, "E_INTERNAL"},
		{tunnel.RouteExecute, map[string]any{"argv": 5}, 5000, "E_INVALID_ARGUMENT"},
		{tunnel.RouteExecute, map[string]any{"bogus": true}, 5000, "E_INVALID_ARGUMENT"},
		{tunnel.RouteExecute, map[string]any{}, 5000, "E_INVALID_ARGUMENT"},
		{tunnel.RouteExecute, map[string]any{"argv": []string{"no-such-command-xyz"}}, 5000, "E_NOT_INSTALLED"},
		{tunnel.RouteRead, map[string]any{"path": "missing"}, 5000, "E_NOT_FOUND"},
	} {
		start := time.Now()
		r := e.call(aliceKey, "proj", c.endpoint, c.payload, c.timeout)
		if r.status != 200 || r.resp.Success || r.resp.Error == nil || r.resp.Error.Code != c.code {
			t.Errorf("%s %v: status %d, %+v %+v; want %s", c.endpoint, c.payload, r.status, r.resp, r.resp.Error, c.code)
			continue
		}
		if strings.Contains(r.resp.Error.Message, "/home/dev") {
			t.Errorf("%s: internal detail leaked: %s", c.endpoint, r.resp.Error.Message)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s answered after %s", c.endpoint, d)
		}
	}
	r := e.call(aliceKey, "proj", "/test/empty", nil, 5000)
	if r.status != 200 || !r.resp.Success || string(r.resp.Result) != "{}" {
		t.Fatalf("empty result: %d %+v", r.status, r.resp)
	}
}

func TestDispatcherUnit(t *testing.T) {
	d := &tunnel.Dispatcher{Workspace: "w", Grace: 50 * time.Millisecond}
	d.Handle("/p", func(context.Context, json.RawMessage) (any, error) { panic(errors.New("x")) })
	d.Handle("/bad-result", func(context.Context, json.RawMessage) (any, error) { return make(chan int), nil })
	d.Handle("/slow", func(ctx context.Context, _ json.RawMessage) (any, error) {
		<-ctx.Done()
		return "answered myself", nil
	})
	for _, c := range []struct {
		m    tunnel.Message
		code string
	}{
		{tunnel.Message{Type: tunnel.TypeToolCall, CorrelationID: "1", Endpoint: "/p"}, "E_INTERNAL"},
		{tunnel.Message{Type: tunnel.TypeToolCall, CorrelationID: "2", Endpoint: "/bad-result"}, "E_INTERNAL"},
		{tunnel.Message{Type: tunnel.TypeToolCall, CorrelationID: "3", Endpoint: "/none"}, "E_NOT_FOUND"},
		{tunnel.Message{Type: "something", CorrelationID: "4", Endpoint: "/p"}, "E_INVALID_ARGUMENT"},
		{tunnel.Message{Type: tunnel.TypeToolCall, CorrelationID: "5", Endpoint: "/slow", TimeoutMS: 20}, ""},
	} {
		resp := d.Dispatch(context.Background(), c.m)
		if resp.Type != tunnel.TypeToolResponse || resp.CorrelationID != c.m.CorrelationID {
			t.Fatalf("%+v: response %+v", c.m, resp)
		}
		if c.code == "" {
			if !resp.Success || string(resp.Result) != `"answered myself"` {
				t.Fatalf("%+v: %+v", c.m, resp)
			}
			continue
		}
		if resp.Success || resp.Error == nil || resp.Error.Code != c.code {
			t.Fatalf("%+v: %+v %+v, want %s", c.m, resp, resp.Error, c.code)
		}
	}
}

// rawAgent registers name for alice and answers nothing: an agent whose
// process hangs, or whose machine dropped off the network.
func rawAgent(t *testing.T, e *env, name string) *tunnel.WS {
	t.Helper()
	ws, _, err := tunnel.Dial(context.Background(), e.url+"/v1/tunnel", aliceKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ws.Write(ctx, tunnel.Message{Type: tunnel.TypeRegister, Workspace: name}); err != nil {
		t.Fatal(err)
	}
	if m, err := ws.Read(ctx); err != nil || m.Type != tunnel.TypeRegistered {
		t.Fatalf("registration: %+v %v", m, err)
	}
	return ws
}

// callAsync calls through the registry and reports the error and how long
// it took.
func callAsync(e *env, name string) chan [2]any {
	out := make(chan [2]any, 1)
	go func() {
		start := time.Now()
		_, err := e.reg.Call(context.Background(), "alice", name, tunnel.RouteExecute, json.RawMessage(`{"argv":["true"]}`), 30*time.Second)
		out <- [2]any{err, time.Since(start)}
	}()
	return out
}

func waitPending(t *testing.T, e *env) { time.Sleep(100 * time.Millisecond) }

func expectUnavailable(t *testing.T, ch chan [2]any, within time.Duration) {
	t.Helper()
	select {
	case r := <-ch:
		err, _ := r[0].(error)
		if !errors.Is(err, grove.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	case <-time.After(within):
		t.Fatalf("the call still waits after %s", within)
	}
}

func TestDeadSocketFailsFast(t *testing.T) {
	e := newEnv(t, nil) // default heartbeat 15 s: the close itself must be noticed
	ws := rawAgent(t, e, "gone")
	ch := callAsync(e, "gone")
	waitPending(t, e)
	ws.Close("agent dies")
	expectUnavailable(t, ch, time.Second)
	// And it is gone from the registry: the next call is E_NOT_FOUND.
	time.Sleep(50 * time.Millisecond)
	if r := e.call(aliceKey, "gone", tunnel.RouteExecute, map[string]any{"argv": []string{"true"}}, 1000); r.status != 404 {
		t.Fatalf("after close: %d %+v", r.status, r.errMsg)
	}
}

func TestMissedHeartbeatsKill(t *testing.T) {
	e := newEnv(t, &tunnel.Registry{Heartbeat: 100 * time.Millisecond})
	_ = rawAgent(t, e, "hung") // never reads: never answers a ping
	ch := callAsync(e, "hung")
	expectUnavailable(t, ch, time.Second)
}

// A tunnel outlives the API's per-write deadline (WriteTimeout, which the
// access-log wrapper sets on every write of an ordinary response) and the
// heartbeats keep it registered.
func TestHeartbeatsKeepAlive(t *testing.T) {
	e := newEnvLimits(t, &tunnel.Registry{Heartbeat: 50 * time.Millisecond}, httpapi.Limits{WriteTimeout: 100 * time.Millisecond, BodyTimeout: 100 * time.Millisecond})
	e.agent(t.TempDir(), "alive", false, nil)
	time.Sleep(400 * time.Millisecond) // eight heartbeats
	execResult(t, e.call(aliceKey, "alive", tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"true"}}, 5000))
}

func TestReconnectReplaces(t *testing.T) {
	e := newEnv(t, nil)
	_ = rawAgent(t, e, "proj")
	ch := callAsync(e, "proj")
	waitPending(t, e)
	dir := t.TempDir()
	e.agent(dir, "proj", false, nil) // the same name again: replaces
	expectUnavailable(t, ch, time.Second)
	time.Sleep(50 * time.Millisecond)
	if n := len(e.reg.List("alice")); n != 1 {
		t.Fatalf("%d tunnels, want 1", n)
	}
	execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"true"}}, 5000))
}

func TestOtherUsersCannotCall(t *testing.T) {
	e := newEnv(t, nil)
	e.agent(t.TempDir(), "mine", false, nil)
	r := e.call(bobKey, "mine", tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"true"}}, 5000)
	if r.status != 404 || r.errMsg.Error.Code != "E_NOT_FOUND" {
		t.Fatalf("bob calling alice's tunnel: %d %+v", r.status, r.errMsg)
	}
	never := e.call(bobKey, "never-registered", tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"true"}}, 5000)
	if never.errMsg.Error.Message != strings.Replace(r.errMsg.Error.Message, "mine", "never-registered", 1) {
		t.Fatalf("messages differ: %q vs %q", r.errMsg.Error.Message, never.errMsg.Error.Message)
	}
	req, _ := http.NewRequest("GET", e.url+"/v1/tunnels", nil)
	req.Header.Set("Authorization", "Bearer "+bobKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(b), "mine") {
		t.Fatalf("bob's list shows alice's tunnel: %s", b)
	}
	// No key, no tunnel.
	res, err = http.Get(e.url + "/v1/tunnel")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("keyless tunnel: %d", res.StatusCode)
	}
	if _, _, err := tunnel.Dial(context.Background(), e.url+"/v1/tunnel", "wrong"); err == nil {
		t.Fatal("a wrong key connected")
	}
}

func TestReadOnly(t *testing.T) {
	e := newEnv(t, nil)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	e.agent(dir, "ro", true, nil)
	r := e.call(aliceKey, "ro", tunnel.RouteRead, tunnel.ReadRequest{Path: "a.txt"}, 5000)
	var fc tunnel.ReadResult
	if json.Unmarshal(r.resp.Result, &fc); !r.resp.Success || fc.Content != "hello" {
		t.Fatalf("read: %+v", r.resp)
	}
	for _, c := range []struct {
		ep string
		p  any
	}{
		{tunnel.RouteWrite, tunnel.WriteRequest{Path: "a.txt", Content: "x"}},
		{tunnel.RouteWrite, tunnel.WriteRequest{Path: "new.txt", Content: "x"}},
		{tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"touch", "new.txt"}}},
		{tunnel.RouteExecute, tunnel.ExecRequest{Shell: "touch new.txt"}},
	} {
		r := e.call(aliceKey, "ro", c.ep, c.p, 5000)
		if r.resp.Success || r.resp.Error == nil || r.resp.Error.Code != "E_READ_ONLY_WORKSPACE" {
			t.Errorf("%s %+v: %+v", c.ep, c.p, r.resp)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "hello" {
		t.Fatal("a.txt changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Fatal("new.txt was made")
	}
}

func TestFilesConfined(t *testing.T) {
	e := newEnv(t, nil)
	root := t.TempDir()
	dir := filepath.Join(root, "checkout")
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(root, "outside.txt"), []byte("secret"), 0o644)
	os.Symlink(filepath.Join(root, "outside.txt"), filepath.Join(dir, "link"))
	os.Symlink("..", filepath.Join(dir, "up"))
	e.agent(dir, "proj", false, nil)

	w := e.call(aliceKey, "proj", tunnel.RouteWrite, tunnel.WriteRequest{Path: "src/new.txt", Content: "hi"}, 5000)
	if !w.resp.Success {
		t.Fatalf("write: %+v %+v", w.resp, w.resp.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "src", "new.txt")); string(b) != "hi" {
		t.Fatalf("written: %q", b)
	}
	bin := e.call(aliceKey, "proj", tunnel.RouteWrite, tunnel.WriteRequest{Path: "bin", Content: "/w==", Encoding: "base64"}, 5000)
	rb := e.call(aliceKey, "proj", tunnel.RouteRead, tunnel.ReadRequest{Path: "bin"}, 5000)
	var fc tunnel.ReadResult
	json.Unmarshal(rb.resp.Result, &fc)
	if !bin.resp.Success || fc.Encoding != "base64" || fc.Content != "/w==" {
		t.Fatalf("binary round trip: %+v %+v", bin.resp, fc)
	}
	for _, p := range []string{"../outside.txt", "/etc/passwd", "link", "up/outside.txt", ".git/config", ".GIT/config", "src/../../outside.txt"} {
		for _, ep := range []string{tunnel.RouteRead, tunnel.RouteWrite} {
			var payload any = tunnel.ReadRequest{Path: p}
			if ep == tunnel.RouteWrite {
				payload = tunnel.WriteRequest{Path: p, Content: "pwned"}
			}
			r := e.call(aliceKey, "proj", ep, payload, 5000)
			if r.resp.Success || r.resp.Error == nil || (r.resp.Error.Code != "E_PATH_OUTSIDE_WORKSPACE" && r.resp.Error.Code != "E_NOT_FOUND") {
				t.Errorf("%s %q: %+v %+v", ep, p, r.resp, r.resp.Error)
			}
		}
	}
	for _, cwd := range []string{"..", "/tmp", "up", ".git"} {
		r := e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"true"}, Cwd: cwd}, 5000)
		if r.resp.Success {
			t.Errorf("cwd %q accepted", cwd)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "outside.txt")); string(b) != "secret" {
		t.Fatal("outside.txt was written")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "config")); string(b) != "[core]\n" {
		t.Fatal(".git/config was written")
	}
}

// A caller that gives up stops waiting; the tunnel stays up for the next.
func TestCallerCancelKeepsTunnel(t *testing.T) {
	e := newEnv(t, nil)
	e.agent(t.TempDir(), "proj", false, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := e.reg.Call(ctx, "alice", "proj", tunnel.RouteExecute, json.RawMessage(`{"argv":["sleep","1"]}`), 5*time.Second)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	execResult(t, e.call(aliceKey, "proj", tunnel.RouteExecute, tunnel.ExecRequest{Argv: []string{"true"}}, 5000))
}
