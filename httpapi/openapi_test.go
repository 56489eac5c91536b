package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/tunnel"
)

// The document is OpenAPI 3.1, whose schemas are JSON Schema 2020-12.
// kin-openapi (the usual Go validator) only partly loads 3.1, so this test
// does the OpenAPI part itself — match the path template and method, pick
// the response by status or "default", check the content type — and hands
// the bodies to santhosh-tekuri/jsonschema, a complete 2020-12 validator,
// which resolves the document's own $refs. What the document says is thus
// checked against what the server really sends.

const docURL = "https://grove.invalid/openapi.json"

type specOp struct {
	template, method string
	re               *regexp.Regexp
	op               map[string]any
	pointer          string // JSON pointer of the operation
}

type spec struct {
	doc  map[string]any
	ops  []specOp
	comp *jsonschema.Compiler
	seen map[string]bool // "METHOD template" that answered 2xx
}

func loadSpec(t *testing.T) *spec {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(httpapi.OpenAPI()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, raw); err != nil {
		t.Fatal(err)
	}
	s := &spec{doc: doc, comp: c, seen: map[string]bool{}}
	for tmpl, item := range doc["paths"].(map[string]any) {
		pat := regexp.QuoteMeta(tmpl)
		pat = strings.ReplaceAll(pat, `\{path\}`, `(.+)`) // {path...}: may hold slashes
		pat = regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(pat, `[^/]+`)
		for m, op := range item.(map[string]any) {
			if m == "parameters" {
				continue
			}
			ptr := "/paths/" + escPtr(tmpl) + "/" + m
			s.ops = append(s.ops, specOp{template: tmpl, method: strings.ToUpper(m), re: regexp.MustCompile("^" + pat + "$"), op: op.(map[string]any), pointer: ptr})
		}
	}
	return s
}

func escPtr(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }

// lookup follows a local $ref.
func (s *spec) lookup(v map[string]any) (map[string]any, string) {
	ref, ok := v["$ref"].(string)
	if !ok {
		return v, ""
	}
	var cur any = s.doc
	for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		cur = cur.(map[string]any)[p]
	}
	return cur.(map[string]any), strings.TrimPrefix(ref, "#")
}

