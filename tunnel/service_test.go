package tunnel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/tools"
	"github.com/grove-dev/grove/tunnel"
)

// noWorkspaces is a Service with no workspace of its own: what the tests
// need of the engine under tunnel.Scope (unknown ids, empty lists).
type noWorkspaces struct{ grove.Service }

func (noWorkspaces) Get(_ context.Context, id string) (*grove.Workspace, error) {
	return nil, grove.Errorf(grove.ErrNotFound, "workspace %s not found", id)
}

func (noWorkspaces) List(context.Context, grove.WorkspaceFilter) ([]*grove.Workspace, error) {
	return []*grove.Workspace{}, nil
}

// newSvcEnv is newEnv with a Service under the HTTP API, so the workspace
// routes, the tool catalog and MCP are served.
func newSvcEnv(t *testing.T, reg *tunnel.Registry) *env {
	t.Helper()
	if reg == nil {
		reg = &tunnel.Registry{}
	}
	reg.Log = testLog(t)
	ts := tools.New(tools.Options{})
	t.Cleanup(ts.Close)
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Service: noWorkspaces{}, Tools: ts, Auth: fakeAuth{aliceKey: "alice", bobKey: "bob"}, Tunnels: reg, Logger: reg.Log}))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, reg: reg}
}

// do sends one API request as key's user.
func (e *env) do(method, path, key string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func (e *env) mcp(key, path string) *mcp.ClientSession {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	tr := &mcp.StreamableClientTransport{Endpoint: e.url + path, HTTPClient: &http.Client{Transport: bearer{key: key}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "tunnel-test", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		e.t.Fatalf("connect %s: %v", path, err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (isError bool, text string, structured map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &structured)
	return res.IsError, sb.String(), structured
}

// A live tunnel is a workspace of its owner's, mode local, in
// GET /v1/workspaces and GET /v1/workspaces/{id}; to anyone else its id
// is an unknown id, answered in the same words.
func TestTunnelWorkspaceListedForOwnerOnly(t *testing.T) {
	e := newSvcEnv(t, nil)
	e.agent(t.TempDir(), "proj", false, nil)
	e.agent(t.TempDir(), "ro", true, nil)

	st, b := e.do("GET", "/v1/workspaces", aliceKey, nil)
	var list struct{ Workspaces []grove.Workspace }
	if err := json.Unmarshal(b, &list); st != 200 || err != nil {
		t.Fatalf("list: %d %s", st, b)
	}
	got := map[string]grove.Workspace{}
	for _, w := range list.Workspaces {
		got[w.ID] = w
	}
	w, ok := got["local-proj"]
	if !ok || w.Mode != grove.ModeLocal || w.RuntimeKind != "tunnel" || w.User != "alice" || !w.Capabilities().Writable || w.State != grove.WorkspaceReady {
		t.Fatalf("local-proj listed as %+v (list %s)", w, b)
	}
	if ro := got["local-ro"]; !ro.ReadOnly || ro.Capabilities().Writable {
		t.Fatalf("read-only tunnel listed as %+v", ro)
	}
	if st, b := e.do("GET", "/v1/workspaces/local-proj", aliceKey, nil); st != 200 || !strings.Contains(string(b), `"mode":"local"`) {
		t.Fatalf("show: %d %s", st, b)
	}
	// MCP bound to the read-only one lists no write tools.
	ro := e.mcp(aliceKey, "/v1/workspaces/local-ro/mcp")
	if tl, err := ro.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	} else {
		for _, tool := range tl.Tools {
			if tool.Name == "write_file" || tool.Name == "run_command" {
				t.Fatalf("read-only tunnel lists %s", tool.Name)
			}
		}
	}
	if isErr, text, _ := callTool(t, e.mcp(aliceKey, "/v1/mcp"), "write_file", map[string]any{"workspace_id": "local-ro", "path": "x", "content": "x"}); !isErr || !strings.Contains(text, "E_READ_ONLY_WORKSPACE") {
		t.Fatalf("write_file on the read-only tunnel: %v %s", isErr, text)
	}

	// Bob: not listed, and local-proj is exactly an unknown id.
	if st, b := e.do("GET", "/v1/workspaces", bobKey, nil); st != 200 || strings.Contains(string(b), "local-") {
		t.Fatalf("bob's list: %d %s", st, b)
	}
	norm := func(b []byte, id string) string {
		var x struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(b, &x)
		return x.Error.Code + " " + strings.ReplaceAll(x.Error.Message, id, "ID")
	}
	for _, path := range []string{"", "/files/a.txt", "/git/status"} {
		st1, b1 := e.do("GET", "/v1/workspaces/local-proj"+path, bobKey, nil)
		st2, b2 := e.do("GET", "/v1/workspaces/local-nothere"+path, bobKey, nil)
		if st1 != 404 || st1 != st2 || norm(b1, "local-proj") != norm(b2, "local-nothere") {
			t.Fatalf("%s: bob on alice's tunnel %d %s; on an unknown id %d %s", path, st1, b1, st2, b2)
		}
	}
	st1, b1 := e.do("POST", "/v1/workspaces/local-proj/tools/read_file", bobKey, map[string]any{"path": "a.txt"})
	st2, b2 := e.do("POST", "/v1/workspaces/local-nothere/tools/read_file", bobKey, map[string]any{"path": "a.txt"})
	if st1 != st2 || norm(b1, "local-proj") != norm(b2, "local-nothere") {
		t.Fatalf("tools: bob on alice's tunnel %d %s; on an unknown id %d %s", st1, b1, st2, b2)
	}
	// Destroy and push are refused, release and pin are no-ops.
	if st, b := e.do("DELETE", "/v1/workspaces/local-proj", aliceKey, nil); st != 501 || !strings.Contains(string(b), "E_NOT_SUPPORTED") {
		t.Fatalf("destroy: %d %s", st, b)
	}
	if st, b := e.do("POST", "/v1/workspaces/local-proj/git/push", aliceKey, map[string]any{}); !strings.Contains(string(b), "E_NOT_SUPPORTED") {
		t.Fatalf("push: %d %s", st, b)
	}
	if st, b := e.do("POST", "/v1/workspaces/local-proj/release", aliceKey, nil); st/100 != 2 {
		t.Fatalf("release: %d %s", st, b)
	}
}

// The tool catalog on a tunnel workspace, over MCP bound to its id and
// unbound, and over REST, on the agent's real routes. Routes the agent of
// this branch may not serve yet are sub-tests that skip when it answers
// "unknown endpoint".
func TestCatalogOnTunnelWorkspace(t *testing.T) {
	e := newSvcEnv(t, nil)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	e.agent(dir, "proj", false, nil)
	cs := e.mcp(aliceKey, "/v1/workspaces/local-proj/mcp")

	if isErr, text, _ := callTool(t, cs, "write_file", map[string]any{"path": "notes/a.txt", "content": "alpha\nbeta\n"}); isErr {
		t.Fatalf("write_file: %s", text)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes", "a.txt")); string(b) != "alpha\nbeta\n" {
		t.Fatalf("the file on the developer's disk: %q", b)
	}
	if isErr, text, st := callTool(t, cs, "read_file", map[string]any{"path": "notes/a.txt"}); isErr || st["total_lines"] != float64(2) || !strings.Contains(text, "beta") {
		t.Fatalf("read_file: %v %s %v", isErr, text, st)
	}
	if isErr, text, _ := callTool(t, cs, "edit_file", map[string]any{"path": "notes/a.txt", "old_string": "beta", "new_string": "gamma"}); isErr {
		t.Fatalf("edit_file: %s", text)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes", "a.txt")); string(b) != "alpha\ngamma\n" {
		t.Fatalf("after edit_file: %q", b)
	}
	if isErr, text, st := callTool(t, cs, "run_command", map[string]any{"command": "cat notes/a.txt; echo err >&2; exit 3"}); isErr || st["exit_code"] != float64(3) || !strings.Contains(text, "gamma") || !strings.Contains(text, "err") {
		t.Fatalf("run_command: %v %s %v", isErr, text, st)
	}
	if isErr, text, st := callTool(t, cs, "run_command", map[string]any{"command": "mkdir -p .vscode"}); isErr || st["exit_code"] != float64(0) {
		t.Fatalf("silent run_command: %v %s %v", isErr, text, st)
	}
	if isErr, text, _ := callTool(t, cs, "read_file", map[string]any{"path": "nope.txt"}); !isErr || !strings.Contains(text, "E_NOT_FOUND") {
		t.Fatalf("read_file of a missing file: %v %s", isErr, text)
	}
	if isErr, text, _ := callTool(t, cs, "read_file", map[string]any{"path": "../outside"}); !isErr || !strings.Contains(text, "E_PATH_OUTSIDE_WORKSPACE") {
		t.Fatalf("read_file outside: %v %s", isErr, text)
	}

	// Unbound MCP names the workspace.
	un := e.mcp(aliceKey, "/v1/mcp")
	if isErr, text, _ := callTool(t, un, "read_file", map[string]any{"workspace_id": "local-proj", "path": "notes/a.txt"}); isErr || !strings.Contains(text, "gamma") {
		t.Fatalf("unbound read_file: %v %s", isErr, text)
	}
	// Bob cannot bind to it.
	if st, _ := e.do("POST", "/v1/workspaces/local-proj/mcp", bobKey, []byte(`{}`)); st != 404 {
		t.Fatalf("bob bound MCP: %d", st)
	}

	// REST.
	if st, b := e.do("PUT", "/v1/workspaces/local-proj/files/b.bin", aliceKey, []byte{0xff, 0x00, 'x'}); st/100 != 2 {
		t.Fatalf("PUT: %d %s", st, b)
	}
	if st, b := e.do("GET", "/v1/workspaces/local-proj/files/b.bin", aliceKey, nil); st != 200 || !bytes.Equal(b, []byte{0xff, 0x00, 'x'}) {
		t.Fatalf("GET binary: %d %q", st, b)
	}
	t.Run("exec_stdin_env", func(t *testing.T) {
		st, b := e.do("POST", "/v1/workspaces/local-proj/exec", aliceKey, map[string]any{"argv": []string{"sh", "-c", "cat; echo $GREETING"}, "stdin": "in\n", "env": map[string]string{"GREETING": "hi"}})
		var res struct {
			ExitCode int    `json:"exit_code"`
			Stdout   string `json:"stdout"`
		}
		if err := json.Unmarshal(b, &res); st != 200 || err != nil {
			t.Fatalf("exec: %d %s", st, b)
		}
		if res.Stdout == "\n" {
			t.Skip("the agent of this branch ignores stdin and env")
		}
		if res.ExitCode != 0 || res.Stdout != "in\nhi\n" {
			t.Fatalf("exec with stdin and env: %s", b)
		}
	})
	// A caller that gives up kills the command on the developer's machine
	// (ExecStream: the async session is signalled; Exec: the call is
	// cancelled).
	t.Run("cancel_kills", func(t *testing.T) {
		if !agentServes(t, e, "proj", tunnel.RouteSessionPrefix+"s_0000000000000000/output") {
			t.Skip("the agent of this branch has no async sessions nor cancel")
		}
		svc := tunnel.Scope(noWorkspaces{}, e.reg, "alice")
		for i, stream := range []bool{false, true} {
			marker := fmt.Sprintf("survived-%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			req := grove.ExecRequest{Argv: []string{"sh", "-c", "sleep 1; touch " + marker}}
			var err error
			if stream {
				_, err = svc.ExecStream(ctx, "local-proj", req, func(grove.Chunk) error { return nil })
			} else {
				_, err = svc.Exec(ctx, "local-proj", req)
			}
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("stream %v: %v", stream, err)
			}
			time.Sleep(1500 * time.Millisecond)
			if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
				t.Fatalf("stream %v: the command outlived its cancelled caller", stream)
			}
		}
	})

	pending := func(t *testing.T, isErr bool, text string) {
		t.Helper()
		if isErr && strings.Contains(text, "unknown endpoint") {
			t.Skipf("the agent of this branch does not serve this route yet: %s", text)
		}
	}
	t.Run("list_dir", func(t *testing.T) {
		isErr, text, _ := callTool(t, cs, "list_dir", map[string]any{"path": "notes"})
		pending(t, isErr, text)
		if isErr || !strings.Contains(text, "a.txt") {
			t.Fatalf("list_dir: %v %s", isErr, text)
		}
	})
	t.Run("search_code", func(t *testing.T) {
		isErr, text, _ := callTool(t, cs, "search_code", map[string]any{"pattern": "func main"})
		pending(t, isErr, text)
		if isErr || !strings.Contains(text, "main.go") {
			t.Fatalf("search_code: %v %s", isErr, text)
		}
	})
	t.Run("find_files", func(t *testing.T) {
		isErr, text, _ := callTool(t, cs, "find_files", map[string]any{"pattern": "*.go"})
		pending(t, isErr, text)
		if isErr || !strings.Contains(text, "main.go") {
			t.Fatalf("find_files: %v %s", isErr, text)
		}
	})
	t.Run("delete", func(t *testing.T) {
		st, b := e.do("DELETE", "/v1/workspaces/local-proj/files/b.bin", aliceKey, nil)
		pending(t, st >= 400, string(b))
		if st/100 != 2 {
			t.Fatalf("DELETE: %d %s", st, b)
		}
		if _, err := os.Stat(filepath.Join(dir, "b.bin")); !os.IsNotExist(err) {
			t.Fatalf("b.bin still there: %v", err)
		}
	})
	t.Run("git", func(t *testing.T) {
		gitInit(t, dir)
		os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { println() }\n"), 0o644)
		isErr, text, _ := callTool(t, cs, "git_status", map[string]any{})
		pending(t, isErr, text)
		if isErr || !strings.Contains(text, "main.go") {
			t.Fatalf("git_status: %v %s", isErr, text)
		}
		isErr, text, _ = callTool(t, cs, "git_diff", map[string]any{})
		pending(t, isErr, text)
		if isErr || !strings.Contains(text, "println") {
			t.Fatalf("git_diff: %v %s", isErr, text)
		}
	})
}

// agentServes reports whether alice's agent name has endpoint (it does
// not answer "unknown endpoint").
func agentServes(t *testing.T, e *env, name, endpoint string) bool {
	t.Helper()
	r, err := e.reg.Call(context.Background(), "alice", name, endpoint, json.RawMessage(`{}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return r.Success || r.Error == nil || !strings.Contains(r.Error.Message, "unknown endpoint")
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "root"}} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

// The decorator's mapping of every route, with handlers standing in for
// the agent's: payloads as routes.go says, results back as Grove types,
// the agent's errors back as their kinds with their text.
func TestServiceMapsRoutes(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{}
	rec := func(result any, err error) tunnel.Handler {
		return func(_ context.Context, p json.RawMessage) (any, error) { return result, err }
	}
	routes := map[string]tunnel.Handler{
		tunnel.RouteList:          rec(tunnel.ListResult{Entries: []grove.DirEntry{{Path: "a/b", Name: "b"}}}, nil),
		tunnel.RouteDelete:        rec(struct{}{}, nil),
		tunnel.RouteSearch:        rec(grove.SearchResult{}, nil),
		tunnel.RouteGitStatus:     rec(grove.Status{Branch: "feature"}, nil),
		tunnel.RouteGitDiff:       rec(grove.Diff{}, nil),
		tunnel.RouteGitLog:        rec(tunnel.LogResult{Commits: []grove.Commit{{SHA: "abc"}}}, nil),
		tunnel.RouteGitCommit:     rec(nil, grove.Errorf(grove.ErrNothingToCommit, "nothing to commit here")),
		tunnel.RouteDebugContext:  rec(grove.DebugContext{Problems: []string{"no launch.json"}}, nil),
		tunnel.RouteDebugStepInto: rec(grove.DebugSnapshot{State: grove.DebugStopped}, nil),
		tunnel.RouteDebugSessions: rec(tunnel.DebugSessionsResult{Sessions: []grove.DebugSession{{ID: "s1"}}}, nil),
		tunnel.RouteDebugStop:     rec(struct{}{}, nil),
	}
	wrapped := map[string]tunnel.Handler{}
	for ep, h := range routes {
		wrapped[ep] = func(ctx context.Context, p json.RawMessage) (any, error) {
			mu.Lock()
			got[ep] = string(p)
			mu.Unlock()
			return h(ctx, p)
		}
	}
	e := newSvcEnv(t, nil)
	e.agent(t.TempDir(), "proj", false, wrapped)
	svc := tunnel.Scope(noWorkspaces{}, e.reg, "alice")
	ctx := context.Background()
	const id = "local-proj"

	if ents, err := svc.ListDir(ctx, id, "a", 2); err != nil || len(ents) != 1 || ents[0].Name != "b" || got[tunnel.RouteList] != `{"path":"a","depth":2}` {
		t.Fatalf("ListDir: %+v %v %s", ents, err, got[tunnel.RouteList])
	}
	if err := svc.DeleteFile(ctx, id, "x.txt"); err != nil || got[tunnel.RouteDelete] != `{"path":"x.txt"}` {
		t.Fatalf("DeleteFile: %v %s", err, got[tunnel.RouteDelete])
	}
	if _, err := svc.Search(ctx, id, grove.SearchRequest{Pattern: "x", Glob: "*.go"}); err != nil || !strings.Contains(got[tunnel.RouteSearch], `"glob":"*.go"`) {
		t.Fatalf("Search: %v %s", err, got[tunnel.RouteSearch])
	}
	if st, err := svc.Status(ctx, id); err != nil || st.Branch != "feature" {
		t.Fatalf("Status: %+v %v", st, err)
	}
	if _, err := svc.Diff(ctx, id, grove.DiffRequest{}); err != nil {
		t.Fatalf("Diff: %v", err)
	}
	if cs, err := svc.Log(ctx, id, 5, "a"); err != nil || len(cs) != 1 || got[tunnel.RouteGitLog] != `{"limit":5,"path":"a"}` {
		t.Fatalf("Log: %+v %v %s", cs, err, got[tunnel.RouteGitLog])
	}
	if _, err := svc.Commit(ctx, id, grove.CommitRequest{Message: "m"}); !errors.Is(err, grove.ErrNothingToCommit) || err.Error() != "nothing to commit here" {
		t.Fatalf("Commit: %v", err)
	}
	if _, err := svc.Push(ctx, id, grove.PushRequest{}); !errors.Is(err, grove.ErrNotSupported) {
		t.Fatalf("Push: %v", err)
	}
	if err := svc.Destroy(ctx, id); !errors.Is(err, grove.ErrNotSupported) {
		t.Fatalf("Destroy: %v", err)
	}
	if err := svc.Release(ctx, id); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := svc.Pin(ctx, id, true); err != nil {
		t.Fatalf("Pin: %v", err)
	}
	dbg := svc.(grove.Debugger)
	if dc, err := dbg.DebugContext(ctx, id); err != nil || len(dc.Problems) != 1 {
		t.Fatalf("DebugContext: %+v %v", dc, err)
	}
	if sn, err := dbg.DebugStep(ctx, id, grove.DebugStepRequest{Session: "s1", Kind: "into"}); err != nil || sn.State != grove.DebugStopped {
		t.Fatalf("DebugStep: %+v %v", sn, err)
	}
	if ss, err := dbg.DebugSessions(ctx, id); err != nil || len(ss) != 1 || ss[0].Workspace != id {
		t.Fatalf("DebugSessions: %+v %v", ss, err)
	}
	if err := dbg.DebugStop(ctx, id, "s1"); err != nil || got[tunnel.RouteDebugStop] != `{"session_id":"s1"}` {
		t.Fatalf("DebugStop: %v %s", err, got[tunnel.RouteDebugStop])
	}
	// A server workspace's debugging goes to the inner Service, which has
	// none here.
	if _, err := dbg.DebugContext(ctx, "ws_123"); !errors.Is(err, grove.ErrNotSupported) {
		t.Fatalf("DebugContext on a server id without a Debugger: %v", err)
	}
	// Another user's Scope does not see it.
	if _, err := tunnel.Scope(noWorkspaces{}, e.reg, "bob").ListDir(ctx, id, "", 1); !errors.Is(err, grove.ErrNotFound) || err.Error() != "workspace local-proj not found" {
		t.Fatalf("bob: %v", err)
	}
}

// A caller that gives up: the agent is sent a cancel for the call, and
// Call returns the context's error at once.
func TestCallCancelSendsCancel(t *testing.T) {
	reg := &tunnel.Registry{Log: testLog(t)}
	agentEnd, serverEnd := pipe()
	go reg.Serve(context.Background(), "alice", serverEnd)
	ctx := context.Background()
	agentEnd.Write(ctx, tunnel.Message{Type: tunnel.TypeRegister, Workspace: "w"})
	if m, err := agentEnd.Read(ctx); err != nil || m.Type != tunnel.TypeRegistered {
		t.Fatalf("%+v %v", m, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := reg.Call(cctx, "alice", "w", tunnel.RouteExecute, json.RawMessage(`{"argv":["sleep","30"]}`), time.Minute)
		errc <- err
	}()
	call, err := agentEnd.Read(ctx)
	if err != nil || call.Type != tunnel.TypeToolCall {
		t.Fatalf("%+v %v", call, err)
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
			t.Fatalf("err %v after %s", err, time.Since(start))
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Call still waits after its context ended")
	}
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	defer rcancel()
	m, err := agentEnd.Read(rctx)
	if err != nil || m.Type != tunnel.TypeCancel || m.CorrelationID != call.CorrelationID {
		t.Fatalf("the agent got %+v %v, want a cancel of %s", m, err, call.CorrelationID)
	}
	// The late answer finds no pending call; the tunnel stays up.
	agentEnd.Write(ctx, tunnel.Message{Type: tunnel.TypeToolResponse, CorrelationID: call.CorrelationID, Error: &tunnel.Error{Code: "E_CANCELLED", Message: "cancelled"}})
	if len(reg.List("alice")) != 1 {
		t.Fatal("the tunnel went down with the cancelled call")
	}
	agentEnd.Close("done")
}

// ExecStream follows an async session: output is emitted as the agent
// reports it, offsets are passed back, the result carries the output; a
// caller that gives up kills the command.
func TestExecStreamFollowsSession(t *testing.T) {
	const sid = "s_0123456789abcdef"
	var mu sync.Mutex
	var polls []string
	var signals []string
	hang := make(chan struct{})
	routes := map[string]tunnel.Handler{
		tunnel.RouteExecute: func(_ context.Context, p json.RawMessage) (any, error) {
			var req tunnel.ExecRequest
			json.Unmarshal(p, &req)
			if !req.Async {
				return nil, grove.Errorf(grove.ErrInvalid, "want async")
			}
			return tunnel.AsyncStarted{SessionID: sid}, nil
		},
		tunnel.RouteSessionPrefix + sid + "/output": func(ctx context.Context, p json.RawMessage) (any, error) {
			mu.Lock()
			polls = append(polls, string(p))
			n := len(polls)
			mu.Unlock()
			select {
			case <-hang:
				<-ctx.Done()
				return nil, ctx.Err()
			default:
			}
			if n == 1 {
				return map[string]any{"session_id": sid, "running": true, "stdout": "hel", "stdout_next_offset": 3}, nil
			}
			return map[string]any{"session_id": sid, "stdout": "lo\n", "stdout_next_offset": 6, "stderr": "e", "stderr_next_offset": 1,
				"result": map[string]any{"exit_code": 2, "duration_ms": 5, "stdout": "", "stderr": ""}}, nil
		},
		tunnel.RouteSessionPrefix + sid + "/signal": func(_ context.Context, p json.RawMessage) (any, error) {
			mu.Lock()
			signals = append(signals, string(p))
			mu.Unlock()
			return map[string]any{"session_id": sid}, nil
		},
	}
	e := newSvcEnv(t, nil)
	e.agent(t.TempDir(), "proj", false, routes)
	svc := tunnel.Scope(noWorkspaces{}, e.reg, "alice")
	var got []string
	res, err := svc.ExecStream(context.Background(), "local-proj", grove.ExecRequest{Argv: []string{"x"}}, func(c grove.Chunk) error {
		got = append(got, string(c.Stream)+":"+string(c.Data))
		return nil
	})
	if err != nil || res.ExitCode != 2 || string(res.Stdout) != "hello\n" || string(res.Stderr) != "e" || res.Duration != 5*time.Millisecond {
		t.Fatalf("result %+v %v", res, err)
	}
	if strings.Join(got, "|") != "stdout:hel|stdout:lo\n|stderr:e" {
		t.Fatalf("emitted %q", got)
	}
	if len(polls) != 2 || !strings.Contains(polls[1], `"stdout_offset":3`) {
		t.Fatalf("polls %q", polls)
	}

	// The caller gives up while the command runs: it is killed.
	close(hang)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := svc.ExecStream(ctx, "local-proj", grove.ExecRequest{Argv: []string{"x"}}, func(grove.Chunk) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled ExecStream: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(signals) != 1 || signals[0] != `{"signal":"KILL"}` {
		t.Fatalf("signals %q", signals)
	}
}
