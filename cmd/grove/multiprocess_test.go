package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Issue 11 item 4: two CLI processes on one data root serialise their
// mutating commands on a workspace as the server does (AABB, never ABAB).
func TestTwoProcessesSerialiseWritesOnOneWorkspace(t *testing.T) {
	e := &cliEnv{t: t, root: t.TempDir()}
	repo := gitRepo(t)
	var ws map[string]any
	out := e.ok("", "ws", "acquire", "--repo", repo, "--project", "p", "--conversation", "c1", "--json")
	if err := json.Unmarshal([]byte(out), &ws); err != nil {
		t.Fatal(err)
	}
	id, dir := ws["id"].(string), ws["path"].(string)
	script := `echo "$0" >> order.txt; sleep 0.4; echo "$0" >> order.txt`
	var wg sync.WaitGroup
	for _, who := range []string{"A", "B"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.ok("", "exec", id, "--", "sh", "-c", script, who)
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(filepath.Join(dir, "order.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(string(b), "\n", "")
	if got != "AABB" && got != "BBAA" {
		t.Fatalf("two processes' write commands interleaved: %q", got)
	}
}

// Issue 11 item 5: parallel acquires of one key from several processes all
// succeed with one id, the record survives, and no SQL reaches the user.
func TestParallelAcquiresFromSeveralProcesses(t *testing.T) {
	e := &cliEnv{t: t, root: t.TempDir()}
	repo := gitRepo(t) // cold cache: the processes also race to clone it
	const n = 6
	ids := make([]string, n)
	errs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.run("", "ws", "acquire", "--repo", repo, "--project", "p", "--conversation", "same", "--json")
			if r.code != 0 {
				errs[i] = r.stderr
				return
			}
			var ws map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &ws); err != nil {
				errs[i] = err.Error()
				return
			}
			ids[i] = ws["id"].(string)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != "" {
			if strings.Contains(errs[i], "constraint") || strings.Contains(errs[i], "UNIQUE") {
				t.Errorf("SQL text shown to the user: %s", errs[i])
			}
			t.Fatalf("acquire %d failed: %s", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("acquires of one key gave different workspaces: %v", ids)
		}
	}
	e.ok("", "ws", "show", ids[0])
}
