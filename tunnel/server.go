package tunnel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grove-dev/grove"
)

// Registry is the server's side: the live tunnels, one per (user,
// workspace name), and calls over them. It is safe for concurrent use.
type Registry struct {
	// Heartbeat is how often the server pings each agent; a tunnel from
	// which nothing (pong or otherwise) arrived for two heartbeats is dead.
	// Default 15 s.
	Heartbeat time.Duration
	// Grace is how long past a call's timeout the server waits for the
	// agent's own answer before failing the call with ErrTimeout (the
	// agent answers a timeout itself; this covers one that cannot).
	// Default 5 s.
	Grace time.Duration
	// MaxPerUser bounds one user's live tunnels. Default 16.
	MaxPerUser int
	Log        *slog.Logger
	// Cluster, when set, shares the tunnels with the other server
	// processes (redis.go): a call for a tunnel another process holds is
	// forwarded to it, and List includes theirs. Set it before serving
	// (NewCluster does).
	Cluster *Cluster

	mu      sync.Mutex
	tunnels map[key]*Tunnel
}

type key struct{ user, name string }

// Info describes a live tunnel.
type Info struct {
	Workspace string    `json:"workspace"`
	DirLabel  string    `json:"dir_label,omitempty"`
	ReadOnly  bool      `json:"read_only"`
	Connected time.Time `json:"connected_at"`
}

// Tunnel is one registered agent connection.
type Tunnel struct {
	info Info
	user string
	c    Conn
	log  *slog.Logger

	wmu      sync.Mutex
	mu       sync.Mutex
	pending  map[string]chan Message
	dead     chan struct{}
	deadOnce sync.Once
	why      atomic.Value // string: why it died
	lastSeen atomic.Int64 // unix nanoseconds of the last message received
	pinging  atomic.Bool
}

func (r *Registry) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

func (r *Registry) heartbeat() time.Duration {
	if r.Heartbeat <= 0 {
		return 15 * time.Second
	}
	return r.Heartbeat
}

// Serve runs one agent connection for user until it ends: it reads the
// registration, replaces any tunnel of the same (user, name), answers
// pings, sends heartbeats and routes responses to their calls. It closes
// c before returning.
func (r *Registry) Serve(ctx context.Context, user string, c Conn) error {
	defer c.Close("tunnel closed")
	hb := r.heartbeat()
	rctx, cancel := context.WithTimeout(ctx, 2*hb)
	m, err := c.Read(rctx)
	cancel()
	if err != nil {
		return err
	}
	refuse := func(err error) error {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = c.Write(wctx, Message{Type: TypeError, Error: errorOf(err)})
		return err
	}
	if m.Type != TypeRegister {
		return refuse(grove.Errorf(grove.ErrInvalid, "the first message must be register, not %q", clip(m.Type, 64)))
	}
	if !ValidName(m.Workspace) {
		return refuse(grove.Errorf(grove.ErrInvalid, "workspace name must be 1 to 64 letters, digits, '.', '_' or '-'"))
	}
	t := &Tunnel{
		info:    Info{Workspace: m.Workspace, DirLabel: clip(m.DirLabel, 256), ReadOnly: m.ReadOnly, Connected: time.Now().UTC()},
		user:    user,
		c:       c,
		pending: map[string]chan Message{},
		dead:    make(chan struct{}),
	}
	t.log = r.log().With("user", user, "workspace", m.Workspace, "workspace_id", WorkspaceID(m.Workspace))
	t.lastSeen.Store(time.Now().UnixNano())
	if err := r.add(t); err != nil {
		return refuse(err)
	}
	defer r.remove(t)
	if r.Cluster != nil {
		// Outside the registry's lock: Redis may be slow.
		r.Cluster.announce(t)
	}
	if err := t.write(ctx, Message{Type: TypeRegistered, HeartbeatMS: hb.Milliseconds()}); err != nil {
		t.kill("registration not acknowledged")
		return err
	}
	t.log.Info("tunnel: registered", "read_only", m.ReadOnly, "dir_label", t.info.DirLabel)

	ctx, cancel = context.WithCancel(ctx)
	defer cancel()
	go t.heartbeats(ctx, hb)
	go func() {
		select {
		case <-ctx.Done():
			t.kill("server closing the request")
		case <-t.dead:
		}
	}()
	for {
		m, err := c.Read(ctx)
		if errors.Is(err, ErrMalformed) {
			t.lastSeen.Store(time.Now().UnixNano())
			t.log.Warn("tunnel: malformed message from the agent", "err", err)
			continue
		}
		if err != nil {
			t.kill("connection lost")
			t.log.Info("tunnel: disconnected", "why", t.reason())
			return nil
		}
		t.lastSeen.Store(time.Now().UnixNano())
		switch m.Type {
		case TypePing:
			// Answered in line: an agent that pings without reading
			// stalls only its own connection.
			if err := t.write(ctx, Message{Type: TypePong}); err != nil {
				t.kill("pong failed")
			}
		case TypePong:
		case TypeToolResponse:
			t.mu.Lock()
			ch := t.pending[m.CorrelationID]
			delete(t.pending, m.CorrelationID)
			t.mu.Unlock()
			if ch == nil {
				// A call its caller cancelled, or one that timed out.
				t.log.Info("tunnel: response to no pending call", "correlation_id", clip(m.CorrelationID, 64))
				continue
			}
			ch <- m
		default:
			t.log.Warn("tunnel: unexpected message from the agent", "type", clip(m.Type, 64))
		}
	}
}

