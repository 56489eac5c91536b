package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grove-dev/grove/httpapi"
)

// Probe: revoking a key did not stop its running work (an SSE stream ran
// 12 s on, a background process up to an hour). Revocation in the store —
// what `grove keys revoke`, a separate process, does — now ends the key's
// stream, MCP call and background process within one re-check interval.
func TestLimitsRevocationStopsWork(t *testing.T) {
	const every = 200 * time.Millisecond
	ls := newLimitsServer(t, httpapi.Options{Limits: httpapi.Limits{RevokeCheck: every}})
	client := loopback(2)
	base := baseline(t, client)
	rec, key, err := ls.keys.Create(context.Background(), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	ws := "/v1/workspaces/" + ls.aliceWS

	var wg sync.WaitGroup
	var sseEnd, mcpEnd time.Time
	var sseTail string
	var mcpRes []rpcResult
	// An event stream that would run for a minute.
	sseUp := make(chan struct{})
	wg.Go(func() {
		req, _ := http.NewRequest("POST", ls.url+ws+"/exec", strings.NewReader(`{"shell":"for i in $(seq 600); do echo tick; sleep 0.1; done","timeout_ms":60000,"class":"read"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Accept", "text/event-stream")
		res, err := client.Do(req)
		if err != nil {
			t.Error(err)
			close(sseUp)
			return
		}
		defer res.Body.Close()
		buf := make([]byte, 4096)
		n, _ := res.Body.Read(buf)
		close(sseUp)
		last := string(buf[:n])
		for {
			n, err := res.Body.Read(buf)
			if n > 0 {
				last = string(buf[:n])
			}
			if err != nil {
				break
			}
		}
		sseEnd, sseTail = time.Now(), last
	})
	<-sseUp
	// A background process started with the key (it waits for the
	// stream's read lock on the workspace: in flight all the same).
	r := ls.do(t, client, key, "POST", ws+"/tools/run_command", `{"command":"sleep 60","background":true}`)
	var started struct {
		Structured struct {
			ProcessID string `json:"process_id"`
		} `json:"structured"`
	}
	json.Unmarshal(r.body, &started)
	if r.status != 200 || started.Structured.ProcessID == "" {
		t.Fatalf("background start: %d %s", r.status, r.body)
	}

	// An MCP tool call that would run for 30 s.
	wg.Go(func() {
		_, mcpRes = ls.mcpPost(t, client, key, ws+"/mcp", toolCall(1, "run_command", map[string]any{"command": "sleep 30"}))
		mcpEnd = time.Now()
	})
	time.Sleep(300 * time.Millisecond)

	t0 := time.Now()
	if err := ls.keys.Revoke(context.Background(), rec.ID); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// The process is polled with another key of the same user.
	var procEnd time.Duration
	for {
		r := ls.do(t, client, ls.alice, "POST", ws+"/tools/process_io", fmt.Sprintf(`{"process_id":%q}`, started.Structured.ProcessID))
		if r.status != 200 {
			t.Fatalf("process_io: %d %s", r.status, r.body)
		}
		if !strings.Contains(string(r.body), `"running":true`) {
			procEnd = time.Since(t0)
			break
		}
		if time.Since(t0) > 10*time.Second {
			t.Fatalf("background process still running 10 s after revocation: %s", r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	figure := fmt.Sprintf("revocation (re-check every %s): SSE stream ended after %s, MCP call after %s, background process after %s",
		every, sseEnd.Sub(t0).Round(time.Millisecond), mcpEnd.Sub(t0).Round(time.Millisecond), procEnd.Round(time.Millisecond))
	recordFigure(t, figure)
	limit := every + 2*time.Second
	if sseEnd.Sub(t0) > limit || mcpEnd.Sub(t0) > limit || procEnd > limit {
		t.Errorf("work outlived revocation: %s", figure)
	}
	if !strings.Contains(sseTail, "E_UNAUTHORIZED") {
		t.Errorf("the stream's last event should say why: %q", sseTail)
	}
	// The MCP request ends with its context: no response, or an error one.
	if len(mcpRes) > 1 || (len(mcpRes) == 1 && !mcpRes[0].Result.IsError) {
		t.Errorf("MCP call after revocation: %+v", mcpRes)
	}
	if r := ls.do(t, client, key, "GET", ws, ""); r.status != 401 {
		t.Errorf("revoked key: %d", r.status)
	}
	backToBaseline(t, base, "after revocation", client)
}

// Probe: 4,992 bad keys in 1.6 s got plain 401s with no slowdown and no
// client address in the log. After 10 failures an address gets 429 with
// Retry-After (even with a valid key, so a guesser cannot interleave one);
// other addresses are unaffected; the access log names the client.
func TestLimitsAuthFailures(t *testing.T) {
	ls := newLimitsServer(t, httpapi.Options{})
	attacker := loopback(3)
	base := baseline(t, attacker)
	p := ls.startProbe(t, ls.bob, "/v1/workspaces/"+ls.bobWS)
	// Like the probe: up to 5,000 guesses in at most 1.6 s, from 4 workers.
	got := map[int]int{}
	retry := ""
	var mu sync.Mutex
	var wg sync.WaitGroup
	var next atomic.Int64
	t0 := time.Now()
	for range 4 {
		wg.Go(func() {
			for time.Since(t0) < 1600*time.Millisecond {
				i := next.Add(1)
				if i > 5000 {
					return
				}
				r := ls.do(t, attacker, fmt.Sprintf("grove_guess%043d", i), "GET", "/v1/workspaces", "")
				mu.Lock()
				got[r.status]++
				if r.status == 429 {
					retry = r.header.Get("Retry-After")
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(t0)
	total := got[401] + got[429]
	t.Logf("%d bad keys from one address in %s: statuses %v, Retry-After %q", total, took.Round(time.Millisecond), got, retry)
	recordFigure(t, fmt.Sprintf("bad keys: %d guesses in %s, %d reached the key store (401), %d refused (429)", total, took.Round(time.Millisecond), got[401], got[429]))
	// Back-offs of 2 s, then 4 s: 10 guesses per round, at most 2 rounds.
	if got[401] > 20 || got[429] == 0 || total != got[401]+got[429] || retry == "" {
		t.Errorf("want at most 20 × 401, the rest 429 with Retry-After: %v %q", got, retry)
	}
	if r := ls.do(t, attacker, ls.alice, "GET", "/v1/workspaces", ""); r.status != 429 {
		t.Errorf("a valid key from an address in back-off: %d", r.status)
	}
	recordFigure(t, p.finish(t, "bad keys from one address"))
	log := ls.log.String()
	if !strings.Contains(log, `"client":"127.0.0.3"`) || !strings.Contains(log, `"client":"127.0.0.1"`) {
		t.Errorf("access log lacks client addresses:\n%s", clipLog(log))
	}
	if strings.Contains(log, "grove_guess") {
		t.Error("the log holds a key")
	}
	backToBaseline(t, base, "after bad keys", attacker)
}

// Probes: a 100 KB URL path of 50,000 components; one name over 255 bytes
// gave 500 and logged the whole path. Both are E_INVALID_ARGUMENT now
// (or 431 from the header limit), and the log never holds a huge path.
func TestLimitsPaths(t *testing.T) {
	ls := newLimitsServer(t, httpapi.Options{})
	client := loopback(2)
	base := baseline(t, client)
	ws := "/v1/workspaces/" + ls.aliceWS
	long := strings.Repeat("n", 300)
	for _, tc := range []struct {
		name, path string
		want       int
	}{
		{"name over 255 bytes", ws + "/files/" + long, 400},
		{"name over 255 bytes in ?path", ws + "/tree?path=" + long, 400},
		{"5000-byte path", ws + "/files/" + strings.Repeat("abcdefghi/", 500), 400},
		{"300 components", ws + "/files/" + strings.Repeat("a/", 300), 400},
		{"100 KB, 50,000 components", ws + "/files/" + strings.Repeat("a/", 50000), 431},
	} {
		r := ls.do(t, client, ls.alice, "GET", tc.path, "")
		if r.status != tc.want || (tc.want == 400 && errCodeOf(t, r) != "E_INVALID_ARGUMENT") {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
		if len(r.body) > 600 {
			t.Errorf("%s: answer of %d bytes", tc.name, len(r.body))
		}
	}
	for line := range strings.SplitSeq(ls.log.String(), "\n") {
		if len(line) > 2048 || strings.Contains(line, long) {
			t.Errorf("log line of %d bytes: %s", len(line), clipLog(line))
		}
	}
	backToBaseline(t, base, "after paths", client)
}

func clipLog(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// A name over 255 bytes given to a file tool is the caller's error, not an
// internal one, over the tools endpoint and MCP alike.
func TestLimitsLongNameInToolInput(t *testing.T) {
	ls := newLimitsServer(t, httpapi.Options{})
	client := loopback(2)
	long := strings.Repeat("n", 300)
	r := ls.do(t, client, ls.alice, "POST", "/v1/workspaces/"+ls.aliceWS+"/tools/write_file", `{"path":"`+long+`","content":"x"}`)
	if r.status != 400 || errCodeOf(t, r) != "E_INVALID_ARGUMENT" || strings.Contains(string(r.body), long) {
		t.Errorf("tools endpoint: %d %s", r.status, r.body)
	}
	_, res := ls.mcpPost(t, client, ls.alice, "/v1/workspaces/"+ls.aliceWS+"/mcp", toolCall(1, "write_file", map[string]any{"path": long, "content": "x"}))
	if len(res) != 1 || !strings.HasPrefix(res[0].text(), "E_INVALID_ARGUMENT") {
		t.Errorf("MCP: %+v", res)
	}
	if strings.Contains(ls.log.String(), long) {
		t.Error("the log holds the long name")
	}
}
