package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpPeer starts `grove mcp args...` (this test binary as grove) and
// connects the SDK's client to it over stdio: a real peer, a real process.
func (e *cliEnv) mcpPeer(args ...string) *mcp.ClientSession {
	e.t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "GROVE_CLI_MAIN=1", "GROVE_ROOT="+e.root, "GROVE_USER=cli",
		"GROVE_RUNTIME=subprocess", "GROVE_ALLOW_UNISOLATED=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	e.t.Cleanup(cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		e.t.Fatalf("connect to grove mcp %v: %v\nstderr: %s", args, err, stderr.String())
	}
	e.t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			e.t.Logf("close: %v (stderr: %s)", err, stderr.String())
		}
	})
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema == nil || tl.Annotations == nil {
			t.Errorf("tool %s lacks an input schema or annotations", tl.Name)
		}
	}
	return names
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v (tool errors must be isError results)", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return res, text.String()
}

func TestMCPStdioBoundToWorkspace(t *testing.T) {
	e := &cliEnv{t: t, root: t.TempDir()}
	repo := gitRepo(t)
	var ws struct{ ID string }
	if err := json.Unmarshal([]byte(e.ok("", "ws", "acquire", "--repo", repo, "--conversation", "c1", "--json")), &ws); err != nil {
		t.Fatal(err)
	}
	cs := e.mcpPeer("--workspace", ws.ID)

	names := toolNames(t, cs)
	for _, want := range []string{"read_file", "write_file", "edit_file", "run_command", "git_status"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	if slices.Contains(names, "workspace_open") {
		t.Errorf("a bound server offers workspace_open: %v", names)
	}

	if res, text := callTool(t, cs, "write_file", map[string]any{"path": "src/hello.txt", "content": "one\ntwo\n"}); res.IsError {
		t.Fatalf("write_file: %s", text)
	}
	res, text := callTool(t, cs, "read_file", map[string]any{"path": "src/hello.txt"})
	if res.IsError || !strings.Contains(text, "two") {
		t.Fatalf("read_file: isError=%v %q", res.IsError, text)
	}
	var rf struct {
		TotalLines int    `json:"total_lines"`
		SHA256     string `json:"sha256"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &rf); err != nil || rf.TotalLines != 2 || len(rf.SHA256) != 64 {
		t.Fatalf("read_file structured content: %s", b)
	}
	res, text = callTool(t, cs, "run_command", map[string]any{"command": "cat src/hello.txt; echo err >&2; exit 3"})
	var rc struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	b, _ = json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &rc)
	if rc.ExitCode != 3 || rc.Stdout != "one\ntwo\n" || !strings.Contains(rc.Stderr, "err") {
		t.Fatalf("run_command: %s (%s)", b, text)
	}

	// Tool errors are isError results with an E_ code, and the server
	// keeps serving after them.
	for _, tc := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"read_file", map[string]any{"path": "no/such/file.txt"}, "E_NOT_FOUND"},
		{"read_file", map[string]any{"path": "../../etc/passwd"}, "E_PATH_OUTSIDE_WORKSPACE"},
		{"read_file", map[string]any{"path": 7}, "E_INVALID_ARGUMENT"},
		{"edit_file", map[string]any{"path": "src/hello.txt", "old_string": "absent", "new_string": "x"}, "E_"},
	} {
		res, text := callTool(t, cs, tc.tool, tc.args)
		if !res.IsError || !strings.HasPrefix(text, tc.code) {
			t.Errorf("%s %v: isError=%v %q, want an isError starting %s", tc.tool, tc.args, res.IsError, text, tc.code)
		}
	}
	if res, text := callTool(t, cs, "read_file", map[string]any{"path": "src/hello.txt"}); res.IsError {
		t.Fatalf("read after errors: %s", text)
	}
	// The write went through the real engine: the CLI sees it.
	if got := e.ok("", "read", ws.ID, "src/hello.txt"); got != "one\ntwo\n" {
		t.Fatalf("grove read after MCP write: %q", got)
	}
}

func TestMCPStdioAcquiresOnStart(t *testing.T) {
	e := &cliEnv{t: t, root: t.TempDir()}
	repo := gitRepo(t)

	cs := e.mcpPeer("--repo", repo, "--conversation", "c7", "--project", "p")
	if res, text := callTool(t, cs, "git_status", map[string]any{}); res.IsError || !strings.Contains(text, "agent/edits-c7") {
		t.Fatalf("git_status: isError=%v %q", res.IsError, text)
	}
	if !slices.Contains(toolNames(t, cs), "write_file") {
		t.Fatal("an edit workspace lists no write_file")
	}

	// Analysis mode is read-only: no write tools are listed.
	ro := e.mcpPeer("--repo", repo, "--mode", "analysis", "--ref", "main")
	names := toolNames(t, ro)
	for _, w := range []string{"write_file", "edit_file", "apply_patch", "git_commit"} {
		if slices.Contains(names, w) {
			t.Errorf("read-only workspace lists %s", w)
		}
	}
	if !slices.Contains(names, "read_file") {
		t.Errorf("read-only workspace lacks read_file: %v", names)
	}

	// Bad invocations fail before serving, with one typed line.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp"}, "workspace"},
		{[]string{"mcp", "--workspace", "ws_0000000000000000"}, "E_NOT_FOUND"},
		{[]string{"mcp", "--repo", repo}, "E_INVALID_ARGUMENT"},
	} {
		r := e.run("", tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("grove %v: exit %d stderr %q, want failure naming %s", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
