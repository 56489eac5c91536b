package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove/httpapi"
)

func TestAuth(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "c1")
	cases := []struct {
		name, key, method, path string
		status                  int
		code                    string
	}{
		{"no key", "", "GET", "/v1/workspaces", 401, "E_UNAUTHORIZED"},
		{"unknown key", "grove_nope", "GET", "/v1/workspaces", 401, "E_UNAUTHORIZED"},
		{"revoked key", f.revoked, "GET", "/v1/workspaces", 401, "E_UNAUTHORIZED"},
		{"other user's workspace", f.bob, "GET", "/v1/workspaces/" + id, 404, "E_NOT_FOUND"},
		{"other user's file", f.bob, "GET", "/v1/workspaces/" + id + "/files/README.md", 404, "E_NOT_FOUND"},
		{"other user's exec", f.bob, "POST", "/v1/workspaces/" + id + "/exec", 404, "E_NOT_FOUND"},
		{"other user's destroy", f.bob, "DELETE", "/v1/workspaces/" + id, 404, "E_NOT_FOUND"},
		{"other user's tool", f.bob, "POST", "/v1/workspaces/" + id + "/tools/read_file", 404, "E_NOT_FOUND"},
		{"other user's mcp", f.bob, "POST", "/v1/workspaces/" + id + "/mcp", 404, "E_NOT_FOUND"},
		{"mcp without key", "", "POST", "/v1/mcp", 401, "E_UNAUTHORIZED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := any(nil)
			if tc.method == "POST" {
				body = map[string]any{"argv": []string{"true"}, "path": "README.md"}
				if strings.HasSuffix(tc.path, "/exec") {
					body = map[string]any{"argv": []string{"true"}}
				}
			}
			r := f.do(t, tc.key, tc.method, tc.path, body)
			if r.status != tc.status || r.errCode(t) != tc.code {
				t.Fatalf("%s %s = %d %s, want %d %s", tc.method, tc.path, r.status, r.body, tc.status, tc.code)
			}
			if r.header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
		})
	}
	// Bob's list does not show Alice's workspace; Alice's still works.
	r := f.do(t, f.bob, "GET", "/v1/workspaces", nil)
	if r.status != 200 || strings.Contains(string(r.body), id) {
		t.Fatalf("bob's list: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "GET", "/v1/workspaces/"+id, nil); r.status != 200 {
		t.Fatalf("alice show: %d %s", r.status, r.body)
	}
}

func TestAcquireCreatedThenExisting(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	body := map[string]any{"repo": f.repo, "project": "p", "mode": "edit", "conversation": "c1"}
	first := f.do(t, f.alice, "POST", "/v1/workspaces", body)
	second := f.do(t, f.alice, "POST", "/v1/workspaces", body)
	if first.status != 201 || second.status != 200 {
		t.Fatalf("statuses %d, %d; want 201, 200 (%s)", first.status, second.status, first.body)
	}
	var a, b struct{ ID, User string }
	json.Unmarshal(first.body, &a)
	json.Unmarshal(second.body, &b)
	if a.ID == "" || a.ID != b.ID || a.User != "alice" {
		t.Fatalf("first %+v second %+v", a, b)
	}
	// The user comes from the key: a "user" field is refused, not obeyed.
	body["user"] = "bob"
	if r := f.do(t, f.alice, "POST", "/v1/workspaces", body); r.status != 400 {
		t.Fatalf("user in body: %d %s", r.status, r.body)
	}
}

