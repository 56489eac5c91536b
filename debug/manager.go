package debug

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-dap"

	grove "github.com/grove-dev/grove"
)

// Options tune a Manager.
type Options struct {
	// MaxSessions bounds the sessions alive at once (terminated ones do
	// not count); 0: 4.
	MaxSessions int
	Log         *slog.Logger
	Now         func() time.Time
	// Workspace is the workspace id reported in DebugSession.Workspace.
	Workspace string
}

// Manager runs one workspace's debug sessions on a Host.
type Manager struct {
	h      Host
	opt    Options
	log    *slog.Logger
	probes *prober

	// closing is cancelled by Close, so launches in flight end at once.
	closing context.Context
	cancel  context.CancelFunc

	mu       sync.Mutex
	sessions map[string]*session
	ended    map[string]bool // stopped sessions, so a second Stop is not an error
	closed   bool
}

// keepTerminated bounds the ended sessions still listed.
const keepTerminated = 16

// NewManager returns a Manager for the workspace h runs in.
func NewManager(h Host, opt Options) *Manager {
	if opt.MaxSessions <= 0 {
		opt.MaxSessions = 4
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	closing, cancel := context.WithCancel(context.Background())
	return &Manager{
		h: h, opt: opt, log: log, closing: closing, cancel: cancel,
		probes:   &prober{h: h, now: opt.Now, cache: map[string]*probeResult{}, inflight: map[string]chan struct{}{}},
		sessions: map[string]*session{}, ended: map[string]bool{},
	}
}

// Context reports launch.json's configurations, the adapters that probe
// OK here and the native debuggers found.
func (m *Manager) Context(ctx context.Context) (*grove.DebugContext, error) {
	out := &grove.DebugContext{Configurations: []grove.LaunchConfig{}, Adapters: []grove.DebugAdapter{}}
	b, err := m.h.ReadFile(ctx, launchJSONPath)
	switch {
	case errors.Is(err, grove.ErrNotFound):
	case err != nil:
		out.Problems = append(out.Problems, launchJSONPath+": "+err.Error())
	default:
		configs, err := ParseLaunchJSON(b)
		if err != nil {
			out.Problems = append(out.Problems, err.Error())
		}
		for _, c := range configs {
			out.Configurations = append(out.Configurations, c)
			if a := adapterForType(c.Type); a == nil {
				out.Problems = append(out.Problems, "configuration "+quote(c.Name)+": type "+quote(c.Type)+" has no adapter Grove runs")
			}
		}
	}

	type found struct {
		a             *adapter
		path, version string
		err           error
	}
	res := make([]found, len(adapters))
	var wg sync.WaitGroup
	for i, a := range adapters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, v, err := m.probes.probe(ctx, a)
			res[i] = found{a, p, v, err}
		}()
	}
	natives := m.nativeDebuggers(ctx)
	wg.Wait()
	for _, r := range res {
		if r.err != nil {
			out.Problems = append(out.Problems, r.err.Error())
			continue
		}
		out.Adapters = append(out.Adapters, grove.DebugAdapter{
			Name: r.a.name, Types: r.a.types, Languages: r.a.languages, Path: r.path, Version: r.version,
		})
	}
	if len(natives) > 0 {
		out.NativeDebuggers = natives
	}
	return out, nil
}

func quote(s string) string { return `"` + s + `"` }

// nativeDebuggers finds debugger programs on the Host's PATH.
func (m *Manager) nativeDebuggers(ctx context.Context) map[string]string {
	const script = `for c in gdb lldb lldb-21 lldb-20 lldb-19 lldb-18 lldb-17 lldb-16 lldb-15 dlv; do p=$(command -v "$c") && printf '%s\t%s\n' "$c" "$p"; done; exit 0`
	stdout, _, _, err := m.h.Run(ctx, []string{"/bin/sh", "-c", script}, probeTimeout)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(stdout, "\n") {
		if name, path, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok {
			out[name] = path
		}
	}
	return out
}

