package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/tools"
	"github.com/grove-dev/grove/tunnel"
)

type tunnelAuth struct{}

func (tunnelAuth) Authenticate(_ context.Context, secret string) (auth.Principal, error) {
	if secret != "dev-key" {
		return auth.Principal{}, grove.Errorf(grove.ErrUnauthorized, "unknown key")
	}
	return auth.Principal{User: "dev", KeyID: "k1"}, nil
}

// The real `grove tunnel` process against a real server: silent commands
// are answered, and when the process dies its tunnel's calls fail at once.
func TestTunnelCommand(t *testing.T) {
	reg := &tunnel.Registry{}
	ts := tools.New(tools.Options{})
	t.Cleanup(ts.Close)
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Tools: ts, Auth: tunnelAuth{}, Tunnels: reg}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()

	start := func(key string, args ...string) (*exec.Cmd, *testenv.Buffer) {
		cmd := exec.Command(os.Args[0], append([]string{"tunnel", "--server", srv.URL, "--dir", dir}, args...)...)
		// No terminal mirror: the agent is SIGKILLed below, and would leave
		// its tmux session on the machine's grove-tunnel socket.
		cmd.Env = append(os.Environ(), "GROVE_CLI_MAIN=1", "GROVE_API_KEY="+key, "GROVE_TUNNEL_NO_TERMINAL=1")
		var errb testenv.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &errb
	}

	// A wrong key ends the command with an error instead of retrying.
	bad, badErr := start("wrong-key")
	done := make(chan error, 1)
	go func() { done <- bad.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("a refused key exited 0: %s", badErr)
		}
	case <-time.After(10 * time.Second):
		bad.Process.Kill()
		t.Fatalf("a refused key keeps retrying: %s", badErr)
	}

	cmd, stderr := start("dev-key", "--name", "proj")
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-waited })
	deadline := time.Now().Add(10 * time.Second)
	for len(reg.List("dev")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("never registered: %s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx := context.Background()
	for _, argv := range [][]string{{"true"}, {"mkdir", "-p", ".vscode"}, {"sh", "-c", "true"}} {
		p, _ := json.Marshal(tunnel.ExecRequest{Argv: argv})
		r, err := reg.Call(ctx, "dev", "proj", tunnel.RouteExecute, p, 20*time.Second)
		if err != nil || !r.Success {
			t.Fatalf("%v: %+v %v\n%s", argv, r, err, stderr)
		}
		var x tunnel.ExecResult
		json.Unmarshal(r.Result, &x)
		if x.ExitCode != 0 || x.TimedOut {
			t.Fatalf("%v: %+v", argv, x)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".vscode")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "commands are not shown (--no-terminal)") {
		t.Fatalf("GROVE_TUNNEL_NO_TERMINAL not honoured: %s", stderr)
	}
	if !strings.Contains(stderr.String(), "correlation_id=") {
		t.Fatalf("no correlation-id trace on the agent's side: %s", stderr)
	}

	// The agent dies mid-call: the call fails with ErrUnavailable at once.
	errc := make(chan error, 1)
	go func() {
		p, _ := json.Marshal(tunnel.ExecRequest{Argv: []string{"sleep", "5"}}) // outlives the SIGKILLed agent: its own process group
		_, err := reg.Call(ctx, "dev", "proj", tunnel.RouteExecute, p, 60*time.Second)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Kill()
	select {
	case err := <-errc:
		if !errors.Is(err, grove.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	case <-time.After(time.Second):
		t.Fatal("the call outlived its agent by a second")
	}
}
