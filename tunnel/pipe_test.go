package tunnel_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove/tunnel"
)

// pipeConn is an in-memory Conn: the protocol needs no WebSocket.
type pipeConn struct {
	in, out   chan tunnel.Message
	done      chan struct{}
	closeOnce *sync.Once
}

func pipe() (*pipeConn, *pipeConn) {
	a, b := make(chan tunnel.Message, 16), make(chan tunnel.Message, 16)
	done, once := make(chan struct{}), &sync.Once{}
	return &pipeConn{in: a, out: b, done: done, closeOnce: once}, &pipeConn{in: b, out: a, done: done, closeOnce: once}
}

var errClosed = errors.New("pipe closed")

func (p *pipeConn) Read(ctx context.Context) (tunnel.Message, error) {
	select {
	case m := <-p.in:
		return m, nil
	case <-p.done:
		return tunnel.Message{}, errClosed
	case <-ctx.Done():
		return tunnel.Message{}, ctx.Err()
	}
}

func (p *pipeConn) Write(ctx context.Context, m tunnel.Message) error {
	select {
	case p.out <- m:
		return nil
	case <-p.done:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipeConn) Close(string) error { p.closeOnce.Do(func() { close(p.done) }); return nil }

// The agent takes a server that stops sending (no pings) for dead, so
// Run can reconnect, instead of waiting on a half-open connection forever.
func TestAgentNoticesSilentServer(t *testing.T) {
	agentEnd, serverEnd := pipe()
	a := &tunnel.Agent{Workspace: "w", D: &tunnel.Dispatcher{}}
	errc := make(chan error, 1)
	go func() { errc <- a.Serve(context.Background(), agentEnd) }()
	ctx := context.Background()
	if m, err := serverEnd.Read(ctx); err != nil || m.Type != tunnel.TypeRegister || m.Workspace != "w" {
		t.Fatalf("register: %+v %v", m, err)
	}
	serverEnd.Write(ctx, tunnel.Message{Type: tunnel.TypeRegistered, HeartbeatMS: 50})
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Serve returned nil for a lost server")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the agent still waits on a silent server")
	}
}

// The registry over a pipe: a refused registration gets an error message,
// and a registered agent's responses reach their calls.
func TestRegistryOverPipe(t *testing.T) {
	reg := &tunnel.Registry{}
	ctx := context.Background()

	bad, badServer := pipe()
	go reg.Serve(ctx, "alice", badServer)
	bad.Write(ctx, tunnel.Message{Type: tunnel.TypeRegister, Workspace: "../etc"})
	if m, err := bad.Read(ctx); err != nil || m.Type != tunnel.TypeError || m.Error == nil || m.Error.Code != "E_INVALID_ARGUMENT" {
		t.Fatalf("bad name: %+v %v", m, err)
	}

	agentEnd, serverEnd := pipe()
	go reg.Serve(ctx, "alice", serverEnd)
	d := &tunnel.Dispatcher{}
	d.Handle("/echo", func(_ context.Context, p json.RawMessage) (any, error) { return string(p), nil })
	go (&tunnel.Agent{Workspace: "w", D: d}).Serve(ctx, agentEnd)
	deadline := time.Now().Add(2 * time.Second)
	for len(reg.List("alice")) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r, err := reg.Call(ctx, "alice", "w", "/echo", []byte(`{"x":1}`), time.Second)
	if err != nil || !r.Success || string(r.Result) != `"{\"x\":1}"` {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := reg.Call(ctx, "bob", "w", "/echo", nil, time.Second); err == nil {
		t.Fatal("bob reached alice's tunnel")
	}
	agentEnd.Close("done")
}
