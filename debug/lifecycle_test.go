package debug

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	grove "github.com/grove-dev/grove"
)

const loopC = `int main(void) {
  volatile unsigned long i = 0;
  for (;;) i++;
}
`

// TestAdapterHiddenFromPath: a Host whose PATH lacks the adapters answers
// ErrDebugAdapterUnavailable at once, not after a launch timeout.
func TestAdapterHiddenFromPath(t *testing.T) {
	dir := t.TempDir()
	bin := t.TempDir()
	// Only a shell on PATH: the probes run, and find nothing.
	if err := os.Symlink("/bin/sh", filepath.Join(bin, "sh")); err != nil {
		t.Fatal(err)
	}
	h, err := NewLocalHost(dir)
	if err != nil {
		t.Fatal(err)
	}
	h.Env = []string{"PATH=" + bin, "HOME=" + dir}
	m := NewManager(h, Options{})
	defer m.Close()
	writeFile(t, dir, "main.c", "int main(void){return 0;}\n")
	ctx := ctxT(t)
	for _, req := range []grove.DebugStartRequest{
		{Language: "c", Program: "a.out"},
		{Language: "go", Program: "."},
		{Config: []byte(`{"type": "lldb-dap", "request": "launch", "program": "${workspaceFolder}/a.out"}`)},
	} {
		t0 := time.Now()
		_, err := m.Start(ctx, req)
		took := time.Since(t0)
		if !errors.Is(err, grove.ErrDebugAdapterUnavailable) {
			t.Fatalf("%+v: err %v, want ErrDebugAdapterUnavailable", req, err)
		}
		if took > time.Second {
			t.Errorf("%+v: took %s", req, took)
		}
		t.Logf("%s in %s: %v", req.Language, took, err)
	}
	dc, err := m.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// debugpy's probe also tries /usr/bin/python3 by absolute path (the
	// python on PATH may lack it), so only lldb-dap and dlv must be gone.
	for _, a := range dc.Adapters {
		if a.Name == "lldb-dap" || a.Name == "dlv" {
			t.Errorf("adapter %+v found without PATH", a)
		}
	}
	if len(dc.Problems) < 2 {
		t.Errorf("problems %q, want lldb-dap's and dlv's", dc.Problems)
	}
}

