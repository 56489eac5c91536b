package debug

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/google/go-dap"

	grove "github.com/grove-dev/grove"
)

// outputMax bounds the program output kept between snapshots; the newest
// output wins.
const outputMax = 64 << 10

// consoleMax bounds the adapter output kept to explain a failed launch.
const consoleMax = 2 << 10

// appendTail appends add to buf, keeping only the last max bytes.
func appendTail(buf []byte, add string, max int) []byte {
	buf = append(buf, add...)
	if len(buf) > max {
		buf = append([]byte(nil), buf[len(buf)-max:]...)
	}
	return buf
}

// consoleTail is the adapter's recent output, for error messages.
func (s *session) consoleTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimSpace(string(s.console))
}

// requestTimeout bounds one DAP request that should answer at once
// (threads, stackTrace, variables, evaluate).
const requestTimeout = 15 * time.Second

// session is one adapter process and the program it debugs.
type session struct {
	id        string
	adapter   *adapter
	program   string
	startedAt time.Time
	root      string

	proc Process
	c    *conn
	// killDebuggee, when the host can, kills the debuggee by the process
	// id the adapter reported: lldb starts its debug server (and so the
	// program) outside the adapter's process group, so killing that group
	// does not reach a program whose adapter died without terminating it.
	killDebuggee func(pid int)
	debuggeePid  int

	initialized chan struct{} // closed on the initialized event
	initOnce    sync.Once

	mu         sync.Mutex
	state      string
	stopReason string
	threadID   int // the thread that stopped last
	stops      int // counts stopped events, so a wait can ask for the next one
	// shown is the stop count last returned to a caller in a stopped
	// snapshot (or start): a stop past it has not been seen yet.
	shown    int
	exitCode *int
	changed  chan struct{} // closed and replaced on every state change
	output   []byte
	// console is the adapter's own recent output (any category): a
	// failed launch's explanation often is there ("Check the debug
	// console for details").
	console     []byte
	breakpoints []grove.Breakpoint
	caps        dap.Capabilities
	// lost is why the adapter died before the program ended; waits then
	// fail with it (ErrUnavailable) rather than report a clean end.
	lost error

	closeOnce sync.Once
}

func newSession(id string, a *adapter, root string, now time.Time) *session {
	return &session{
		id: id, adapter: a, root: root, startedAt: now,
		state: grove.DebugRunning, changed: make(chan struct{}),
		initialized: make(chan struct{}),
	}
}

// notify wakes waiters; s.mu is held.
func (s *session) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// onEvent runs on the reader goroutine.
func (s *session) onEvent(m *message) {
	switch m.Event {
	case "initialized":
		s.initOnce.Do(func() { close(s.initialized) })
	case "stopped":
		var b dap.StoppedEventBody
		_ = json.Unmarshal(m.Body, &b)
		s.mu.Lock()
		if s.state != grove.DebugTerminated {
			s.state = grove.DebugStopped
			s.stopReason = b.Reason
			if b.ThreadId != 0 {
				s.threadID = b.ThreadId
			}
			s.stops++
			s.notify()
		}
		s.mu.Unlock()
	case "exited":
		var b dap.ExitedEventBody
		_ = json.Unmarshal(m.Body, &b)
		s.mu.Lock()
		code := b.ExitCode
		s.exitCode = &code
		s.notify()
		s.mu.Unlock()
	case "terminated":
		s.terminate()
	case "process":
		var b dap.ProcessEventBody
		_ = json.Unmarshal(m.Body, &b)
		s.mu.Lock()
		s.debuggeePid = b.SystemProcessId
		s.mu.Unlock()
	case "output":
		var b dap.OutputEventBody
		_ = json.Unmarshal(m.Body, &b)
		if b.Category == "telemetry" {
			break
		}
		s.mu.Lock()
		s.console = appendTail(s.console, b.Output, consoleMax)
		// The program's streams only: "console" is the adapter talking.
		if b.Category == "stdout" || b.Category == "stderr" {
			s.output = appendTail(s.output, b.Output, outputMax)
		}
		s.mu.Unlock()
	case "breakpoint":
		var b dap.BreakpointEventBody
		_ = json.Unmarshal(m.Body, &b)
		s.mu.Lock()
		for i := range s.breakpoints {
			if bp := &s.breakpoints[i]; bp.ID != 0 && bp.ID == b.Breakpoint.Id {
				bp.Verified = b.Breakpoint.Verified
				if b.Breakpoint.Line != 0 {
					bp.Line = b.Breakpoint.Line
				}
				bp.Message = b.Breakpoint.Message
			}
		}
		s.mu.Unlock()
		// "continued" is ignored on purpose: Grove is the only client, so
		// the program resumes only when Grove asks, and a late continued
		// event must not overwrite the stop that followed it.
	}
}