// Start launches a program under its adapter and returns once the adapter
// is configured with the request's breakpoints.
func (m *Manager) Start(ctx context.Context, req grove.DebugStartRequest) (*grove.DebugSession, error) {
	p, err := m.buildPlan(ctx, req)
	if err != nil {
		return nil, err
	}
	path, _, err := m.probes.probe(ctx, p.adapter)
	if err != nil {
		return nil, err
	}
	var dial Dialer
	if p.adapter == delve {
		d, ok := m.h.(Dialer)
		if !ok {
			return nil, grove.Errorf(grove.ErrDebugAdapterUnavailable, "dlv serves DAP only over TCP, and this workspace's runtime offers no way to reach it")
		}
		dial = d
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer context.AfterFunc(m.closing, cancel)()

	id, err := m.reserve()
	if err != nil {
		return nil, err
	}
	s := newSession(id, p.adapter, m.h.Root(), m.opt.Now())
	if k, ok := m.h.(processKiller); ok {
		s.killDebuggee = k.KillProcess
	}
	s.program = p.program
	switch p.adapter {
	case debugpy:
		if _, ok := p.args["python"]; !ok {
			p.args["python"] = path // the python that has debugpy
		}
	case delve:
		if _, ok := p.args["output"]; !ok && p.request == "launch" {
			// Keep the built binary out of the agent's tree.
			p.args["output"] = "/tmp/grove-dlv-" + id
		}
	}

	if err := m.launch(ctx, s, p, path, dial, req.Breakpoints); err != nil {
		if tail := s.consoleTail(); tail != "" && grove.KindOf(err) == errAdapter {
			err = grove.Errorf(errAdapter, "%v\n%s", err, tail)
		}
		if m.closing.Err() != nil {
			err = grove.Errorf(grove.ErrUnavailable, "the workspace's debugger closed while %s was starting", p.adapter.name)
		}
		m.log.Info("debug session failed to start", "adapter", p.adapter.name, "program", p.program, "err", err)
		s.shutdown(context.Background())
		m.release(id)
		return nil, err
	}
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.sessions[id] = s
	}
	m.mu.Unlock()
	if closed {
		s.shutdown(context.Background())
		return nil, grove.Errorf(grove.ErrUnavailable, "the workspace's debugger is closed")
	}
	info := s.info()
	if info.State == grove.DebugStopped && req.StopOnEntry {
		// The caller asked to stop at entry and learns it did: continue
		// resumes from there. A breakpoint reached before start answered
		// has not been shown (start returns no frames): continue returns it.
		s.mu.Lock()
		s.shown = s.stops
		s.mu.Unlock()
	}
	info.Workspace = m.opt.Workspace
	m.log.Info("debug session started", "session", id, "adapter", p.adapter.name, "program", p.program, "state", info.State)
	return &info, nil
}

// reserve takes a session slot (MaxSessions) before the slow launch.
func (m *Manager) reserve() (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	id := "dbg_" + hex.EncodeToString(b[:])
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", grove.Errorf(grove.ErrUnavailable, "the workspace's debugger is closed")
	}
	live := 0
	for _, s := range m.sessions {
		if s == nil || s.info().State != grove.DebugTerminated {
			live++
		}
	}
	if live >= m.opt.MaxSessions {
		return "", grove.Errorf(grove.ErrResourceLimit, "%d debug sessions are already running here; stop one first", live)
	}
	m.sessions[id] = nil // reserved
	m.prune()
	return id, nil
}

// release drops a reservation that did not become a session.
func (m *Manager) release(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[id]; ok && s == nil {
		delete(m.sessions, id)
	}
}

// prune forgets the oldest ended sessions beyond keepTerminated; m.mu is
// held.
func (m *Manager) prune() {
	var ended []*session
	for _, s := range m.sessions {
		if s != nil && s.info().State == grove.DebugTerminated {
			ended = append(ended, s)
		}
	}
	if len(ended) <= keepTerminated {
		return
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].startedAt.Before(ended[j].startedAt) })
	for _, s := range ended[:len(ended)-keepTerminated] {
		delete(m.sessions, s.id)
		m.ended[s.id] = true
	}
}

