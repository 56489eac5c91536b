package tunnel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grove-dev/grove"
)

// Handler serves one endpoint. Its result is marshalled as the response's
// result (nil: an empty object). It should return when ctx is done.
type Handler func(ctx context.Context, payload json.RawMessage) (any, error)

// Dispatcher is the agent's side: it answers tool calls from its routes.
// Dispatch always produces exactly one tool_response.
type Dispatcher struct {
	Workspace string
	Log       *slog.Logger // nil discards
	// DefaultTimeout applies to calls without timeout_ms; MaxTimeout caps
	// every call. Defaults 60 s and 30 min.
	DefaultTimeout, MaxTimeout time.Duration
	// Grace is how long a handler may take after its deadline to return
	// its own answer (a command's partial output with timed_out) before
	// the dispatcher answers E_TIMEOUT for it. Default 2 s.
	Grace time.Duration

	mu       sync.RWMutex
	routes   map[string]Handler
	prefixes map[string]func(rest string) Handler

	cmu      sync.Mutex
	inflight map[string]*inflightCall
}

// inflightCall is a call being answered, for Cancel.
type inflightCall struct{ cancel context.CancelCauseFunc }

// errCallCancelled is the cause of a call's context cancelled by the
// server (TypeCancel).
var errCallCancelled = errors.New("tunnel: the call was cancelled")

// Handle adds (or replaces) the handler of endpoint.
func (d *Dispatcher) Handle(endpoint string, h Handler) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.routes == nil {
		d.routes = map[string]Handler{}
	}
	d.routes[endpoint] = h
}

// HandlePrefix routes every endpoint that starts with prefix and has no
// exact route to resolve(rest), rest being what follows the prefix. A nil
// Handler is no route (E_NOT_FOUND): resolve validates rest (an id's
// charset, the operation) and refuses anything else.
func (d *Dispatcher) HandlePrefix(prefix string, resolve func(rest string) Handler) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.prefixes == nil {
		d.prefixes = map[string]func(string) Handler{}
	}
	d.prefixes[prefix] = resolve
}

// route finds endpoint's handler: exact, else under the longest prefix.
func (d *Dispatcher) route(endpoint string) Handler {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if h := d.routes[endpoint]; h != nil {
		return h
	}
	best := ""
	for p := range d.prefixes {
		if strings.HasPrefix(endpoint, p) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return nil
	}
	return d.prefixes[best](endpoint[len(best):])
}

// track makes the context of call id, which Cancel(id) cancels; done
// forgets it.
func (d *Dispatcher) track(ctx context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &inflightCall{cancel: cancel}
	d.cmu.Lock()
	if d.inflight == nil {
		d.inflight = map[string]*inflightCall{}
	}
	d.inflight[id] = c
	d.cmu.Unlock()
	return ctx, func() {
		d.cmu.Lock()
		if d.inflight[id] == c {
			delete(d.inflight, id)
		}
		d.cmu.Unlock()
		cancel(nil)
	}
}

// Cancel cancels the handler of call id (TypeCancel): its context ends,
// a running command's process group is killed, and the call is still
// answered — by the handler, or with E_CANCELLED after Grace. It reports
// whether such a call was in flight.
func (d *Dispatcher) Cancel(id string) bool {
	d.cmu.Lock()
	c := d.inflight[id]
	d.cmu.Unlock()
	if c == nil {
		return false
	}
	c.cancel(errCallCancelled)
	return true
}

func (d *Dispatcher) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

func (d *Dispatcher) timeouts() (def, max, grace time.Duration) {
	def, max, grace = d.DefaultTimeout, d.MaxTimeout, d.Grace
	if def <= 0 {
		def = time.Minute
	}
	if max <= 0 {
		max = 30 * time.Minute
	}
	if grace <= 0 {
		grace = 2 * time.Second
	}
	return
}

// Dispatch answers one tool_call. It never panics and always returns a
// tool_response carrying m's correlation id.
func (d *Dispatcher) Dispatch(ctx context.Context, m Message) (resp Message) {
	ctx, done := d.track(ctx, m.CorrelationID)
	defer done()
	return d.dispatch(ctx, m)
}

