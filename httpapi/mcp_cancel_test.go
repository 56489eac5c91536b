package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/httpapi"
)

// mcpCall posts one JSON-RPC tools/call to path with protocol version v,
// the way a streamable HTTP client of that version does.
func mcpCallRequest(ctx context.Context, f *fixture, key, path, v, tool, args string) (*http.Request, error) {
	meta := ""
	if v >= "2026-07-28" {
		meta = fmt.Sprintf(`,"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`, v)
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s%s}}`, tool, args, meta)
	req, err := http.NewRequestWithContext(ctx, "POST", f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", v)
	if v >= "2026-07-28" {
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
	}
	return req, nil
}

// Closing the HTTP request cancels the MCP tool call, for every protocol
// version the server accepts, bound and unbound: the command's process
// group dies and its later effects never happen.
func TestMCPOverHTTPClosingTheRequestCancelsTheCall(t *testing.T) {
	f := newFixture(t, httpapi.Options{MaxExecPerUser: 32})
	type tc struct{ name, ws, path, marker, args string }
	var cases []tc
	for _, v := range mcp.SupportedProtocolVersions() {
		// A workspace each: commands in one workspace run one at a time.
		for _, bound := range []bool{true, false} {
			id := f.acquire(t, f.alice, fmt.Sprintf("cancel-%s-%v", v, bound))
			path := "/v1/mcp"
			if bound {
				path = "/v1/workspaces/" + id + "/mcp"
			}
			c := tc{name: v + " " + path, ws: id, path: path, marker: "F-" + v}
			c.args = fmt.Sprintf(`{"command":"sleep 2; touch %s"}`, c.marker)
			if !bound {
				c.args = fmt.Sprintf(`{"workspace_id":%q,"command":"sleep 2; touch %s"}`, id, c.marker)
			}
			cases = append(cases, c)
			// The same call left to finish creates the file: the request
			// is well-formed for this version.
			req, err := mcpCallRequest(context.Background(), f, f.alice, path, v, "run_command", strings.Replace(c.args, "sleep 2; ", "", 1))
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || !strings.Contains(string(b), "exit code 0") {
				t.Fatalf("%s: uncancelled call: %d %s", c.name, res.StatusCode, b)
			}
			if r := f.do(t, f.alice, "DELETE", "/v1/workspaces/"+id+"/files/"+c.marker, nil); r.status != 204 {
				t.Fatalf("%s: marker of the uncancelled call: %d %s", c.name, r.status, r.body)
			}
		}
	}
	// All at once, each given up by its client after 700 ms.
	var wg sync.WaitGroup
	errs := make(chan string, len(cases))
	for i, c := range cases {
		v := mcp.SupportedProtocolVersions()[i/2]
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			defer cancel()
			req, err := mcpCallRequest(ctx, f, f.alice, c.path, v, "run_command", c.args)
			if err != nil {
				errs <- err.Error()
				return
			}
			if res, err := f.srv.Client().Do(req); err == nil {
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if ctx.Err() == nil {
					errs <- fmt.Sprintf("%s: call finished before the client gave up: %d %s", c.name, res.StatusCode, b)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	time.Sleep(3 * time.Second)
	for _, c := range cases {
		if r := f.do(t, f.alice, "GET", "/v1/workspaces/"+c.ws+"/files/"+c.marker, nil); r.status != 404 {
			t.Errorf("%s: the cancelled command ran on: %s exists (%d)", c.name, c.marker, r.status)
		}
	}
}

// The SDK's own client: a CallTool whose context ends cancels the command.
func TestMCPOverHTTPClientCancelStopsTheCommand(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "sdk-cancel")
	cs := f.mcpSession(t, f.alice, "/v1/workspaces/"+id+"/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "sleep 2; touch F"}}); err == nil {
		t.Fatal("the call outlived its context")
	}
	time.Sleep(3 * time.Second)
	if r := f.do(t, f.alice, "GET", "/v1/workspaces/"+id+"/files/F", nil); r.status != 404 {
		t.Fatalf("the cancelled command ran on: F exists (%d)", r.status)
	}
}

// Transport errors on the MCP endpoints come in the API's error shape, not
// as text/plain.
func TestMCPTransportErrorsAreJSON(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "mcp-errors")
	mcpHdr := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	for _, path := range []string{"/v1/mcp", "/v1/workspaces/" + id + "/mcp"} {
		for _, tc := range []struct {
			name, method, body string
			hdr                []string
			status             int
			code               string
		}{
			{"malformed JSON-RPC", "POST", `{"jsonrpc":`, mcpHdr, 400, "E_INVALID_ARGUMENT"},
			{"missing Accept", "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, []string{"Content-Type", "application/json"}, 400, "E_INVALID_ARGUMENT"},
			{"wrong Content-Type", "POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, []string{"Content-Type", "text/plain", "Accept", "application/json, text/event-stream"}, 415, "E_INVALID_ARGUMENT"},
			{"unknown method", "POST", `{"jsonrpc":"2.0","id":1,"method":"no/such"}`, mcpHdr, 400, "E_INVALID_ARGUMENT"},
			{"GET", "GET", "", nil, 405, "E_NOT_SUPPORTED"},
		} {
			t.Run(path+" "+tc.name, func(t *testing.T) {
				r := f.do(t, f.alice, tc.method, path, tc.body, tc.hdr...)
				if r.status != tc.status || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || r.errCode(t) != tc.code {
					t.Fatalf("%d %s %q, want %d %s", r.status, r.header.Get("Content-Type"), r.body, tc.status, tc.code)
				}
			})
		}
	}
}

// E_NOT_FOUND hints name what is missing: the workspace, a ref, the
// remote, or a path — list_dir only for paths.
func TestNotFoundHintsMatchTheCause(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "hints")
	cs := f.mcpSession(t, f.alice, "/v1/mcp")
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"unknown workspace, read tool", "read_file", map[string]any{"workspace_id": "ws_0000000000000000", "path": "README.md"}, "workspace_open"},
		{"unknown workspace, write tool", "write_file", map[string]any{"workspace_id": "ws_0000000000000000", "path": "x", "content": "x"}, "workspace_open"},
		{"unknown workspace, git", "git_status", map[string]any{"workspace_id": "ws_0000000000000000"}, "workspace_open"},
		{"bad base ref", "git_diff", map[string]any{"workspace_id": id, "base_ref": "no-such-ref"}, "base_ref"},
		{"missing path", "read_file", map[string]any{"workspace_id": id, "path": "READM.md"}, "README.md"},
	} {
		isErr, text, _ := call(t, cs, tc.tool, tc.args)
		if !isErr || !strings.HasPrefix(text, "E_NOT_FOUND") && !strings.HasPrefix(text, "E_INVALID_ARGUMENT") || !strings.Contains(text, "Hint: ") {
			t.Errorf("%s: isError=%v %s", tc.name, isErr, text)
			continue
		}
		hint := text[strings.Index(text, "Hint: "):]
		if !strings.Contains(hint, tc.want) || (tc.want != "README.md" && strings.Contains(hint, "list_dir")) {
			t.Errorf("%s: hint %q, want one mentioning %q", tc.name, hint, tc.want)
		}
	}
	// The remote is gone.
	if err := os.RemoveAll(f.repo); err != nil {
		t.Fatal(err)
	}
	isErr, text, _ := call(t, cs, "git_push", map[string]any{"workspace_id": id})
	if !isErr || strings.Contains(text, "list_dir") || !strings.Contains(text, "Hint: ") {
		t.Errorf("push to a removed remote: isError=%v %s", isErr, text)
	}
}

// git_diff takes the revisions an agent writes: HEAD~N, HEAD^, a branch
// that exists only as origin/<name>; ranges and options are refused.
func TestGitDiffRevisions(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "revs")
	ws := "/v1/workspaces/" + id
	if r := f.do(t, f.alice, "PUT", ws+"/files/second.txt", "two\n"); r.status != 204 {
		t.Fatalf("write: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "POST", ws+"/git/commit", map[string]any{"message": "second"}); r.status != 201 {
		t.Fatalf("commit: %d %s", r.status, r.body)
	}
	for _, base := range []string{"HEAD~1", "HEAD^", "HEAD~", "main", "origin/main", "main~0"} {
		r := f.do(t, f.alice, "POST", ws+"/tools/git_diff", map[string]any{"base_ref": base})
		if r.status != 200 || !strings.Contains(string(r.body), "second.txt") {
			t.Errorf("git_diff base_ref %q: %d %s", base, r.status, r.body)
		}
		if r := f.do(t, f.alice, "GET", ws+"/git/diff?base_ref="+url.QueryEscape(base), nil); r.status != 200 || !strings.Contains(string(r.body), "second.txt") {
			t.Errorf("GET git/diff base_ref %q: %d %s", base, r.status, r.body)
		}
	}
	for base, status := range map[string]int{"-x": 400, "--output=/tmp/pwn": 400, "main..HEAD": 400, "HEAD@{1}": 400, "HEAD^{tree}": 400, "main:README.md": 400, "HEAD~5": 404, "no-such-branch": 404} {
		if r := f.do(t, f.alice, "POST", ws+"/tools/git_diff", map[string]any{"base_ref": base}); r.status != status {
			t.Errorf("git_diff base_ref %q: %d %s, want %d", base, r.status, r.body, status)
		}
	}
}

// run_tests finds a runner on the configurable sandbox PATH, and a run
// that fails before any test is an error, never failed: 0. The "go" here
// is a stand-in on a directory only GROVE_SANDBOX_PATH (engine
// SandboxPath) names, so the test needs no toolchain and no compile.
func TestRunTestsSandboxPathAndEarlyFailure(t *testing.T) {
	bin := t.TempDir()
	fakeGo := `#!/bin/sh
if grep -q undefined m.go 2>/dev/null; then
  echo '# example.com/m'; echo './m.go:3:17: undefined: undefined'
  echo '{"Action":"output","Package":"example.com/m","Output":"FAIL\texample.com/m [build failed]\n"}'
  echo '{"Action":"fail","Package":"example.com/m","Elapsed":0}'
  exit 1
fi
echo '{"Action":"run","Package":"example.com/m","Test":"TestOK"}'
echo '{"Action":"pass","Package":"example.com/m","Test":"TestOK","Elapsed":0}'
echo '{"Action":"pass","Package":"example.com/m","Elapsed":0}'
`
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(f *fixture, ws, path, content string) {
		t.Helper()
		if r := f.do(t, f.alice, "PUT", ws+"/files/"+path, content); r.status != 204 {
			t.Fatalf("write %s: %d %s", path, r.status, r.body)
		}
	}
	setup := func(f *fixture, conv string) string {
		ws := "/v1/workspaces/" + f.acquire(t, f.alice, conv)
		write(f, ws, "go.mod", "module example.com/m\n\ngo 1.21\n")
		write(f, ws, "m_test.go", "package m\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n")
		return ws
	}

	// A PATH without the runner: E_NOT_INSTALLED, naming the setting.
	plain := newFixtureWith(t, httpapi.Options{}, func(c *engine.Config) { c.SandboxPath = "/usr/bin:/bin" })
	ws := setup(plain, "nopath")
	r := plain.do(t, plain.alice, "POST", ws+"/tools/run_tests", map[string]any{"framework": "go"})
	if r.status == 200 || r.errCode(t) != "E_NOT_INSTALLED" || !strings.Contains(string(r.body), "GROVE_SANDBOX_PATH") {
		t.Fatalf("go not on PATH: %d %s", r.status, r.body)
	}

	f := newFixtureWith(t, httpapi.Options{}, func(c *engine.Config) { c.SandboxPath = bin + ":/usr/bin:/bin" })
	ws = setup(f, "gopath")
	r = f.do(t, f.alice, "POST", ws+"/tools/run_tests", map[string]any{"framework": "go"})
	if r.status != 200 || !strings.Contains(string(r.body), `"passed":1`) {
		t.Fatalf("go on the sandbox PATH: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/exec", "/tools/run_command"} {
		body := map[string]any{"shell": "echo $PATH"}
		if path != "/exec" {
			body = map[string]any{"command": "echo $PATH"}
		}
		if r := f.do(t, f.alice, "POST", ws+path, body); !strings.Contains(string(r.body), bin) {
			t.Errorf("%s PATH: %s", path, r.body)
		}
	}
	// A compile error fails the run before any test: an error, not a
	// result with failed: 0.
	write(f, ws, "m.go", "package m\n\nfunc broken() { undefined() }\n")
	r = f.do(t, f.alice, "POST", ws+"/tools/run_tests", map[string]any{"framework": "go"})
	if r.status == 200 || r.errCode(t) != "E_TEST_RUN_FAILED" || !strings.Contains(string(r.body), "undefined") {
		t.Fatalf("compile error: %d %s", r.status, r.body)
	}
}

// A file name that is not UTF-8 is shown with wire.EscapePath's reversible
// escape by every route (tree, status, search, tools) and addressed by it
// on every route; a name that merely looks like an escape round-trips too.
func TestNonUTF8FileNames(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "names")
	ws := "/v1/workspaces/" + id
	// caf\xe9.txt (Latin-1 é) and a valid name with a literal "\xe9" in it.
	if r := f.do(t, f.alice, "POST", ws+"/exec", map[string]any{"shell": `printf 'needle latin\n' > "$(printf 'caf\351.txt')"; printf 'needle literal\n' > 'lit\xe9.txt'`}); r.status != 200 || !strings.Contains(string(r.body), `"exit_code":0`) {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	const latin, literal = `caf\xe9.txt`, `lit\\xe9.txt` // wire forms
	has := func(what string, body []byte, name string) {
		t.Helper()
		j, _ := json.Marshal(name)
		if !strings.Contains(string(body), string(j)) {
			t.Errorf("%s lacks %s: %s", what, j, body)
		}
		if strings.Contains(string(body), "\ufffd") || strings.Contains(string(body), `\ufffd`) {
			t.Errorf("%s has U+FFFD: %s", what, body)
		}
	}
	r := f.do(t, f.alice, "GET", ws+"/tree", nil)
	has("tree", r.body, latin)
	has("tree", r.body, literal)
	r = f.do(t, f.alice, "GET", ws+"/git/status", nil)
	has("status", r.body, latin)
	has("status", r.body, literal)
	r = f.do(t, f.alice, "GET", ws+"/search?pattern=needle", nil)
	has("search", r.body, latin)
	has("search", r.body, literal)
	for _, tool := range []string{"list_dir", "find_files", "search_code", "git_status"} {
		in := map[string]any{"pattern": "needle"}
		if tool == "find_files" {
			in["pattern"] = "*.txt"
		}
		if tool == "list_dir" || tool == "git_status" {
			in = map[string]any{}
		}
		r := f.do(t, f.alice, "POST", ws+"/tools/"+tool, in)
		has(tool, r.body, latin)
		has(tool, r.body, literal)
	}
	for _, files := range []struct{ path, name, want string }{
		{url.PathEscape(latin), "escaped", "needle latin\n"},
		{"caf%E9.txt", "raw bytes", "needle latin\n"},
		{url.PathEscape(literal), "escaped literal", "needle literal\n"},
	} {
		if r := f.do(t, f.alice, "GET", ws+"/files/"+files.path, nil); r.status != 200 || string(r.body) != files.want {
			t.Errorf("GET files (%s): %d %q", files.name, r.status, r.body)
		}
	}
	if r := f.do(t, f.alice, "POST", ws+"/tools/read_file", map[string]any{"path": latin}); r.status != 200 || !strings.Contains(string(r.body), "needle latin") {
		t.Errorf("read_file %s: %d %s", latin, r.status, r.body)
	}
	if r := f.do(t, f.alice, "POST", ws+"/tools/write_file", map[string]any{"path": `new\xff.txt`, "content": "x\n"}); r.status != 200 {
		t.Errorf("write_file: %d %s", r.status, r.body)
	}
	r = f.do(t, f.alice, "POST", ws+"/exec", map[string]any{"shell": `test -f "$(printf 'new\377.txt')" && echo yes`})
	if !strings.Contains(string(r.body), "yes") {
		t.Errorf("write_file did not create the raw name: %s", r.body)
	}
	if r := f.do(t, f.alice, "POST", ws+"/git/commit", map[string]any{"message": "names", "paths": []string{latin}}); r.status != 201 {
		t.Errorf("commit by escaped path: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "GET", ws+"/git/diff?base_ref=HEAD~1&stat_only=true", nil); r.status != 200 {
		t.Errorf("diff: %d %s", r.status, r.body)
	} else {
		has("diff", r.body, latin)
	}
}