func (r *Registry) add(t *Tunnel) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tunnels == nil {
		r.tunnels = map[key]*Tunnel{}
	}
	k := key{t.user, t.info.Workspace}
	old := r.tunnels[k]
	if old == nil {
		max := r.MaxPerUser
		if max <= 0 {
			max = 16
		}
		n := 0
		for k2 := range r.tunnels {
			if k2.user == t.user {
				n++
			}
		}
		if n >= max {
			return grove.Errorf(grove.ErrResourceLimit, "at most %d tunnels per user", max)
		}
	}
	r.tunnels[k] = t
	if old != nil {
		old.log.Info("tunnel: replaced by a new connection")
		old.kill("replaced by a newer connection")
	}
	return nil
}

func (r *Registry) remove(t *Tunnel) {
	r.mu.Lock()
	k := key{t.user, t.info.Workspace}
	held := r.tunnels[k] == t
	if held {
		delete(r.tunnels, k)
	}
	r.mu.Unlock()
	if held && r.Cluster != nil {
		r.Cluster.withdraw(t) // outside the lock: Redis may be slow
	}
}

// evict ends the local tunnel (user, name), if any: another server holds
// a newer registration of it.
func (r *Registry) evict(user, name string) {
	if t := r.get(user, name); t != nil {
		t.log.Info("tunnel: replaced by a connection to another server")
		t.kill("replaced by a newer connection to another server")
	}
}

// local returns the tunnels held by this process.
func (r *Registry) local() []*Tunnel {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Tunnel, 0, len(r.tunnels))
	for _, t := range r.tunnels {
		if !t.isDead() {
			out = append(out, t)
		}
	}
	return out
}

// Lookup returns user's live tunnel name, held by this process or (with a
// Cluster) by another; ok is false when there is none.
func (r *Registry) Lookup(ctx context.Context, user, name string) (info Info, ok bool, err error) {
	if t := r.get(user, name); t != nil && !t.isDead() {
		return t.info, true, nil
	}
	if r.Cluster == nil {
		return Info{}, false, nil
	}
	return r.Cluster.lookup(ctx, user, name)
}

// ListAll is List with the tunnels of the other servers of the Cluster.
// When Redis cannot be reached it logs that and returns this process's.
func (r *Registry) ListAll(ctx context.Context, user string) []Info {
	out := r.List(user)
	if r.Cluster == nil {
		return out
	}
	remote, err := r.Cluster.list(ctx, user)
	if err != nil {
		r.log().Warn("tunnel: cannot list the other servers' tunnels", "user", user, "err", err)
		return out
	}
	seen := map[string]bool{}
	for _, i := range out {
		seen[i.Workspace] = true
	}
	for _, i := range remote {
		if !seen[i.Workspace] {
			seen[i.Workspace] = true
			out = append(out, i)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Workspace < out[j].Workspace })
	return out
}

// List returns user's live tunnels held by this process, by name.
func (r *Registry) List(user string) []Info {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Info
	for k, t := range r.tunnels {
		if k.user == user && !t.isDead() {
			out = append(out, t.info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Workspace < out[j].Workspace })
	return out
}

func (r *Registry) get(user, name string) *Tunnel {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tunnels[key{user, name}]
}

// Call sends endpoint with payload to user's tunnel name and waits for the
// agent's answer. It fails with ErrNotFound when user has no such tunnel
// (another user's is no different), with ErrUnavailable as soon as the
// connection dies or is replaced while the call is in flight, and with
// ErrTimeout when no answer came within timeout plus the grace period. An
// agent's failed answer is a Response with Success false, not an error.
//
// When ctx ends first, the agent is sent a cancel for the call and Call
// returns ctx's error at once. With a Cluster, a tunnel held by another
// server process is called through it (redis.go).
func (r *Registry) Call(ctx context.Context, user, name, endpoint string, payload json.RawMessage, timeout time.Duration) (*Response, error) {
	if t := r.get(user, name); (t == nil || t.isDead()) && r.Cluster != nil {
		return r.Cluster.forward(ctx, user, name, endpoint, payload, r.timeout(timeout))
	}
	return r.callLocal(ctx, user, name, endpoint, payload, timeout)
}

func (r *Registry) timeout(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Minute
	}
	return d
}