// terminate marks the program ended. The adapter is released in the
// background: a terminated session keeps its state and exit code for
// snapshots, but not its processes.
func (s *session) terminate() {
	s.mu.Lock()
	if s.state == grove.DebugTerminated {
		s.mu.Unlock()
		return
	}
	s.state = grove.DebugTerminated
	s.notify()
	s.mu.Unlock()
	go s.shutdown(context.Background())
}

// shutdown disconnects (terminating the debuggee) and kills the adapter.
// It is idempotent.
func (s *session) shutdown(ctx context.Context) {
	s.closeOnce.Do(func() {
		if s.c != nil {
			if ch, err := s.c.send("disconnect", dap.DisconnectArguments{TerminateDebuggee: true}); err == nil {
				_ = s.c.await(ctx, "disconnect", ch, 3*time.Second, nil)
			}
		}
		if s.proc != nil {
			_ = s.proc.Close()
		}
		s.mu.Lock()
		pid := s.debuggeePid
		s.mu.Unlock()
		if pid > 0 && s.killDebuggee != nil {
			s.killDebuggee(pid)
		}
	})
}

// unseenStop reports whether the program is stopped at a stop no caller
// has been shown yet: one it reached on its own after start or after a
// continue that returned while it was still running.
func (s *session) unseenStop() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == grove.DebugStopped && s.stops > s.shown
}

// resumed records that Grove is resuming the program: it reports whether
// the program was stopped (so a resume request is due) and the stop count
// to wait past, read together so that a stop arriving meanwhile is not
// missed.
func (s *session) resumed() (wasStopped bool, after int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == grove.DebugStopped {
		s.state = grove.DebugRunning
		s.stopReason = ""
		s.notify()
		return true, s.stops
	}
	return false, s.stops
}

// wait waits until the program is stopped past stop count after (or at
// all, for after < 0) or terminated, until timeout. It reports the state
// then, or ErrUnavailable when the adapter died under the program.
func (s *session) wait(ctx context.Context, after int, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		state, stops, changed, lost := s.state, s.stops, s.changed, s.lost
		s.mu.Unlock()
		if lost != nil {
			return state, lost
		}
		if state == grove.DebugTerminated || (state == grove.DebugStopped && stops > after) {
			return state, nil
		}
		select {
		case <-changed:
		case <-s.c.dead:
			s.adapterDied()
		case <-t.C:
			return state, nil
		case <-ctx.Done():
			return state, nil
		}
	}
}

// adapterDied ends the session when its connection is gone; unless the
// program had already ended, that is a loss, not an end.
func (s *session) adapterDied() {
	s.mu.Lock()
	if s.state != grove.DebugTerminated && s.exitCode == nil && s.lost == nil {
		s.lost = s.c.deadErr()
	}
	s.mu.Unlock()
	s.terminate()
}

// info describes the session.
func (s *session) info() grove.DebugSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return grove.DebugSession{
		ID: s.id, Adapter: s.adapter.name, Program: s.program, State: s.state,
		StopReason: s.stopReason, ExitCode: s.exitCode, StartedAt: s.startedAt,
		Breakpoints: append([]grove.Breakpoint(nil), s.breakpoints...),
	}
}

// takeOutput returns and clears the buffered program output.
func (s *session) takeOutput() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := string(s.output)
	s.output = nil
	return out
}
