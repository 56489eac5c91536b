package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove/internal/testenv"
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

// Issue 11 item 3: a command dies with the Grove process that started it,
// however that process dies (kill -9 leaves it no chance to clean up) — on
// bwrap (whose sandbox also dies with bwrap) and on the plain subprocess
// runtime, where nothing but the death signal Grove asks for ties the
// command to it.
func TestCommandsDieWithGrove(t *testing.T) {
	for _, rt := range []string{"bwrap", "subprocess"} {
		t.Run(rt, func(t *testing.T) {
			if rt == "bwrap" {
				testenv.RequireBinary(t, "bwrap", "bwrap")
			}
			commandsDieWithGrove(t, rt)
		})
	}
}

func commandsDieWithGrove(t *testing.T, runtime string) {
	e := &cliEnv{t: t, root: t.TempDir()}
	repo := gitRepo(t)
	var ws map[string]any
	out := e.ok("", "ws", "acquire", "--repo", repo, "--project", "p", "--conversation", "c1", "--json")
	if err := json.Unmarshal([]byte(out), &ws); err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("%d", 300000+os.Getpid()%10000)
	cmd := exec.Command(os.Args[0], "exec", ws["id"].(string), "--", "sh", "-c", "exec sleep "+marker)
	cmd.Env = append(os.Environ(), "GROVE_CLI_MAIN=1", "GROVE_ROOT="+e.root, "GROVE_USER=cli", "GROVE_RUNTIME="+runtime, "GROVE_ALLOW_UNISOLATED=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running := func() int {
		n := 0
		ents, _ := os.ReadDir("/proc")
		for _, en := range ents {
			b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
			if err == nil && strings.Contains(string(b), "sleep\x00"+marker) {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(15 * time.Second)
	for running() < 1 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for running() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes of the command outlived the killed grove", running())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
