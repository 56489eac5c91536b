package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/internal/bench"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/tools"
	"github.com/spf13/cobra"
)

// httpBenchOpts are the knobs of `grove bench http`.
type httpBenchOpts struct {
	levels   []int
	rounds   int
	requests int // per endpoint, level and round
	warmup   int
	timeout  time.Duration
	baseline string
	save     string
	factor   float64 // a p99 this many times the baseline's is a regression
	cpuProf  string  // write a CPU profile of the whole run here
}

func (c *cli) benchHTTPCmd() *cobra.Command {
	o := httpBenchOpts{}
	cmd := &cobra.Command{
		Use:   "http",
		Short: "Load-test the HTTP API: concurrency levels × rounds against read_file, search, exec and acquire",
		Long: `Starts the HTTP API in this process on 127.0.0.1 (a random port, loopback only)
over a fresh root in a temporary directory and a small generated repository,
warms up, then for each concurrency level and round sends --requests requests
to each endpoint from that many concurrent clients: GET a file (read_file),
GET search, POST exec "true", and POST an acquire of the existing workspace.
Reports min/p50/p95/p99/max latency and req/s per endpoint and level, the
error count (the target is zero) and the process's RSS before and after.
--save writes the results as JSON; --baseline compares with such a file and
exits 2 when a p99 is more than --factor times the baseline's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.cpuProf != "" {
				f, err := os.Create(o.cpuProf)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			return c.runBenchHTTP(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&o.levels, "levels", []int{10, 20, 50}, "concurrent clients, one run per level")
	f.IntVar(&o.rounds, "rounds", 3, "rounds per level")
	f.IntVar(&o.requests, "requests", 300, "requests per endpoint, level and round")
	f.IntVar(&o.warmup, "warmup", 200, "requests per endpoint before measuring")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "stop (and fail) after this long")
	f.StringVar(&o.baseline, "baseline", "", "compare with this saved JSON result")
	f.StringVar(&o.save, "save", "", "write the result as JSON to this file")
	f.StringVar(&o.cpuProf, "cpuprofile", "", "write a CPU profile of the run (server and clients) to this file")
	f.Float64Var(&o.factor, "factor", 1.5, "a p99 (or req/s) worse than the baseline by this factor is a regression")
	return cmd
}

// httpBenchResult is the saved JSON of one run.
type httpBenchResult struct {
	Date        time.Time      `json:"date"`
	Runtime     string         `json:"runtime"`
	CPUs        int            `json:"cpus"`
	GoVersion   string         `json:"go_version"`
	Levels      []int          `json:"levels"`
	Rounds      int            `json:"rounds"`
	Requests    int            `json:"requests"` // measured, all endpoints
	Errors      int            `json:"errors"`
	RSSBeforeKB int64          `json:"rss_before_kib"` // after warm-up
	RSSAfterKB  int64          `json:"rss_after_kib"`
	RSSPeakKB   int64          `json:"rss_peak_kib"`
	Endpoints   []httpBenchRow `json:"endpoints"`
}

// httpBenchRow is one endpoint at one concurrency level, all rounds.
type httpBenchRow struct {
	Endpoint string  `json:"endpoint"`
	Clients  int     `json:"clients"`
	N        int     `json:"n"`
	Errors   int     `json:"errors"`
	MinUS    int64   `json:"min_us"`
	P50US    int64   `json:"p50_us"`
	P95US    int64   `json:"p95_us"`
	P99US    int64   `json:"p99_us"`
	MaxUS    int64   `json:"max_us"`
	RPS      float64 `json:"rps"`
	// FirstError is one error's text, to say what went wrong.
	FirstError string `json:"first_error,omitempty"`
}

// endpoint is one kind of request the harness sends.
type endpoint struct {
	name   string
	method string
	path   string
	body   []byte
	want   int // status; anything else is an error
}

func (c *cli) runBenchHTTP(ctx context.Context, o httpBenchOpts) error {
	if len(o.levels) == 0 || o.rounds < 1 || o.requests < 1 {
		return grove.Errorf(grove.ErrInvalid, "need at least one level, round and request")
	}
	maxLevel := 0
	for _, l := range o.levels {
		if l < 1 || l > 1000 {
			return grove.Errorf(grove.ErrInvalid, "level %d: want 1..1000 clients", l)
		}
		maxLevel = max(maxLevel, l)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	tmp, err := os.MkdirTemp("", "grove-bench-http-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	repo, err := smallRepo(ctx, filepath.Join(tmp, "upstream"))
	if err != nil {
		return err
	}
	cfg := c.cfg
	cfg.Root = filepath.Join(tmp, "root")
	// A throwaway root on loopback: the subprocess runtime (no bwrap) may
	// write here.
	cfg.AllowUnisolated = true
	// The load comes over HTTP, so the generated upstream must be a
	// listed local repository root, as an operator would list it.
	cfg.LocalRepoRoots = []string{repo}
	a, err := openEngine(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer a.close()
	ks, ok := a.store.(store.KeyStore)
	if !ok {
		return grove.Errorf(grove.ErrNotSupported, "the store keeps no API keys")
	}
	keys := &auth.Keys{Store: ks}
	_, secret, err := keys.Create(ctx, "bench", false)
	if err != nil {
		return err
	}
	ts := tools.New(tools.Options{})
	defer ts.Close()
	// The per-user and global slot limits would answer 429 past 8 (64)
	// concurrent commands and searches; here one user stands for every
	// client, so both are the largest level.
	h := httpapi.New(httpapi.Options{Service: a.svc, Tools: ts, Auth: keys, MaxExecPerUser: maxLevel, Limits: httpapi.Limits{MaxSlots: maxLevel}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConns: maxLevel * 2, MaxIdleConnsPerHost: maxLevel * 2, MaxConnsPerHost: maxLevel * 2}}
	defer hc.CloseIdleConnections()

	acq, _ := json.Marshal(httpapi.AcquireBody{Repo: repo, Project: "bench", Mode: grove.ModeEdit, Conversation: "load"})
	st, body, err := send(ctx, hc, secret, "POST", base+"/v1/workspaces", acq)
	if err != nil || st != http.StatusCreated {
		return fmt.Errorf("acquire: %d %s %v", st, clipBytes(body), err)
	}
	var ws grove.Workspace
	if err := json.Unmarshal(body, &ws); err != nil {
		return err
	}
	wsURL := "/v1/workspaces/" + ws.ID
	eps := []endpoint{
		{"read_file", "GET", wsURL + "/files/src/pkg000/file000.go", nil, 200},
		{"search", "GET", wsURL + "/search?pattern=func+Handler&max_results=50", nil, 200},
		{"exec_true", "POST", wsURL + "/exec", []byte(`{"argv":["true"],"class":"read"}`), 200},
		{"acquire_existing", "POST", "/v1/workspaces", acq, 200},
	}
	kind, _ := cfg.pickRuntime()
	fmt.Fprintf(c.stderr, "bench http: %s, runtime %s, workspace %s, levels %v × %d rounds × %d requests × %d endpoints\n",
		base, kind, ws.ID, o.levels, o.rounds, o.requests, len(eps))

	for _, ep := range eps {
		if _, err := load(ctx, hc, secret, base, ep, min(maxLevel, 10), o.warmup); err != nil {
			return fmt.Errorf("warm-up %s: %w", ep.name, err)
		}
	}
	runtime.GC()
	res := httpBenchResult{Date: time.Now().UTC().Truncate(time.Second), Runtime: kind, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Levels: o.levels, Rounds: o.rounds, RSSBeforeKB: procStatusKB("VmRSS")}
	for _, level := range o.levels {
		for _, ep := range eps {
			var all bench.Sample
			var elapsed time.Duration
			r := httpBenchRow{Endpoint: ep.name, Clients: level}
			for range o.rounds {
				rr, err := load(ctx, hc, secret, base, ep, level, o.requests)
				if err != nil {
					return err
				}
				all = append(all, rr.lat...)
				elapsed += rr.elapsed
				r.Errors += rr.errors
				if r.FirstError == "" {
					r.FirstError = rr.firstErr
				}
			}
			r.N = len(all) + r.Errors
			r.MinUS, r.P50US, r.P95US, r.P99US, r.MaxUS = us(all.Min()), us(all.Pct(50)), us(all.Pct(95)), us(all.Pct(99)), us(all.Pct(100))
			r.RPS = float64(r.N) / elapsed.Seconds()
			res.Endpoints = append(res.Endpoints, r)
			res.Requests += r.N
			res.Errors += r.Errors
		}
	}
	res.RSSAfterKB, res.RSSPeakKB = procStatusKB("VmRSS"), procStatusKB("VmHWM")
	printHTTPBench(c.stdout, res)

	if o.save != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(o.save, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "bench http: saved %s\n", o.save)
	}
	var failed []string
	if res.Errors > 0 {
		failed = append(failed, fmt.Sprintf("%d errors (target: zero)", res.Errors))
	}
	if o.baseline != "" {
		regs, err := compareBaseline(o.baseline, res, o.factor)
		if err != nil {
			return err
		}
		for _, r := range regs {
			fmt.Fprintln(c.stdout, "REGRESSION: "+r)
		}
		if len(regs) == 0 {
			fmt.Fprintf(c.stdout, "no regression against %s (factor %.2f)\n", o.baseline, o.factor)
		}
		failed = append(failed, regs...)
	}
	if len(failed) > 0 {
		fmt.Fprintln(c.stderr, "bench http: "+strings.Join(failed, "; "))
		return exitError{code: 2}
	}
	return nil
}

type loadResult struct {
	lat      bench.Sample
	errors   int
	firstErr string
	elapsed  time.Duration
}

// load sends n requests to ep from clients concurrent goroutines, each
// taking the next request as soon as its previous one answered (a closed
// loop: the latency is what a client sees, not a queue's).
func load(ctx context.Context, hc *http.Client, secret, base string, ep endpoint, clients, n int) (loadResult, error) {
	var mu sync.Mutex
	var out loadResult
	tickets := make(chan struct{}, n)
	for range n {
		tickets <- struct{}{}
	}
	close(tickets)
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make(bench.Sample, 0, n/clients+1)
			var errs int
			var first string
			for range tickets {
				if ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				st, body, err := send(ctx, hc, secret, ep.method, base+ep.path, ep.body)
				d := time.Since(t0)
				if err != nil || st != ep.want {
					errs++
					if first == "" {
						first = fmt.Sprintf("%d %s %v", st, clipBytes(body), err)
					}
					continue
				}
				lat = append(lat, d)
			}
			mu.Lock()
			out.lat = append(out.lat, lat...)
			out.errors += errs
			if out.firstErr == "" {
				out.firstErr = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("bench http stopped: %w", err)
	}
	return out, nil
}

func send(ctx context.Context, hc *http.Client, secret, method, url string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

func us(d time.Duration) int64 { return d.Microseconds() }

func clipBytes(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// procStatusKB reads a field of /proc/self/status in KiB; 0 where there is
// no /proc.
func procStatusKB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func printHTTPBench(w io.Writer, r httpBenchResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "endpoint\tclients\tn\terrors\tmin\tp50\tp95\tp99\tmax\treq/s\t")
	ms := func(v int64) string { return fmt.Sprintf("%.2fms", float64(v)/1000) }
	for _, e := range r.Endpoints {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%.0f\t\n", e.Endpoint, e.Clients, e.N, e.Errors, ms(e.MinUS), ms(e.P50US), ms(e.P95US), ms(e.P99US), ms(e.MaxUS), e.RPS)
	}
	tw.Flush()
	fmt.Fprintf(w, "requests %d, errors %d; RSS %.1f MiB after warm-up, %.1f MiB after the run, peak %.1f MiB\n",
		r.Requests, r.Errors, float64(r.RSSBeforeKB)/1024, float64(r.RSSAfterKB)/1024, float64(r.RSSPeakKB)/1024)
	for _, e := range r.Endpoints {
		if e.FirstError != "" {
			fmt.Fprintf(w, "first error of %s at %d clients: %s\n", e.Endpoint, e.Clients, e.FirstError)
		}
	}
}

// compareBaseline lists the regressions of cur against the saved run: a
// p99 more than factor times the baseline's, or req/s below its
// 1/factor. Latencies under a millisecond are compared as a millisecond,
// so scheduler noise at the microsecond scale is not a regression.
func compareBaseline(path string, cur httpBenchResult, factor float64) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "baseline: %v", err)
	}
	var base httpBenchResult
	if err := json.Unmarshal(b, &base); err != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "baseline %s: %v", path, err)
	}
	old := map[string]httpBenchRow{}
	for _, e := range base.Endpoints {
		old[e.Endpoint+"@"+strconv.Itoa(e.Clients)] = e
	}
	var regs []string
	for _, e := range cur.Endpoints {
		o, ok := old[e.Endpoint+"@"+strconv.Itoa(e.Clients)]
		if !ok {
			continue
		}
		if float64(max(e.P99US, 1000)) > factor*float64(max(o.P99US, 1000)) {
			regs = append(regs, fmt.Sprintf("%s at %d clients: p99 %.2fms, baseline %.2fms", e.Endpoint, e.Clients, float64(e.P99US)/1000, float64(o.P99US)/1000))
		}
		if o.RPS > 0 && e.RPS*factor < o.RPS {
			regs = append(regs, fmt.Sprintf("%s at %d clients: %.0f req/s, baseline %.0f", e.Endpoint, e.Clients, e.RPS, o.RPS))
		}
	}
	if base.RSSAfterKB > 0 && float64(cur.RSSAfterKB) > factor*float64(base.RSSAfterKB) {
		regs = append(regs, fmt.Sprintf("RSS after the run %d KiB, baseline %d KiB", cur.RSSAfterKB, base.RSSAfterKB))
	}
	return regs, nil
}

// smallRepo commits a generated tree of 40 packages × 10 Go files into a
// fresh repository at dir: big enough that search walks something, small
// enough to build in a moment.
func smallRepo(ctx context.Context, dir string) (string, error) {
	for p := range 40 {
		pkg := fmt.Sprintf("pkg%03d", p)
		if err := os.MkdirAll(filepath.Join(dir, "src", pkg), 0o755); err != nil {
			return "", err
		}
		for f := range 10 {
			var b strings.Builder
			fmt.Fprintf(&b, "package %s\n\n", pkg)
			for fn := range 20 {
				fmt.Fprintf(&b, "// Handler%d_%d answers request %d.\nfunc Handler%d_%d(n int) int {\n\treturn n * %d\n}\n\n", f, fn, fn, f, fn, fn+1)
			}
			if err := os.WriteFile(filepath.Join(dir, "src", pkg, fmt.Sprintf("file%03d.go", f)), []byte(b.String()), 0o644); err != nil {
				return "", err
			}
		}
	}
	for _, s := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", "bench tree"},
	} {
		cmd := exec.CommandContext(ctx, "git", s...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %v: %v: %s", s, err, out)
		}
	}
	return dir, nil
}
