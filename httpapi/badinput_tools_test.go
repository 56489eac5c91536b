package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/grove-dev/grove/httpapi"
)

// TestToolsBadInputOverTheWire covers the issue's "bad input over the
// wire" cases that go through the tools endpoint: each gets a clear 4xx
// in the error shape, with the tool's E_ code and a hint, and changes
// nothing in the workspace.
func TestToolsBadInputOverTheWire(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "c1")
	ws := "/v1/workspaces/" + id
	const dup = "x := 1\nx := 1\n"
	if r := f.do(t, f.alice, "PUT", ws+"/files/dup.go", dup); r.status != 204 {
		t.Fatalf("put dup.go: %d %s", r.status, r.body)
	}
	bin := []byte("\x7fELF\x00\x00\x01binary")
	if r := f.do(t, f.alice, "PUT", ws+"/files/tool.bin", bin); r.status != 204 {
		t.Fatalf("put tool.bin: %d %s", r.status, r.body)
	}

	cases := []struct {
		name, tool string
		body       string
		status     int
		code       string
		msg        string // part of the message or hint
	}{
		// Schema failures, caught before the handler runs.
		{"missing required", "read_file", `{}`, 400, "E_INVALID_ARGUMENT", "path"},
		{"wrong type", "read_file", `{"path":["a"]}`, 400, "E_INVALID_ARGUMENT", "path"},
		{"unknown property", "read_file", `{"path":"README.md","evil":true}`, 400, "E_INVALID_ARGUMENT", "evil"},
		{"not an object", "write_file", `["README.md","x"]`, 400, "E_INVALID_ARGUMENT", ""},
		{"malformed json", "write_file", `{"path":`, 400, "E_INVALID_ARGUMENT", "JSON"},
		{"bool for int", "run_command", `{"command":"true","timeout_s":true}`, 400, "E_INVALID_ARGUMENT", "timeout_s"},
		{"out of range", "read_file", `{"path":"README.md","limit":100000}`, 400, "E_INVALID_ARGUMENT", "limit"},
		// old_string matching zero or several times.
		{"old_string matches nothing", "edit_file", `{"path":"dup.go","old_string":"y := 2","new_string":"z"}`, 404, "E_NOT_FOUND", "old_string"},
		{"old_string matches twice", "edit_file", `{"path":"dup.go","old_string":"x := 1","new_string":"x := 2"}`, 400, "E_INVALID_ARGUMENT", "2 times"},
		// Binary files are not text for a model.
		{"binary to read_file", "read_file", `{"path":"tool.bin"}`, 422, "E_BINARY_FILE", "binary"},
		{"traversal in a tool path", "write_file", `{"path":"../../escape.txt","content":"x"}`, 400, "E_PATH_OUTSIDE_WORKSPACE", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, f.alice, "POST", ws+"/tools/"+tc.tool, tc.body, "Content-Type", "application/json")
			if r.status != tc.status || r.errCode(t) != tc.code {
				t.Fatalf("%s %s = %d %s, want %d %s", tc.tool, tc.body, r.status, r.body, tc.status, tc.code)
			}
			var e httpapi.ErrorBody
			json.Unmarshal(r.body, &e)
			all := e.Error.Message + " " + func() string { h, _ := e.Error.Details["hint"].(string); return h }()
			if tc.msg != "" && !strings.Contains(all, tc.msg) {
				t.Errorf("error %q does not mention %q", all, tc.msg)
			}
		})
	}
	// Nothing changed: the file the edits targeted is as written, and no
	// file escaped the workspace.
	if r := f.do(t, f.alice, "GET", ws+"/files/dup.go", nil); string(r.body) != dup {
		t.Fatalf("dup.go changed: %q", r.body)
	}
	if r := f.do(t, f.alice, "GET", ws+"/git/status", nil); strings.Contains(string(r.body), "escape") {
		t.Fatalf("status after refused writes: %s", r.body)
	}
	// The binary file is still readable as bytes through the files endpoint.
	if r := f.do(t, f.alice, "GET", ws+"/files/tool.bin", nil); r.status != 200 || string(r.body) != string(bin) {
		t.Fatalf("GET tool.bin: %d %q", r.status, r.body)
	}
}

// TestTimeoutReturnsPartialOutput: a command that runs past its timeout
// is killed, and what it printed before is returned with timed_out set —
// through exec and through the run_command tool.
func TestTimeoutReturnsPartialOutput(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "c1")
	ws := "/v1/workspaces/" + id

	r := f.do(t, f.alice, "POST", ws+"/exec", map[string]any{"shell": "echo partial-before; sleep 10; echo never", "timeout_ms": 500, "class": "read"})
	var ex httpapi.ExecResponse
	if err := json.Unmarshal(r.body, &ex); err != nil || r.status != 200 {
		t.Fatalf("exec: %d %s", r.status, r.body)
	}
	if !ex.TimedOut || !strings.Contains(ex.Stdout, "partial-before") || strings.Contains(ex.Stdout, "never") || ex.DurationMS > 5000 {
		t.Fatalf("exec past its timeout: %+v", ex)
	}

	r = f.do(t, f.alice, "POST", ws+"/tools/run_command", `{"command":"echo partial-tool; sleep 10; echo never","timeout_s":1}`)
	var tr struct {
		Text       string `json:"text"`
		Structured struct {
			TimedOut bool   `json:"timed_out"`
			Stdout   string `json:"stdout"`
		} `json:"structured"`
	}
	if err := json.Unmarshal(r.body, &tr); err != nil || r.status != 200 {
		t.Fatalf("run_command: %d %s", r.status, r.body)
	}
	if !tr.Structured.TimedOut || !strings.Contains(tr.Structured.Stdout, "partial-tool") || strings.Contains(tr.Structured.Stdout, "never") ||
		!strings.Contains(tr.Text, "TIMED OUT") {
		t.Fatalf("run_command past its timeout: %s", r.body)
	}
}
