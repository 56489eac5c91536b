package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/testenv"
)

// Issue 12's acceptance: the hand-off's seven checks through a real
// `grove tunnel` connected to a real `grove serve`, driven through the
// server's MCP tools — then a Go program under dlv and a Python script
// under debugpy the same way.

const addNumbersC = `#include <stdio.h>

int add_numbers(int a, int b) {
  int sum = a + b;
  return sum;
}

int main(void) {
  int total = add_numbers(2, 3);
  printf("total=%d\n", total);
  return 0;
}
`

// bearerTransport adds the API key to every request of the MCP client.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// localAgent is a running `grove tunnel`.
type localAgent struct {
	name   string
	stderr *testenv.Buffer
}

func startAgent(t *testing.T, serverURL, key, dir, name string, env ...string) *localAgent {
	t.Helper()
	cmd := exec.Command(os.Args[0], "tunnel", "--server", serverURL, "--dir", dir, "--name", name)
	cmd.Env = append(append(os.Environ(), "GROVE_CLI_MAIN=1", "GROVE_API_KEY="+key), env...)
	a := &localAgent{name: name, stderr: &testenv.Buffer{}}
	cmd.Stderr = a.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return a
}

type mcpCaller struct {
	t  *testing.T
	cs *mcp.ClientSession
	ws string
}

// call runs a tool and decodes its structured result into out (when
// non-nil); it returns the text and whether the tool reported an error.
func (m *mcpCaller) call(name string, args map[string]any, out any) (string, bool) {
	m.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	args["workspace_id"] = m.ws
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := m.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		m.t.Fatalf("%s: protocol error %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			m.t.Fatalf("%s: structured result %s: %v", name, b, err)
		}
	}
	return text.String(), res.IsError
}

func (m *mcpCaller) must(name string, args map[string]any, out any) string {
	m.t.Helper()
	text, isErr := m.call(name, args, out)
	if isErr {
		m.t.Fatalf("%s %v: %s", name, args, text)
	}
	return text
}

func variables(s grove.DebugSnapshot) map[string]string {
	vars := map[string]string{}
	if len(s.Frames) > 0 {
		for _, sc := range s.Frames[0].Scopes {
			for _, v := range sc.Variables {
				vars[v.Name] = v.Value
			}
		}
	}
	return vars
}

