package tunnel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/grove-dev/grove"
)

// Bounds of async commands.
const (
	MaxLiveSessions      = 32               // running at once
	maxKeptSessions      = 64               // finished ones kept, oldest dropped first
	sessionKeep          = 10 * time.Minute // a finished session is kept this long…
	sessionKeepAfterRead = 30 * time.Second // …or this long after its result was read
	MaxAsyncTimeout      = 30 * time.Minute // an async command's timeout, and its default
)

var sessionIDRE = regexp.MustCompile(`^s_[0-9a-f]{16}$`)

// session is one async command.
type session struct {
	id      string
	started time.Time

	mu         sync.Mutex
	stdout     []byte
	stderr     []byte
	pgid       int
	running    bool
	result     *ExecResult
	finishedAt time.Time
	readAt     time.Time // when a caller first got the result
	done       chan struct{}
	cancel     context.CancelFunc
}

func (s *session) append(c grove.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Stream == grove.Stderr {
		s.stderr = append(s.stderr, c.Data...)
	} else {
		s.stdout = append(s.stdout, c.Data...)
	}
	return nil
}

// sessions are a Local's async commands.
type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

func newSessionID() string {
	var b [8]byte
	rand.Read(b[:])
	return "s_" + hex.EncodeToString(b[:])
}

// add makes room for a new session, or refuses it when MaxLiveSessions run.
func (ss *sessions) add(s *session) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil {
		ss.m = map[string]*session{}
	}
	ss.pruneLocked(time.Now())
	live := 0
	for _, x := range ss.m {
		x.mu.Lock()
		if x.running {
			live++
		}
		x.mu.Unlock()
	}
	if live >= MaxLiveSessions {
		return grove.Errorf(grove.ErrResourceLimit, "%d async commands are running; wait for one or signal it", live)
	}
	ss.m[s.id] = s
	return nil
}

// pruneLocked drops finished sessions past their keep, and the oldest
// finished ones beyond maxKeptSessions.
func (ss *sessions) pruneLocked(now time.Time) {
	var finished []*session
	for id, s := range ss.m {
		s.mu.Lock()
		fin, at, read := !s.running, s.finishedAt, s.readAt
		s.mu.Unlock()
		switch {
		case !fin:
		case now.Sub(at) > sessionKeep, !read.IsZero() && now.Sub(read) > sessionKeepAfterRead:
			delete(ss.m, id)
		default:
			finished = append(finished, s)
		}
	}
	if len(finished) > maxKeptSessions {
		sort.Slice(finished, func(i, j int) bool { return finished[i].finishedAt.Before(finished[j].finishedAt) })
		for _, s := range finished[:len(finished)-maxKeptSessions] {
			delete(ss.m, s.id)
		}
	}
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, id)
}

func (ss *sessions) get(id string) (*session, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.pruneLocked(time.Now())
	s := ss.m[id]
	if s == nil {
		return nil, grove.Errorf(grove.ErrNotFound, "no command session %q (finished sessions are kept %s, or %s after their result was read)", id, sessionKeep, sessionKeepAfterRead)
	}
	return s, nil
}

// killAll kills every running session's process group and waits a
// little for them to end: the agent is stopping.
func (ss *sessions) killAll() {
	ss.mu.Lock()
	var all []*session
	for _, s := range ss.m {
		all = append(all, s)
	}
	ss.mu.Unlock()
	for _, s := range all {
		s.cancel()
	}
	deadline := time.After(3 * time.Second)
	for _, s := range all {
		select {
		case <-s.done:
		case <-deadline:
			return
		}
	}
}

// sessionRoute resolves RouteSessionPrefix + "<id>/output" and
// "<id>/signal"; anything else under the prefix is no route.
func (l *Local) sessionRoute(rest string) Handler {
	id, op, ok := strings.Cut(rest, "/")
	if !ok || !sessionIDRE.MatchString(id) {
		return nil
	}
	switch op {
	case "output":
		return func(ctx context.Context, payload json.RawMessage) (any, error) {
			return l.sessionOutput(ctx, id, payload)
		}
	case "signal":
		return func(ctx context.Context, payload json.RawMessage) (any, error) {
			return l.sessionSignal(ctx, id, payload)
		}
	}
	return nil
}

func (l *Local) sessionOutput(ctx context.Context, id string, payload json.RawMessage) (any, error) {
	var req SessionOutputRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	if req.StdoutOffset < 0 || req.StderrOffset < 0 || req.WaitMS < 0 {
		return nil, grove.Errorf(grove.ErrInvalid, "offsets and wait_ms must not be negative")
	}
	s, err := l.sessions.get(id)
	if err != nil {
		return nil, err
	}
	if req.WaitMS > 0 {
		t := time.NewTimer(time.Duration(req.WaitMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return s.output(req.StdoutOffset, req.StderrOffset), nil
}

// output is the session's state from the given offsets. While the command
// runs, an incomplete UTF-8 sequence at the end is held back for the next
// read; the next offsets say where to continue.
func (s *session) output(outOff, errOff int64) SessionOutput {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := SessionOutput{SessionID: s.id, Running: s.running}
	from := func(b []byte, off int64) (string, int64) {
		if off > int64(len(b)) {
			off = int64(len(b))
		}
		part := b[off:]
		if s.running {
			part = part[:completeUTF8(part)]
		}
		return strings.ToValidUTF8(string(part), "\uFFFD"), off + int64(len(part))
	}
	o.Stdout, o.StdoutNext = from(s.stdout, outOff)
	o.Stderr, o.StderrNext = from(s.stderr, errOff)
	if s.result != nil {
		r := *s.result
		o.Result = &r
		if s.readAt.IsZero() {
			s.readAt = time.Now()
		}
	}
	return o
}

// completeUTF8 is the length of b without a trailing incomplete UTF-8
// sequence.
func completeUTF8(b []byte) int {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return len(b) // ASCII: complete
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-i:]) {
				return len(b)
			}
			return len(b) - i
		}
	}
	return len(b)
}

var signals = map[string]syscall.Signal{
	"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}

func (l *Local) sessionSignal(ctx context.Context, id string, payload json.RawMessage) (any, error) {
	if l.ReadOnly {
		return nil, grove.Errorf(grove.ErrReadOnly, "this tunnel is read-only")
	}
	var req SignalRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	sig, ok := signals[strings.TrimPrefix(strings.ToUpper(req.Signal), "SIG")]
	if !ok {
		return nil, grove.Errorf(grove.ErrInvalid, "signal must be one of INT, TERM, KILL, HUP, QUIT, USR1, USR2")
	}
	s, err := l.sessions.get(id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.running && s.pgid > 0 {
		// Only while the leader has not been reaped: its group id cannot
		// have been reused.
		_ = syscall.Kill(-s.pgid, sig)
	}
	s.mu.Unlock()
	// Give a command that dies of the signal a moment, so the answer
	// usually says it ended.
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
	case <-ctx.Done():
	}
	// The output itself is read with .../output.
	return s.output(math.MaxInt64, math.MaxInt64), nil
}
