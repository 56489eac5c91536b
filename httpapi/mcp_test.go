package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grove-dev/grove/httpapi"
)

// bearer adds the API key to every request of the SDK's HTTP transport.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// mcpSession connects the SDK's client over streamable HTTP to path on
// the fixture's server with key.
func (f *fixture) mcpSession(t *testing.T, key, path string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	tr := &mcp.StreamableClientTransport{
		Endpoint:   f.srv.URL + path,
		HTTPClient: &http.Client{Transport: bearer{key: key, next: f.srv.Client().Transport}},
		MaxRetries: -1,
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", path, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (isError bool, text string, structured map[string]any) {
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

func TestMCPOverHTTPBound(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "c1")
	cs := f.mcpSession(t, f.alice, "/v1/workspaces/"+id+"/mcp")

	names := listNames(t, cs)
	if !slices.Contains(names, "write_file") || !slices.Contains(names, "run_command") || slices.Contains(names, "workspace_open") {
		t.Fatalf("bound tools/list: %v", names)
	}
	if isErr, text, _ := call(t, cs, "write_file", map[string]any{"path": "notes/a.txt", "content": "alpha\nbeta\n"}); isErr {
		t.Fatalf("write_file: %s", text)
	}
	if isErr, text, st := call(t, cs, "read_file", map[string]any{"path": "notes/a.txt"}); isErr || st["total_lines"] != float64(2) || !strings.Contains(text, "beta") {
		t.Fatalf("read_file: %v %q %v", isErr, text, st)
	}
	if isErr, text, st := call(t, cs, "run_command", map[string]any{"command": "wc -l < notes/a.txt"}); isErr || st["exit_code"] != float64(0) || strings.TrimSpace(st["stdout"].(string)) != "2" {
		t.Fatalf("run_command: %v %q %v", isErr, text, st)
	}
	// The write is visible through the plain HTTP API: same engine, same user.
	if r := f.do(t, f.alice, "GET", "/v1/workspaces/"+id+"/files/notes/a.txt", nil); r.status != 200 || string(r.body) != "alpha\nbeta\n" {
		t.Fatalf("GET file after MCP write: %d %q", r.status, r.body)
	}
	if isErr, text, _ := call(t, cs, "read_file", map[string]any{"path": "missing.txt"}); !isErr || !strings.HasPrefix(text, "E_NOT_FOUND") {
		t.Fatalf("read_file missing: isError=%v %q", isErr, text)
	}

	// Bob cannot bind to Alice's workspace: not found, as on every route.
	r := f.do(t, f.bob, "POST", "/v1/workspaces/"+id+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	if r.status != 404 || r.errCode(t) != "E_NOT_FOUND" {
		t.Fatalf("bob binding to alice's workspace: %d %s", r.status, r.body)
	}
}

func TestMCPOverHTTPUnbound(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	aliceWS := f.acquire(t, f.alice, "c1")
	bobWS := f.acquire(t, f.bob, "c2")
	cs := f.mcpSession(t, f.alice, "/v1/mcp")

	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var sawOpen bool
	for _, tl := range res.Tools {
		if tl.Name == "workspace_open" {
			sawOpen = true
			continue
		}
		b, _ := json.Marshal(tl.InputSchema)
		var s struct{ Required []string }
		json.Unmarshal(b, &s)
		if !slices.Contains(s.Required, "workspace_id") {
			t.Errorf("unbound %s does not require workspace_id: %s", tl.Name, b)
		}
	}
	if !sawOpen {
		t.Error("unbound server lacks workspace_open")
	}

	if isErr, text, _ := call(t, cs, "read_file", map[string]any{"workspace_id": aliceWS, "path": "README.md"}); isErr || !strings.Contains(text, "hello") {
		t.Fatalf("read_file own workspace: %v %q", isErr, text)
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		code string
	}{
		{"no workspace_id", map[string]any{"path": "README.md"}, "E_INVALID_ARGUMENT"},
		{"another user's workspace", map[string]any{"workspace_id": bobWS, "path": "README.md"}, "E_NOT_FOUND"},
		{"invalid id", map[string]any{"workspace_id": "../../x", "path": "README.md"}, "E_"},
	} {
		isErr, text, _ := call(t, cs, "read_file", tc.args)
		if !isErr || !strings.HasPrefix(text, tc.code) {
			t.Errorf("%s: isError=%v %q, want %s", tc.name, isErr, text, tc.code)
		}
		if strings.Contains(text, "hello") {
			t.Errorf("%s leaked file content: %q", tc.name, text)
		}
	}
	// Bob's file is untouched by Alice's attempt to write it.
	if isErr, _, _ := call(t, cs, "write_file", map[string]any{"workspace_id": bobWS, "path": "README.md", "content": "pwned"}); !isErr {
		t.Fatal("alice wrote into bob's workspace")
	}
	if r := f.do(t, f.bob, "GET", "/v1/workspaces/"+bobWS+"/files/README.md", nil); string(r.body) != "hello\nworld\n" {
		t.Fatalf("bob's README: %q", r.body)
	}
}

func TestMCPOverHTTPReadOnlyListsNoWriteTools(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	r := f.do(t, f.alice, "POST", "/v1/workspaces", map[string]any{"repo": f.repo, "project": "p", "mode": "analysis", "ref": "main"})
	if r.status != 201 {
		t.Fatalf("acquire analysis: %d %s", r.status, r.body)
	}
	var ws struct{ ID string }
	json.Unmarshal(r.body, &ws)
	cs := f.mcpSession(t, f.alice, "/v1/workspaces/"+ws.ID+"/mcp")
	names := listNames(t, cs)
	for _, w := range []string{"write_file", "edit_file", "apply_patch", "git_commit", "git_push"} {
		if slices.Contains(names, w) {
			t.Errorf("read-only workspace lists %s", w)
		}
	}
	if !slices.Contains(names, "read_file") || !slices.Contains(names, "search_code") {
		t.Errorf("read-only workspace lacks read tools: %v", names)
	}
	// A write tool called by name anyway gets the answer every transport
	// gives (/v1/mcp, /tools): a tool error E_READ_ONLY_WORKSPACE, not the
	// protocol's "unknown tool". Nothing is written.
	for _, name := range []string{"write_file", "run_command"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"path": "x.txt", "content": "x", "command": "touch x.txt"}})
		if err != nil || !res.IsError {
			t.Fatalf("%s on a read-only workspace: %v %+v", name, err, res)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(text, "E_READ_ONLY_WORKSPACE: ") {
			t.Fatalf("%s on a read-only workspace: %s", name, text)
		}
	}
	if r := f.do(t, f.alice, "POST", "/v1/workspaces/"+ws.ID+"/tools/write_file", map[string]any{"path": "x.txt", "content": "x"}); r.status != 409 || r.errCode(t) != "E_READ_ONLY_WORKSPACE" {
		t.Fatalf("/tools/write_file on a read-only workspace: %d %s", r.status, r.body)
	}
	// An unknown tool is still a protocol error.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Fatal("unknown tool accepted")
	}
	if r := f.do(t, f.alice, "GET", "/v1/workspaces/"+ws.ID+"/files/x.txt", nil); r.status != 404 {
		t.Fatalf("x.txt after refused write: %d %q", r.status, r.body)
	}
}
