package engine

import (
	"context"
	"errors"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/debug"
	"github.com/grove-dev/grove/driver"
)

// Debugging (grove.Debugger): each workspace with a debug call gets a
// debug.Manager over a Host that is the workspace's runtime. The adapter
// (lldb-dap, debugpy, ...) and the program are agent code: they run only
// inside the runtime, spawned through driver.Spawner under the same
// sandbox, identity and limits as any command (docs/SECURITY.md); the host
// only exchanges DAP bytes with the adapter over its stdin and stdout, and
// reads workspace files (launch.json) through the provider's confined
// reads.
//
// Locking. DebugStart takes the workspace's exclusive lock — starting the
// program is a mutating operation — and only for the launch: it waits for
// running writers, and the workspace cannot be released or destroyed
// under a half-made session. It does not hold the lock for the session's
// life: a session lasts minutes or hours, mostly paused, and an exclusive
// lock held that long would block every command, read or write, and the
// release and destroy that end the session. So a debuggee, once running,
// is a writer outside the lock, as the agent that started it intends; the
// other debug operations take no workspace lock (they only talk to the
// adapter). Release, Destroy, eviction and Close end a workspace's
// sessions, under the exclusive lock they hold anyway.

// Bounds on live debug sessions.
const (
	DebugSessionsPerWorkspace = 4
	DebugSessionsPerUser      = 16
)

// debugState is the engine's debug managers, by workspace id.
type debugState struct {
	mu       sync.Mutex
	ws       map[string]*wsDebug
	starting map[string]int // user -> starts under way (reserved sessions)
	closed   bool
}

type wsDebug struct {
	mgr  *debug.Manager
	host *runtimeHost
	user string
	// ctx bounds the life of the adapters spawned for this workspace: it
	// ends when the workspace's sessions are closed.
	ctx    context.Context
	cancel context.CancelFunc
}

var _ grove.Debugger = (*Engine)(nil)

// debugger returns ws's manager, making it (and the runtime) on first use.
// A workspace whose runtime cannot spawn interactive processes cannot
// debug: grove.ErrNotSupported.
func (e *Engine) debugger(ctx context.Context, ws *grove.Workspace) (*wsDebug, error) {
	sp, ok := e.drv.(driver.Spawner)
	if !ok {
		return nil, grove.Errorf(grove.ErrNotSupported, "the %s runtime cannot run debug adapters (no interactive processes)", e.drv.Kind())
	}
	e.dbg.mu.Lock()
	if d := e.dbg.ws[ws.ID]; d != nil {
		e.dbg.mu.Unlock()
		return d, nil
	}
	closed := e.dbg.closed
	e.dbg.mu.Unlock()
	if closed {
		return nil, grove.Errorf(grove.ErrUnavailable, "the engine is closed")
	}
	if err := e.requirePresent(ctx, ws); err != nil {
		return nil, err
	}
	if err := e.ensureRuntime(ctx, ws); err != nil {
		return nil, err
	}
	root := ws.LocalPath
	if rt, err := e.drv.Get(ctx, ws.ID); err == nil && rt.Spec.WorkDir != "" {
		// Local runtimes (bwrap, docker) mount the workspace at its host
		// path; this is where the adapter sees it.
		root = rt.Spec.WorkDir
	}
	lctx, cancel := context.WithCancel(context.Background())
	h := &runtimeHost{e: e, ws: ws, sp: sp, root: root, life: lctx}
	d := &wsDebug{host: h, user: ws.User, ctx: lctx, cancel: cancel}
	d.mgr = debug.NewManager(h, debug.Options{MaxSessions: DebugSessionsPerWorkspace, Log: e.log.With("workspace", ws.ID), Now: e.now})

	e.dbg.mu.Lock()
	defer e.dbg.mu.Unlock()
	if e.dbg.closed {
		cancel()
		d.mgr.Close()
		return nil, grove.Errorf(grove.ErrUnavailable, "the engine is closed")
	}
	if other := e.dbg.ws[ws.ID]; other != nil {
		cancel()
		d.mgr.Close()
		return other, nil
	}
	if e.dbg.ws == nil {
		e.dbg.ws = map[string]*wsDebug{}
	}
	e.dbg.ws[ws.ID] = d
	return d, nil
}

// existingDebugger returns ws's manager if it has one.
func (e *Engine) existingDebugger(id string) *wsDebug {
	e.dbg.mu.Lock()
	defer e.dbg.mu.Unlock()
	return e.dbg.ws[id]
}

// closeDebug ends workspace id's sessions: its adapters and programs die.
// Release, Destroy and eviction call it under the exclusive lock.
func (e *Engine) closeDebug(id string) {
	e.dbg.mu.Lock()
	d := e.dbg.ws[id]
	delete(e.dbg.ws, id)
	e.dbg.mu.Unlock()
	if d == nil {
		return
	}
	if err := d.mgr.Close(); err != nil {
		e.log.Warn("close debug sessions", "workspace", id, "err", err)
	}
	d.cancel()
}