// dispatch is Dispatch in a context already tracked for Cancel.
func (d *Dispatcher) dispatch(ctx context.Context, m Message) (resp Message) {
	start := time.Now()
	l := d.log().With("correlation_id", clip(m.CorrelationID, 100), "endpoint", clip(m.Endpoint, 200), "workspace", d.Workspace)
	resp = Message{Type: TypeToolResponse, CorrelationID: m.CorrelationID}
	defer func() {
		// Whatever happened above — even a panic in this function's own
		// bookkeeping — the call gets an answer.
		if p := recover(); p != nil {
			l.Error("tunnel: dispatcher panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp = Message{Type: TypeToolResponse, CorrelationID: m.CorrelationID, Error: &Error{Code: "E_INTERNAL", Message: "internal error"}}
		}
		l.Info("tunnel: response emitted", "success", resp.Success, "code", codeOf(resp), "duration_ms", time.Since(start).Milliseconds())
	}()
	l.Info("tunnel: call received", "timeout_ms", m.TimeoutMS)
	fail := func(err error) Message {
		resp.Success, resp.Result, resp.Error = false, nil, errorOf(err)
		return resp
	}
	if m.Type != TypeToolCall {
		return fail(grove.Errorf(grove.ErrInvalid, "message type %q is not a tool_call", m.Type))
	}
	h := d.route(m.Endpoint)
	if h == nil {
		l.Warn("tunnel: unknown endpoint")
		return fail(grove.Errorf(grove.ErrNotFound, "unknown endpoint %q", clip(m.Endpoint, 200)))
	}
	l.Debug("tunnel: handler selected")

	def, max, grace := d.timeouts()
	timeout := def
	if m.TimeoutMS > 0 {
		timeout = time.Duration(m.TimeoutMS) * time.Millisecond
	}
	timeout = min(timeout, max)
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	type outcome struct {
		v   any
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				l.Error("tunnel: handler panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				o = outcome{err: fmt.Errorf("handler panic: %v", p)}
			}
			done <- o
		}()
		l.Info("tunnel: handler started")
		o.v, o.err = h(hctx, m.Payload)
	}()

	var o outcome
	select {
	case o = <-done:
	case <-hctx.Done():
		// The handler has Grace to answer for itself (a command killed at
		// its timeout returns its output); then the dispatcher answers.
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case o = <-done:
		case <-t.C:
			if errors.Is(context.Cause(ctx), errCallCancelled) {
				l.Warn("tunnel: cancelled handler did not return")
				return fail(&Error{Code: "E_CANCELLED", Message: "the call was cancelled"})
			}
			if ctx.Err() != nil {
				l.Warn("tunnel: call abandoned: connection closing")
				return fail(grove.Errorf(grove.ErrUnavailable, "the tunnel agent is shutting down"))
			}
			l.Warn("tunnel: handler timeout", "timeout_ms", timeout.Milliseconds())
			return fail(grove.Errorf(grove.ErrTimeout, "%s did not answer within %s", m.Endpoint, timeout))
		}
	}
	if o.err != nil && errors.Is(context.Cause(ctx), errCallCancelled) && errors.Is(o.err, context.Canceled) {
		o.err = &Error{Code: "E_CANCELLED", Message: "the call was cancelled"}
	}
	if o.err != nil {
		l.Warn("tunnel: handler exception", "code", errorOf(o.err).Code, "err", clip(o.err.Error(), 512))
		return fail(o.err)
	}
	if o.v == nil {
		o.v = struct{}{}
	}
	b, err := json.Marshal(o.v)
	if err != nil {
		l.Error("tunnel: result does not marshal", "err", err)
		return fail(err)
	}
	l.Info("tunnel: handler completed", "duration_ms", time.Since(start).Milliseconds())
	resp.Success, resp.Result = true, b
	return resp
}

