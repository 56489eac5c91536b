package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/mcpserver"
	"github.com/grove-dev/grove/provider/local"
	"github.com/grove-dev/grove/store/memory"
	"github.com/grove-dev/grove/tools"
)

type env struct {
	eng      *engine.Engine
	ts       *tools.Toolset
	upstream string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(filepath.Join(root, "rt"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	git := &gitrepo.Git{Binary: "git", Home: home, Identity: gitrepo.Identity{Name: "Test Agent", Email: "agent@example.invalid"}}
	prov := local.New(&gitrepo.Caches{Git: git, Root: filepath.Join(root, "repos")}, fsops.Options{})
	drv := subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: filepath.Join(root, "rt")})
	eng, err := engine.New(engine.Config{Store: memory.New(), Provider: prov, Driver: drv, AllowUnisolatedWrites: true, Network: driver.NetworkDefault})
	if err != nil {
		t.Fatal(err)
	}
	up := filepath.Join(root, "upstream")
	for _, args := range [][]string{{"init", "-q", "-b", "main", up}} {
		mustRun(t, "", "git", args...)
	}
	writeFile(t, filepath.Join(up, "README.md"), "hello\nworld\n")
	writeFile(t, filepath.Join(up, "src", "main.go"), "package main\n\nfunc main() {\n\tprintln(1)\n}\n\nfunc other() {\n\tprintln(1)\n}\n")
	writeFile(t, filepath.Join(up, "Makefile"), "test:\n\t@echo running tests\n\t@false\n")
	mustRun(t, up, "git", "add", "-A")
	mustRun(t, up, "git", "commit", "-qm", "first")
	ts := tools.New(tools.Options{})
	t.Cleanup(ts.Close)
	return &env{eng: eng, ts: ts, upstream: up}
}

func mustRun(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// connect runs a server in-process and returns a client session to it.
func connect(t *testing.T, e *env, opt mcpserver.Options, progress func(*mcp.ProgressNotificationClientRequest)) *mcp.ClientSession {
	t.Helper()
	opt.Tools = e.ts
	opt.Caller = tools.Caller{User: "alice"}
	srv := mcpserver.NewServer(e.eng, opt)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		if progress != nil {
			progress(r)
		}
	}})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func (e *env) acquire(t *testing.T, mode grove.Mode) *grove.Workspace {
	t.Helper()
	req := grove.AcquireRequest{Repo: e.upstream, User: "alice", Project: "p", Mode: mode, Ref: "main"}
	if mode == grove.ModeEdit {
		req.Conversation = "c1"
	}
	ws, _, err := e.eng.Acquire(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

func TestListTools(t *testing.T) {
	e := newEnv(t)
	ro := e.acquire(t, grove.ModeAnalysis)
	rw := e.acquire(t, grove.ModeEdit)
	tests := []struct {
		name        string
		opt         mcpserver.Options
		has, hasNot []string
		wsRequired  bool
	}{
		{"read-only bound", mcpserver.Options{WorkspaceID: ro.ID}, []string{"read_file", "git_diff"}, []string{"write_file", "edit_file", "run_command", "git_push", "workspace_open"}, false},
		{"writable bound", mcpserver.Options{WorkspaceID: rw.ID}, []string{"write_file", "run_command", "create_pull_request"}, []string{"workspace_open"}, false},
		{"unbound", mcpserver.Options{}, []string{"workspace_open", "write_file", "read_file"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toolNames(t, connect(t, e, tt.opt, nil))
			for _, n := range tt.has {
				if got[n] == nil {
					t.Errorf("missing %s", n)
				}
			}
			for _, n := range tt.hasNot {
				if got[n] != nil {
					t.Errorf("lists %s", n)
				}
			}
			schema, _ := json.Marshal(got["read_file"].InputSchema)
			if strings.Contains(string(schema), "workspace_id") != tt.wsRequired {
				t.Errorf("read_file schema workspace_id presence wrong: %s", schema)
			}
			if a := got["read_file"].Annotations; a == nil || !a.ReadOnlyHint {
				t.Errorf("read_file annotations %+v", a)
			}
		})
	}
}

type callCase struct {
	name    string
	tool    string
	args    map[string]any
	errCode string // "" for success
	has     string // substring of the text content
}

func call(t *testing.T, cs *mcp.ClientSession, tools map[string]*mcp.Tool, c callCase) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", c.name, err)
	}
	text := ""
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if c.errCode != "" {
		if !res.IsError || !strings.HasPrefix(text, c.errCode+": ") {
			t.Fatalf("%s: want isError %s, got isError=%v %q", c.name, c.errCode, res.IsError, text)
		}
	} else {
		if res.IsError {
			t.Fatalf("%s: unexpected tool error %q", c.name, text)
		}
		// structuredContent must match the declared output schema.
		raw, _ := json.Marshal(tools[c.tool].OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &v)
		if err := rs.Validate(v); err != nil {
			t.Fatalf("%s: structuredContent does not match the output schema: %v\n%s", c.name, err, b)
		}
	}
	if !strings.Contains(text, c.has) {
		t.Fatalf("%s: text %q does not contain %q", c.name, text, c.has)
	}
	return res
}