func TestExecJSONAndSSE(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "c1")
	r := f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/exec", map[string]any{"shell": "echo out; echo err >&2; exit 3"})
	var res httpapi.ExecResponse
	if err := json.Unmarshal(r.body, &res); r.status != 200 || err != nil {
		t.Fatalf("exec: %d %s", r.status, r.body)
	}
	if res.ExitCode != 3 || res.Stdout != "out\n" || res.Stderr != "err\n" {
		t.Fatalf("exec result %+v", res)
	}
	r = f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/exec", map[string]any{"shell": "echo a; echo b >&2"}, "Accept", "text/event-stream")
	body := string(r.body)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("sse: %d %s", r.status, body)
	}
	for _, want := range []string{"event: stdout\ndata: {\"data\":\"a\\n\"}", "event: stderr\ndata: {\"data\":\"b\\n\"}", "event: exit\ndata: {\"exit_code\":0"} {
		if !strings.Contains(body, want) {
			t.Errorf("sse body lacks %q:\n%s", want, body)
		}
	}
}

func TestSSEDisconnectKillsCommand(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "c1")
	marker := filepath.Join(t.TempDir(), "marker")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"shell":"echo started; sleep 3; touch ` + marker + `"}`
	req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/v1/workspaces/"+id+"/exec", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.alice)
	req.Header.Set("Accept", "text/event-stream")
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || line != "event: stdout\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	res.Body.Close()
	time.Sleep(4 * time.Second)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command outlived its request: marker was written")
	}
}

func TestFilesRoundTrip(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "c1")
	base := "/v1/workspaces/" + id + "/files/"
	if r := f.do(t, f.alice, "PUT", base+"dir/new%20file.txt", "hello\x00binary"); r.status != 204 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	r := f.do(t, f.alice, "GET", base+"dir/new%20file.txt", nil)
	if r.status != 200 || string(r.body) != "hello\x00binary" {
		t.Fatalf("get: %d %q", r.status, r.body)
	}
	r = f.do(t, f.alice, "GET", "/v1/workspaces/"+id+"/tree?path=dir", nil)
	if r.status != 200 || !strings.Contains(string(r.body), "new file.txt") {
		t.Fatalf("tree: %d %s", r.status, r.body)
	}
	r = f.do(t, f.alice, "GET", "/v1/workspaces/"+id+"/search?pattern=world", nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"path":"README.md"`) {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "DELETE", base+"dir/new%20file.txt", nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "GET", base+"dir/new%20file.txt", nil); r.status != 404 || r.errCode(t) != "E_NOT_FOUND" {
		t.Fatalf("get deleted: %d %s", r.status, r.body)
	}
	r = f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/tools/read_file", map[string]any{"path": "README.md"})
	if r.status != 200 || !strings.Contains(string(r.body), "world") {
		t.Fatalf("tool: %d %s", r.status, r.body)
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t, httpapi.Options{MaxBodyBytes: 4096})
	id := f.acquire(t, f.alice, "c1")
	ws := "/v1/workspaces/" + id
	huge := `{"repo":"` + strings.Repeat("a", 10000) + `"}`
	cases := []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"malformed json", "POST", "/v1/workspaces", `{"repo":`, 400, "E_INVALID_ARGUMENT"},
		{"not json", "POST", "/v1/workspaces", `hello`, 400, "E_INVALID_ARGUMENT"},
		{"unknown field", "POST", "/v1/workspaces", `{"repo":"x","nope":1}`, 400, "E_INVALID_ARGUMENT"},
		{"wrong type", "POST", "/v1/workspaces", `{"repo":5}`, 400, "E_INVALID_ARGUMENT"},
		{"two values", "POST", "/v1/workspaces", `{"repo":"x"}{}`, 400, "E_INVALID_ARGUMENT"},
		{"empty body", "POST", ws + "/exec", ``, 400, "E_INVALID_ARGUMENT"},
		{"huge body", "POST", "/v1/workspaces", huge, 413, "E_TOO_LARGE"},
		{"dotdot", "GET", ws + "/files/../../etc/passwd", nil, 400, "E_PATH_OUTSIDE_WORKSPACE"},
		{"encoded dotdot", "GET", ws + "/files/%2e%2e/%2e%2e/etc/passwd", nil, 400, "E_PATH_OUTSIDE_WORKSPACE"},
		{"encoded dotdot in id", "GET", "/v1/workspaces/%2e%2e", nil, 400, "E_PATH_OUTSIDE_WORKSPACE"},
		{"double encoded", "GET", ws + "/files/..%252f..%252fetc%252fpasswd", nil, 404, "E_NOT_FOUND"},
		{"encoded slash", "GET", ws + "/files/..%2f..%2fetc%2fpasswd", nil, 400, "E_PATH_OUTSIDE_WORKSPACE"},
		{"absolute inside", "GET", ws + "/files//etc/passwd", nil, 400, "E_INVALID_ARGUMENT"},
		{"invalid id", "GET", "/v1/workspaces/%00nope", nil, 400, "E_INVALID_ARGUMENT"},
		{"unknown id", "GET", "/v1/workspaces/ws_nope", nil, 404, "E_NOT_FOUND"},
		{"unknown tool", "POST", ws + "/tools/rm_rf", `{}`, 404, "E_NOT_FOUND"},
		{"tool bad input", "POST", ws + "/tools/read_file", `{"path":5}`, 400, "E_INVALID_ARGUMENT"},
		{"bad query int", "GET", ws + "/tree?depth=-1", nil, 400, "E_INVALID_ARGUMENT"},
		{"unknown endpoint", "GET", "/v1/nope", nil, 404, "E_NOT_FOUND"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, f.alice, tc.method, tc.path, tc.body)
			if r.status != tc.status || r.errCode(t) != tc.code {
				t.Fatalf("%s %s = %d %s, want %d %s", tc.method, tc.path, r.status, r.body, tc.status, tc.code)
			}
		})
	}
}