// launch runs the DAP start sequence: initialize, launch (its response
// may come only after configurationDone, as debugpy does), the initialized
// event, breakpoints, configurationDone.
func (m *Manager) launch(ctx context.Context, s *session, p *plan, path string, dial Dialer, bps []grove.SourceBreakpoints) error {
	// dlv builds the program itself: GOFLAGS and friends must reach the
	// build, not only the program.
	// It also builds in its own working directory, so it starts in the
	// launch's cwd: a package directory with its go.mod.
	var env map[string]string
	dir := ""
	if p.adapter == delve {
		env = p.env
		if cwd, ok := p.args["cwd"].(string); ok {
			if rel, err := filepath.Rel(m.h.Root(), cwd); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
				dir = rel
			}
		}
	}
	if err := m.connect(ctx, s, path, env, dir, dial); err != nil {
		return err
	}
	init := dap.InitializeRequestArguments{
		ClientID: "grove", ClientName: "Grove", AdapterID: p.adapter.name, Locale: "en-US",
		LinesStartAt1: true, ColumnsStartAt1: true, PathFormat: "path",
		SupportsVariableType: true,
	}
	if err := s.c.call(ctx, "initialize", init, requestTimeout, &s.caps); err != nil {
		return err
	}
	launched, err := s.c.send(p.request, p.args)
	if err != nil {
		return err
	}
	launchDone := false
	select {
	case <-s.initialized:
	case r, ok := <-launched:
		launchDone = true
		if !ok {
			return s.c.deadErr()
		}
		if !r.Success {
			return grove.Errorf(errAdapter, "%s %s failed: %s", p.adapter.name, p.request, failureText(r))
		}
		select {
		case <-s.initialized:
		case <-s.c.dead:
			return s.c.deadErr()
		case <-ctx.Done():
			return grove.Errorf(grove.ErrTimeout, "%s did not finish configuring: %v", p.adapter.name, ctx.Err())
		}
	case <-s.c.dead:
		return s.c.deadErr()
	case <-ctx.Done():
		hint := ""
		if p.adapter == delve {
			hint = " (dlv builds the program first, and a cold build can be slow: pass a longer timeout)"
		}
		return grove.Errorf(grove.ErrTimeout, "%s did not start the program in time: %v%s", p.adapter.name, ctx.Err(), hint)
	}

	for _, sb := range bps {
		got, err := m.setBreakpoints(ctx, s, sb)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.breakpoints = append(s.breakpoints, got...)
		s.mu.Unlock()
	}
	if len(s.caps.ExceptionBreakpointFilters) > 0 {
		if err := s.c.call(ctx, "setExceptionBreakpoints", dap.SetExceptionBreakpointsArguments{Filters: []string{}}, requestTimeout, nil); err != nil {
			return err
		}
	}
	if s.caps.SupportsConfigurationDoneRequest {
		if err := s.c.call(ctx, "configurationDone", struct{}{}, requestTimeout, nil); err != nil {
			return err
		}
	}
	if !launchDone {
		if err := s.c.await(ctx, p.request, launched, requestTimeout, nil); err != nil {
			return grove.Errorf(grove.KindOf(err), "%s %s failed: %v", p.adapter.name, p.request, err)
		}
	}
	if stop, _ := p.args["stopOnEntry"].(bool); stop {
		// The entry stop follows configurationDone; wait a little so the
		// session says stopped when it is.
		if _, err := s.wait(ctx, -1, 3*time.Second); err != nil {
			return err
		}
	}
	go func() {
		<-s.c.dead
		s.adapterDied()
	}()
	return nil
}