func TestCallEachTool(t *testing.T) {
	testenv.RequireBinary(t, "rg", "rg")
	e := newEnv(t)
	ws := e.acquire(t, grove.ModeEdit)
	cs := connect(t, e, mcpserver.Options{WorkspaceID: ws.ID}, nil)
	tl := toolNames(t, cs)
	sha := func(s string) string {
		res := call(t, cs, tl, callCase{name: "sha", tool: "read_file", args: map[string]any{"path": s}})
		return res.StructuredContent.(map[string]any)["sha256"].(string)
	}
	steps := []callCase{
		{"read", "read_file", map[string]any{"path": "README.md"}, "", "     1\thello\n     2\tworld"},
		{"read window", "read_file", map[string]any{"path": "src/main.go", "offset": 2, "limit": 2}, "", "continue with offset=4"},
		{"read absolute inside", "read_file", map[string]any{"path": filepath.Join(ws.LocalPath, "README.md")}, "", "hello"},
		{"missing file with did-you-mean", "read_file", map[string]any{"path": "READNE.md"}, "E_NOT_FOUND", `did you mean "README.md"`},
		{"directory", "read_file", map[string]any{"path": "src"}, "E_IS_DIRECTORY", "list_dir"},
		{"offset past end", "read_file", map[string]any{"path": "README.md", "offset": 9}, "E_INVALID_ARGUMENT", "has 2 lines"},
		{"traversal", "read_file", map[string]any{"path": "../../../etc/passwd"}, "E_PATH_OUTSIDE_WORKSPACE", ""},
		{"absolute outside", "read_file", map[string]any{"path": "/etc/passwd"}, "E_PATH_OUTSIDE_WORKSPACE", ""},
		{"schema: unknown field", "read_file", map[string]any{"path": "README.md", "x": 1}, "E_INVALID_ARGUMENT", ""},
		{"schema: wrong type", "read_file", map[string]any{"path": 7}, "E_INVALID_ARGUMENT", ""},
		{"list", "list_dir", map[string]any{}, "", "src/\n"},
		{"find", "find_files", map[string]any{"pattern": "*.go"}, "", "src/main.go"},
		{"bad glob", "find_files", map[string]any{"pattern": "a{"}, "E_INVALID_ARGUMENT", ""},
		{"search content", "search_code", map[string]any{"pattern": "println", "context": 1}, "", "src/main.go:4:\tprintln(1)"},
		{"search files", "search_code", map[string]any{"pattern": "println", "output_mode": "files"}, "", "src/main.go"},
		{"search count", "search_code", map[string]any{"pattern": "println", "output_mode": "count"}, "", "src/main.go:2"},
		{"bad regex", "search_code", map[string]any{"pattern": "(", "output_mode": "files"}, "E_INVALID_ARGUMENT", "regex"},
		{"write new", "write_file", map[string]any{"path": "notes/a.txt", "content": "one\ntwo\n", "create_only": true}, "", "Created notes/a.txt"},
		{"create_only exists", "write_file", map[string]any{"path": "notes/a.txt", "content": "x", "create_only": true}, "E_CONFLICT", ""},
		{"stale sha", "write_file", map[string]any{"path": "notes/a.txt", "content": "x", "expected_sha256": strings.Repeat("0", 64)}, "E_CONFLICT", "changed since"},
		{"binary write", "write_file", map[string]any{"path": "bin.dat", "content": "\x00\x01\x02"}, "", ""},
		{"binary read", "read_file", map[string]any{"path": "bin.dat"}, "E_BINARY_FILE", ""},
		{"patch ambiguous", "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: src/main.go\n@@\n-\tprintln(1)\n+\tprintln(3)\n*** End Patch"}, "E_INVALID_ARGUMENT", "ambiguous"},
		{"edit several", "edit_file", map[string]any{"path": "src/main.go", "old_string": "\tprintln(1)", "new_string": "\tprintln(2)"}, "E_INVALID_ARGUMENT", "at lines 4, 8"},
		{"edit none", "edit_file", map[string]any{"path": "src/main.go", "old_string": "func mian() {", "new_string": "x"}, "E_NOT_FOUND", "closest line is 3"},
		{"edit same", "edit_file", map[string]any{"path": "src/main.go", "old_string": "main", "new_string": "main"}, "E_INVALID_ARGUMENT", "identical"},
		{"edit", "edit_file", map[string]any{"path": "src/main.go", "old_string": "func main() {\n\tprintln(1)", "new_string": "func main() {\n\tprintln(42)"}, "", "     4\t\tprintln(42)"},
		{"patch dry run", "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: README.md\n hello\n-world\n+there\n*** End Patch", "dry_run": true}, "", "Dry run"},
		{"patch context missing", "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: z.txt\n+z\n*** Update File: README.md\n-nope\n+x\n*** End Patch"}, "E_INVALID_ARGUMENT", "context not found"},
		{"patch", "apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: README.md\n hello\n-world\n+there\n*** Add File: docs/x.md\n+# x\n*** End Patch"}, "", "update README.md (1 hunks, exact)"},
		{"run nonzero", "run_command", map[string]any{"command": "echo out; echo err >&2; exit 3"}, "", "exit code 3"},
		{"run empty", "run_command", map[string]any{"command": "  "}, "E_INVALID_ARGUMENT", "empty"},
		{"run timeout keeps output", "run_command", map[string]any{"command": "echo partial; sleep 10", "timeout_s": 1}, "", "partial"},
		{"run head+tail", "run_command", map[string]any{"command": "seq 1 20000", "max_output_bytes": 200}, "", "bytes omitted"},
		{"process unknown", "process_io", map[string]any{"process_id": "proc_nope"}, "E_NOT_FOUND", ""},
		// The Makefile's test target exits 1: make has no per-test results,
		// so the failed run is a tool error, never "0 failed".
		{"tests via make", "run_tests", map[string]any{}, "E_TEST_RUN_FAILED", "running tests"},
		{"status", "git_status", map[string]any{}, "", "README.md"},
		{"diff", "git_diff", map[string]any{}, "", "+there"},
		{"commit", "git_commit", map[string]any{"message": "agent: edits"}, "", "committed"},
		{"nothing to commit", "git_commit", map[string]any{"message": "again"}, "E_NOTHING_TO_COMMIT", ""},
		{"log", "git_log", map[string]any{"limit": 5}, "", "agent: edits"},
		{"push", "git_push", map[string]any{"set_upstream": true}, "", "agent/edits-c1"},
		{"pr", "create_pull_request", map[string]any{"title": "x"}, "E_PLATFORM_NOT_CONFIGURED", "git_push"},
		{"pr comment half inline", "comment_pull_request", map[string]any{"pr_number": 1, "body": "x", "path": "a"}, "E_INVALID_ARGUMENT", "both path and line"},
	}
	for _, s := range steps {
		call(t, cs, tl, s)
	}
	// A stale sha from before the patch is refused; the current one works.
	cur := sha("README.md")
	call(t, cs, tl, callCase{"sha ok", "write_file", map[string]any{"path": "README.md", "content": "new\n", "expected_sha256": cur}, "", "Overwrote"})
	call(t, cs, tl, callCase{"sha stale", "edit_file", map[string]any{"path": "README.md", "old_string": "new", "new_string": "x", "expected_sha256": cur}, "E_CONFLICT", ""})

	// Background: start, poll to completion, then the id is forgotten.
	res := call(t, cs, tl, callCase{"bg start", "run_command", map[string]any{"command": "echo bg-out; sleep 0.2", "background": true}, "", "process_io"})
	id := res.StructuredContent.(map[string]any)["process_id"].(string)
	call(t, cs, tl, callCase{"bg poll", "process_io", map[string]any{"process_id": id, "wait_ms": 10000}, "", "bg-out"})
	call(t, cs, tl, callCase{"bg gone", "process_io", map[string]any{"process_id": id}, "E_NOT_FOUND", ""})
	res = call(t, cs, tl, callCase{"bg long", "run_command", map[string]any{"command": "sleep 30", "background": true}, "", ""})
	id = res.StructuredContent.(map[string]any)["process_id"].(string)
	call(t, cs, tl, callCase{"bg kill", "process_io", map[string]any{"process_id": id, "kill": true}, "", "exited"})
}

