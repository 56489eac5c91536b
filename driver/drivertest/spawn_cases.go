package drivertest

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// Cases for driver.Spawner, run only when the driver implements it.

func spawner(t *testing.T, d driver.Driver) driver.Spawner {
	t.Helper()
	sp, ok := d.(driver.Spawner)
	if !ok {
		t.Skipf("%s does not implement driver.Spawner", d.Kind())
	}
	return sp
}

func (w *workspace) spawn(t *testing.T, ctx context.Context, req grove.ExecRequest) driver.Process {
	t.Helper()
	p, err := spawner(t, w.d).Spawn(ctx, w.id, req)
	if err != nil {
		t.Fatalf("Spawn(%v %q): %v", req.Argv, req.Shell, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// readFull reads exactly n bytes from r or fails after d.
func readFull(t *testing.T, r io.Reader, n int, d time.Duration) []byte {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		ch <- res{b, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("read %d bytes: %v (got %q)", n, r.err, r.b)
		}
		return r.b
	case <-time.After(d):
		t.Fatalf("no %d bytes within %v", n, d)
		return nil
	}
}

// readAll reads r to its end or fails after d.
func readAll(t *testing.T, r io.Reader, d time.Duration) []byte {
	t.Helper()
	ch := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		ch <- b
	}()
	select {
	case b := <-ch:
		return b
	case <-time.After(d):
		t.Fatalf("stdout did not end within %v", d)
		return nil
	}
}

func waitWithin(t *testing.T, p driver.Process, d time.Duration) int {
	t.Helper()
	ch := make(chan int, 1)
	go func() {
		code, err := p.Wait()
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
		ch <- code
	}()
	select {
	case code := <-ch:
		return code
	case <-time.After(d):
		t.Fatalf("the process did not exit within %v", d)
		return 0
	}
}

// spawnEcho: bytes written to a spawned cat come back unchanged, in
// several round trips (the process is interactive, not batch), and closing
// stdin ends it with exit 0.
func (s *suite) spawnEcho(t *testing.T) {
	w := s.runtime(t, nil)
	p := w.spawn(t, context.Background(), grove.ExecRequest{Argv: []string{"cat"}, Class: grove.ClassRead})
	for _, msg := range [][]byte{[]byte("Content-Length: 2\r\n\r\n{}"), {0, 1, 2, 255, '\n'}, bytes.Repeat([]byte("x"), 100<<10)} {
		go func() { _, _ = p.Stdin().Write(msg) }()
		if got := readFull(t, p.Stdout(), len(msg), 20*time.Second); !bytes.Equal(got, msg) {
			t.Fatalf("echo: got %d bytes %q..., want %d", len(got), got[:min(len(got), 40)], len(msg))
		}
	}
	if err := p.Stdin().Close(); err != nil {
		t.Fatalf("close stdin: %v", err)
	}
	if rest := readAll(t, p.Stdout(), 20*time.Second); len(rest) != 0 {
		t.Fatalf("extra output %q", rest)
	}
	if code := waitWithin(t, p, 20*time.Second); code != 0 {
		t.Fatalf("cat exited %d after end of input; stderr %q", code, p.Stderr())
	}
}

// spawnCloseKills: Close and the end of ctx kill the process and what it
// started in the background.
func (s *suite) spawnCloseKills(t *testing.T) {
	w := s.runtime(t, nil)
	for _, how := range []string{"close", "ctx"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ticks := "ticks-" + how
			p := w.spawn(t, ctx, grove.ExecRequest{
				Shell: "(while :; do echo x >> " + ticks + "; sleep 0.05; done) & echo ready; wait",
				Class: grove.ClassWrite,
			})
			if got := readFull(t, p.Stdout(), len("ready\n"), 20*time.Second); string(got) != "ready\n" {
				t.Fatalf("got %q", got)
			}
			if how == "close" {
				p.Close()
			} else {
				cancel()
			}
			waitWithin(t, p, 20*time.Second)
			// The background loop is gone: the file stops growing.
			time.Sleep(200 * time.Millisecond)
			before, _ := os.ReadFile(filepath.Join(w.dir, ticks))
			time.Sleep(500 * time.Millisecond)
			after, _ := os.ReadFile(filepath.Join(w.dir, ticks))
			if len(after) != len(before) {
				t.Fatalf("a process of the spawned tree survived %s (%d → %d ticks)", how, len(before), len(after))
			}
		})
	}
}

// spawnMissingBinary: as with Exec, a program that does not exist is
// exit 127, not an error.
func (s *suite) spawnMissingBinary(t *testing.T) {
	w := s.runtime(t, nil)
	p := w.spawn(t, context.Background(), grove.ExecRequest{Argv: []string{"grove-no-such-program-xyz"}, Class: grove.ClassRead})
	readAll(t, p.Stdout(), 20*time.Second)
	if code := waitWithin(t, p, 20*time.Second); code != 127 {
		t.Fatalf("exit %d, want 127; stderr %q", code, p.Stderr())
	}
}

// spawnIsolation: a spawned process runs in exactly the sandbox of a
// command — same uid, hostname, capabilities, no_new_privs and seccomp
// mode — and cannot read a host file outside the workspace.
func (s *suite) spawnIsolation(t *testing.T) {
	d := s.h.New(t)
	skipUnisolated(t, d)
	spawner(t, d)
	w := s.workspace(t, d, nil)
	secret := filepath.Join(filepath.Dir(w.dir), "host-secret")
	if err := os.WriteFile(secret, []byte("host-only-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `id -u; hostname; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; cat "$SECRET" 2>/dev/null || echo no-secret; ls /proc | grep -c '^[0-9]' >/dev/null; echo done`
	env := map[string]string{"SECRET": secret}
	res := w.exec(t, grove.ExecRequest{Shell: script, Env: env, Class: grove.ClassRead})
	p := w.spawn(t, context.Background(), grove.ExecRequest{Shell: script, Env: env, Class: grove.ClassRead})
	p.Stdin().Close()
	got := readAll(t, p.Stdout(), 20*time.Second)
	waitWithin(t, p, 20*time.Second)
	if strings.Contains(string(got), "host-only-secret") {
		t.Fatalf("a spawned process read a host file outside the workspace:\n%s", got)
	}
	if !strings.Contains(string(got), "no-secret") || !strings.HasSuffix(string(got), "done\n") {
		t.Fatalf("spawned script output %q; stderr %q", got, p.Stderr())
	}
	if string(got) != string(res.Stdout) {
		t.Fatalf("a spawned process does not run in a command's sandbox:\nspawn:\n%s\nexec:\n%s", got, res.Stdout)
	}
}