// TestSnapshotRunningThenTerminated: a program that never stops is
// ErrNotPaused; one that ended is a terminated snapshot with its code.
func TestSnapshotRunningThenTerminated(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	requireAdapter(t, m, lldbDAP)
	writeFile(t, dir, "loop.c", loopC)
	gcc(t, dir, "loop.c", "loop")
	writeFile(t, dir, "add_numbers.c", addC)
	gcc(t, dir, "add_numbers.c", "add")
	ctx := ctxT(t)

	sess, err := m.Start(ctx, grove.DebugStartRequest{Language: "c", Program: "loop"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	_, err = m.Snapshot(ctx, grove.DebugSnapshotRequest{Session: sess.ID, Timeout: 500 * time.Millisecond})
	if !errors.Is(err, grove.ErrNotPaused) {
		t.Fatalf("snapshot of a running program: %v, want ErrNotPaused", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("snapshot waited %s", d)
	}
	if _, err := m.Step(ctx, grove.DebugStepRequest{Session: sess.ID, Kind: "over"}); !errors.Is(err, grove.ErrNotPaused) {
		t.Fatalf("step while running: %v", err)
	}
	snap, err := m.Continue(ctx, grove.DebugContinueRequest{Session: sess.ID, Timeout: 300 * time.Millisecond})
	if err != nil || snap.State != grove.DebugRunning {
		t.Fatalf("continue while running: %+v, %v", snap, err)
	}
	if err := m.Stop(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}

	sess, err = m.Start(ctx, grove.DebugStartRequest{Language: "c", Program: "add"})
	if err != nil {
		t.Fatal(err)
	}
	snap, err = m.Snapshot(ctx, grove.DebugSnapshotRequest{Session: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	if snap.State != grove.DebugTerminated || snap.ExitCode == nil || *snap.ExitCode != 0 {
		t.Fatalf("snapshot after exit: %+v", snap)
	}
	list := m.Sessions(ctx)
	if len(list) != 1 || list[0].State != grove.DebugTerminated {
		t.Fatalf("sessions %+v", list)
	}
}

// TestStopOnEntry: the session is stopped when Start returns.
func TestStopOnEntry(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	requireAdapter(t, m, debugpy)
	writeFile(t, dir, "prog.py", addPy)
	ctx := ctxT(t)
	sess, err := m.Start(ctx, grove.DebugStartRequest{Language: "python", Program: "prog.py", StopOnEntry: true})
	if err != nil {
		t.Fatal(err)
	}
	if sess.State != grove.DebugStopped {
		t.Fatalf("state %s, want stopped", sess.State)
	}
	snap, err := m.Snapshot(ctx, grove.DebugSnapshotRequest{Session: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "prog.py", 1)
}

// TestCloseKillsAdaptersAndDebuggees: a workspace's sessions die with it,
// processes and all.
func TestCloseKillsAdaptersAndDebuggees(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	requireAdapter(t, m, lldbDAP)
	writeFile(t, dir, "loop.c", loopC)
	gcc(t, dir, "loop.c", "loop")
	ctx := ctxT(t)

	var adapterPids []int
	for range 2 {
		sess, err := m.Start(ctx, grove.DebugStartRequest{Language: "c", Program: "loop"})
		if err != nil {
			t.Fatal(err)
		}
		m.mu.Lock()
		p := m.sessions[sess.ID].proc.(*localProcess)
		m.mu.Unlock()
		adapterPids = append(adapterPids, p.Pid())
	}
	loop := filepath.Join(m.h.Root(), "loop")
	debuggees := pidsOf(loop)
	if len(debuggees) != 2 {
		t.Fatalf("debuggees %v, want 2 running %s", debuggees, loop)
	}
	t0 := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("close: %s", time.Since(t0))
	for _, pid := range append(adapterPids, debuggees...) {
		if alive(pid) {
			t.Errorf("pid %d survived Close", pid)
		}
	}
	if _, err := m.Start(ctx, grove.DebugStartRequest{Language: "c", Program: "loop"}); !errors.Is(err, grove.ErrUnavailable) {
		t.Errorf("start after close: %v", err)
	}
}

// pidsOf lists the processes running exe.
func pidsOf(exe string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := os.Readlink("/proc/" + e.Name() + "/exe"); err == nil && p == exe && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// alive: the process exists and is not a zombie awaiting its reaper.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestCloseDuringStart: Close ends a launch in flight instead of waiting
// for it.
func TestCloseDuringStart(t *testing.T) {
	dir := t.TempDir()
	h := mustHost(t, dir)
	m := NewManager(h, Options{})
	requireAdapter(t, m, lldbDAP)
	writeFile(t, dir, "loop.c", loopC)
	gcc(t, dir, "loop.c", "loop")
	ctx := ctxT(t)
	errc := make(chan error, 1)
	go func() {
		_, err := m.Start(ctx, grove.DebugStartRequest{Language: "c", Program: "loop"})
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	t0 := time.Now()
	m.Close()
	select {
	case err := <-errc:
		t.Logf("start ended %s after close: %v", time.Since(t0), err)
		if err != nil && !errors.Is(err, grove.ErrUnavailable) {
			t.Fatalf("start: %v, want ErrUnavailable (or success before Close)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("start still running 5s after Close")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(pidsOf(filepath.Join(h.Root(), "loop"))) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if p := pidsOf(filepath.Join(h.Root(), "loop")); len(p) > 0 {
		t.Errorf("debuggee %v outlived Close", p)
	}
}
