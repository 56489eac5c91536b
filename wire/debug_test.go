package wire

import (
	"context"
	"testing"

	"github.com/grove-dev/grove"
)

// pathDebugger records the paths it is given and answers with a file
// name that is not UTF-8.
type pathDebugger struct {
	grove.Debugger
	grove.Service
	got grove.DebugStartRequest
}

func (p *pathDebugger) DebugStart(_ context.Context, _ string, req grove.DebugStartRequest) (*grove.DebugSession, error) {
	p.got = req
	return &grove.DebugSession{ID: "dbg_1", Program: "caf\xe9", Breakpoints: []grove.Breakpoint{{File: "caf\xe9.c", Line: 1}}}, nil
}

func (p *pathDebugger) DebugSnapshot(context.Context, string, grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	return &grove.DebugSnapshot{Frames: []grove.StackFrame{{File: "caf\xe9.c"}}}, nil
}

// TestEscapeNamesDebugger: EscapeNames keeps grove.Debugger (and
// grove.PullRequester beside it), unescapes the paths of requests and
// escapes those of results.
func TestEscapeNamesDebugger(t *testing.T) {
	type plain struct{ grove.Service }
	if _, ok := EscapeNames(plain{}).(grove.Debugger); ok {
		t.Fatal("a Service without a Debugger became one")
	}
	p := &pathDebugger{}
	d, ok := EscapeNames(p).(grove.Debugger)
	if !ok {
		t.Fatal("EscapeNames lost grove.Debugger")
	}
	s, err := d.DebugStart(context.Background(), "ws", grove.DebugStartRequest{Program: `caf\xe9`, Cwd: `d\xe9`,
		Breakpoints: []grove.SourceBreakpoints{{File: `caf\xe9.c`, Lines: []int{1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.got.Program != "caf\xe9" || p.got.Cwd != "d\xe9" || p.got.Breakpoints[0].File != "caf\xe9.c" {
		t.Errorf("request paths not unescaped: %+v", p.got)
	}
	if s.Program != `caf\xe9` || s.Breakpoints[0].File != `caf\xe9.c` {
		t.Errorf("session paths not escaped: %+v", s)
	}
	snap, err := d.DebugSnapshot(context.Background(), "ws", grove.DebugSnapshotRequest{})
	if err != nil || snap.Frames[0].File != `caf\xe9.c` {
		t.Errorf("snapshot = %+v, %v", snap, err)
	}
	both := EscapeNames(struct {
		*pathDebugger
		grove.PullRequester
	}{p, nil})
	if _, ok := both.(grove.Debugger); !ok {
		t.Error("Debugger lost next to PullRequester")
	}
	if _, ok := both.(grove.PullRequester); !ok {
		t.Error("PullRequester lost next to Debugger")
	}
}
