package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/client"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/tools"
)

func TestAcquireInfersMode(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	cases := []struct {
		name   string
		body   map[string]any
		status int
		mode   string
	}{
		{"conversation is edit", map[string]any{"conversation": "c1"}, 201, "edit"},
		{"task is task", map[string]any{"task": "t1"}, 201, "task"},
		{"ref only is analysis", map[string]any{"ref": "main"}, 201, "analysis"},
		{"nothing is analysis", map[string]any{}, 201, "analysis"},
		{"both is ambiguous", map[string]any{"conversation": "c2", "task": "t2"}, 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.body["repo"], tc.body["project"] = f.repo, "p"
			r := f.do(t, f.alice, "POST", "/v1/workspaces", tc.body)
			if r.status != tc.status {
				t.Fatalf("%d %s, want %d", r.status, r.body, tc.status)
			}
			if tc.status == 400 {
				if c := r.errCode(t); c != "E_INVALID_ARGUMENT" {
					t.Fatalf("code %s", c)
				}
				return
			}
			var ws struct{ Mode string }
			json.Unmarshal(r.body, &ws)
			if ws.Mode != tc.mode {
				t.Fatalf("mode %q, want %q", ws.Mode, tc.mode)
			}
		})
	}
}

// The JSON body cap (1 MiB) must not apply to raw file uploads, whose
// documented limit is MaxFileBytes (32 MiB by default).
func TestPutFileOverJSONBodyLimit(t *testing.T) {
	f := newFixture(t, httpapi.Options{MaxFileBytes: 4 << 20})
	id := f.acquire(t, f.alice, "big")
	big := bytes.Repeat([]byte("0123456789abcde\n"), (2<<20)/16)
	if r := f.do(t, f.alice, "PUT", "/v1/workspaces/"+id+"/files/big.txt", big); r.status != 204 {
		t.Fatalf("PUT 2 MiB: %d %s", r.status, r.body)
	}
	r := f.do(t, f.alice, "GET", "/v1/workspaces/"+id+"/files/big.txt", nil)
	if r.status != 200 || !bytes.Equal(r.body, big) {
		t.Fatalf("GET: %d, %d bytes", r.status, len(r.body))
	}
	over := bytes.Repeat([]byte("x"), 5<<20)
	if r := f.do(t, f.alice, "PUT", "/v1/workspaces/"+id+"/files/over.txt", over); r.status != 413 || r.errCode(t) != "E_TOO_LARGE" {
		t.Fatalf("PUT 5 MiB: %d %s", r.status, r.body)
	}
	// JSON bodies keep their own cap.
	if r := f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/exec", `{"shell":"`+string(bytes.Repeat([]byte("x"), 2<<20))+`"}`); r.status != 413 {
		t.Fatalf("2 MiB JSON: %d %.200s", r.status, r.body)
	}
}

// RFC 7235: the auth scheme is case-insensitive.
func TestAuthSchemeCaseInsensitive(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		r := f.do(t, "", "GET", "/v1/workspaces", nil, "Authorization", scheme+" "+f.alice)
		if r.status != 200 {
			t.Errorf("%s: %d %s", scheme, r.status, r.body)
		}
	}
	for _, h := range []string{"Basic " + f.alice, "Bearer", "Bearer ", f.alice} {
		if r := f.do(t, "", "GET", "/v1/workspaces", nil, "Authorization", h); r.status != 401 {
			t.Errorf("%q: %d %s", h, r.status, r.body)
		}
	}
}