func TestExecLimitPerUser(t *testing.T) {
	f := newFixture(t, httpapi.Options{MaxExecPerUser: 1})
	id := f.acquire(t, f.alice, "c1")
	bobWS := f.acquire(t, f.bob, "c2")
	done := make(chan resp)
	go func() {
		done <- f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/exec", map[string]any{"shell": "sleep 1.5", "class": "read"})
	}()
	time.Sleep(500 * time.Millisecond)
	r := f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/exec", map[string]any{"argv": []string{"true"}, "class": "read"})
	if r.status != 429 || r.errCode(t) != "E_RESOURCE_LIMIT" {
		t.Fatalf("second exec: %d %s, want 429", r.status, r.body)
	}
	// Another user is not limited by Alice's commands.
	if r := f.do(t, f.bob, "POST", "/v1/workspaces/"+bobWS+"/exec", map[string]any{"argv": []string{"true"}}); r.status != 200 {
		t.Fatalf("bob exec: %d %s", r.status, r.body)
	}
	if first := <-done; first.status != 200 {
		t.Fatalf("first exec: %d %s", first.status, first.body)
	}
	if r := f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/exec", map[string]any{"argv": []string{"true"}}); r.status != 200 {
		t.Fatalf("exec after the slot freed: %d %s", r.status, r.body)
	}
}

func FuzzDecodeAcquire(f *testing.F) {
	for _, s := range []string{`{"repo":"a/b","mode":"edit"}`, `{`, `{"repo":1}`, `{}{}`, `null`, `{"token":"x","unknown":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v httpapi.AcquireBody
		err := httpapi.Decode(strings.NewReader(string(b)), &v)
		if err != nil && httpapi.StatusOf(err) != 400 {
			t.Fatalf("decode error %v maps to %d, want 400", err, httpapi.StatusOf(err))
		}
	})
}

func FuzzDecodeExec(f *testing.F) {
	for _, s := range []string{`{"argv":["true"]}`, `{"shell":"x","timeout_ms":-1}`, `{"env":{"a":1}}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v httpapi.ExecBody
		err := httpapi.Decode(strings.NewReader(string(b)), &v)
		if err != nil && httpapi.StatusOf(err) != 400 {
			t.Fatalf("decode error %v maps to %d, want 400", err, httpapi.StatusOf(err))
		}
	})
}