// Close ends every debug session the engine runs. The engine must not be
// used for debugging afterwards; its other methods keep working.
func (e *Engine) Close() error {
	e.dbg.mu.Lock()
	e.dbg.closed = true
	ids := make([]string, 0, len(e.dbg.ws))
	for id := range e.dbg.ws {
		ids = append(ids, id)
	}
	e.dbg.mu.Unlock()
	for _, id := range ids {
		e.closeDebug(id)
	}
	return nil
}

// live counts sessions that have not terminated.
func live(ss []grove.DebugSession) int {
	n := 0
	for _, s := range ss {
		if s.State != grove.DebugTerminated {
			n++
		}
	}
	return n
}

// reserveSession checks the per-workspace and per-user bounds and
// reserves a place for a session being started; release it when the start
// is over (the session then counts as live or does not exist).
func (e *Engine) reserveSession(ctx context.Context, ws *grove.Workspace, d *wsDebug) (release func(), err error) {
	e.dbg.mu.Lock()
	defer e.dbg.mu.Unlock()
	mine, user := 0, 0
	for id, o := range e.dbg.ws {
		if o.user != ws.User {
			continue
		}
		n := live(o.mgr.Sessions(ctx))
		user += n
		if id == ws.ID {
			mine = n
		}
	}
	if mine >= DebugSessionsPerWorkspace {
		return nil, grove.Errorf(grove.ErrResourceLimit, "workspace %s has %d live debug sessions, the most allowed; stop one first", ws.ID, mine)
	}
	if user+e.dbg.starting[ws.User] >= DebugSessionsPerUser {
		return nil, grove.Errorf(grove.ErrResourceLimit, "you have %d live debug sessions, the most allowed; stop one first", user+e.dbg.starting[ws.User])
	}
	if e.dbg.starting == nil {
		e.dbg.starting = map[string]int{}
	}
	e.dbg.starting[ws.User]++
	return func() {
		e.dbg.mu.Lock()
		defer e.dbg.mu.Unlock()
		if e.dbg.starting[ws.User]--; e.dbg.starting[ws.User] <= 0 {
			delete(e.dbg.starting, ws.User)
		}
	}, nil
}

// debugOp resolves workspace id and its manager for the operations after
// DebugStart; a debug call keeps the runtime from looking idle.
func (e *Engine) debugOp(ctx context.Context, id string) (*wsDebug, error) {
	ws, err := e.workspace(ctx, id)
	if err != nil {
		return nil, err
	}
	d, err := e.debugger(ctx, ws)
	if err != nil {
		return nil, err
	}
	e.lastExec.Store(ws.ID, e.now())
	return d, nil
}