// connect starts the adapter and opens its DAP stream: stdio, or for dlv
// the TCP address it prints.
func (m *Manager) connect(ctx context.Context, s *session, path string, env map[string]string, dir string, dial Dialer) error {
	var argv []string
	switch s.adapter {
	case lldbDAP:
		argv = []string{path}
	case debugpy:
		argv = []string{path, "-m", "debugpy.adapter"}
	case delve:
		argv = []string{path, "dap", "--listen=127.0.0.1:0"}
	}
	proc, err := m.h.Spawn(ctx, argv, env, dir)
	if err != nil {
		if errors.Is(err, grove.ErrNotInstalled) || errors.Is(err, grove.ErrUnavailable) {
			return grove.Errorf(grove.ErrDebugAdapterUnavailable, "%s would not start: %v", s.adapter.name, err)
		}
		return err
	}
	s.proc = proc
	why := func() string {
		if t, ok := proc.(stderrTailer); ok {
			return firstLine(t.StderrTail())
		}
		return ""
	}
	if s.adapter != delve {
		s.c = newConn(proc, proc, s.onEvent, why)
		return nil
	}
	addr, err := listenAddr(ctx, proc)
	if err != nil {
		return grove.Errorf(grove.ErrDebugAdapterUnavailable, "dlv dap did not start listening: %v %s", err, why())
	}
	nc, err := dial.Dial(ctx, addr)
	if err != nil {
		return grove.Errorf(grove.ErrDebugAdapterUnavailable, "dlv dap at %s: %v", addr, err)
	}
	s.proc = &dialed{Process: proc, nc: nc}
	s.c = newConn(nc, nc, s.onEvent, why)
	return nil
}

// listenAddr reads dlv's "DAP server listening at: HOST:PORT" and keeps
// draining its stdout afterwards so that dlv never blocks writing to it.
func listenAddr(ctx context.Context, proc Process) (string, error) {
	found := make(chan string, 1)
	go func() {
		r := bufio.NewReader(proc)
		sent := false
		for {
			line, err := r.ReadString('\n')
			if !sent {
				if _, addr, ok := strings.Cut(line, "listening at:"); ok {
					found <- strings.TrimSpace(addr)
					sent = true
				}
			}
			if err != nil {
				if !sent {
					close(found)
				}
				return
			}
		}
	}()
	select {
	case addr, ok := <-found:
		if !ok {
			return "", io.ErrUnexpectedEOF
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", err
		}
		return addr, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// dialed is dlv: the process plus the connection to it.
type dialed struct {
	Process
	nc net.Conn
}

func (d *dialed) Close() error {
	d.nc.Close()
	return d.Process.Close()
}

func (d *dialed) StderrTail() string {
	if t, ok := d.Process.(stderrTailer); ok {
		return t.StderrTail()
	}
	return ""
}

// get finds a live session by id.
func (m *Manager) get(id string) (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s == nil {
		if m.ended[id] {
			return nil, grove.Errorf(grove.ErrNotFound, "debug session %s was stopped", id)
		}
		return nil, grove.Errorf(grove.ErrNotFound, "no debug session %q", id)
	}
	return s, nil
}

// Sessions lists the sessions, oldest first.
func (m *Manager) Sessions(ctx context.Context) []grove.DebugSession {
	m.mu.Lock()
	list := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		if s != nil {
			list = append(list, s)
		}
	}
	m.mu.Unlock()
	out := make([]grove.DebugSession, 0, len(list))
	for _, s := range list {
		info := s.info()
		info.Workspace = m.opt.Workspace
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out
}

// Stop ends a session: the program is terminated and the adapter killed.
// Stopping a stopped session is not an error.
func (m *Manager) Stop(ctx context.Context, id string) error {
	m.mu.Lock()
	s := m.sessions[id]
	if s == nil {
		ended := m.ended[id]
		m.mu.Unlock()
		if ended {
			return nil
		}
		return grove.Errorf(grove.ErrNotFound, "no debug session %q", id)
	}
	delete(m.sessions, id)
	m.ended[id] = true
	m.mu.Unlock()
	m.log.Info("debug session stopped", "session", id)
	s.shutdown(ctx)
	s.mu.Lock()
	if s.state != grove.DebugTerminated {
		s.state = grove.DebugTerminated
		s.notify()
	}
	s.mu.Unlock()
	return nil
}

// Close stops every session; the Manager starts no more.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.cancel()
	ids := make([]string, 0, len(m.sessions))
	for id, s := range m.sessions {
		if s != nil {
			ids = append(ids, id)
		}
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = m.Stop(ctx, id)
		}()
	}
	wg.Wait()
	return nil
}
