package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/provider/local"
	"github.com/grove-dev/grove/store/memory"
	"github.com/grove-dev/grove/tools"
)

// limitsServer is a real grove server on loopback, served exactly as
// `grove serve` serves it (Server.HTTPServer on Server.Listener), for
// attacking its limits.
type limitsServer struct {
	url        string
	keys       *auth.Keys
	lim        *httpapi.ConnLimiter
	alice, bob string
	aliceWS    string
	bobWS      string
	repo       string // the repository both workspaces are of
	log        *testenv.Buffer
}

func newLimitsServer(t *testing.T, opt httpapi.Options) *limitsServer {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(filepath.Join(root, "rt"), 0o700)
	git := &gitrepo.Git{Home: home, Identity: gitrepo.Identity{Name: "Test Agent", Email: "agent@example.invalid"}}
	prov := local.New(&gitrepo.Caches{Git: git, Root: filepath.Join(root, "repos")}, fsops.Options{})
	drv := subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: filepath.Join(root, "rt")})
	st := memory.New()
	repo := sourceRepo(t)
	eng, err := engine.New(engine.Config{Store: st, Provider: prov, Driver: drv, AllowUnisolatedWrites: true,
		DataRoot: root, LocalRepoRoots: []string{filepath.Dir(repo)}})
	if err != nil {
		t.Fatal(err)
	}
	ls := &limitsServer{keys: &auth.Keys{Store: st}, log: &testenv.Buffer{}}
	ctx := context.Background()
	_, ls.alice, _ = ls.keys.Create(ctx, "alice", false)
	_, ls.bob, _ = ls.keys.Create(ctx, "bob", false)
	ts := tools.New(tools.Options{})
	t.Cleanup(ts.Close)
	opt.Service, opt.Tools, opt.Auth = eng, ts, ls.keys
	opt.Logger = slog.New(slog.NewJSONHandler(ls.log, nil))
	h := httpapi.New(opt)
	srv := httptest.NewUnstartedServer(h)
	ls.lim = h.Listener(srv.Listener)
	srv.Listener = ls.lim
	srv.Config = h.HTTPServer()
	srv.Start()
	t.Cleanup(srv.Close)
	ls.url, ls.repo = srv.URL, repo
	ls.aliceWS = ls.acquire(t, ls.alice, repo, "c-alice")
	ls.bobWS = ls.acquire(t, ls.bob, repo, "c-bob")
	return ls
}

func (ls *limitsServer) acquire(t *testing.T, key, repo, conv string) string {
	t.Helper()
	c := loopback(1)
	defer c.CloseIdleConnections()
	r := ls.do(t, c, key, "POST", "/v1/workspaces", fmt.Sprintf(`{"repo":%q,"project":"p","mode":"edit","conversation":%q}`, repo, conv))
	if r.status != 201 {
		t.Fatalf("acquire: %d %s", r.status, r.body)
	}
	var ws struct{ ID string }
	json.Unmarshal(r.body, &ws)
	return ws.ID
}

// loopback returns a client whose connections come from 127.0.0.n, so
// attackers and the well-behaved user are different client addresses.
func loopback(n int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 16}, Timeout: 60 * time.Second}
}

func (ls *limitsServer) do(t *testing.T, c *http.Client, key, method, path, body string, hdr ...string) resp {
	t.Helper()
	r, err := ls.try(c, key, method, path, body, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (ls *limitsServer) try(c *http.Client, key, method, path, body string, hdr ...string) (resp, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ls.url+path, rd)
	if err != nil {
		return resp{}, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, b}, nil
}

// rawConn dials the server from 127.0.0.n.
func (ls *limitsServer) rawConn(t *testing.T, n int) net.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", strings.TrimPrefix(ls.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readStatus reads one response's status code from c: 0 when the
// connection was closed without one, -1 when nothing came within.
func readStatus(c net.Conn, within time.Duration) int {
	c.SetReadDeadline(time.Now().Add(within))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return -1
		}
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// probe is a well-behaved second user making requests throughout an
// attack; stop returns their latencies.
type probe struct {
	stop    chan struct{}
	done    chan struct{}
	lat     []time.Duration
	fails   []string
	started time.Time
}

func (ls *limitsServer) startProbe(t *testing.T, key, path string) *probe {
	t.Helper()
	p := &probe{stop: make(chan struct{}), done: make(chan struct{}), started: time.Now()}
	c := loopback(1)
	go func() {
		defer close(p.done)
		defer c.CloseIdleConnections()
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			t0 := time.Now()
			r, err := ls.try(c, key, "GET", path, "")
			d := time.Since(t0)
			switch {
			case err != nil:
				p.fails = append(p.fails, err.Error())
			case r.status != 200:
				p.fails = append(p.fails, fmt.Sprintf("%d %s", r.status, r.body))
			default:
				p.lat = append(p.lat, d)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return p
}

// finish stops the probe, fails the test if any request failed, and
// reports n, p50, p99 and max.
func (p *probe) finish(t *testing.T, what string) string {
	t.Helper()
	close(p.stop)
	<-p.done
	if len(p.fails) > 0 {
		t.Errorf("%s: the second user's requests failed during the attack (%d): %v", what, len(p.fails), p.fails[:min(3, len(p.fails))])
	}
	if len(p.lat) == 0 {
		t.Fatalf("%s: the second user made no request", what)
	}
	slices.Sort(p.lat)
	q := func(f float64) time.Duration { return p.lat[min(len(p.lat)-1, int(f*float64(len(p.lat))))] }
	s := fmt.Sprintf("%s: second user n=%d p50=%s p99=%s max=%s over %s", what, len(p.lat), q(0.5).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), p.lat[len(p.lat)-1].Round(10*time.Microsecond), time.Since(p.started).Round(time.Millisecond))
	t.Log(s)
	return s
}

type usage struct{ goroutines, fds int }

func measure() usage {
	fds, _ := os.ReadDir("/proc/self/fd")
	return usage{runtime.NumGoroutine(), len(fds)}
}

// baseline is the process's usage with no connections open.
func baseline(t *testing.T, clients ...*http.Client) usage {
	t.Helper()
	for _, c := range clients {
		c.CloseIdleConnections()
	}
	time.Sleep(100 * time.Millisecond)
	return measure()
}

// backToBaseline waits (up to 10s) for goroutines and fds to return to
// base, with a little slack for the runtime's own helpers.
func backToBaseline(t *testing.T, base usage, what string, clients ...*http.Client) usage {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
		u := measure()
		if u.goroutines <= base.goroutines+2 && u.fds <= base.fds+2 {
			t.Logf("%s: goroutines %d (baseline %d), fds %d (baseline %d)", what, u.goroutines, base.goroutines, u.fds, base.fds)
			return u
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("%s: goroutines %d (baseline %d), fds %d (baseline %d) did not return to baseline\n%s", what, u.goroutines, base.goroutines, u.fds, base.fds, buf[:n])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func errCodeOf(t *testing.T, r resp) string {
	t.Helper()
	return r.errCode(t)
}

// recordFigure prints a figure for docs/BENCHMARKS.md in the test log
// (go test -v shows it).
func recordFigure(t *testing.T, s string) { t.Helper(); t.Log("FIGURE " + s) }
