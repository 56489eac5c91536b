package tunnel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/tunnel"
)

func redisURL(t *testing.T) string {
	addr := os.Getenv("GROVE_TEST_REDIS_ADDR")
	testenv.Require(t, "redis", addr != "", "GROVE_TEST_REDIS_ADDR unset (scripts/services.sh start)")
	return "redis://" + addr
}

// clusterEnv is one server process of a cluster: its registry joined to
// the shared Redis, behind its own HTTP API.
func clusterEnv(t *testing.T, url string) *env {
	t.Helper()
	reg := &tunnel.Registry{Log: testLog(t)}
	cl, err := tunnel.NewCluster(context.Background(), url, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return newSvcEnv(t, reg)
}

// uniqueName keeps runs sharing one Redis apart.
func uniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// Two servers sharing Redis: a tunnel connected to A is a workspace on B,
// and B's calls reach it through A — results, the agent's errors, a
// cancel, and E_UNAVAILABLE at once when the agent dies mid-call.
func TestClusterForwardsCalls(t *testing.T) {
	url := redisURL(t)
	a, b := clusterEnv(t, url), clusterEnv(t, url)
	name := uniqueName("proj")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from A's agent\n"), 0o644)
	stopAgent := a.agent(dir, name, false, nil)
	ctx := context.Background()
	id := tunnel.WorkspaceID(name)
	svcB := tunnel.Scope(noWorkspaces{}, b.reg, "alice")

	if len(b.reg.List("alice")) != 0 {
		t.Fatal("B holds the tunnel itself")
	}
	ws, err := svcB.Get(ctx, id)
	if err != nil || ws.Mode != grove.ModeLocal {
		t.Fatalf("Get on B: %+v %v", ws, err)
	}
	found := false
	for _, i := range b.reg.ListAll(ctx, "alice") {
		found = found || i.Workspace == name
	}
	if !found {
		t.Fatal("B's ListAll misses A's tunnel")
	}
	if st, body := b.do("GET", "/v1/workspaces", aliceKey, nil); st != 200 || !strings.Contains(string(body), `"`+id+`"`) {
		t.Fatalf("GET /v1/workspaces on B: %d %s", st, body)
	}

	res, err := svcB.Exec(ctx, id, grove.ExecRequest{Argv: []string{"sh", "-c", "cat hello.txt; exit 4"}, Timeout: 10 * time.Second})
	if err != nil || res.ExitCode != 4 || string(res.Stdout) != "hello from A's agent\n" {
		t.Fatalf("Exec through B: %+v %v", res, err)
	}
	data, err := svcB.ReadFile(ctx, id, "hello.txt", 0)
	if err != nil || string(data) != "hello from A's agent\n" {
		t.Fatalf("ReadFile through B: %q %v", data, err)
	}
	if _, err := svcB.ReadFile(ctx, id, "missing.txt", 0); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("missing file through B: %v", err)
	}
	if _, err := svcB.ReadFile(ctx, id, "../x", 0); !errors.Is(err, grove.ErrPathOutside) {
		t.Fatalf("outside path through B: %v", err)
	}
	// Bob on B sees nothing.
	if _, err := tunnel.Scope(noWorkspaces{}, b.reg, "bob").Exec(ctx, id, grove.ExecRequest{Argv: []string{"true"}}); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("bob through B: %v", err)
	}

	// A caller on B that gives up returns at once; the tunnel stays.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	_, err = svcB.Exec(cctx, id, grove.ExecRequest{Argv: []string{"sleep", "5"}})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("cancelled call through B: %v after %s", err, time.Since(start))
	}
	if _, err := svcB.Exec(ctx, id, grove.ExecRequest{Argv: []string{"true"}}); err != nil {
		t.Fatalf("after a cancelled call: %v", err)
	}
	// The cancel reaches the agent through A: the command is killed (an
	// agent that honours cancel).
	if agentServes(t, a, name, tunnel.RouteSessionPrefix+"s_0000000000000000/output") {
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = svcB.Exec(cctx, id, grove.ExecRequest{Argv: []string{"sh", "-c", "sleep 1; touch survived"}})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled call through B: %v", err)
		}
		time.Sleep(1500 * time.Millisecond)
		if _, err := os.Stat(filepath.Join(dir, "survived")); err == nil {
			t.Fatal("the command outlived its caller cancelled on B")
		}
	} else {
		t.Log("the agent of this branch does not honour cancel: not checked that it reaches the agent")
	}

	// The agent goes away mid-call: B's caller gets E_UNAVAILABLE at once.
	errc := make(chan error, 1)
	go func() {
		_, err := svcB.Exec(ctx, id, grove.ExecRequest{Argv: []string{"sleep", "20"}, Timeout: 30 * time.Second})
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	start = time.Now()
	stopAgent()
	select {
	case err := <-errc:
		if !errors.Is(err, grove.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
		t.Logf("failed %s after the agent left: %v", time.Since(start), err)
	case <-time.After(3 * time.Second):
		t.Fatal("the forwarded call outlived its agent")
	}
	// Then it is gone from both servers: an unknown id.
	time.Sleep(100 * time.Millisecond)
	if _, err := svcB.Get(ctx, id); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("Get after the agent left: %v", err)
	}
}

// A record whose server is gone (killed: its records were not removed)
// fails calls at once with E_UNAVAILABLE until it expires.
func TestClusterDeadServerFailsFast(t *testing.T) {
	url := redisURL(t)
	b := clusterEnv(t, url)
	name := uniqueName("ghost")
	opt, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	info, _ := json.Marshal(tunnel.Info{Workspace: name, Connected: time.Now()})
	key := "grove:tunnel:t:" + hex.EncodeToString([]byte("alice")) + ":" + name
	if err := rdb.Set(ctx, key, "deadserver\n"+string(info), 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := b.reg.Call(ctx, "alice", name, tunnel.RouteExecute, json.RawMessage(`{"argv":["true"]}`), time.Minute)
	if !errors.Is(err, grove.ErrUnavailable) || time.Since(start) > time.Second {
		t.Fatalf("err %v after %s, want ErrUnavailable at once", err, time.Since(start))
	}
	// Until the record expires, the tunnel reads as unavailable, not as
	// never registered.
	start = time.Now()
	if _, err := b.reg.Call(ctx, "alice", name, tunnel.RouteExecute, json.RawMessage(`{"argv":["true"]}`), time.Minute); !errors.Is(err, grove.ErrUnavailable) || time.Since(start) > time.Second {
		t.Fatalf("second call: %v after %s", err, time.Since(start))
	}
}

// A registration on B of a name A holds replaces A's: A closes its
// connection.
func TestClusterReplacesAcrossServers(t *testing.T) {
	url := redisURL(t)
	a, b := clusterEnv(t, url), clusterEnv(t, url)
	name := uniqueName("proj")
	ws := rawAgent(t, a, name)
	defer ws.Close("done")
	b.agent(t.TempDir(), name, false, nil)
	deadline := time.Now().Add(3 * time.Second)
	for len(a.reg.List("alice")) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("A still holds the replaced tunnel")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A's calls now go to B's agent.
	res, err := tunnel.Scope(noWorkspaces{}, a.reg, "alice").Exec(context.Background(), tunnel.WorkspaceID(name), grove.ExecRequest{Argv: []string{"true"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("through A after the replacement: %+v %v", res, err)
	}
}
