package httpapi_test

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove/httpapi"
)

// Probe: clients send headers and withhold a declared body. Without an
// API key they are answered 401 at once and the connection is closed;
// with a valid key the body deadline answers 408; past the per-address
// limit the listener answers 503. A second user from another address is
// served throughout.
func TestLimitsWithheldBodies(t *testing.T) {
	const perIP, attackers = 40, 150
	bodyTimeout := 500 * time.Millisecond
	ls := newLimitsServer(t, httpapi.Options{Limits: httpapi.Limits{MaxConnsPerIP: perIP, BodyTimeout: bodyTimeout}})
	base := baseline(t)
	p := ls.startProbe(t, ls.bob, "/v1/workspaces/"+ls.bobWS)

	for _, tc := range []struct {
		name, auth string
		from       int // 127.0.0.from
		want       []int
		within     time.Duration
	}{
		// After 10 failures the address is in an authentication back-off: 429.
		{"no key", "", 2, []int{401, 429}, time.Second},
		{"valid key", "Authorization: Bearer " + ls.alice + "\r\n", 3, []int{408}, bodyTimeout + 2*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			got := map[int]int{}
			conns := make([]net.Conn, attackers)
			for i := range conns {
				conns[i] = ls.rawConn(t, tc.from)
				fmt.Fprintf(conns[i], "POST /v1/workspaces/%s/exec HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", ls.aliceWS, tc.auth)
			}
			t0 := time.Now()
			for _, c := range conns {
				wg.Go(func() {
					defer c.Close()
					st := readStatus(c, tc.within+time.Second)
					mu.Lock()
					got[st]++
					mu.Unlock()
				})
			}
			wg.Wait()
			took := time.Since(t0)
			t.Logf("%d connections withholding a body (%s): statuses %v in %s", attackers, tc.name, got, took.Round(time.Millisecond))
			served := 0
			for _, st := range tc.want {
				served += got[st]
			}
			// Refused: 503, or closed at once when the refusers are busy (0).
			if served == 0 || served+got[503]+got[0] != attackers || got[503] == 0 {
				t.Errorf("want every connection answered %v, or refused (503 or closed), got %v", tc.want, got)
			}
			if served > perIP && tc.want[0] == 408 {
				t.Errorf("%d connections from one address were held; the limit is %d", served, perIP)
			}
			if took > tc.within+time.Second {
				t.Errorf("answers took %s, want within %s", took, tc.within)
			}
		})
	}
	if ls.lim.Refused() == 0 {
		t.Error("the listener refused nothing")
	}
	s := p.finish(t, "withheld bodies")
	recordFigure(t, s)
	backToBaseline(t, base, "after withheld bodies")
}

