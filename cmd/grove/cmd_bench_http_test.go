package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompareBaseline(t *testing.T) {
	base := httpBenchResult{RSSAfterKB: 30000, Endpoints: []httpBenchRow{
		{Endpoint: "read_file", Clients: 50, P99US: 4000, RPS: 10000},
		{Endpoint: "search", Clients: 50, P99US: 200, RPS: 400},
	}}
	b, _ := json.Marshal(base)
	path := filepath.Join(t.TempDir(), "base.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cur  httpBenchResult
		want []string // substrings of the regressions, in order
	}{
		{"same", base, nil},
		{"p99 1.4x is noise", httpBenchResult{Endpoints: []httpBenchRow{{Endpoint: "read_file", Clients: 50, P99US: 5600, RPS: 10000}}}, nil},
		{"p99 2x", httpBenchResult{Endpoints: []httpBenchRow{{Endpoint: "read_file", Clients: 50, P99US: 8000, RPS: 10000}}}, []string{"read_file at 50 clients: p99 8.00ms"}},
		{"sub-millisecond jitter", httpBenchResult{Endpoints: []httpBenchRow{{Endpoint: "search", Clients: 50, P99US: 900, RPS: 400}}}, nil},
		{"throughput halved", httpBenchResult{Endpoints: []httpBenchRow{{Endpoint: "read_file", Clients: 50, P99US: 4000, RPS: 4000}}}, []string{"4000 req/s"}},
		{"unknown level ignored", httpBenchResult{Endpoints: []httpBenchRow{{Endpoint: "read_file", Clients: 7, P99US: 99000}}}, nil},
		{"rss grew", httpBenchResult{RSSAfterKB: 90000}, []string{"RSS"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			regs, err := compareBaseline(path, tc.cur, 1.5)
			if err != nil {
				t.Fatal(err)
			}
			if len(regs) != len(tc.want) {
				t.Fatalf("regressions %q, want %d", regs, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(regs[i], w) {
					t.Errorf("regression %q lacks %q", regs[i], w)
				}
			}
		})
	}
	if _, err := compareBaseline(filepath.Join(t.TempDir(), "none.json"), base, 1.5); err == nil {
		t.Error("a missing baseline is not an error")
	}
}

// TestBenchHTTPSmoke runs the harness for real at a tiny size: it serves,
// loads every endpoint without errors, saves a result and compares with it.
func TestBenchHTTPSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and runs a few hundred requests")
	}
	e := &cliEnv{t: t, root: t.TempDir()}
	save := filepath.Join(t.TempDir(), "run.json")
	out := e.ok("", "bench", "http", "--levels", "2,4", "--rounds", "1", "--requests", "20", "--warmup", "2", "--save", save)
	for _, ep := range []string{"read_file", "search", "exec_true", "acquire_existing"} {
		if !strings.Contains(out, ep) {
			t.Errorf("report lacks %s:\n%s", ep, out)
		}
	}
	var res httpBenchResult
	b, err := os.ReadFile(save)
	if err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("saved result: %v %s", err, b)
	}
	if res.Requests != 2*4*20 || res.Errors != 0 || len(res.Endpoints) != 8 || res.RSSAfterKB <= 0 {
		t.Fatalf("result: %+v", res)
	}
	for _, r := range res.Endpoints {
		if r.N != 20 || r.P50US <= 0 || r.MaxUS < r.P99US || r.P99US < r.P50US || r.RPS <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	// Against itself with a generous factor: no regression, exit 0.
	if r := e.run("", "bench", "http", "--levels", "2", "--rounds", "1", "--requests", "20", "--warmup", "2", "--baseline", save, "--factor", "1000"); r.code != 0 || !strings.Contains(r.stdout, "no regression") {
		t.Fatalf("against its own baseline: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
