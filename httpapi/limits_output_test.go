package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grove-dev/grove/httpapi"
)

// Probe: POST /exec took max_output unchecked (400 MB of output took RSS
// to 1.9 GB, and SSE sent it twice). max_output over the server's cap is
// E_INVALID_ARGUMENT; the event stream carries the output once.
func TestLimitsExecOutput(t *testing.T) {
	const capBytes = 4 << 20
	ls := newLimitsServer(t, httpapi.Options{Limits: httpapi.Limits{MaxOutput: capBytes}})
	client := loopback(2)
	base := baseline(t, client)
	exec := "/v1/workspaces/" + ls.aliceWS + "/exec"

	r := ls.do(t, client, ls.alice, "POST", exec, fmt.Sprintf(`{"shell":"true","max_output":%d}`, capBytes+1))
	if r.status != 400 || errCodeOf(t, r) != "E_INVALID_ARGUMENT" || !strings.Contains(string(r.body), fmt.Sprint(capBytes)) {
		t.Errorf("max_output over the cap: %d %s", r.status, r.body)
	}

	const n = 3 << 20
	body := fmt.Sprintf(`{"shell":"yes | head -c %d","max_output":%d}`, n, capBytes)
	r = ls.do(t, client, ls.alice, "POST", exec, body, "Accept", "text/event-stream")
	if r.status != 200 {
		t.Fatalf("SSE exec: %d %s", r.status, r.body)
	}
	streamed, exitStdout := 0, -1
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch event {
		case "stdout":
			var ch httpapi.ChunkEvent
			json.Unmarshal([]byte(data), &ch)
			streamed += len(ch.Data)
		case "exit":
			var ex httpapi.ExecResponse
			json.Unmarshal([]byte(data), &ex)
			exitStdout = len(ex.Stdout)
		}
	}
	t.Logf("SSE exec of %d bytes: %d streamed, %d in the exit event, %d bytes on the wire", n, streamed, exitStdout, len(r.body))
	// "y\n" is 3 bytes of JSON for 2 of output: once is 1.5n, twice 3n.
	if streamed != n || exitStdout != 0 || len(r.body) > 2*n {
		t.Errorf("want the output once: streamed %d, exit event %d, wire %d", streamed, exitStdout, len(r.body))
	}
	backToBaseline(t, base, "after exec output", client)
}

// Probe: sixty slow clients reading 30 MB files held 2.3 GB. A read over
// LargeBody takes a slot (so large reads in flight are bounded by the
// slots), and the response goes out in 1 MiB writes each bounded by
// WriteTimeout: a client that stops reading frees its slot.
func TestLimitsLargeReads(t *testing.T) {
	const size = 16 << 20
	ls := newLimitsServer(t, httpapi.Options{MaxExecPerUser: 4, Limits: httpapi.Limits{WriteTimeout: 500 * time.Millisecond}})
	client := loopback(2)
	file := "/v1/workspaces/" + ls.aliceWS + "/files/big.txt"
	if r := ls.do(t, client, ls.alice, "PUT", file, strings.Repeat("a", size)); r.status != 204 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	base := baseline(t, client)
	p := ls.startProbe(t, ls.bob, "/v1/workspaces/"+ls.bobWS)

	// Eight slow readers that never read the body.
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	var held []*http.Response
	for range 8 {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", ls.url+file, nil)
			req.Header.Set("Authorization", "Bearer "+ls.alice)
			res, err := loopback(3).Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				got[0]++
				return
			}
			got[res.StatusCode]++
			held = append(held, res)
		})
	}
	wg.Wait()
	t.Logf("8 slow readers of a %d MiB file, 4 slots: statuses %v", size>>20, got)
	if got[200] == 0 || got[200] > 4 || got[200]+got[429] != 8 {
		t.Errorf("want at most 4 large reads at once, the rest 429: %v", got)
	}
	// The stalled writes time out and free the slots while the clients
	// still hold their connections.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := ls.do(t, client, ls.alice, "POST", "/v1/workspaces/"+ls.aliceWS+"/exec", `{"shell":"true"}`)
		if r.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slots still held by stalled readers: %d %s", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, res := range held {
		res.Body.Close()
	}
	// Small reads need no slot.
	if r := ls.do(t, client, ls.alice, "GET", "/v1/workspaces/"+ls.aliceWS+"/files/README.md", ""); r.status != 200 {
		t.Errorf("small read: %d", r.status)
	}
	recordFigure(t, p.finish(t, "8 stalled readers of a 16 MiB file"))
	backToBaseline(t, base, "after large reads", client)
}

