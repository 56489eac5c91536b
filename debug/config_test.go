package debug

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	grove "github.com/grove-dev/grove"
)

const envC = `#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  const char *g = getenv("GREETING");
  printf("greeting=%s args=%d\n", g ? g : "(none)", argc - 1);
  return 3;
}
`

const launchJSON = `{
  // written by hand, as people do
  "version": "0.2.0",
  "configurations": [
    {
      "name": "C (cppdbg)",
      "type": "cppdbg",
      "request": "launch",
      "program": "${workspaceFolder}/greet", // built by gcc
      "args": ["one", "two"],
      "MIMode": "lldb",
      "environment": [{"name": "GREETING", "value": "hello"}],
    },
    {"name": "Node", "type": "node", "request": "launch", "program": "index.js"},
  ],
}`

// TestStartFromLaunchJSON starts a launch.json configuration by name:
// cppdbg with MIMode lldb runs under lldb-dap, ${workspaceFolder} is the
// workspace, and cppdbg's environment list reaches the program.
func TestStartFromLaunchJSON(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	requireAdapter(t, m, lldbDAP)
	writeFile(t, dir, "greet.c", envC)
	gcc(t, dir, "greet.c", "greet")
	if err := os.Mkdir(filepath.Join(dir, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ".vscode/launch.json", launchJSON)
	ctx := ctxT(t)

	dc, err := m.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dc.Configurations) != 2 || dc.Configurations[0].Name != "C (cppdbg)" {
		t.Fatalf("configurations %+v", dc.Configurations)
	}
	if !strings.Contains(strings.Join(dc.Problems, "\n"), `"node"`) {
		t.Errorf("problems %q should name the node configuration", dc.Problems)
	}
	found := false
	for _, a := range dc.Adapters {
		if a.Name == "lldb-dap" && a.Path != "" {
			found = true
			t.Logf("adapter %+v", a)
		}
	}
	if !found {
		t.Errorf("adapters %+v lack lldb-dap", dc.Adapters)
	}
	t.Logf("native debuggers %v", dc.NativeDebuggers)

	sess, err := m.Start(ctx, grove.DebugStartRequest{ConfigName: "C (cppdbg)"})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Program != "greet" {
		t.Errorf("program %q", sess.Program)
	}
	snap, err := m.Snapshot(ctx, grove.DebugSnapshotRequest{Session: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	if snap.State != grove.DebugTerminated || snap.ExitCode == nil || *snap.ExitCode != 3 {
		t.Fatalf("snapshot %+v", snap)
	}
	if !strings.Contains(snap.Output, "greeting=hello args=2") {
		t.Errorf("output %q", snap.Output)
	}

	if _, err := m.Start(ctx, grove.DebugStartRequest{ConfigName: "missing"}); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("missing configuration: %v", err)
	}
	if _, err := m.Start(ctx, grove.DebugStartRequest{ConfigName: "Node"}); !errors.Is(err, grove.ErrDebugAdapterUnavailable) {
		t.Errorf("node configuration: %v", err)
	}
}

// TestConfigPlan checks the launch arguments built for each adapter
// without running one.
func TestConfigPlan(t *testing.T) {
	root := "/ws"
	tests := []struct {
		name    string
		req     grove.DebugStartRequest
		check   func(t *testing.T, p *plan)
		wantErr error
	}{
		{
			name: "c language",
			req:  grove.DebugStartRequest{Language: "c", Program: "bin/app", Args: []string{"x"}, Env: map[string]string{"B": "2", "A": "1"}},
			check: func(t *testing.T, p *plan) {
				if p.adapter != lldbDAP || p.args["program"] != "/ws/bin/app" || p.args["cwd"] != "/ws" {
					t.Fatalf("%+v", p.args)
				}
				env := p.args["env"].([]any)
				if len(env) != 2 || env[0] != "A=1" || env[1] != "B=2" {
					t.Fatalf("env %v", env)
				}
			},
		},
		{
			name: "go from config",
			req: grove.DebugStartRequest{Config: []byte(`{"type": "go", "request": "launch", "program": "${workspaceFolder}/cmd", "env": {"X": "1"}, // c
			}`)},
			check: func(t *testing.T, p *plan) {
				if p.adapter != delve || p.args["mode"] != "debug" || p.args["program"] != "/ws/cmd" || p.args["console"] != "internalConsole" {
					t.Fatalf("%+v", p.args)
				}
			},
		},
		{
			name: "python ${file}",
			req:  grove.DebugStartRequest{Program: "a/b.py", Config: []byte(`{"type": "python", "request": "launch", "program": "${file}", "console": "integratedTerminal"}`)},
			check: func(t *testing.T, p *plan) {
				if p.adapter != debugpy || p.args["program"] != "/ws/a/b.py" || p.args["console"] != "internalConsole" || p.program != "a/b.py" {
					t.Fatalf("%+v", p.args)
				}
			},
		},
		{name: "program outside", req: grove.DebugStartRequest{Language: "c", Program: "../etc/passwd"}, wantErr: grove.ErrPathOutside},
		{name: "absolute outside", req: grove.DebugStartRequest{Config: []byte(`{"type": "lldb", "program": "/etc/passwd"}`)}, wantErr: grove.ErrPathOutside},
		{name: "cwd outside", req: grove.DebugStartRequest{Language: "python", Program: "a.py", Cwd: "../.."}, wantErr: grove.ErrPathOutside},
		{name: "cppdbg gdb", req: grove.DebugStartRequest{Config: []byte(`{"type": "cppdbg", "MIMode": "gdb", "program": "a"}`)}, wantErr: grove.ErrDebugAdapterUnavailable},
		{name: "unknown type", req: grove.DebugStartRequest{Config: []byte(`{"type": "node"}`)}, wantErr: grove.ErrDebugAdapterUnavailable},
		{name: "unknown language", req: grove.DebugStartRequest{Language: "cobol", Program: "a"}, wantErr: grove.ErrInvalid},
		{name: "${file} without program", req: grove.DebugStartRequest{Config: []byte(`{"type": "python", "program": "${file}"}`)}, wantErr: grove.ErrInvalid},
		{name: "unsupported variable", req: grove.DebugStartRequest{Config: []byte(`{"type": "python", "program": "${command:pickFile}"}`)}, wantErr: grove.ErrInvalid},
		{name: "nothing", req: grove.DebugStartRequest{}, wantErr: grove.ErrInvalid},
		{name: "config not object", req: grove.DebugStartRequest{Config: []byte(`[1]`)}, wantErr: grove.ErrInvalid},
	}
	m := NewManager(&LocalHost{dir: root}, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := m.buildPlan(ctxT(t), tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, p)
		})
	}
}