func codeOf(m Message) string {
	if m.Error != nil {
		return m.Error.Code
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Agent is one registration on one connection.
type Agent struct {
	Workspace string
	DirLabel  string
	ReadOnly  bool
	D         *Dispatcher
	Log       *slog.Logger
}

// ErrRefused is a registration the server refused (its Error says why);
// reconnecting will not help.
var ErrRefused = errors.New("tunnel: registration refused")

// Serve registers on c and answers calls until c fails or ctx ends. It
// returns nil only when ctx ends.
func (a *Agent) Serve(ctx context.Context, c Conn) error {
	l := a.Log
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	l = l.With("workspace", a.Workspace)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { <-ctx.Done(); c.Close("agent stopping") }()

	var wmu sync.Mutex
	write := func(m Message) error {
		wmu.Lock()
		defer wmu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return c.Write(wctx, m)
	}
	if err := write(Message{Type: TypeRegister, Workspace: a.Workspace, DirLabel: a.DirLabel, ReadOnly: a.ReadOnly}); err != nil {
		return err
	}
	m, err := c.Read(ctx)
	if err != nil {
		return err
	}
	switch m.Type {
	case TypeRegistered:
		l.Info("tunnel: registered", "read_only", a.ReadOnly)
	case TypeError:
		if m.Error != nil {
			return fmt.Errorf("%w: %s", ErrRefused, m.Error)
		}
		return ErrRefused
	default:
		return fmt.Errorf("tunnel: want registered, got %q", m.Type)
	}

	// A server that falls silent (a laptop's network changed under a
	// half-open connection) is noticed after three of its heartbeats, and
	// Run reconnects.
	var lastSeen atomic.Int64
	lastSeen.Store(time.Now().UnixNano())
	if m.HeartbeatMS > 0 {
		every := time.Duration(m.HeartbeatMS) * time.Millisecond
		go func() {
			tk := time.NewTicker(every)
			defer tk.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
				}
				if time.Since(time.Unix(0, lastSeen.Load())) > 3*every {
					l.Warn("tunnel: the server fell silent; closing to reconnect")
					c.Close("server silent")
					return
				}
			}
		}()
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		m, err := c.Read(ctx)
		lastSeen.Store(time.Now().UnixNano())
		if errors.Is(err, ErrMalformed) {
			l.Warn("tunnel: malformed message ignored", "err", err)
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		switch m.Type {
		case TypePing:
			if err := write(Message{Type: TypePong}); err != nil {
				return err
			}
		case TypePong:
		case TypeCancel:
			// No answer of its own: the cancelled call still gets its
			// one tool_response.
			if a.D.Cancel(m.CorrelationID) {
				l.Info("tunnel: call cancelled by the server", "correlation_id", clip(m.CorrelationID, 100))
			} else {
				l.Debug("tunnel: cancel for no call in flight", "correlation_id", clip(m.CorrelationID, 100))
			}
		case TypeToolCall:
			// Tracked before the next message is read, so a cancel that
			// follows at once finds the call.
			cctx, done := a.D.track(ctx, m.CorrelationID)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer done()
				resp := a.D.dispatch(cctx, m)
				if err := write(resp); err != nil {
					l.Warn("tunnel: response not sent", "correlation_id", m.CorrelationID, "endpoint", m.Endpoint, "err", err)
				}
			}()
		default:
			if m.CorrelationID != "" {
				// Anything else that expects an answer gets one.
				resp := a.D.Dispatch(ctx, m)
				if err := write(resp); err != nil {
					return err
				}
				continue
			}
			l.Warn("tunnel: unexpected message ignored", "type", clip(m.Type, 64))
		}
	}
}

// WorkspaceLogger is l with workspace=ws on every line that does not
// already carry it: the reconnect loop's lines as well as the
// dispatcher's, which add it themselves.
func WorkspaceLogger(l *slog.Logger, ws string) *slog.Logger {
	return slog.New(&wsHandler{h: l.Handler(), ws: ws})
}

type wsHandler struct {
	h   slog.Handler
	ws  string
	has bool // an attribute named workspace was added through WithAttrs
	grp bool // inside a group: the attribute would land in it
}

func (w *wsHandler) Enabled(ctx context.Context, lv slog.Level) bool { return w.h.Enabled(ctx, lv) }

func (w *wsHandler) Handle(ctx context.Context, r slog.Record) error {
	if !w.has && !w.grp {
		found := false
		r.Attrs(func(a slog.Attr) bool {
			found = a.Key == "workspace"
			return !found
		})
		if !found {
			r = r.Clone()
			r.AddAttrs(slog.String("workspace", w.ws))
		}
	}
	return w.h.Handle(ctx, r)
}

func (w *wsHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *w
	c.h = w.h.WithAttrs(as)
	for _, a := range as {
		if a.Key == "workspace" && !w.grp {
			c.has = true
		}
	}
	return &c
}

func (w *wsHandler) WithGroup(name string) slog.Handler {
	c := *w
	c.h = w.h.WithGroup(name)
	c.grp = true
	return &c
}