func TestUnboundAndReadOnly(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e, mcpserver.Options{}, nil)
	tl := toolNames(t, cs)
	res := call(t, cs, tl, callCase{"open", "workspace_open", map[string]any{"repo": e.upstream, "mode": "analysis", "ref": "main"}, "", "read-only"})
	id := res.StructuredContent.(map[string]any)["id"].(string)
	call(t, cs, tl, callCase{"read", "read_file", map[string]any{"workspace_id": id, "path": "README.md"}, "", "hello"})
	call(t, cs, tl, callCase{"no id", "read_file", map[string]any{"path": "README.md"}, "E_INVALID_ARGUMENT", "workspace_id"})
	call(t, cs, tl, callCase{"unknown id", "read_file", map[string]any{"workspace_id": "ws_nope", "path": "README.md"}, "E_NOT_FOUND", ""})
	call(t, cs, tl, callCase{"write on read-only", "write_file", map[string]any{"workspace_id": id, "path": "x", "content": "x"}, "E_READ_ONLY_WORKSPACE", "workspace_open"})
	call(t, cs, tl, callCase{"command on read-only", "run_command", map[string]any{"workspace_id": id, "command": "touch x"}, "E_READ_ONLY_WORKSPACE", ""})
}

func TestProgressAndCancellation(t *testing.T) {
	e := newEnv(t)
	ws := e.acquire(t, grove.ModeEdit)
	var notes atomic.Int32
	cs := connect(t, e, mcpserver.Options{WorkspaceID: ws.ID}, func(*mcp.ProgressNotificationClientRequest) { notes.Add(1) })
	params := &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "for i in 1 2 3; do echo $i; sleep 0.6; done"}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	deadline := time.Now().Add(2 * time.Second)
	for notes.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if notes.Load() < 2 {
		t.Fatalf("got %d progress notifications, want at least 2", notes.Load())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "sleep 30"}})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled call: err=%v after %s", err, time.Since(start))
	}
}
