package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove/httpapi"
)

// rpcResult is one JSON-RPC response of an MCP tool call.
type rpcResult struct {
	ID     int `json:"id"`
	Result struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (r rpcResult) text() string {
	var sb strings.Builder
	for _, c := range r.Result.Content {
		sb.WriteString(c.Text)
	}
	return sb.String()
}

// mcpPost sends raw JSON-RPC to a stateless MCP endpoint and returns the
// HTTP answer and the JSON-RPC responses in it.
func (ls *limitsServer) mcpPost(t *testing.T, c *http.Client, key, path, body string) (resp, []rpcResult) {
	t.Helper()
	r, err := ls.try(c, key, "POST", path, body, "Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-03-26")
	if err != nil {
		t.Error(err)
		return r, nil
	}
	var out []rpcResult
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var one rpcResult
		if json.Unmarshal([]byte(line), &one) == nil {
			out = append(out, one)
			continue
		}
		var many []rpcResult
		if json.Unmarshal([]byte(line), &many) == nil {
			out = append(out, many...)
		}
	}
	return r, out
}

func toolCall(id int, name string, args any) string {
	a, _ := json.Marshal(args)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, a)
}

// Probe: 100 concurrent MCP run_command calls from one user all ran
// (limit 8). Now MCP calls pass the same per-user gate as REST exec: past
// it they are tool errors E_RESOURCE_LIMIT, and REST answers 429 with
// Retry-After; another user is unaffected.
func TestLimitsSlotsMCP(t *testing.T) {
	const perUser, callers = 4, 16
	ls := newLimitsServer(t, httpapi.Options{MaxExecPerUser: perUser})
	client := loopback(2)
	base := baseline(t, client)
	p := ls.startProbe(t, ls.bob, "/v1/workspaces/"+ls.bobWS)

	// Each admitted command marks that it runs and then holds its slot
	// until the test releases it (the subprocess runtime runs on the host,
	// so the barrier is a host directory): the REST exec below is asked
	// exactly when every caller has either started its command or been
	// refused — however late a loaded machine admits them. Each caller has
	// a workspace of its own: commands on one workspace take turns (a
	// write takes its lock), and a caller waiting for the lock holds a
	// slot without running.
	barrier := t.TempDir()
	wss := make([]string, callers)
	for i := range wss {
		wss[i] = ls.acquire(t, ls.alice, ls.repo, fmt.Sprintf("c-slots-%d", i))
	}
	hold := fmt.Sprintf(`touch %[1]s/ran.$$; while [ ! -e %[1]s/release ]; do sleep 0.02; done`, barrier)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ran, limited := 0, 0
	var other []string
	for i := range callers {
		path := "/v1/workspaces/" + wss[i] + "/mcp"
		args := map[string]any{"command": hold}
		if i%2 == 1 { // unbound MCP counts the same
			path = "/v1/mcp"
			args["workspace_id"] = wss[i]
		}
		wg.Go(func() {
			_, res := ls.mcpPost(t, client, ls.alice, path, toolCall(1, "run_command", args))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case len(res) != 1:
				other = append(other, fmt.Sprint(res))
			case !res[0].Result.IsError:
				ran++
			case strings.HasPrefix(res[0].text(), "E_RESOURCE_LIMIT"):
				limited++
			default:
				other = append(other, res[0].text())
			}
		})
	}
	running := func() int {
		m, _ := filepath.Glob(filepath.Join(barrier, "ran.*"))
		return len(m)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		settled := running()+limited+len(other) >= callers
		mu.Unlock()
		if settled || time.Now().After(deadline) {
			break
		}
	}
	// While alice's slots are taken by MCP calls, REST exec is refused too.
	held := running()
	r := ls.do(t, client, ls.alice, "POST", "/v1/workspaces/"+ls.aliceWS+"/exec", `{"shell":"true"}`)
	if held >= perUser && (r.status != 429 || errCodeOf(t, r) != "E_RESOURCE_LIMIT" || r.header.Get("Retry-After") == "") {
		t.Errorf("REST exec with all %d slots held by MCP calls: %d %s Retry-After %q", perUser, r.status, r.body, r.header.Get("Retry-After"))
	}
	// And another user's exec runs.
	if r := ls.do(t, loopback(1), ls.bob, "POST", "/v1/workspaces/"+ls.bobWS+"/exec", `{"shell":"true"}`); r.status != 200 {
		t.Errorf("bob's exec: %d %s", r.status, r.body)
	}
	if err := os.WriteFile(filepath.Join(barrier, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	t.Logf("%d concurrent MCP run_command calls, limit %d: %d ran (%d at once), %d E_RESOURCE_LIMIT, other %v", callers, perUser, ran, held, limited, other)
	if held > perUser || ran > perUser || ran == 0 || ran+limited != callers {
		t.Errorf("want at most %d run and the rest E_RESOURCE_LIMIT; got %d ran (%d at once), %d limited, %v", perUser, ran, held, limited, other)
	}

	// A batch counts each call; a batch over the cap is refused whole.
	var batch []string
	for i := range 9 {
		batch = append(batch, toolCall(i, "run_command", map[string]any{"command": "true"}))
	}
	r, _ = ls.mcpPost(t, client, ls.alice, "/v1/workspaces/"+ls.aliceWS+"/mcp", "["+strings.Join(batch, ",")+"]")
	if r.status != 400 || errCodeOf(t, r) != "E_INVALID_ARGUMENT" {
		t.Errorf("batch of 9: %d %s", r.status, r.body)
	}
	batch = batch[:0]
	for i := range 8 {
		batch = append(batch, toolCall(i, "run_command", map[string]any{"command": "sleep 0.5"}))
	}
	r, res := ls.mcpPost(t, client, ls.alice, "/v1/workspaces/"+ls.aliceWS+"/mcp", "["+strings.Join(batch, ",")+"]")
	ranB, limB := 0, 0
	for _, x := range res {
		if x.Result.IsError && strings.HasPrefix(x.text(), "E_RESOURCE_LIMIT") {
			limB++
		} else if !x.Result.IsError {
			ranB++
		}
	}
	t.Logf("batch of 8: HTTP %d, %d responses: %d ran, %d E_RESOURCE_LIMIT", r.status, len(res), ranB, limB)
	if r.status != 200 || ranB == 0 || ranB+limB != len(res) {
		t.Errorf("batch of 8: %d %s", r.status, r.body)
	}

	recordFigure(t, p.finish(t, fmt.Sprintf("%d concurrent MCP calls, limit %d", callers, perUser)))
	backToBaseline(t, base, "after MCP slots", client)
}

// The global limit: one user cannot take it all, and when all users
// together hold it, the next caller gets 429 saying it is the server's.
func TestLimitsSlotsGlobal(t *testing.T) {
	ls := newLimitsServer(t, httpapi.Options{MaxExecPerUser: 3, Limits: httpapi.Limits{MaxSlots: 4}})
	client := loopback(2)
	// Four commands hold the four slots until released (a barrier on the
	// host, as in TestLimitsSlotsMCP), each in a workspace of its own so
	// that none waits for another's lock.
	barrier := t.TempDir()
	hold := fmt.Sprintf(`{"shell":"touch %[1]s/ran.$$; while [ ! -e %[1]s/release ]; do sleep 0.02; done"}`, barrier)
	var wg sync.WaitGroup
	for i := range 3 {
		ws := ls.acquire(t, ls.alice, ls.repo, fmt.Sprintf("c-global-%d", i))
		wg.Go(func() { ls.do(t, client, ls.alice, "POST", "/v1/workspaces/"+ws+"/exec", hold) })
	}
	wg.Go(func() { ls.do(t, client, ls.bob, "POST", "/v1/workspaces/"+ls.bobWS+"/exec", hold) })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(barrier, "ran.*")); len(m) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the four commands never all ran")
		}
	}
	r := ls.do(t, client, ls.bob, "POST", "/v1/workspaces/"+ls.bobWS+"/exec", `{"shell":"true"}`)
	if r.status != 429 || !strings.Contains(string(r.body), "the server already runs 4") {
		t.Errorf("over the global limit: %d %s", r.status, r.body)
	}
	if err := os.WriteFile(filepath.Join(barrier, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if r := ls.do(t, client, ls.bob, "POST", "/v1/workspaces/"+ls.bobWS+"/exec", `{"shell":"true"}`); r.status != 200 {
		t.Errorf("after: %d %s", r.status, r.body)
	}
}