// DebugContext implements grove.Debugger.
func (e *Engine) DebugContext(ctx context.Context, id string) (*grove.DebugContext, error) {
	d, err := e.debugOp(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.mgr.Context(ctx)
}

// DebugStart implements grove.Debugger; see the locking note above.
func (e *Engine) DebugStart(ctx context.Context, id string, req grove.DebugStartRequest) (*grove.DebugSession, error) {
	ws, unlock, err := e.locked(ctx, id, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	d, err := e.debugger(ctx, ws)
	if err != nil {
		return nil, err
	}
	release, err := e.reserveSession(ctx, ws, d)
	if err != nil {
		return nil, err
	}
	defer release()
	e.lastExec.Store(ws.ID, e.now())
	s, err := d.mgr.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	// The workspace is in use again, and the program may write from now
	// on (where the workspace is writable).
	class := grove.ClassRead
	if ws.Capabilities().Writable {
		class = grove.ClassWrite
	}
	e.afterExec(ctx, ws, grove.ExecRequest{Class: class}, &grove.ExecResult{}, nil)
	return s, nil
}

// DebugBreakpoints implements grove.Debugger.
func (e *Engine) DebugBreakpoints(ctx context.Context, id string, req grove.DebugBreakpointsRequest) (*grove.DebugBreakpointsResult, error) {
	d, err := e.debugOp(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.mgr.Breakpoints(ctx, req)
}

// DebugContinue implements grove.Debugger.
func (e *Engine) DebugContinue(ctx context.Context, id string, req grove.DebugContinueRequest) (*grove.DebugSnapshot, error) {
	d, err := e.debugOp(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.mgr.Continue(ctx, req)
}

// DebugStep implements grove.Debugger.
func (e *Engine) DebugStep(ctx context.Context, id string, req grove.DebugStepRequest) (*grove.DebugSnapshot, error) {
	d, err := e.debugOp(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.mgr.Step(ctx, req)
}

// DebugSnapshot implements grove.Debugger.
func (e *Engine) DebugSnapshot(ctx context.Context, id string, req grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	d, err := e.debugOp(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.mgr.Snapshot(ctx, req)
}

// DebugEvaluate implements grove.Debugger.
func (e *Engine) DebugEvaluate(ctx context.Context, id string, req grove.DebugEvaluateRequest) (*grove.DebugEvaluation, error) {
	d, err := e.debugOp(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.mgr.Evaluate(ctx, req)
}

// DebugSessions implements grove.Debugger. A workspace nobody debugged
// has none (and gets no runtime for asking).
func (e *Engine) DebugSessions(ctx context.Context, id string) ([]grove.DebugSession, error) {
	ws, err := e.workspace(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, ok := e.drv.(driver.Spawner); !ok {
		return nil, grove.Errorf(grove.ErrNotSupported, "the %s runtime cannot run debug adapters (no interactive processes)", e.drv.Kind())
	}
	d := e.existingDebugger(ws.ID)
	if d == nil {
		return []grove.DebugSession{}, nil
	}
	ss := d.mgr.Sessions(ctx)
	if ss == nil {
		ss = []grove.DebugSession{}
	}
	return ss, nil
}

// DebugStop implements grove.Debugger.
func (e *Engine) DebugStop(ctx context.Context, id, session string) error {
	d, err := e.debugOp(ctx, id)
	if err != nil {
		return err
	}
	return d.mgr.Stop(ctx, session)
}

// runtimeHost is debug.Host over a workspace's runtime.
type runtimeHost struct {
	e    *Engine
	ws   *grove.Workspace
	sp   driver.Spawner
	root string
	// life bounds spawned adapters: they live until the workspace's
	// sessions are closed, not as long as the request that started them.
	life context.Context
}

var _ debug.Host = (*runtimeHost)(nil)

// Root implements debug.Host: the workspace as the runtime sees it.
func (h *runtimeHost) Root() string { return h.root }

// env is the environment of adapter processes: the engine's sandbox PATH
// unless the caller names one.
func (h *runtimeHost) env(extra map[string]string) map[string]string {
	env := maps.Clone(extra)
	if _, set := env["PATH"]; h.e.cfg.SandboxPath != "" && !set {
		if env == nil {
			env = map[string]string{}
		}
		env["PATH"] = h.e.cfg.SandboxPath
	}
	return env
}

// Run implements debug.Host: a short read command in the runtime (adapter
// probes: `lldb-dap --version`, `python3 -c 'import debugpy'`). It takes
// no workspace lock, as the engine's own git reads in the runtime do not:
// the manager may probe while DebugStart holds the exclusive lock.
func (h *runtimeHost) Run(ctx context.Context, argv []string, timeout time.Duration) (string, string, int, error) {
	res, err := h.e.git(h.ws).Exec(ctx, h.ws.ID, grove.ExecRequest{
		Argv: argv, Class: grove.ClassRead, Timeout: timeout, Env: h.env(nil), MaxOutput: 1 << 20,
	})
	if err != nil {
		return "", "", -1, err
	}
	return string(res.Stdout), string(res.Stderr), res.ExitCode, nil
}

// Spawn implements debug.Host: the adapter, a long-lived process in the
// runtime. ctx bounds the start only; the process lives until the
// manager closes it or the workspace's sessions end (closeDebug).
func (h *runtimeHost) Spawn(ctx context.Context, argv []string, env map[string]string, dir string) (debug.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := h.e.requirePresent(ctx, h.ws); err != nil {
		return nil, err
	}
	if err := h.e.ensureRuntime(ctx, h.ws); err != nil {
		return nil, err
	}
	class := grove.ClassWrite // the debuggee may write
	if !h.ws.Capabilities().Writable {
		class = grove.ClassRead // and cannot, where the workspace is mounted read-only
	}
	// The process lives as long as the workspace's sessions (life); ctx
	// bounds only the start: ending it while the driver still sets the
	// process up kills the process.
	pctx, cancel := context.WithCancel(h.life)
	detach := context.AfterFunc(ctx, cancel)
	p, err := h.sp.Spawn(pctx, h.ws.ID, grove.ExecRequest{
		Argv: argv, Env: h.env(env), Dir: dir, Class: class, MaxOutput: 64 << 10,
	})
	if !detach() || err != nil {
		cancel()
		if p != nil {
			p.Close()
		}
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	return adapterProc{p: p, cancel: cancel}, nil
}

// ReadFile implements debug.Host through the provider's confined reads.
func (h *runtimeHost) ReadFile(ctx context.Context, rel string) ([]byte, error) {
	return h.e.prov.ReadFile(ctx, h.ws, rel, DefaultReadMax)
}

// adapterProc is a driver.Process as debug.Process.
type adapterProc struct {
	p      driver.Process
	cancel context.CancelFunc // frees the process's context
}

func (a adapterProc) Read(b []byte) (int, error) {
	n, err := a.p.Stdout().Read(b)
	if err != nil && !errors.Is(err, io.EOF) && n == 0 {
		// A closed process reads as ended.
		return 0, io.EOF
	}
	return n, err
}
func (a adapterProc) Write(b []byte) (int, error) { return a.p.Stdin().Write(b) }
func (a adapterProc) Close() error {
	err := a.p.Close()
	a.cancel()
	return err
}

// StderrTail is the end of the adapter's stderr (kept bounded by the
// driver), which says why an adapter died better than end of file does.
func (a adapterProc) StderrTail() string {
	b := a.p.Stderr()
	if len(b) > 4<<10 {
		b = b[len(b)-4<<10:]
	}
	return string(b)
}