// check validates one real response against the document.
func (s *spec) check(t testing.TB, method, path string, r resp) {
	t.Helper()
	u, _ := url.Parse(path)
	var found *specOp
	for i := range s.ops {
		o := &s.ops[i]
		if o.method == method && o.re.MatchString(u.Path) && (found == nil || len(o.template) > len(found.template)) {
			found = o
		}
	}
	if found == nil {
		t.Errorf("%s %s: no operation in openapi.json", method, u.Path)
		return
	}
	responses := found.op["responses"].(map[string]any)
	key := strconv.Itoa(r.status)
	rv, ok := responses[key]
	ptr := found.pointer + "/responses/" + key
	if !ok {
		if r.status < 400 {
			t.Errorf("%s %s: status %d is not documented (%s)", method, found.template, r.status, r.body)
			return
		}
		rv, ptr = responses["default"], found.pointer+"/responses/default"
	}
	respObj, refPtr := s.lookup(rv.(map[string]any))
	if refPtr != "" {
		ptr = refPtr
	}
	if r.status < 300 {
		s.seen[method+" "+found.template] = true
	}
	if r.header.Get("X-Request-Id") == "" && strings.HasPrefix(u.Path, "/v1/") {
		t.Errorf("%s %s: no X-Request-Id", method, u.Path)
	}
	content, _ := respObj["content"].(map[string]any)
	if content == nil {
		if len(r.body) != 0 {
			t.Errorf("%s %s %d: documented without a body, got %q", method, found.template, r.status, r.body)
		}
		return
	}
	mt, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	if err != nil || content[mt] == nil {
		t.Errorf("%s %s %d: content type %q is not documented", method, found.template, r.status, r.header.Get("Content-Type"))
		return
	}
	if mt != "application/json" {
		return
	}
	sch, err := s.comp.Compile(docURL + "#" + ptr + "/content/" + escPtr(mt) + "/schema")
	if err != nil {
		t.Fatalf("compile %s: %v", ptr, err)
		return
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
	if err != nil {
		t.Errorf("%s %s %d: body is not JSON: %q", method, found.template, r.status, r.body)
		return
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s %s %d: body does not match the document: %v\nbody: %s", method, found.template, r.status, err, r.body)
	}
}

// checkRequest validates a JSON request body against the operation's
// request schema, so the examples the test sends are documented too.
func (s *spec) checkRequest(t *testing.T, method, tmpl string, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	sch, err := s.comp.Compile(docURL + "#/paths/" + escPtr(tmpl) + "/" + strings.ToLower(method) + "/requestBody/content/application~1json/schema")
	if err != nil {
		t.Fatalf("request schema of %s %s: %v", method, tmpl, err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s %s: request %s does not match the document: %v", method, tmpl, b, err)
	}
}

func TestOpenAPIResponses(t *testing.T) {
	s := loadSpec(t)
	f := newFixture(t, httpapi.Options{})
	do := func(key, method, path string, body any, hdr ...string) resp {
		t.Helper()
		r := f.do(t, key, method, path, body, hdr...)
		s.check(t, method, path, r)
		return r
	}
	want := func(r resp, status int) {
		t.Helper()
		if r.status != status {
			t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
		}
	}

	want(do("", "GET", "/healthz", nil), 200)
	want(do("", "GET", "/readyz", nil), 200)
	want(do("", "GET", "/v1/openapi.json", nil), 200)
	want(do("", "GET", "/v1/workspaces", nil), 401)

	acq := map[string]any{"repo": f.repo, "project": "p", "mode": "edit", "conversation": "c1"}
	s.checkRequest(t, "POST", "/v1/workspaces", acq)
	r := do(f.alice, "POST", "/v1/workspaces", acq)
	want(r, 201)
	var ws struct{ ID string }
	json.Unmarshal(r.body, &ws)
	w := "/v1/workspaces/" + ws.ID
	want(do(f.alice, "POST", "/v1/workspaces", acq), 200)
	want(do(f.alice, "POST", "/v1/workspaces", `{"repo": 7}`), 400)
	want(do(f.alice, "GET", "/v1/workspaces?project=p", nil), 200)
	want(do(f.alice, "GET", w, nil), 200)
	want(do(f.bob, "GET", w, nil), 404)

	want(do(f.alice, "PUT", w+"/files/src/a.go", "package a\n\nfunc A() {}\n"), 204)
	want(do(f.alice, "PUT", w+"/files/bin.dat", []byte{0, 1, 2, 0xff}), 204)
	want(do(f.alice, "GET", w+"/files/src/a.go", nil), 200)
	// The percent-encoded form generated clients send for the one path
	// parameter names the same file.
	if r := do(f.alice, "GET", w+"/files/src%2Fa.go", nil); r.status != 200 || !strings.HasPrefix(string(r.body), "package a") {
		t.Fatalf("GET files/src%%2Fa.go: %d %s", r.status, r.body)
	}
	want(do(f.alice, "PUT", w+"/files/src%2Fenc%2Fb.go", "package enc\n"), 204)
	want(do(f.alice, "GET", w+"/files/src/enc/b.go", nil), 200)
	want(do(f.alice, "GET", w+"/files/src%2F%2e%2e%2F%2e%2e%2Fx", nil), 400)
	want(do(f.alice, "GET", w+"/files/nope.txt", nil), 404)
	want(do(f.alice, "GET", w+"/files/%2e%2e/x", nil), 400)
	want(do(f.alice, "GET", w+"/tree?depth=2", nil), 200)
	want(do(f.alice, "GET", w+"/search?pattern=func", nil), 200)
	want(do(f.alice, "GET", w+"/search?pattern=func&context=x", nil), 400)

	ex := map[string]any{"argv": []string{"sh", "-c", "echo out; echo err >&2"}}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/exec", ex)
	want(do(f.alice, "POST", w+"/exec", ex), 200)
	r = do(f.alice, "POST", w+"/exec", ex, "Accept", "text/event-stream")
	if r.status != 200 || !strings.Contains(string(r.body), "event: exit") {
		t.Fatalf("SSE exec: %d %s", r.status, r.body)
	}
	want(do(f.alice, "POST", w+"/exec", map[string]any{"argv": []string{"true"}, "timeout_ms": -1}), 400)

	want(do(f.alice, "GET", w+"/git/status", nil), 200)
	want(do(f.alice, "GET", w+"/git/diff?path=src", nil), 200)
	cm := map[string]any{"message": "add a.go"}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/git/commit", cm)
	want(do(f.alice, "POST", w+"/git/commit", cm), 201)
	want(do(f.alice, "POST", w+"/git/commit", cm), 409) // nothing to commit
	want(do(f.alice, "GET", w+"/git/log?limit=5", nil), 200)
	want(do(f.alice, "POST", w+"/git/push", map[string]any{"set_upstream": true}), 200)

	rf := map[string]any{"path": "src/a.go"}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/tools/{name}", rf)
	want(do(f.alice, "POST", w+"/tools/read_file", rf), 200)
	want(do(f.alice, "POST", w+"/tools/no_such_tool", rf), 404)
	want(do(f.alice, "POST", w+"/tools/read_file", map[string]any{"path": 3}), 400)

	want(do(f.alice, "DELETE", w+"/files/bin.dat", nil), 204)
	want(do(f.alice, "POST", w+"/pin", map[string]any{"pinned": true}), 204)
	want(do(f.alice, "POST", w+"/release", nil), 204)

	mcpHdr := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	want(do(f.alice, "POST", "/v1/mcp", init, mcpHdr...), 200)
	want(do(f.alice, "POST", w+"/mcp", init, mcpHdr...), 200)
	want(do(f.bob, "POST", w+"/mcp", init, mcpHdr...), 404)
	want(do(f.alice, "POST", "/v1/mcp", `{"jsonrpc":`, mcpHdr...), 400)
	want(do(f.alice, "POST", w+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"no/such"}`, mcpHdr...), 400)
	want(do(f.alice, "POST", w+"/mcp", init, "Content-Type", "application/json"), 400)

	want(do(f.alice, "GET", "/v1/repos", nil), 200)
	er := map[string]any{"repo": f.repo}
	s.checkRequest(t, "POST", "/v1/repos", er)
	r = do(f.alice, "POST", "/v1/repos", er)
	want(r, 200)
	var rc struct{ ID string }
	json.Unmarshal(r.body, &rc)
	// Caches are shared: only an operator removes one.
	want(do(f.alice, "DELETE", "/v1/repos/"+rc.ID+"?force=true", nil), 403)
	want(do(f.bob, "DELETE", "/v1/repos/"+rc.ID+"?force=true", nil), 404)
	want(do(f.alice, "DELETE", w, nil), 204)
	want(do(f.admin, "DELETE", "/v1/repos/"+rc.ID+"?force=true", nil), 204)
	want(do(f.admin, "DELETE", "/v1/repos/"+rc.ID, nil), 404)

	// Pull requests need a git platform: the same checker over a server
	// whose repository lives on a GitHub Enterprise look-alike.
	pf := newPRFixture(t)
	pdo := func(method, path string, body any) resp {
		t.Helper()
		r := pf.do(t, pf.alice, method, path, body)
		s.check(t, method, path, r)
		return r
	}
	pr := map[string]any{"title": "Add feature", "draft": true}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/pulls", pr)
	want(pdo("POST", pf.ws+"/pulls", pr), 404) // branch not pushed yet
	want(pdo("POST", pf.ws+"/git/push", nil), 200)
	want(pdo("POST", pf.ws+"/pulls", pr), 201)
	want(pdo("POST", pf.ws+"/pulls", pr), 200)
	cmt := map[string]any{"body": "inline", "path": "feature.txt", "line": 1}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/pulls/{number}/comments", cmt)
	want(pdo("POST", pf.ws+"/pulls/1/comments", cmt), 201)
	want(pdo("POST", pf.ws+"/pulls/1/comments", map[string]any{"body": "x", "line": 1}), 400)

	// Local mode: alice's tunnel agent, called through the API.
	local, err := tunnel.OpenLocal(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	td := &tunnel.Dispatcher{Workspace: "laptop"}
	local.Routes(td)
	tctx, stopTunnel := context.WithCancel(context.Background())
	tdone := make(chan struct{})
	go func() {
		defer close(tdone)
		tunnel.Run(tctx, f.srv.URL, f.alice, &tunnel.Agent{Workspace: "laptop", D: td})
	}()
	defer func() { stopTunnel(); <-tdone }()
	for i := 0; !strings.Contains(string(f.do(t, f.alice, "GET", "/v1/tunnels", nil).body), "laptop"); i++ {
		if i == 500 {
			t.Fatal("the tunnel never registered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	want(do(f.alice, "GET", "/v1/tunnels", nil), 200)
	tc := map[string]any{"endpoint": tunnel.RouteExecute, "payload": map[string]any{"argv": []string{"true"}}, "timeout_ms": 10000}
	s.checkRequest(t, "POST", "/v1/tunnels/{name}/call", tc)
	want(do(f.alice, "POST", "/v1/tunnels/laptop/call", tc), 200)
	want(do(f.alice, "POST", "/v1/tunnels/laptop/call", map[string]any{"endpoint": "/api/nope"}), 200) // the agent's answer: E_NOT_FOUND inside
	want(do(f.bob, "POST", "/v1/tunnels/laptop/call", tc), 404)
	want(do(f.alice, "POST", "/v1/tunnels/laptop/call", map[string]any{"payload": 1}), 400)
	if r := f.do(t, f.alice, "GET", "/v1/tunnel", nil); r.status != 400 || !strings.Contains(string(r.body), "E_INVALID_ARGUMENT") {
		t.Fatalf("GET /v1/tunnel without an upgrade: %d %s", r.status, r.body)
	}

	// Debugging: the same checker over a server whose Service has a fake
	// grove.Debugger (debug_test.go) returning fixed typed values.
	df := newDebugFixture(t, httpapi.Options{})
	ddo := func(key, method, path string, body any) resp {
		t.Helper()
		r := df.do(t, key, method, path, body)
		s.check(t, method, path, r)
		return r
	}
	dw := df.ws + "/debug"
	want(ddo(df.alice, "GET", dw+"/context", nil), 200)
	ds := map[string]any{"language": "c", "program": "add", "args": []string{"2", "3"}, "env": map[string]string{"X": "1"}, "stop_on_entry": true, "timeout_ms": 5000,
		"breakpoints": []any{map[string]any{"file": "add_numbers.c", "lines": []int{4}, "conditions": []string{"a > 1"}}}}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/debug/sessions", ds)
	want(ddo(df.alice, "POST", dw+"/sessions", ds), 201)
	dsc := map[string]any{"config": map[string]any{"type": "lldb-dap", "request": "launch", "program": "add"}}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/debug/sessions", dsc)
	want(ddo(df.alice, "POST", dw+"/sessions", dsc), 201)
	want(ddo(df.alice, "POST", dw+"/sessions", map[string]any{"language": "cobol", "program": "a"}), 501)
	want(ddo(df.bob, "GET", dw+"/sessions", nil), 404)
	want(ddo(df.alice, "GET", dw+"/sessions", nil), 200)
	bps := map[string]any{"file": "add_numbers.c", "lines": []int{4, 9}}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/debug/sessions/{sid}/breakpoints", bps)
	want(ddo(df.alice, "POST", dw+"/sessions/dbg_1/breakpoints", bps), 200)
	want(ddo(df.alice, "POST", dw+"/sessions/dbg_1/breakpoints", map[string]any{"file": "a.c", "lines": []int{}}), 200)
	cont := map[string]any{"timeout_ms": 2000, "expressions": []string{"a + b"}}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/debug/sessions/{sid}/continue", cont)
	want(ddo(df.alice, "POST", dw+"/sessions/dbg_1/continue", cont), 200)
	want(ddo(df.alice, "POST", dw+"/sessions/dbg_1/continue", map[string]any{"no_wait": true}), 200)
	st := map[string]any{"kind": "over", "expressions": []string{"a"}}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/debug/sessions/{sid}/step", st)
	want(ddo(df.alice, "POST", dw+"/sessions/dbg_1/step", st), 200)
	want(ddo(df.alice, "POST", dw+"/sessions/busy/step", st), 409)
	sn := map[string]any{"timeout_ms": 1000, "max_frames": 5, "max_variables": 50}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/debug/sessions/{sid}/snapshot", sn)
	want(ddo(df.alice, "POST", dw+"/sessions/dbg_1/snapshot", sn), 200)
	want(ddo(df.alice, "POST", dw+"/sessions/dbg_1/snapshot", nil), 200)
	ev := map[string]any{"expression": "a + b", "frame_id": 1000}
	s.checkRequest(t, "POST", "/v1/workspaces/{id}/debug/sessions/{sid}/evaluate", ev)
	want(ddo(df.alice, "POST", dw+"/sessions/dbg_1/evaluate", ev), 200)
	want(ddo(df.alice, "POST", dw+"/sessions/gone/evaluate", ev), 404)
	want(ddo(df.alice, "DELETE", dw+"/sessions/dbg_1", nil), 204)

	// Every documented operation answered 2xx at least once, and every
	// endpoint of the API (issue 4's table, plus health and MCP) is
	// documented.
	var missing []string
	for _, o := range s.ops {
		if !s.seen[o.method+" "+o.template] {
			missing = append(missing, o.method+" "+o.template)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("documented but not exercised with a 2xx: %v", missing)
	}
	documented := map[string]bool{}
	for _, o := range s.ops {
		documented[o.method+" "+o.template] = true
	}
	for _, e := range []string{
		"POST /v1/workspaces", "GET /v1/workspaces", "GET /v1/workspaces/{id}", "DELETE /v1/workspaces/{id}",
		"POST /v1/workspaces/{id}/release", "POST /v1/workspaces/{id}/pin", "POST /v1/workspaces/{id}/exec",
		"GET /v1/workspaces/{id}/files/{path}", "PUT /v1/workspaces/{id}/files/{path}", "DELETE /v1/workspaces/{id}/files/{path}",
		"GET /v1/workspaces/{id}/tree", "GET /v1/workspaces/{id}/search",
		"GET /v1/workspaces/{id}/git/status", "GET /v1/workspaces/{id}/git/diff", "GET /v1/workspaces/{id}/git/log",
		"POST /v1/workspaces/{id}/git/commit", "POST /v1/workspaces/{id}/git/push",
		"GET /v1/repos", "POST /v1/repos", "DELETE /v1/repos/{id}", "POST /v1/workspaces/{id}/tools/{name}",
		"POST /v1/workspaces/{id}/pulls", "POST /v1/workspaces/{id}/pulls/{number}/comments",
		"POST /v1/mcp", "POST /v1/workspaces/{id}/mcp", "GET /healthz", "GET /readyz", "GET /v1/openapi.json",
		"GET /v1/tunnels", "POST /v1/tunnels/{name}/call",
		"GET /v1/workspaces/{id}/debug/context", "POST /v1/workspaces/{id}/debug/sessions", "GET /v1/workspaces/{id}/debug/sessions",
		"DELETE /v1/workspaces/{id}/debug/sessions/{sid}", "POST /v1/workspaces/{id}/debug/sessions/{sid}/breakpoints",
		"POST /v1/workspaces/{id}/debug/sessions/{sid}/continue", "POST /v1/workspaces/{id}/debug/sessions/{sid}/step",
		"POST /v1/workspaces/{id}/debug/sessions/{sid}/snapshot", "POST /v1/workspaces/{id}/debug/sessions/{sid}/evaluate",
	} {
		if !documented[e] {
			t.Errorf("endpoint %s is not in openapi.json", e)
		}
	}
}

// TestOpenAPICatchesDrift proves the checker can fail: a body that breaks
// the Workspace schema is reported.
func TestOpenAPICatchesDrift(t *testing.T) {
	s := loadSpec(t)
	for _, tc := range []struct {
		name string
		r    resp
	}{
		{"missing required field", resp{status: 200, header: hdr("application/json"), body: []byte(`{"id":"ws_1"}`)}},
		{"wrong content type", resp{status: 200, header: hdr("text/plain"), body: []byte(`{}`)}},
		{"undocumented status", resp{status: 202, header: hdr("application/json"), body: []byte(`{}`)}},
		{"error of another shape", resp{status: 404, header: hdr("application/json"), body: []byte(`{"message":"no"}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeT{TB: t}
			tc.r.header.Set("X-Request-Id", "x")
			s.check(ft, "GET", "/v1/workspaces/ws_1", tc.r)
			if !ft.failed {
				t.Fatal("the checker accepted it")
			}
		})
	}
}

func hdr(ct string) http.Header { h := http.Header{}; h.Set("Content-Type", ct); return h }

// fakeT records failures instead of failing the test that uses it.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }

// Every enum says its type, so generators make string enums, and no path
// parameter claims to hold slashes (OpenAPI path parameters cannot).
func TestOpenAPIDocumentShape(t *testing.T) {
	var doc any
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, ptr string)
	walk = func(v any, ptr string) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["enum"]; ok {
				if _, ok := v["type"]; !ok {
					t.Errorf("%s: enum without type", ptr)
				}
			}
			if v["in"] == "path" {
				if d, _ := v["description"].(string); strings.Contains(d, "may contain slashes") {
					t.Errorf("%s: path parameter %v says it may contain slashes", ptr, v["name"])
				}
			}
			for k, e := range v {
				walk(e, ptr+"/"+escPtr(k))
			}
		case []any:
			for i, e := range v {
				walk(e, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "")
}