func TestAcceptanceTunnelDebugging(t *testing.T) {
	for _, c := range []struct{ component, bin string }{{"gcc", "gcc"}, {"tmux", "tmux"}, {"dlv", "dlv"}} {
		_, err := exec.LookPath(c.bin)
		testenv.Require(t, c.component, err == nil, fmt.Sprint(err))
	}
	lldbDAP := ""
	for _, n := range []string{"lldb-dap", "lldb-dap-19", "lldb-dap-18", "lldb-dap-17"} {
		if p, err := exec.LookPath(n); err == nil {
			lldbDAP = p
			break
		}
	}
	testenv.Require(t, "lldb", lldbDAP != "", "no lldb-dap on PATH")
	testenv.Require(t, "debugpy", exec.Command("/usr/bin/python3", "-c", "import debugpy").Run() == nil, "python3-debugpy not installed")

	e := &cliEnv{t: t, root: t.TempDir()}
	key := strings.TrimSpace(e.ok("", "keys", "create", "--user", "alice"))
	srv := startServe(t, e.root)

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "add_numbers.c"), []byte(addNumbersC), 0o644)
	// tmux on a socket directory of the test's own, so the developer's
	// tmux server (and other tests') is never touched.
	tmuxDir, err := os.MkdirTemp("", "gt")
	if err != nil {
		t.Fatal(err)
	}
	tmuxEnv := "TMUX_TMPDIR=" + tmuxDir
	t.Cleanup(func() {
		k := exec.Command("tmux", "-L", "grove-tunnel", "kill-server")
		k.Env = append(os.Environ(), tmuxEnv)
		k.Run()
		os.RemoveAll(tmuxDir)
	})
	name := fmt.Sprintf("laptop%d", time.Now().UnixNano()%1e6)
	agent := startAgent(t, srv.url, key, dir, name, tmuxEnv)

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "acceptance", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.url + "/v1/mcp", HTTPClient: &http.Client{Transport: bearerTransport{key}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	m := &mcpCaller{t: t, cs: cs, ws: "local-" + name}
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, body := apiDo(t, "GET", srv.url+"/v1/workspaces", key, nil)
		if st == 200 && strings.Contains(string(body), `"local-`+name+`"`) && strings.Contains(string(body), `"mode":"local"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tunnel never appeared as a local workspace: %d %s\nagent: %s", st, body, agent.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// 1–3: silent commands complete, with exit 0, no timeout and, for gcc,
	// empty output.
	for _, command := range []string{"true", "mkdir -p .vscode", "gcc -g -O0 -o add_numbers add_numbers.c"} {
		var r struct {
			ExitCode int    `json:"exit_code"`
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
			TimedOut bool   `json:"timed_out"`
		}
		start := time.Now()
		m.must("run_command", map[string]any{"command": command, "timeout_s": 60}, &r)
		if r.ExitCode != 0 || r.TimedOut || r.Stdout != "" || r.Stderr != "" {
			t.Fatalf("%q: %+v", command, r)
		}
		t.Logf("%q answered in %s", command, time.Since(start).Round(time.Millisecond))
	}
	if _, err := os.Stat(filepath.Join(dir, "add_numbers")); err != nil {
		t.Fatalf("gcc left no binary on the developer's machine: %v", err)
	}

	// 4: the debug context lists a C adapter that launches.
	var dc grove.DebugContext
	m.must("debug_context", nil, &dc)
	hasC := false
	for _, a := range dc.Adapters {
		if a.Name == "lldb-dap" && strings.Contains(strings.Join(a.Languages, ","), "c") {
			hasC = true
		}
	}
	if !hasC {
		t.Fatalf("debug context has no C adapter: %+v", dc)
	}

	// 5 and 6: a session, a verified breakpoint at add_numbers.c:4, and
	// the locals after continue.
	var sess grove.DebugSession
	m.must("debug_start", map[string]any{"language": "c", "program": "add_numbers",
		"breakpoints": []map[string]any{{"file": "add_numbers.c", "lines": []int{4}}}}, &sess)
	if sess.ID == "" {
		t.Fatalf("no session id: %+v", sess)
	}
	if len(sess.Breakpoints) != 1 || !sess.Breakpoints[0].Verified || sess.Breakpoints[0].Line != 4 {
		t.Fatalf("breakpoint at add_numbers.c:4 not verified: %+v", sess.Breakpoints)
	}
	var snap grove.DebugSnapshot
	m.must("debug_continue", map[string]any{"session_id": sess.ID, "expressions": []string{"a + b"}}, &snap)
	if snap.State != grove.DebugStopped || len(snap.Frames) == 0 || snap.Frames[0].Line != 4 {
		t.Fatalf("not stopped at line 4: %+v", snap)
	}
	if v := variables(snap); v["a"] != "2" || v["b"] != "3" {
		t.Fatalf("locals: %v", v)
	}
	if len(snap.Evaluations) != 1 || snap.Evaluations[0].Result != "5" {
		t.Fatalf("a + b: %+v", snap.Evaluations)
	}
	m.must("debug_step", map[string]any{"session_id": sess.ID, "kind": "over"}, &snap)
	if snap.Frames[0].Line != 5 || variables(snap)["sum"] != "5" {
		t.Fatalf("after step over: line %d, locals %v", snap.Frames[0].Line, variables(snap))
	}
	m.must("debug_stop", map[string]any{"session_id": sess.ID}, nil)

	// 7: the developer saw the command in their terminal.
	capture := exec.Command("tmux", "-L", "grove-tunnel", "capture-pane", "-p", "-S", "-200", "-t", "grove-"+name)
	capture.Env = append(os.Environ(), tmuxEnv)
	pane, err := capture.CombinedOutput()
	if err != nil || !strings.Contains(string(pane), "gcc -g -O0 -o add_numbers add_numbers.c") {
		t.Fatalf("the command is not in the developer's tmux pane (%v):\n%s\nagent: %s", err, pane, agent.stderr)
	}

	// 5 again: with the adapter hidden from the agent's PATH, the
	// structured error comes at once.
	binDir := t.TempDir()
	for _, tool := range []string{"sh", "true", "gcc"} {
		if p, err := exec.LookPath(tool); err == nil {
			os.Symlink(p, filepath.Join(binDir, tool))
		}
	}
	hidden := startAgent(t, srv.url, key, dir, name+"-nolldb", "PATH="+binDir, "GROVE_TUNNEL_NO_TERMINAL=1")
	h := &mcpCaller{t: t, cs: cs, ws: "local-" + hidden.name}
	for deadline := time.Now().Add(15 * time.Second); ; {
		if st, _ := apiDo(t, "GET", srv.url+"/v1/workspaces/"+h.ws, key, nil); st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second agent never registered: %s", hidden.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	text, isErr := h.call("debug_start", map[string]any{"language": "c", "program": "add_numbers"}, nil)
	if !isErr || !strings.Contains(text, "E_DEBUG_ADAPTER_UNAVAILABLE") || time.Since(start) > time.Second {
		t.Fatalf("hidden adapter: error=%v after %s: %s", isErr, time.Since(start), text)
	}

	t.Run("Go under dlv", func(t *testing.T) {
		m := &mcpCaller{t: t, cs: cs, ws: m.ws}
		m.must("write_file", map[string]any{"path": "gocalc/go.mod", "content": "module gocalc\n\ngo 1.21\n"}, nil)
		m.must("write_file", map[string]any{"path": "gocalc/main.go", "content": "package main\n\nimport \"fmt\"\n\nfunc mul(x, y int) int {\n\tproduct := x * y\n\treturn product\n}\n\nfunc main() {\n\tfmt.Println(mul(6, 7))\n}\n"}, nil)
		var sess grove.DebugSession
		t.Log(m.must("debug_start", map[string]any{"language": "go", "program": "gocalc", "cwd": "gocalc", "timeout_s": 300,
			"breakpoints": []map[string]any{{"file": "gocalc/main.go", "lines": []int{6}}}}, &sess))
		var snap grove.DebugSnapshot
		t.Log(m.must("debug_continue", map[string]any{"session_id": sess.ID, "timeout_s": 120}, &snap))
		if v := variables(snap); snap.State != grove.DebugStopped || v["x"] != "6" || v["y"] != "7" {
			t.Fatalf("stopped at %+v, locals %v", snap.Frames, v)
		}
		m.must("debug_step", map[string]any{"session_id": sess.ID, "kind": "over"}, &snap)
		var ev grove.DebugEvaluation
		m.must("debug_evaluate", map[string]any{"session_id": sess.ID, "expression": "product"}, &ev)
		if ev.Result != "42" {
			t.Fatalf("product = %+v", ev)
		}
		m.must("debug_stop", map[string]any{"session_id": sess.ID}, nil)
	})

	t.Run("Python under debugpy", func(t *testing.T) {
		m := &mcpCaller{t: t, cs: cs, ws: m.ws}
		m.must("write_file", map[string]any{"path": "calc.py", "content": "def scale(values, factor):\n    total = sum(values) * factor\n    return total\n\nprint(scale([1, 2, 3], 10))\n"}, nil)
		var sess grove.DebugSession
		m.must("debug_start", map[string]any{"language": "python", "program": "calc.py",
			"breakpoints": []map[string]any{{"file": "calc.py", "lines": []int{2}}}}, &sess)
		var snap grove.DebugSnapshot
		m.must("debug_continue", map[string]any{"session_id": sess.ID}, &snap)
		if v := variables(snap); snap.State != grove.DebugStopped || v["factor"] != "10" {
			t.Fatalf("stopped at %+v, locals %v", snap.Frames, v)
		}
		t.Log(m.must("debug_step", map[string]any{"session_id": sess.ID, "kind": "over"}, &snap))
		var ev grove.DebugEvaluation
		m.must("debug_evaluate", map[string]any{"session_id": sess.ID, "expression": "total + 1"}, &ev)
		if ev.Result != "61" {
			t.Fatalf("total + 1 = %+v", ev)
		}
		m.must("debug_stop", map[string]any{"session_id": sess.ID}, nil)
		var list struct {
			Sessions []grove.DebugSession `json:"sessions"`
		}
		m.must("debug_sessions", nil, &list)
		for _, s := range list.Sessions {
			if s.State != grove.DebugTerminated {
				t.Errorf("session %s still %s after stop", s.ID, s.State)
			}
		}
	})
}

// Issue 12's acceptance, the C case again through the MCP debug tools on
// workspaces of Grove's own runtimes: the compiler and lldb-dap run inside
// the sandbox.
func TestAcceptanceDebugInRuntimes(t *testing.T) {
	for _, rt := range []string{"bwrap", "docker"} {
		t.Run(rt, func(t *testing.T) {
			switch rt {
			case "bwrap":
				_, err := exec.LookPath("bwrap")
				testenv.Require(t, "bwrap", err == nil, fmt.Sprint(err))
			case "docker":
				err := exec.Command("docker", "version").Run()
				testenv.Require(t, "docker", err == nil, fmt.Sprint(err))
			}
			_, err := exec.LookPath("lldb-dap-19")
			testenv.Require(t, "lldb", err == nil, fmt.Sprint(err))
			e := &cliEnv{t: t, root: t.TempDir()}
			if rt == "docker" {
				e.ok("", "image", "build") // reused by tag when built already
			}
			key := strings.TrimSpace(e.ok("", "keys", "create", "--user", "alice"))
			repo := gitRepo(t)
			srv := startServe(t, e.root, "GROVE_RUNTIME="+rt, "GROVE_ALLOW_UNISOLATED=", "GROVE_LOCAL_REPO_ROOTS="+filepath.Dir(repo))
			st, body := apiDo(t, "POST", srv.url+"/v1/workspaces", key, map[string]any{"repo": repo, "project": fmt.Sprintf("p%d", time.Now().UnixNano()), "conversation": "dbg"})
			var ws struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(body, &ws); err != nil || st/100 != 2 || ws.ID == "" {
				t.Fatalf("acquire: %d %s\n%s", st, body, srv.stderr)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "acceptance", Version: "1"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: srv.url + "/v1/mcp", HTTPClient: &http.Client{Transport: bearerTransport{key}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			m := &mcpCaller{t: t, cs: cs, ws: ws.ID}
			m.must("write_file", map[string]any{"path": "add_numbers.c", "content": addNumbersC}, nil)
			var r struct {
				ExitCode int    `json:"exit_code"`
				Stderr   string `json:"stderr"`
			}
			m.must("run_command", map[string]any{"command": "gcc -g -O0 -o add_numbers add_numbers.c", "timeout_s": 120}, &r)
			if r.ExitCode != 0 {
				t.Fatalf("gcc in the sandbox: %+v", r)
			}
			var dc grove.DebugContext
			m.must("debug_context", nil, &dc)
			found := false
			for _, a := range dc.Adapters {
				found = found || a.Name == "lldb-dap"
			}
			if !found {
				t.Fatalf("no lldb-dap in the %s runtime: %+v", rt, dc)
			}
			var sess grove.DebugSession
			m.must("debug_start", map[string]any{"language": "c", "program": "add_numbers",
				"breakpoints": []map[string]any{{"file": "add_numbers.c", "lines": []int{4}}}}, &sess)
			if len(sess.Breakpoints) != 1 || !sess.Breakpoints[0].Verified {
				t.Fatalf("breakpoint: %+v", sess)
			}
			var snap grove.DebugSnapshot
			m.must("debug_continue", map[string]any{"session_id": sess.ID, "expressions": []string{"a + b"}}, &snap)
			if v := variables(snap); snap.State != grove.DebugStopped || v["a"] != "2" || v["b"] != "3" || len(snap.Evaluations) != 1 || snap.Evaluations[0].Result != "5" {
				t.Fatalf("snapshot: %+v", snap)
			}
			m.must("debug_step", map[string]any{"session_id": sess.ID, "kind": "over"}, &snap)
			if variables(snap)["sum"] != "5" {
				t.Fatalf("after step: %+v", snap)
			}
			m.must("debug_stop", map[string]any{"session_id": sess.ID}, nil)
			// The project name is unique per run: Docker's container of
			// (user, project) outlives the server, and one left by an
			// earlier run would carry mounts of that run's deleted root.
			if st, body := apiDo(t, "DELETE", srv.url+"/v1/workspaces/"+ws.ID, key, nil); st/100 != 2 {
				t.Errorf("destroy: %d %s", st, body)
			}
		})
	}
}
