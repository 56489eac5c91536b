package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/debug"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/bwrap"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/internal/testenv"
)

// addNumbersC is the acceptance program; line 4 is inside add_numbers.
const addNumbersC = `#include <stdio.h>

int add_numbers(int a, int b) {
    int sum = a + b;
    return sum;
}

int main(void) {
    int x = 2, y = 3;
    int r = add_numbers(x, y);
    printf("%d\n", r);
    return 0;
}
`

func bwrapDriver(t *testing.T) driver.Driver {
	t.Helper()
	testenv.Require(t, "bwrap", bwrap.Available(), "bwrap not installed or user namespaces unavailable")
	d, err := bwrap.New(bwrap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// debugWorkspace is an edit workspace on drv with add_numbers.c written
// through the engine and compiled inside the runtime.
func debugWorkspace(t *testing.T, drv driver.Driver) (*fixture, *grove.Workspace) {
	t.Helper()
	f := newFixture(t, fixtureOpt{drv: drv})
	t.Cleanup(func() { f.eng.Close() })
	project := fmt.Sprintf("debug-%d-%d", os.Getpid(), time.Now().UnixNano())
	ws, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: sourceRepo(t), User: "alice", Project: project, Mode: grove.ModeEdit, Conversation: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.eng.Destroy(context.Background(), ws.ID) })
	if err := f.eng.WriteFile(bg, ws.ID, "add_numbers.c", []byte(addNumbersC)); err != nil {
		t.Fatal(err)
	}
	res, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Argv: []string{"gcc", "-g", "-O0", "-o", "add_numbers", "add_numbers.c"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("gcc in the runtime: %v %+v stderr=%q", err, res, res.Stderr)
	}
	return f, ws
}

// dapConn speaks DAP framing over a debug.Process.
type dapConn struct {
	p       debug.Process
	msgs    chan map[string]any
	pending []map[string]any // read, not matched yet
	seq     int
}

func newDAP(p debug.Process) *dapConn {
	c := &dapConn{p: p, msgs: make(chan map[string]any, 256)}
	go func() {
		defer close(c.msgs)
		r := bufio.NewReader(p)
		for {
			n := -1
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				line = strings.TrimSpace(line)
				if line == "" {
					break
				}
				if v, ok := strings.CutPrefix(line, "Content-Length:"); ok {
					n, _ = strconv.Atoi(strings.TrimSpace(v))
				}
			}
			if n < 0 {
				return
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(r, body); err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(body, &m) == nil {
				c.msgs <- m
			}
		}
	}()
	return c
}

func (c *dapConn) send(t *testing.T, command string, args any) int {
	t.Helper()
	c.seq++
	b, _ := json.Marshal(map[string]any{"seq": c.seq, "type": "request", "command": command, "arguments": args})
	if _, err := fmt.Fprintf(c.p, "Content-Length: %d\r\n\r\n%s", len(b), b); err != nil {
		t.Fatalf("send %s: %v", command, err)
	}
	return c.seq
}

// await reads messages until one matches, within 30 s.
func (c *dapConn) await(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	for i, m := range c.pending {
		if match(m) {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			return m
		}
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				t.Fatalf("the adapter ended before %s", what)
			}
			if match(m) {
				return m
			}
			c.pending = append(c.pending, m)
			if os.Getenv("GROVE_TEST_DAP_LOG") != "" {
				t.Logf("dap: %v", m)
			}
		case <-timeout:
			t.Fatalf("no %s within 30 s", what)
		}
	}
}

func (c *dapConn) response(t *testing.T, seq int) map[string]any {
	t.Helper()
	return c.await(t, fmt.Sprintf("response to %d", seq), func(m map[string]any) bool {
		rs, _ := m["request_seq"].(float64)
		return m["type"] == "response" && int(rs) == seq
	})
}

func (c *dapConn) event(t *testing.T, name string) map[string]any {
	t.Helper()
	return c.await(t, "event "+name, func(m map[string]any) bool { return m["type"] == "event" && m["event"] == name })
}

