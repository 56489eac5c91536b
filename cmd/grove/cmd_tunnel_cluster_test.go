package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove/internal/testenv"
)

// serveProc is one `grove serve` process.
type serveProc struct {
	url    string
	cmd    *exec.Cmd
	stderr *testenv.Buffer
}

func startServe(t *testing.T, root string, env ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--evict-every", "0", "--shutdown-grace", "1s")
	cmd.Env = append(append(os.Environ(), "GROVE_CLI_MAIN=1", "GROVE_ROOT="+root, "GROVE_RUNTIME=subprocess", "GROVE_ALLOW_UNISOLATED=1"), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, stderr: &testenv.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-waited })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "grove serving on "); ok {
				line <- strings.Fields(u)[0]
			}
		}
	}()
	select {
	case p.url = <-line:
	case <-time.After(30 * time.Second):
		t.Fatalf("grove serve did not start: %s", p.stderr)
	}
	return p
}

func apiDo(t *testing.T, method, url, key string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// Issue 12 part 4: two `grove serve` processes share one store and one
// Redis; the real `grove tunnel` connects to A, and its workspace is
// served through B — exec, file reads, the agent's errors — until the
// agent is killed, when B's call in flight fails with E_UNAVAILABLE at
// once.
func TestTunnelThroughAnotherServer(t *testing.T) {
	addr := os.Getenv("GROVE_TEST_REDIS_ADDR")
	testenv.Require(t, "redis", addr != "", "GROVE_TEST_REDIS_ADDR unset (scripts/services.sh start)")
	e := &cliEnv{t: t, root: t.TempDir()}
	key := strings.TrimSpace(e.ok("", "keys", "create", "--user", "alice"))
	redisEnv := "GROVE_TUNNEL_REDIS=redis://" + addr
	a := startServe(t, e.root, redisEnv)
	b := startServe(t, e.root, redisEnv)

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the laptop\n"), 0o644)
	name := fmt.Sprintf("proj%d", time.Now().UnixNano()%1e9)
	agent := exec.Command(os.Args[0], "tunnel", "--server", a.url, "--dir", dir, "--name", name)
	agent.Env = append(os.Environ(), "GROVE_CLI_MAIN=1", "GROVE_API_KEY="+key)
	var agentErr testenv.Buffer
	agent.Stderr = &agentErr
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	agentDone := make(chan struct{})
	go func() { agent.Wait(); close(agentDone) }()
	t.Cleanup(func() { agent.Process.Kill(); <-agentDone })

	id := "local-" + name
	ws := b.url + "/v1/workspaces/" + id
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, body := apiDo(t, "GET", b.url+"/v1/workspaces", key, nil)
		if st == 200 && strings.Contains(string(body), `"`+id+`"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B never listed the tunnel: %d %s\nagent: %s\nA: %s", st, body, &agentErr, a.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}

	st, body := apiDo(t, "POST", ws+"/exec", key, map[string]any{"argv": []string{"sh", "-c", "cat hello.txt; echo oops >&2; exit 5"}, "timeout_ms": 10000})
	var res struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	json.Unmarshal(body, &res)
	if st != 200 || res.ExitCode != 5 || res.Stdout != "hello from the laptop\n" || res.Stderr != "oops\n" {
		t.Fatalf("exec through B: %d %s", st, body)
	}
	if st, body := apiDo(t, "GET", ws+"/files/hello.txt", key, nil); st != 200 || string(body) != "hello from the laptop\n" {
		t.Fatalf("read through B: %d %s", st, body)
	}
	if st, body := apiDo(t, "GET", ws+"/files/missing.txt", key, nil); st != 404 || !strings.Contains(string(body), "E_NOT_FOUND") {
		t.Fatalf("missing file through B: %d %s", st, body)
	}
	if st, body := apiDo(t, "POST", ws+"/tools/read_file", key, map[string]any{"path": "hello.txt"}); st != 200 || !strings.Contains(string(body), "hello from the laptop") {
		t.Fatalf("read_file tool through B: %d %s", st, body)
	}

	// The agent dies mid-call.
	type result struct {
		st   int
		body []byte
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		st, body := apiDo(t, "POST", ws+"/exec", key, map[string]any{"argv": []string{"sleep", "30"}, "timeout_ms": 60000})
		done <- result{st, body, time.Since(start)}
	}()
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	agent.Process.Kill()
	select {
	case r := <-done:
		if r.st != 503 || !strings.Contains(string(r.body), "E_UNAVAILABLE") {
			t.Fatalf("call in flight when the agent died: %d %s", r.st, r.body)
		}
		t.Logf("failed %s after the kill: %s", time.Since(killed), r.body)
	case <-time.After(5 * time.Second):
		t.Fatalf("the call through B outlived its agent by 5 s\nA: %s\nB: %s", a.stderr, b.stderr)
	}
	// The server holding a tunnel is killed (no cleanup): B's calls fail
	// with E_UNAVAILABLE at once, not after the record's TTL.
	agent2 := exec.Command(os.Args[0], "tunnel", "--server", a.url, "--dir", dir, "--name", name)
	agent2.Env = agent.Env
	agent2.Stderr = &agentErr
	if err := agent2.Start(); err != nil {
		t.Fatal(err)
	}
	agent2Done := make(chan struct{})
	go func() { agent2.Wait(); close(agent2Done) }()
	t.Cleanup(func() { agent2.Process.Kill(); <-agent2Done })
	deadline = time.Now().Add(15 * time.Second)
	for {
		if st, _ := apiDo(t, "GET", ws, key, nil); st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second agent never registered: %s", &agentErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.cmd.Process.Kill()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if st, body := apiDo(t, "POST", ws+"/exec", key, map[string]any{"argv": []string{"true"}, "timeout_ms": 60000}); st != 503 || !strings.Contains(string(body), "E_UNAVAILABLE") || time.Since(start) > 2*time.Second {
		t.Fatalf("call through B after A was killed: %d %s after %s", st, body, time.Since(start))
	}
	start = time.Now()
	if st, body := apiDo(t, "GET", ws+"/files/hello.txt", key, nil); st != 503 || time.Since(start) > 2*time.Second {
		t.Fatalf("second call through B after A was killed: %d %s after %s", st, body, time.Since(start))
	}

	if testing.Verbose() {
		t.Logf("A: %s\nB: %s", a.stderr, b.stderr)
	}
	if !strings.Contains(b.stderr.String(), "forward") || !strings.Contains(a.stderr.String(), "call received from another server") {
		t.Errorf("no forwarding trace:\nA: %s\nB: %s", a.stderr, b.stderr)
	}
}
