package tunnel_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"

	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/tools"
	"github.com/grove-dev/grove/tunnel"
)

// BenchmarkExecTrue compares a command run through a tunnel — server
// registry, WebSocket, the agent's dispatcher and its execute route —
// with the same command forked directly, in one run:
//
//	go test -run '^$' -bench ExecTrue -benchtime 200x ./tunnel
func BenchmarkExecTrue(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tunnel", func(b *testing.B) {
		log := slog.New(slog.DiscardHandler)
		reg := &tunnel.Registry{Log: log}
		ts := tools.New(tools.Options{})
		defer ts.Close()
		srv := httptest.NewServer(httpapi.New(httpapi.Options{Tools: ts, Auth: fakeAuth{aliceKey: "alice"}, Tunnels: reg, Logger: log}))
		defer srv.Close()
		local, err := tunnel.OpenLocalWith(b.TempDir(), tunnel.LocalOptions{Workspace: "bench", Terminal: tunnel.TerminalOptions{Disabled: true}})
		if err != nil {
			b.Fatal(err)
		}
		defer local.Close()
		d := &tunnel.Dispatcher{Workspace: "bench", Log: log}
		local.Routes(d)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = tunnel.Run(ctx, srv.URL, aliceKey, &tunnel.Agent{Workspace: "bench", D: d, Log: log})
		}()
		defer func() { cancel(); <-done }()
		for deadline := time.Now().Add(5 * time.Second); len(reg.List("alice")) == 0; {
			if time.Now().After(deadline) {
				b.Fatal("never registered")
			}
			time.Sleep(5 * time.Millisecond)
		}
		p, _ := json.Marshal(tunnel.ExecRequest{Argv: []string{"true"}, Hidden: true})
		b.ResetTimer()
		for b.Loop() {
			r, err := reg.Call(context.Background(), "alice", "bench", tunnel.RouteExecute, p, 10*time.Second)
			if err != nil || !r.Success {
				b.Fatal(r, err)
			}
		}
	})
}