// Probe: search at a huge offset took 28 s per request outside any slot.
// offset + max_results is capped, and search takes a slot — as do the git
// and tree routes.
func TestLimitsSearch(t *testing.T) {
	ls := newLimitsServer(t, httpapi.Options{MaxExecPerUser: 1})
	client := loopback(2)
	search := "/v1/workspaces/" + ls.aliceWS + "/search?pattern=hello"
	r := ls.do(t, client, ls.alice, "GET", search+"&offset=1000000000", "")
	if r.status != 400 || errCodeOf(t, r) != "E_INVALID_ARGUMENT" {
		t.Errorf("huge offset: %d %s", r.status, r.body)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		ls.do(t, client, ls.alice, "POST", "/v1/workspaces/"+ls.aliceWS+"/exec", `{"shell":"sleep 1"}`)
	})
	time.Sleep(300 * time.Millisecond)
	for _, path := range []string{search, "/v1/workspaces/" + ls.aliceWS + "/git/status", "/v1/workspaces/" + ls.aliceWS + "/tree"} {
		r = ls.do(t, client, ls.alice, "GET", path, "")
		if r.status != 429 || r.header.Get("Retry-After") == "" {
			t.Errorf("%s with the user's slot taken: %d %s", path, r.status, r.body)
		}
	}
	wg.Wait()
	if r := ls.do(t, client, ls.alice, "GET", search, ""); r.status != 200 && r.status != 501 {
		t.Errorf("search: %d %s", r.status, r.body)
	}
}

// Probe: 400 MB of output took RSS to 1.9 GB. Now that is refused, and
// the worst one user can do — all 8 slots producing max_output (8 MiB) —
// is measured: peak RSS of the process (server and discarding clients).
func TestLimitsExecOutputMemory(t *testing.T) {
	ls := newLimitsServer(t, httpapi.Options{})
	client := loopback(2)
	exec := "/v1/workspaces/" + ls.aliceWS + "/exec"
	r := ls.do(t, client, ls.alice, "POST", exec, `{"shell":"true","max_output":400000000}`)
	if r.status != 400 || errCodeOf(t, r) != "E_INVALID_ARGUMENT" {
		t.Errorf("max_output 400 MB: %d %s", r.status, r.body)
	}
	base := baseline(t, client)
	p := ls.startProbe(t, ls.bob, "/v1/workspaces/"+ls.bobWS)
	rssBefore := rssMiB()
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak.Store(max(peak.Load(), int64(rssMiB())))
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	const n = 8 << 20
	var wg sync.WaitGroup
	var bytesIn atomic.Int64
	var peaks []string
	for _, accept := range []string{"application/json", "text/event-stream"} {
		for range 8 {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", ls.url+exec, strings.NewReader(fmt.Sprintf(`{"shell":"yes | head -c %d","max_output":%d,"class":"read"}`, n, n)))
				req.Header.Set("Authorization", "Bearer "+ls.alice)
				req.Header.Set("Accept", accept)
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer res.Body.Close()
				k, _ := io.Copy(io.Discard, res.Body)
				bytesIn.Add(k)
				if res.StatusCode != 200 {
					t.Errorf("%s exec: %d", accept, res.StatusCode)
				}
			})
		}
		wg.Wait()
		peaks = append(peaks, fmt.Sprintf("%s peak %d MiB", accept, peak.Load()))
		runtime.GC()
		debug.FreeOSMemory()
		peak.Store(0)
	}
	close(stop)
	<-sampled
	figure := fmt.Sprintf("exec output: 8 concurrent execs of 8 MiB each, as JSON then as SSE (%d MiB received): RSS %d MiB before; %s (client and server in one process)",
		bytesIn.Load()>>20, rssBefore, strings.Join(peaks, ", "))
	recordFigure(t, figure)
	recordFigure(t, p.finish(t, "8 × 8 MiB exec output"))
	backToBaseline(t, base, "after exec output", client)
}
