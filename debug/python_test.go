package debug

import (
	"strings"
	"testing"
	"time"

	grove "github.com/grove-dev/grove"
)

const addPy = `def add(a, b):
    total = a + b
    return total


print(add(2, 3))
`

func TestDebugpyBreakpointLocalsStep(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	requireAdapter(t, m, debugpy)
	writeFile(t, dir, "prog.py", addPy)
	ctx := ctxT(t)

	t0 := time.Now()
	sess, err := m.Start(ctx, grove.DebugStartRequest{
		Language:    "python",
		Program:     "prog.py",
		Breakpoints: []grove.SourceBreakpoints{{File: "prog.py", Lines: []int{2}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("start: %s", time.Since(t0))
	if len(sess.Breakpoints) != 1 || !sess.Breakpoints[0].Verified {
		t.Fatalf("breakpoints %+v", sess.Breakpoints)
	}
	snap, err := m.Snapshot(ctx, grove.DebugSnapshotRequest{Session: sess.ID, Expressions: []string{"a + b"}})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "prog.py", 2)
	wantVar(t, snap, "a", "2")
	wantVar(t, snap, "b", "3")
	if len(snap.Evaluations) != 1 || snap.Evaluations[0].Result != "5" {
		t.Fatalf("evaluations %+v", snap.Evaluations)
	}
	snap, err = m.Step(ctx, grove.DebugStepRequest{Session: sess.ID, Kind: "over"})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "prog.py", 3)
	wantVar(t, snap, "total", "5")
	ev, err := m.Evaluate(ctx, grove.DebugEvaluateRequest{Session: sess.ID, Expression: "total * 10"})
	if err != nil || ev.Result != "50" {
		t.Fatalf("evaluate = %+v, %v", ev, err)
	}
	ev, err = m.Evaluate(ctx, grove.DebugEvaluateRequest{Session: sess.ID, Expression: "undefined_name"})
	if err != nil || ev.Error == "" {
		t.Fatalf("evaluate undefined = %+v, %v", ev, err)
	}
	snap, err = m.Continue(ctx, grove.DebugContinueRequest{Session: sess.ID, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if snap.State != grove.DebugTerminated {
		t.Fatalf("after continue: %+v", snap)
	}
	if !strings.Contains(snap.Output, "5") {
		t.Errorf("output %q", snap.Output)
	}
	if err := m.Stop(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
}
