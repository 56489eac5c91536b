package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/grove-dev/grove"
)

// processes is the bounded registry of background commands. Each process
// costs exactly one goroutine (its ExecStream call), and the registry caps
// how many exist, in total and per workspace; their output is kept in
// bounded buffers between polls. Processes are tied to the registry's
// lifetime, not to the request that started them, and die on close.
type processes struct {
	mu       sync.Mutex
	max      int
	perWS    int
	perUser  int
	byID     map[string]*process
	ctx      context.Context
	stop     context.CancelFunc
	wg       sync.WaitGroup
	closed   bool
	finished []*process // exited and not yet polled, oldest first
}

// maxUnread bounds each stream's output kept between two polls.
const maxUnread = 256 << 10

type process struct {
	id, ws  string
	user    string
	command string
	cancel  context.CancelFunc
	done    chan struct{}

	mu             sync.Mutex
	stdout, stderr []byte
	dropped        bool
	res            *grove.ExecResult
	err            error
}

func newProcesses(max, perWS, perUser int) *processes {
	if max <= 0 {
		max = 64
	}
	if perWS <= 0 {
		perWS = 4
	}
	if perUser <= 0 {
		perUser = 8
	}
	ctx, stop := context.WithCancel(context.Background())
	return &processes{max: max, perWS: perWS, perUser: perUser, byID: map[string]*process{}, ctx: ctx, stop: stop}
}

// start runs a background process for caller. caller.Bind (may be nil)
// ties it to the caller's key, so it dies when the key is revoked; caller's
// user counts against the per-user bound, so one user cannot take the
// whole table from the others.
func (ps *processes) start(caller Caller, svc grove.Service, ws, command string, req grove.ExecRequest) (string, error) {
	bind := caller.Bind
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return "", grove.Errorf(grove.ErrUnavailable, "the server is shutting down")
	}
	// Exited processes nobody polled make room for new ones, oldest first.
	for len(ps.byID) >= ps.max && len(ps.finished) > 0 {
		delete(ps.byID, ps.finished[0].id)
		ps.finished = ps.finished[1:]
	}
	n, mine := 0, 0
	for _, p := range ps.byID {
		if p.ws == ws {
			n++
		}
		if p.user == caller.User {
			mine++
		}
	}
	full := func(msg string) error {
		return &Error{Code: "E_RESOURCE_LIMIT", Msg: msg,
			Hint: "kill one with process_io kill=true, or poll finished ones to release them", Err: grove.ErrResourceLimit}
	}
	switch {
	case n >= ps.perWS:
		return "", full(fmt.Sprintf("too many background processes in this workspace (%d, at most %d)", n, ps.perWS))
	case mine >= ps.perUser:
		return "", full(fmt.Sprintf("too many background processes of yours (%d, at most %d)", mine, ps.perUser))
	case len(ps.byID) >= ps.max:
		return "", full(fmt.Sprintf("the server runs its most background processes (%d); try again later", ps.max))
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := &process{id: "proc_" + hex.EncodeToString(b[:]), ws: ws, user: caller.User, command: command, done: make(chan struct{})}
	ctx, stop := context.WithCancel(ps.ctx)
	cancel := stop
	if bind != nil {
		var release context.CancelFunc
		ctx, release = bind(ctx)
		cancel = func() { release(); stop() }
	}
	p.cancel = cancel
	ps.byID[p.id] = p
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		defer cancel()
		res, err := svc.ExecStream(ctx, ws, req, p.append)
		p.mu.Lock()
		p.res, p.err = res, err
		p.mu.Unlock()
		close(p.done)
		ps.mu.Lock()
		if _, ok := ps.byID[p.id]; ok {
			ps.finished = append(ps.finished, p)
		}
		ps.mu.Unlock()
	}()
	return p.id, nil
}

func (p *process) append(ch grove.Chunk) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	buf := &p.stdout
	if ch.Stream == grove.Stderr {
		buf = &p.stderr
	}
	*buf = append(*buf, ch.Data...)
	if over := len(*buf) - maxUnread; over > 0 {
		// Keep the newest output; a poller wants to know what is happening now.
		*buf = append((*buf)[:0], (*buf)[over:]...)
		p.dropped = true
	}
	return nil
}

// poll returns output since the last poll and the process state.
func (p *process) poll() ProcessIOOutput {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := ProcessIOOutput{ProcessID: p.id, Stdout: string(p.stdout), Stderr: string(p.stderr), Truncated: p.dropped}
	p.stdout, p.stderr, p.dropped = nil, nil, false
	select {
	case <-p.done:
		switch {
		case p.res != nil:
			code := p.res.ExitCode
			out.ExitCode, out.TimedOut = &code, p.res.TimedOut
		default:
			// Killed through process_io (ctx cancelled) or the runtime failed.
			code := -1
			out.ExitCode = &code
			if p.err != nil {
				out.Stderr += fmt.Sprintf("\n[grove: the process ended: %v]", p.err)
			}
		}
	default:
		out.Running = true
	}
	return out
}

func (ps *processes) get(ws, id string) (*process, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.byID[id]
	// Another workspace's process is indistinguishable from none.
	if !ok || p.ws != ws {
		return nil, &Error{Code: "E_NOT_FOUND", Msg: fmt.Sprintf("no background process %q in this workspace", clip(id, 64)),
			Hint: "process ids come from run_command with background=true; a process is forgotten after its exit has been polled", Err: grove.ErrNotFound}
	}
	return p, nil
}

func (ps *processes) forget(p *process) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.byID, p.id)
	for i, f := range ps.finished {
		if f == p {
			ps.finished = append(ps.finished[:i], ps.finished[i+1:]...)
			break
		}
	}
}

// close kills every process and waits up to 10s for them to end.
func (ps *processes) close() {
	ps.mu.Lock()
	ps.closed = true
	ps.mu.Unlock()
	ps.stop()
	done := make(chan struct{})
	go func() { ps.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}