// Probe: 500 connections with ~1 MB of headers each took RSS from 65 MB
// to 707 MB. MaxHeaderBytes answers 431 after 64 KiB.
func TestLimitsHugeHeaders(t *testing.T) {
	const conns = 40
	ls := newLimitsServer(t, httpapi.Options{})
	base := baseline(t)
	p := ls.startProbe(t, ls.bob, "/v1/workspaces/"+ls.bobWS)
	big := strings.Repeat("x", 1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	rssBefore, rssMax := rssMiB(), 0
	// Waves of connections for one second, at most 10 waves.
	t0 := time.Now()
	waves := 0
	for ; waves < 10 && time.Since(t0) < time.Second; waves++ {
		for range conns {
			c := ls.rawConn(t, 2)
			wg.Go(func() {
				defer c.Close()
				// Write headers until the server answers or closes: 1 MB at most.
				go func() {
					fmt.Fprintf(c, "GET /v1/workspaces HTTP/1.1\r\nHost: x\r\n")
					for i := range 1000 {
						if _, err := fmt.Fprintf(c, "X-Pad-%d: %s\r\n", i, big); err != nil {
							return
						}
					}
					fmt.Fprintf(c, "\r\n")
				}()
				st := readStatus(c, 5*time.Second)
				mu.Lock()
				got[st]++
				mu.Unlock()
			})
		}
		rssMax = max(rssMax, rssMiB())
		wg.Wait()
	}
	t.Logf("%d waves of %d connections with 1 MB of headers: statuses %v", waves, conns, got)
	recordFigure(t, fmt.Sprintf("1 MB headers: %d connections in %d waves, statuses %v; RSS %d MiB before, at most %d MiB during (client and server in one process)",
		waves*conns, waves, got, rssBefore, rssMax))
	// 503: over the per-address connection limit while earlier waves close.
	if got[431] == 0 || got[431]+got[503]+got[0] != waves*conns {
		t.Errorf("want 431 (503 past the connection limit, or a reset while still sending), got %v", got)
	}
	recordFigure(t, p.finish(t, "1 MB headers"))
	backToBaseline(t, base, "after huge headers")
}

// The total connection limit: past it, everyone gets the listener's 503
// (with Retry-After) until connections close.
func TestLimitsTotalConnections(t *testing.T) {
	const total = 20
	ls := newLimitsServer(t, httpapi.Options{Limits: httpapi.Limits{MaxConns: total}})
	client := loopback(1)
	base := baseline(t, client)
	var held []net.Conn
	for i := range total {
		held = append(held, ls.rawConn(t, 10+i%5))
	}
	time.Sleep(100 * time.Millisecond) // let the server accept them
	r, err := ls.try(client, ls.bob, "GET", "/v1/workspaces", "")
	if err != nil {
		t.Fatal(err)
	}
	if r.status != 503 || errCodeOf(t, r) != "E_RESOURCE_LIMIT" || r.header.Get("Retry-After") == "" {
		t.Errorf("over the total limit: got %d %s (Retry-After %q), want 503 E_RESOURCE_LIMIT with Retry-After", r.status, r.body, r.header.Get("Retry-After"))
	}
	for _, c := range held {
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for ls.lim.Open() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if r := ls.do(t, client, ls.bob, "GET", "/v1/workspaces", ""); r.status != 200 {
		t.Errorf("after the connections closed: %d %s", r.status, r.body)
	}
	backToBaseline(t, base, "after total connections", client)
}

// Probe: 1,100 connections withholding a body exhausted a 1,024-fd server.
// With the defaults (512 in total, 64 per address), 1,100 such connections
// from 20 addresses leave the server holding at most 512, every one of
// them answered (408 after the body timeout) or refused at once (503, or
// closed while the refusers are busy), while a second user's established
// connection keeps being served.
func TestLimitsConnectionFlood(t *testing.T) {
	const addrs, perAddr = 20, 55
	ls := newLimitsServer(t, httpapi.Options{Limits: httpapi.Limits{BodyTimeout: time.Second}})
	base := baseline(t)
	p := ls.startProbe(t, ls.bob, "/v1/workspaces/"+ls.bobWS)
	time.Sleep(50 * time.Millisecond) // the probe's connection is up
	rssBefore := rssMiB()
	var conns []net.Conn
	for i := range addrs * perAddr {
		c := ls.rawConn(t, 10+i%addrs)
		fmt.Fprintf(c, "POST /v1/workspaces/%s/exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 100\r\n\r\n", ls.aliceWS, ls.alice)
		conns = append(conns, c)
	}
	time.Sleep(100 * time.Millisecond)
	open, rssDuring := ls.lim.Open(), rssMiB()
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	for _, c := range conns {
		wg.Go(func() {
			defer c.Close()
			st := readStatus(c, 5*time.Second)
			mu.Lock()
			got[st]++
			mu.Unlock()
		})
	}
	wg.Wait()
	figure := fmt.Sprintf("connection flood: %d connections withholding a body from %d addresses: server held %d open (limit 512), statuses %v; RSS %d MiB before, %d MiB during (client and server in one process)",
		len(conns), addrs, open, got, rssBefore, rssDuring)
	recordFigure(t, figure)
	// Refused: 503, or closed at once when the refusers are busy (0);
	// never left hanging (-1).
	if open > 512+1 || got[408]+got[503]+got[0] != len(conns) || got[408] > 512 {
		t.Errorf("%s", figure)
	}
	recordFigure(t, p.finish(t, "connection flood"))
	backToBaseline(t, base, "after the connection flood")
}

func rssMiB() int {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb >> 10
		}
	}
	return 0
}
