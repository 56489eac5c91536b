package debug

import (
	"errors"
	"strings"
	"testing"
	"time"

	grove "github.com/grove-dev/grove"
)

const addC = `#include <stdio.h>

int add_numbers(int a, int b) {
  int sum = a + b;
  return sum;
}

int main(void) {
  int r = add_numbers(2, 3);
  printf("%d\n", r);
  return 0;
}
`

func TestLLDBBreakpointLocalsStep(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	requireAdapter(t, m, lldbDAP)
	writeFile(t, dir, "add_numbers.c", addC)
	gcc(t, dir, "add_numbers.c", "add")
	ctx := ctxT(t)

	t0 := time.Now()
	sess, err := m.Start(ctx, grove.DebugStartRequest{
		Language:    "c",
		Program:     "add",
		Breakpoints: []grove.SourceBreakpoints{{File: "add_numbers.c", Lines: []int{4}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("start: %s", time.Since(t0))
	if sess.Adapter != "lldb-dap" || len(sess.Breakpoints) != 1 || !sess.Breakpoints[0].Verified || sess.Breakpoints[0].File != "add_numbers.c" {
		t.Fatalf("session %+v", sess)
	}

	snap, err := m.Snapshot(ctx, grove.DebugSnapshotRequest{Session: sess.ID, Expressions: []string{"a + b", "nope_undefined"}})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "add_numbers.c", 4)
	if snap.StopReason != "breakpoint" {
		t.Errorf("stop reason %q", snap.StopReason)
	}
	wantVar(t, snap, "a", "2")
	wantVar(t, snap, "b", "3")
	if len(snap.Evaluations) != 2 || snap.Evaluations[0].Result != "5" || snap.Evaluations[1].Error == "" {
		t.Fatalf("evaluations %+v", snap.Evaluations)
	}
	if len(snap.Frames) < 2 || snap.Frames[1].Name == "" || !strings.Contains(snap.Frames[1].Name, "main") {
		t.Errorf("caller frame: %+v", snap.Frames)
	}

	ev, err := m.Evaluate(ctx, grove.DebugEvaluateRequest{Session: sess.ID, Expression: "a + b"})
	if err != nil || ev.Result != "5" {
		t.Fatalf("evaluate a + b = %+v, %v", ev, err)
	}

	snap, err = m.Step(ctx, grove.DebugStepRequest{Session: sess.ID, Kind: "over"})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "add_numbers.c", 5)
	wantVar(t, snap, "sum", "5")

	// Replace main's breakpoints while paused: stop again at the printf.
	bps, err := m.Breakpoints(ctx, grove.DebugBreakpointsRequest{Session: sess.ID, SourceBreakpoints: grove.SourceBreakpoints{File: "add_numbers.c", Lines: []int{10}}})
	if err != nil || len(bps.Breakpoints) != 1 || !bps.Breakpoints[0].Verified || bps.Breakpoints[0].Line != 10 {
		t.Fatalf("breakpoints %+v, %v", bps, err)
	}
	snap, err = m.Continue(ctx, grove.DebugContinueRequest{Session: sess.ID, Timeout: 20 * time.Second, Expressions: []string{"r"}})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "add_numbers.c", 10)
	if len(snap.Evaluations) != 1 || snap.Evaluations[0].Result != "5" {
		t.Fatalf("evaluations %+v", snap.Evaluations)
	}

	snap, err = m.Continue(ctx, grove.DebugContinueRequest{Session: sess.ID, NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	output := snap.Output
	snap, err = m.Snapshot(ctx, grove.DebugSnapshotRequest{Session: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	if snap.State != grove.DebugTerminated || snap.ExitCode == nil || *snap.ExitCode != 0 {
		t.Fatalf("after continue: %+v", snap)
	}
	if output += snap.Output; !strings.Contains(output, "5") {
		t.Errorf("output %q, want 5", output)
	}
	if _, err := m.Evaluate(ctx, grove.DebugEvaluateRequest{Session: sess.ID, Expression: "a"}); !errors.Is(err, grove.ErrNotPaused) {
		t.Errorf("evaluate after exit: %v", err)
	}
	if err := m.Stop(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(ctx, sess.ID); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

func TestLLDBStepIntoOut(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	requireAdapter(t, m, lldbDAP)
	writeFile(t, dir, "add_numbers.c", addC)
	gcc(t, dir, "add_numbers.c", "add")
	ctx := ctxT(t)
	sess, err := m.Start(ctx, grove.DebugStartRequest{
		Language:    "c",
		Program:     "add",
		Breakpoints: []grove.SourceBreakpoints{{File: "add_numbers.c", Lines: []int{9}, Conditions: []string{"1 == 1"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := m.Snapshot(ctx, grove.DebugSnapshotRequest{Session: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "add_numbers.c", 9)
	snap, err = m.Step(ctx, grove.DebugStepRequest{Session: sess.ID, Kind: "into"})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "add_numbers.c", 4)
	if snap.Frames[0].Name == "" || !strings.Contains(snap.Frames[0].Name, "add_numbers") {
		t.Errorf("frame %+v", snap.Frames[0])
	}
	snap, err = m.Step(ctx, grove.DebugStepRequest{Session: sess.ID, Kind: "out"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.State != grove.DebugStopped || len(snap.Frames) == 0 || !strings.Contains(snap.Frames[0].Name, "main") {
		t.Fatalf("after step out: %+v", snap)
	}
	if _, err := m.Step(ctx, grove.DebugStepRequest{Session: sess.ID, Kind: "sideways"}); !errors.Is(err, grove.ErrInvalid) {
		t.Errorf("bad step kind: %v", err)
	}
}

// The hand-off's race, both ways: a program that reached its breakpoint on
// its own before the agent called continue is shown stopped there, not run
// past it to its end; and a stop that has been shown is resumed.
func TestContinueReturnsAStopNotYetShown(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	requireAdapter(t, m, lldbDAP)
	writeFile(t, dir, "add_numbers.c", addC)
	gcc(t, dir, "add_numbers.c", "add")
	ctx := ctxT(t)
	sess, err := m.Start(ctx, grove.DebugStartRequest{Language: "c", Program: "add",
		Breakpoints: []grove.SourceBreakpoints{{File: "add_numbers.c", Lines: []int{4, 10}}}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for m.sessionState(sess.ID) != grove.DebugStopped {
		if time.Now().After(deadline) {
			t.Fatal("never reached the breakpoint")
		}
		time.Sleep(20 * time.Millisecond)
	}
	snap, err := m.Continue(ctx, grove.DebugContinueRequest{Session: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "add_numbers.c", 4)
	snap, err = m.Continue(ctx, grove.DebugContinueRequest{Session: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	wantStoppedAt(t, snap, "add_numbers.c", 10)
}

func (m *Manager) sessionState(id string) string {
	s, err := m.get(id)
	if err != nil {
		return ""
	}
	return s.info().State
}