// processesIn lists host processes whose working directory, command line
// or environment names dir.
func processesIn(dir string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		line := strings.ReplaceAll(string(cmd), "\x00", " ")
		if cwd == dir || strings.HasPrefix(cwd, dir+"/") || strings.Contains(line, dir) || strings.Contains(string(env), dir) {
			out = append(out, fmt.Sprintf("%d cwd=%s %s", pid, cwd, line))
		}
	}
	return out
}

func waitNoProcessesIn(t *testing.T, dir string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if left = processesIn(dir); len(left) == 0 {
			return
		}
	}
	t.Fatalf("processes of the workspace outlived it:\n%s", strings.Join(left, "\n"))
}

// stubbed reports whether package debug is the placeholder (its errors say
// so); the session half of the test then has nothing to run against.
func stubbed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "debug: stub package")
}

func TestDebugCOnBwrap(t *testing.T) { testDebugC(t, bwrapDriver(t)) }

func TestDebugCOnDocker(t *testing.T) { testDebugC(t, dockerDriver(t)) }

// testDebugC is the acceptance path: a C program written and compiled in
// the workspace, debugged with lldb-dap inside the runtime, and the
// adapter gone with the workspace.
func testDebugC(t *testing.T, drv driver.Driver) {
	f, ws := debugWorkspace(t, drv)

	// The host side alone: lldb-dap starts in the runtime and answers
	// DAP's initialize over its stdin and stdout.
	h, err := engine.DebugHost(bg, f.eng, ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	if h.Root() != ws.LocalPath {
		t.Fatalf("Root %q, want the workspace's path %q", h.Root(), ws.LocalPath)
	}
	out, _, code, err := h.Run(bg, []string{"sh", "-c", "command -v lldb-dap-19 || command -v lldb-dap"}, 20*time.Second)
	if err != nil || code != 0 {
		t.Fatalf("no lldb-dap in the runtime: %v %d %q", err, code, out)
	}
	adapter := strings.TrimSpace(out)
	p, err := h.Spawn(bg, []string{adapter}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	// A whole session by hand: launch under a breakpoint, stop at line 4
	// — lldb-dap can trace its program inside the runtime.
	c := newDAP(p)
	resp := c.response(t, c.send(t, "initialize", map[string]any{"adapterID": "lldb-dap", "clientID": "grove-test", "linesStartAt1": true, "columnsStartAt1": true, "pathFormat": "path"}))
	if resp["success"] != true {
		t.Fatalf("initialize: %v", resp)
	}
	launch := c.send(t, "launch", map[string]any{"program": filepath.Join(h.Root(), "add_numbers"), "cwd": h.Root(), "stopOnEntry": false})
	c.event(t, "initialized")
	bp := c.response(t, c.send(t, "setBreakpoints", map[string]any{"source": map[string]any{"path": filepath.Join(h.Root(), "add_numbers.c")}, "breakpoints": []any{map[string]any{"line": 4}}}))
	if bp["success"] != true {
		t.Fatalf("setBreakpoints: %v", bp)
	}
	if r := c.response(t, c.send(t, "configurationDone", nil)); r["success"] != true {
		t.Fatalf("configurationDone: %v", r)
	}
	if r := c.response(t, launch); r["success"] != true {
		t.Fatalf("launch inside the runtime: %v", r)
	}
	stopped := c.event(t, "stopped")
	tid := stopped["body"].(map[string]any)["threadId"]
	st := c.response(t, c.send(t, "stackTrace", map[string]any{"threadId": tid, "levels": 1}))
	frames, _ := st["body"].(map[string]any)["stackFrames"].([]any)
	if len(frames) == 0 || frames[0].(map[string]any)["line"].(float64) != 4 {
		t.Fatalf("not stopped at add_numbers.c:4: %v", st)
	}
	c.response(t, c.send(t, "disconnect", map[string]any{"terminateDebuggee": true}))
	if b, err := h.ReadFile(bg, "add_numbers.c"); err != nil || string(b) != addNumbersC {
		t.Fatalf("ReadFile: %v %q", err, b)
	}
	if _, err := h.ReadFile(bg, ".vscode/launch.json"); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("ReadFile of a missing file: %v, want ErrNotFound", err)
	}
	p.Close()

	// Through the Debugger.
	dc, err := f.eng.DebugContext(bg, ws.ID)
	if stubbed(err) {
		t.Log("package debug is the placeholder: the session half of the test is skipped")
		destroyKillsAdapters(t, f, ws, h, adapter)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range dc.Adapters {
		if a.Name == "lldb-dap" {
			found = true
		}
	}
	if !found {
		t.Fatalf("DebugContext lists no lldb-dap: %+v", dc)
	}
	s, err := f.eng.DebugStart(bg, ws.ID, grove.DebugStartRequest{
		Language: "c", Program: "add_numbers",
		Breakpoints: []grove.SourceBreakpoints{{File: "add_numbers.c", Lines: []int{4}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Breakpoints) != 1 || !s.Breakpoints[0].Verified {
		t.Fatalf("breakpoint not verified: %+v", s.Breakpoints)
	}
	snap, err := f.eng.DebugSnapshot(bg, ws.ID, grove.DebugSnapshotRequest{Session: s.ID, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if snap.State != grove.DebugStopped || len(snap.Frames) == 0 || snap.Frames[0].Line != 4 {
		t.Fatalf("not stopped at line 4: %+v", snap)
	}
	if v := locals(snap); v["a"] != "2" || v["b"] != "3" {
		t.Fatalf("locals at line 4: %v", v)
	}
	ev, err := f.eng.DebugEvaluate(bg, ws.ID, grove.DebugEvaluateRequest{Session: s.ID, Expression: "a + b"})
	if err != nil || ev.Result != "5" {
		t.Fatalf("evaluate a + b: %v %+v", err, ev)
	}
	snap, err = f.eng.DebugStep(bg, ws.ID, grove.DebugStepRequest{Session: s.ID, Kind: "over"})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Frames) == 0 || snap.Frames[0].Line != 5 || locals(snap)["sum"] != "5" {
		t.Fatalf("after step over: %+v", snap)
	}
	if err := f.eng.DebugStop(bg, ws.ID, s.ID); err != nil {
		t.Fatal(err)
	}

	// A live session dies with its workspace.
	if _, err := f.eng.DebugStart(bg, ws.ID, grove.DebugStartRequest{
		Language: "c", Program: "add_numbers",
		Breakpoints: []grove.SourceBreakpoints{{File: "add_numbers.c", Lines: []int{4}}},
	}); err != nil {
		t.Fatal(err)
	}
	destroyKillsAdapters(t, f, ws, h, adapter)
}

// destroyKillsAdapters leaves an adapter running (spawned through the
// host) and destroys the workspace: nothing of it may survive.
func destroyKillsAdapters(t *testing.T, f *fixture, ws *grove.Workspace, h debug.Host, adapter string) {
	t.Helper()
	// The variable marks the adapter for processesIn wherever the runtime
	// puts its working directory.
	p, err := h.Spawn(bg, []string{adapter}, map[string]string{"GROVE_TEST_WORKSPACE": ws.LocalPath}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for deadline := time.Now().Add(10 * time.Second); len(processesIn(ws.LocalPath)) == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if len(processesIn(ws.LocalPath)) == 0 {
		t.Fatal("no process of the workspace is visible; the check below would prove nothing")
	}
	if err := f.eng.Destroy(bg, ws.ID); err != nil {
		t.Fatal(err)
	}
	waitNoProcessesIn(t, ws.LocalPath)
}

func locals(s *grove.DebugSnapshot) map[string]string {
	out := map[string]string{}
	if len(s.Frames) == 0 {
		return out
	}
	for _, sc := range s.Frames[0].Scopes {
		for _, v := range sc.Variables {
			out[v.Name] = v.Value
		}
	}
	return out
}

func TestDebugAdapterIsConfinedOnBwrap(t *testing.T) { testAdapterConfined(t, bwrapDriver(t)) }

func TestDebugAdapterIsConfinedOnDocker(t *testing.T) { testAdapterConfined(t, dockerDriver(t)) }

// testAdapterConfined: the adapter is agent code. A fake lldb-dap planted
// in the workspace and found first on PATH runs inside the sandbox: it can
// neither write a host path nor read a host file outside the workspace,
// and it is not root.
func testAdapterConfined(t *testing.T, drv driver.Driver) {
	f := newFixture(t, fixtureOpt{drv: drv})
	t.Cleanup(func() { f.eng.Close() })
	project := fmt.Sprintf("debug-attack-%d-%d", os.Getpid(), time.Now().UnixNano())
	ws, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: sourceRepo(t), User: "mallory", Project: project, Mode: grove.ModeEdit, Conversation: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.eng.Destroy(context.Background(), ws.ID) })

	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("HOST-SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(f.root, "pwned-by-adapter")
	fake := `#!/bin/sh
if echo pwned > "$PWNED" 2>/dev/null; then echo wrote-host; else echo no-write; fi
if cat "$SECRET" 2>/dev/null; then :; else echo no-read; fi
echo "uid=$(id -u)"
echo "host-root-entries=$(ls /root 2>/dev/null | wc -l)"
`
	// Planted by the agent's own command, as an agent would.
	res, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: "mkdir -p bin && cat > bin/lldb-dap && chmod +x bin/lldb-dap", Stdin: []byte(fake)})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("plant the fake adapter: %v %+v", err, res)
	}
	h, err := engine.DebugHost(bg, f.eng, ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": ws.LocalPath + "/bin:/usr/local/bin:/usr/bin:/bin", "PWNED": pwned, "SECRET": secret}
	p, err := h.Spawn(bg, []string{"lldb-dap"}, env, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(p); done <- b }()
	var out []byte
	select {
	case out = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the fake adapter did not finish")
	}
	got := string(out)
	if !strings.Contains(got, "no-write") || !strings.Contains(got, "no-read") || strings.Contains(got, "HOST-SECRET") {
		t.Fatalf("the planted adapter reached the host:\n%s", got)
	}
	if strings.Contains(got, "uid=0\n") || !strings.Contains(got, "uid=") {
		t.Fatalf("the planted adapter runs as root (or did not run):\n%s", got)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("the planted adapter wrote a host file")
	}
}

// A runtime that cannot spawn interactive processes cannot debug.
func TestDebugNeedsASpawner(t *testing.T) {
	f := newFixture(t, fixtureOpt{drv: noSpawn{subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: t.TempDir()})}, allowUnisolated: true})
	ws, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: sourceRepo(t), User: "alice", Project: "p", Mode: grove.ModeEdit, Conversation: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.DebugContext(bg, ws.ID); !errors.Is(err, grove.ErrNotSupported) {
		t.Fatalf("DebugContext: %v, want ErrNotSupported", err)
	}
	if _, err := f.eng.DebugStart(bg, ws.ID, grove.DebugStartRequest{Language: "c", Program: "x"}); !errors.Is(err, grove.ErrNotSupported) {
		t.Fatalf("DebugStart: %v, want ErrNotSupported", err)
	}
	if _, err := f.eng.DebugSessions(bg, ws.ID); !errors.Is(err, grove.ErrNotSupported) {
		t.Fatalf("DebugSessions: %v, want ErrNotSupported", err)
	}
	if _, err := f.eng.DebugContext(bg, "ws_0000000000000000"); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("unknown workspace: %v, want ErrNotFound", err)
	}
}

// noSpawn hides a driver's Spawner.
type noSpawn struct{ driver.Driver }

// Live sessions are bounded per workspace (and per user, over all of the
// user's workspaces).
func TestDebugSessionLimitOnBwrap(t *testing.T) {
	f, ws := debugWorkspace(t, bwrapDriver(t))
	req := grove.DebugStartRequest{Language: "c", Program: "add_numbers", StopOnEntry: true}
	for i := 0; i < engine.DebugSessionsPerWorkspace; i++ {
		_, err := f.eng.DebugStart(bg, ws.ID, req)
		if stubbed(err) {
			t.Skip("package debug is the placeholder")
		}
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
	}
	if _, err := f.eng.DebugStart(bg, ws.ID, req); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("session %d: %v, want ErrResourceLimit", engine.DebugSessionsPerWorkspace+1, err)
	}
	ss, err := f.eng.DebugSessions(bg, ws.ID)
	if err != nil || len(ss) != engine.DebugSessionsPerWorkspace {
		t.Fatalf("sessions: %v %d", err, len(ss))
	}
	// Stopping one makes room; releasing the workspace ends them all.
	if err := f.eng.DebugStop(bg, ws.ID, ss[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.DebugStart(bg, ws.ID, req); err != nil {
		t.Fatalf("after a stop: %v", err)
	}
	if err := f.eng.Release(bg, ws.ID); err != nil {
		t.Fatal(err)
	}
	if ss, err := f.eng.DebugSessions(bg, ws.ID); err != nil || live(ss) != 0 {
		t.Fatalf("sessions after release: %v %+v", err, ss)
	}
	waitNoProcessesIn(t, ws.LocalPath)
}

func live(ss []grove.DebugSession) int {
	n := 0
	for _, s := range ss {
		if s.State != grove.DebugTerminated {
			n++
		}
	}
	return n
}

const addPy = `def add(a, b):
    total = a + b
    return total


print(add(2, 3))
`

func TestDebugPythonOnBwrap(t *testing.T) { testDebugPython(t, bwrapDriver(t)) }

func TestDebugPythonOnDocker(t *testing.T) { testDebugPython(t, dockerDriver(t)) }

// testDebugPython: debugpy inside the runtime, breakpoint, locals, step,
// evaluate, run to the end.
func testDebugPython(t *testing.T, drv driver.Driver) {
	f := newFixture(t, fixtureOpt{drv: drv})
	t.Cleanup(func() { f.eng.Close() })
	project := fmt.Sprintf("debug-py-%d-%d", os.Getpid(), time.Now().UnixNano())
	ws, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: sourceRepo(t), User: "alice", Project: project, Mode: grove.ModeEdit, Conversation: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.eng.Destroy(context.Background(), ws.ID) })
	if err := f.eng.WriteFile(bg, ws.ID, "prog.py", []byte(addPy)); err != nil {
		t.Fatal(err)
	}
	s, err := f.eng.DebugStart(bg, ws.ID, grove.DebugStartRequest{
		Language: "python", Program: "prog.py",
		Breakpoints: []grove.SourceBreakpoints{{File: "prog.py", Lines: []int{2}}},
	})
	if stubbed(err) {
		t.Skip("package debug is the placeholder")
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Breakpoints) != 1 || !s.Breakpoints[0].Verified {
		t.Fatalf("breakpoint not verified: %+v", s.Breakpoints)
	}
	snap, err := f.eng.DebugSnapshot(bg, ws.ID, grove.DebugSnapshotRequest{Session: s.ID, Timeout: 30 * time.Second, Expressions: []string{"a + b"}})
	if err != nil {
		t.Fatal(err)
	}
	if snap.State != grove.DebugStopped || len(snap.Frames) == 0 || snap.Frames[0].Line != 2 {
		t.Fatalf("not stopped at prog.py:2: %+v", snap)
	}
	if v := locals(snap); v["a"] != "2" || v["b"] != "3" {
		t.Fatalf("locals: %v", v)
	}
	if len(snap.Evaluations) != 1 || snap.Evaluations[0].Result != "5" {
		t.Fatalf("evaluations: %+v", snap.Evaluations)
	}
	snap, err = f.eng.DebugStep(bg, ws.ID, grove.DebugStepRequest{Session: s.ID, Kind: "over"})
	if err != nil || len(snap.Frames) == 0 || snap.Frames[0].Line != 3 || locals(snap)["total"] != "5" {
		t.Fatalf("after step over: %v %+v", err, snap)
	}
	snap, err = f.eng.DebugContinue(bg, ws.ID, grove.DebugContinueRequest{Session: s.ID, Timeout: 30 * time.Second})
	if err != nil || snap.State != grove.DebugTerminated {
		t.Fatalf("after continue: %v %+v", err, snap)
	}
	if err := f.eng.DebugStop(bg, ws.ID, s.ID); err != nil {
		t.Fatal(err)
	}
}