func (r *Registry) grace() time.Duration {
	if r.Grace <= 0 {
		return 5 * time.Second
	}
	return r.Grace
}

// callLocal is Call on a tunnel of this process; trace is added to the
// call's log lines (a forwarded call's origin).
func (r *Registry) callLocal(ctx context.Context, user, name, endpoint string, payload json.RawMessage, timeout time.Duration, trace ...any) (*Response, error) {
	t := r.get(user, name)
	if t == nil || t.isDead() {
		return nil, grove.Errorf(grove.ErrNotFound, "no tunnel named %q is connected", clip(name, 64))
	}
	timeout = r.timeout(timeout)
	grace := r.grace()
	id := newID()
	l := t.log.With("correlation_id", id, "endpoint", endpoint)
	if len(trace) > 0 {
		l = l.With(trace...)
	}
	ch := make(chan Message, 1)
	t.mu.Lock()
	t.pending[id] = ch
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.pending, id)
		t.mu.Unlock()
	}()
	start := time.Now()
	l.Info("tunnel: call sent", "timeout_ms", timeout.Milliseconds())
	// Not the caller's context: a WebSocket write cancelled half-way
	// closes the connection, and a caller giving up must not take the
	// tunnel down with it.
	if err := t.write(context.WithoutCancel(ctx), Message{Type: TypeToolCall, CorrelationID: id, Endpoint: endpoint, Payload: payload, TimeoutMS: timeout.Milliseconds()}); err != nil {
		t.kill("write failed")
		l.Warn("tunnel: call not sent", "err", err)
		return nil, grove.Errorf(grove.ErrUnavailable, "tunnel %q: connection lost", name)
	}
	timer := time.NewTimer(timeout + grace)
	defer timer.Stop()
	select {
	case m := <-ch:
		l.Info("tunnel: response received", "success", m.Success, "code", codeOf(m), "duration_ms", time.Since(start).Milliseconds())
		return &Response{CorrelationID: id, Success: m.Success, Result: m.Result, Error: m.Error}, nil
	case <-t.dead:
		l.Warn("tunnel: call failed: tunnel gone", "why", t.reason())
		return nil, grove.Errorf(grove.ErrUnavailable, "tunnel %q: %s", name, t.reason())
	case <-timer.C:
		l.Warn("tunnel: call timed out without an answer", "timeout_ms", timeout.Milliseconds())
		return nil, grove.Errorf(grove.ErrTimeout, "tunnel %q: no answer to %s within %s", name, clip(endpoint, 100), timeout+grace)
	case <-ctx.Done():
		// The agent stops the handler (a command's process group is
		// killed); its one tool_response then finds no pending call and
		// is dropped. The caller does not wait for it.
		l.Info("tunnel: call cancelled by its caller; cancel sent", "duration_ms", time.Since(start).Milliseconds())
		go func() {
			if err := t.write(context.WithoutCancel(ctx), Message{Type: TypeCancel, CorrelationID: id}); err != nil {
				l.Warn("tunnel: cancel not sent", "err", err)
			}
		}()
		return nil, ctx.Err()
	}
}

func (t *Tunnel) write(ctx context.Context, m Message) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.isDead() {
		return grove.Errorf(grove.ErrUnavailable, "tunnel closed")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return t.c.Write(ctx, m)
}

func (t *Tunnel) heartbeats(ctx context.Context, every time.Duration) {
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.dead:
			return
		case <-tk.C:
		}
		if time.Since(time.Unix(0, t.lastSeen.Load())) > 2*every {
			t.log.Warn("tunnel: two heartbeats missed")
			t.kill("heartbeats missed")
			return
		}
		if !t.pinging.CompareAndSwap(false, true) {
			continue // the last ping is still being written
		}
		go func() {
			defer t.pinging.Store(false)
			if err := t.write(ctx, Message{Type: TypePing}); err != nil {
				t.kill("ping failed")
			}
		}()
	}
}

// kill marks the tunnel dead (failing every call in flight at once) and
// closes its connection.
func (t *Tunnel) kill(why string) {
	t.deadOnce.Do(func() {
		t.why.Store(why)
		close(t.dead)
		go t.c.Close(why)
	})
}

func (t *Tunnel) isDead() bool {
	select {
	case <-t.dead:
		return true
	default:
		return false
	}
}

func (t *Tunnel) reason() string {
	s, _ := t.why.Load().(string)
	if s == "" {
		return "connection lost"
	}
	return s
}

func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