// TestAdapterDeath: an adapter killed under a session fails the waiting
// request with ErrUnavailable, ends the session and takes the debuggee
// with it.
func TestAdapterDeath(t *testing.T) {
	dir := t.TempDir()
	m := NewManager(mustHost(t, dir), Options{MaxSessions: 1})
	t.Cleanup(func() { m.Close() })
	requireAdapter(t, m, lldbDAP)
	writeFile(t, dir, "loop.c", loopC)
	gcc(t, dir, "loop.c", "loop")
	ctx := ctxT(t)

	sess, err := m.Start(ctx, grove.DebugStartRequest{Language: "c", Program: "loop"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(ctx, grove.DebugStartRequest{Language: "c", Program: "loop"}); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("second session with MaxSessions 1: %v", err)
	}
	if _, err := m.Breakpoints(ctx, grove.DebugBreakpointsRequest{Session: sess.ID, SourceBreakpoints: grove.SourceBreakpoints{File: "../x.c", Lines: []int{1}}}); !errors.Is(err, grove.ErrPathOutside) {
		t.Fatalf("breakpoint outside: %v", err)
	}
	m.mu.Lock()
	pid := m.sessions[sess.ID].proc.(*localProcess).Pid()
	m.mu.Unlock()
	loop := filepath.Join(m.h.Root(), "loop")
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = syscall.Kill(pid, syscall.SIGKILL) // the adapter alone, not its group
	}()
	_, err = m.Snapshot(ctx, grove.DebugSnapshotRequest{Session: sess.ID, Timeout: 20 * time.Second})
	if !errors.Is(err, grove.ErrUnavailable) {
		t.Fatalf("snapshot across adapter death: %v, want ErrUnavailable", err)
	}
	if list := m.Sessions(ctx); len(list) != 1 || list[0].State != grove.DebugTerminated {
		t.Fatalf("sessions %+v", list)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(pidsOf(loop)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if p := pidsOf(loop); len(p) > 0 {
		t.Errorf("debuggee %v outlived its adapter", p)
	}
	// A dead session frees its slot.
	sess2, err := m.Start(ctx, grove.DebugStartRequest{Language: "c", Program: "loop"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{sess.ID, sess2.ID, sess.ID} {
		if err := m.Stop(ctx, id); err != nil {
			t.Fatalf("stop %s: %v", id, err)
		}
	}
	if err := m.Stop(ctx, "dbg_unknown"); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("stop unknown: %v", err)
	}
}

func mustHost(t *testing.T, dir string) *LocalHost {
	t.Helper()
	h, err := NewLocalHost(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