// tokenGitServer serves bare repositories under root over smart HTTP,
// only to Basic auth whose password is token.
func tokenGitServer(t *testing.T, root, token string) *httptest.Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is required: %v", err)
	}
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Env: []string{
		"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pw, ok := r.BasicAuth(); !ok || pw != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// X-Git-Token is documented for every call that reaches the git host,
// including the clone behind POST /v1/workspaces and POST /v1/repos.
func TestGitTokenHeaderClones(t *testing.T) {
	const token = "ghs_headertoken0123456789"
	root := t.TempDir()
	src := sourceRepo(t)
	if out, err := exec.Command("git", "clone", "-q", "--bare", src, filepath.Join(root, "octo", "hello.git")).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	git := tokenGitServer(t, root, token)
	f := newFixtureWith(t, httpapi.Options{}, func(c *engine.Config) { c.BaseURL = git.URL })

	// Without a token the host refuses — which a caller sees as a
	// repository that does not exist (tenancy): the header is what makes
	// it work.
	if r := f.do(t, f.alice, "POST", "/v1/repos", map[string]any{"repo": "octo/hello"}); r.status != 404 || r.errCode(t) != "E_NOT_FOUND" {
		t.Fatalf("no token: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "POST", "/v1/repos", map[string]any{"repo": "octo/hello", "refresh": true}, "X-Git-Token", token); r.status != 200 {
		t.Fatalf("ensure with X-Git-Token: %d %s", r.status, r.body)
	}
	r := f.do(t, f.alice, "POST", "/v1/workspaces", map[string]any{"repo": "octo/hello", "project": "p", "conversation": "c", "refresh": true}, "X-Git-Token", token)
	if r.status != 201 {
		t.Fatalf("acquire with X-Git-Token: %d %s", r.status, r.body)
	}
	if bytes.Contains(r.body, []byte(token)) {
		t.Fatal("token in response")
	}
}

// A client that goes away is not a server error: the access log says 499
// and nothing is logged at ERROR.
func TestClientDisconnectIsCancellation(t *testing.T) {
	var logs testenv.Buffer
	f := newFixture(t, httpapi.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	id := f.acquire(t, f.alice, "gone")
	for _, tc := range []struct{ path, body string }{
		{"/exec", `{"shell":"sleep 5"}`},
		{"/tools/run_command", `{"command":"sleep 5"}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/v1/workspaces/"+id+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+f.alice)
			req.Header.Set("X-Request-Id", "gone"+strings.ReplaceAll(tc.path, "/", "-"))
			if res, err := f.srv.Client().Do(req); err == nil {
				res.Body.Close()
				t.Fatalf("request finished: %d", res.StatusCode)
			}
			want := "request_id=gone" + strings.ReplaceAll(tc.path, "/", "-")
			deadline := time.Now().Add(10 * time.Second)
			for {
				var access string
				for _, l := range strings.Split(logs.String(), "\n") {
					if strings.Contains(l, want) && strings.Contains(l, "msg=http ") {
						access = l
					}
				}
				if access != "" {
					if !strings.Contains(access, "status=499") {
						t.Fatalf("access log: %s", access)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no access log line for %s:\n%s", want, logs.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("a disconnect was logged as an error:\n%s", logs.String())
	}
}

// A timeout over the server's cap is lowered to the cap, and the result
// says so; it is not refused. The tool catalog running against the server
// through the Go client (grove mcp --server) relies on it.
func TestExecTimeoutIsCapped(t *testing.T) {
	f := newFixture(t, httpapi.Options{MaxTimeout: 3 * time.Second})
	id := f.acquire(t, f.alice, "cap")
	r := f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/exec", map[string]any{"shell": "echo hi", "timeout_ms": 3_600_000})
	var res httpapi.ExecResponse
	json.Unmarshal(r.body, &res)
	if r.status != 200 || res.Stdout != "hi\n" || res.TimeoutCappedMS != 3000 {
		t.Fatalf("exec over the cap: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/exec", map[string]any{"shell": "sleep 10", "timeout_ms": 999999999999}); r.status != 200 || !bytes.Contains(r.body, []byte(`"timed_out":true`)) {
		t.Fatalf("exec far over the cap: %d %s", r.status, r.body)
	}
	ctx := context.Background()
	c := client.New(f.srv.URL, f.alice, f.srv.Client())
	sres, err := c.ExecStream(ctx, id, grove.ExecRequest{Shell: "true", Timeout: time.Hour}, func(grove.Chunk) error { return nil })
	if err != nil || sres.CappedTimeout != 3*time.Second {
		t.Fatalf("stream over the cap: %+v %v", sres, err)
	}

	ts := tools.New(tools.Options{})
	t.Cleanup(ts.Close)
	out, err := ts.Call(ctx, c, id, "run_command", json.RawMessage(`{"command":"echo fine","timeout_s":3600}`), nil)
	if err != nil || !strings.Contains(out.Text, "fine") || !strings.Contains(out.Text, "timeout_s 3") {
		t.Fatalf("run_command timeout_s 3600 over a 3 s server: %v\n%v", err, out)
	}
	out, err = ts.Call(ctx, c, id, "run_command", json.RawMessage(`{"command":"sleep 1; echo done","background":true}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := out.Structured.(tools.RunCommandOutput).ProcessID
	out, err = ts.Call(ctx, c, id, "process_io", json.RawMessage(`{"process_id":"`+pid+`","wait_ms":10000}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := out.Structured.(tools.ProcessIOOutput); p.Running || p.ExitCode == nil || *p.ExitCode != 0 || !strings.Contains(p.Stdout, "done") {
		t.Fatalf("background command: %+v", p)
	}
}

// read_file refuses offsets and limits below 1, and the schema says so.
func TestReadFileRefusesBadOffsets(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "offsets")
	for _, in := range []string{`{"path":"README.md","offset":-1}`, `{"path":"README.md","offset":0}`, `{"path":"README.md","limit":-1}`, `{"path":"README.md","limit":0}`} {
		if r := f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/tools/read_file", in); r.status != 400 || r.errCode(t) != "E_INVALID_ARGUMENT" {
			t.Errorf("%s: %d %s", in, r.status, r.body)
		}
	}
	if r := f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/tools/read_file", `{"path":"README.md","offset":2,"limit":1}`); r.status != 200 || !bytes.Contains(r.body, []byte("world")) {
		t.Errorf("valid offset: %d %s", r.status, r.body)
	}
	rf, _ := tools.New(tools.Options{}).Lookup("read_file")
	for _, p := range []string{"offset", "limit"} {
		if m := rf.InputSchema.Properties[p].Minimum; m == nil || *m != 1 {
			t.Errorf("read_file schema: %s has minimum %v, want 1", p, m)
		}
	}
	rc, _ := tools.New(tools.Options{}).Lookup("run_command")
	if m := rc.InputSchema.Properties["timeout_s"].Minimum; m == nil || *m != 0 {
		t.Errorf("run_command schema: timeout_s has minimum %v, want 0", m)
	}
}
