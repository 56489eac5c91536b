package tunnel

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/grove-dev/grove"
)

// Several `grove serve` processes behind one load balancer share their
// tunnels through Redis (docs/TUNNEL.md, "Several servers"):
//
//   - Each process has a random server id and subscribes to its own
//     channel, grove:tunnel:srv:<id>. Everything one server says to
//     another — a call, its acknowledgement, its response, a cancel, an
//     eviction — is a fwdMsg published on the receiver's channel.
//   - A registration records (user, name) → "<server id>\n<Info JSON>" at
//     grove:tunnel:t:<hex user>:<name> with a TTL (30 s) that the holder
//     refreshes every 10 s, and adds the name to the user's index set
//     grove:tunnel:u:<hex user>. A disconnection deletes the record if it
//     is still this server's. A registration that replaces another
//     server's tells that server to close its older connection.
//   - A call for a tunnel this process does not hold reads the record and
//     publishes the call on the holder's channel. PUBLISH counts the
//     receivers: none means the holder is gone, and the call fails with
//     E_UNAVAILABLE at once (its record expires with its TTL). The holder
//     acknowledges at once and answers when the agent does; the caller
//     fails with E_UNAVAILABLE when no acknowledgement comes within 5 s
//     or the holder's subscription disappears while it waits (checked
//     every second), and sends a cancel when its caller gives up.
//   - Without a record the tunnel is not connected anywhere: E_NOT_FOUND,
//     as on one server.

// fwdMsg is one message between servers.
type fwdMsg struct {
	Kind string `json:"kind"` // "call", "ack", "response", "cancel", "evict"
	ID   string `json:"id,omitempty"`
	From string `json:"from,omitempty"` // the sender's server id

	User      string          `json:"user,omitempty"`
	Name      string          `json:"name,omitempty"`
	Endpoint  string          `json:"endpoint,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	TimeoutMS int64           `json:"timeout_ms,omitempty"`

	Response *Response `json:"response,omitempty"`
	Error    *Error    `json:"error,omitempty"`
}

// Cluster links a Registry to the other server processes through Redis.
type Cluster struct {
	// TTL of a tunnel's record; refreshed every TTL/3. Default 30 s.
	TTL time.Duration
	// AckTimeout is how long a forwarded call waits for the holder to
	// acknowledge it. Default 5 s.
	AckTimeout time.Duration

	rdb *redis.Client
	sub *redis.PubSub
	id  string
	reg *Registry
	log *slog.Logger

	mu      sync.Mutex
	waiting map[string]chan fwdMsg        // forwarded calls of this server, by id
	serving map[string]context.CancelFunc // calls served for another server, by from+id

	stop   context.CancelFunc
	done   chan struct{}
	closed atomic.Bool
}

// NewCluster connects reg to the other servers sharing the Redis at url
// (redis:// or rediss://) and sets reg.Cluster. Close it when the server
// stops.
func NewCluster(ctx context.Context, url string, reg *Registry) (*Cluster, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		// The URL may hold a password: never echo it.
		return nil, grove.Errorf(grove.ErrInvalid, "tunnel Redis: not a redis:// URL")
	}
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, grove.Errorf(grove.ErrUnavailable, "tunnel Redis: %v", err)
	}
	c := &Cluster{rdb: rdb, id: newID()[:16], reg: reg, waiting: map[string]chan fwdMsg{}, serving: map[string]context.CancelFunc{}, done: make(chan struct{})}
	c.log = reg.log().With("server_id", c.id)
	c.sub = rdb.Subscribe(ctx, c.channel(c.id))
	if _, err := c.sub.Receive(ctx); err != nil { // the subscription stands
		c.sub.Close()
		rdb.Close()
		return nil, grove.Errorf(grove.ErrUnavailable, "tunnel Redis: subscribe: %v", err)
	}
	lctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	go c.receive(lctx)
	go c.refresh(lctx)
	reg.Cluster = c
	c.log.Info("tunnel: sharing tunnels with the other servers through Redis")
	return c, nil
}

// ID is this server's id in the cluster.
func (c *Cluster) ID() string { return c.id }

// Close withdraws this server's records and disconnects.
func (c *Cluster) Close() {
	if !c.closed.CompareAndSwap(false, true) {
		return
	}
	c.stop()
	<-c.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, t := range c.reg.local() {
		c.del(ctx, t.user, t.info.Workspace)
	}
	c.sub.Close()
	c.rdb.Close()
}

func (c *Cluster) ttl() time.Duration {
	if c.TTL <= 0 {
		return 30 * time.Second
	}
	return c.TTL
}

func (c *Cluster) ackTimeout() time.Duration {
	if c.AckTimeout <= 0 {
		return 5 * time.Second
	}
	return c.AckTimeout
}

func (c *Cluster) channel(server string) string { return "grove:tunnel:srv:" + server }

func userKey(user string) string { return hex.EncodeToString([]byte(user)) }

func recordKey(user, name string) string { return "grove:tunnel:t:" + userKey(user) + ":" + name }

func indexKey(user string) string { return "grove:tunnel:u:" + userKey(user) }

func (c *Cluster) record(t *Tunnel) string {
	b, _ := json.Marshal(t.info)
	return c.id + "\n" + string(b)
}

// parseRecord splits a record into its server id and Info.
func parseRecord(v string) (server string, info Info, ok bool) {
	server, js, found := strings.Cut(v, "\n")
	if !found || json.Unmarshal([]byte(js), &info) != nil {
		return "", Info{}, false
	}
	return server, info, true
}

// Scripts acting only on a record this server holds.
var (
	// delIfMine deletes KEYS[1] when it starts with ARGV[1] ("<id>\n").
	delIfMine = redis.NewScript(`
if string.sub(redis.call('get', KEYS[1]) or '', 1, string.len(ARGV[1])) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0`)
	// refreshRecord extends KEYS[1] when this server holds it, sets it
	// (ARGV[2]) when it is missing (Redis lost it), and leaves another
	// server's alone; KEYS[2] is the user's index. ARGV[3]: TTL in ms.
	refreshRecord = redis.NewScript(`
local v = redis.call('get', KEYS[1])
if v == false then
  redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3])
elseif string.sub(v, 1, string.len(ARGV[1])) == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[3])
else
  return 0
end
redis.call('sadd', KEYS[2], ARGV[4])
redis.call('pexpire', KEYS[2], ARGV[3])
return 1`)
)

// announce records t as held here; a record of another server is
// replaced and that server told to close its connection.
func (c *Cluster) announce(t *Tunnel) {
	if c.closed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	user, name := t.user, t.info.Workspace
	old, err := c.rdb.SetArgs(ctx, recordKey(user, name), c.record(t), redis.SetArgs{TTL: c.ttl(), Get: true}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.log.Warn("tunnel: cannot record the tunnel in Redis; other servers will not find it until the next refresh", "err", err)
		return
	}
	c.rdb.SAdd(ctx, indexKey(user), name)
	c.rdb.PExpire(ctx, indexKey(user), c.ttl())
	if srv, _, ok := parseRecord(old); ok && srv != c.id {
		t.log.Info("tunnel: replacing the registration held by another server", "previous_server", srv)
		c.publish(ctx, srv, fwdMsg{Kind: "evict", From: c.id, User: user, Name: name})
	}
}

// withdraw deletes t's record if it is still this server's.
func (c *Cluster) withdraw(t *Tunnel) {
	if c.closed.Load() {
		return // Close withdrew every record
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.del(ctx, t.user, t.info.Workspace)
}

func (c *Cluster) del(ctx context.Context, user, name string) {
	if err := delIfMine.Run(ctx, c.rdb, []string{recordKey(user, name)}, c.id+"\n").Err(); err != nil {
		c.log.Warn("tunnel: cannot remove the tunnel's record from Redis", "user", user, "workspace", name, "err", err)
	}
}

// refresh extends the records of this server's tunnels every TTL/3.
func (c *Cluster) refresh(ctx context.Context) {
	tk := time.NewTicker(c.ttl() / 3)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		for _, t := range c.reg.local() {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := refreshRecord.Run(rctx, c.rdb, []string{recordKey(t.user, t.info.Workspace), indexKey(t.user)},
				c.id+"\n", c.record(t), c.ttl().Milliseconds(), t.info.Workspace).Err()
			cancel()
			if err != nil && ctx.Err() == nil {
				t.log.Warn("tunnel: cannot refresh the tunnel's record in Redis", "err", err)
			}
		}
	}
}

// lookup reads the record of (user, name).
func (c *Cluster) lookup(ctx context.Context, user, name string) (Info, bool, error) {
	v, err := c.rdb.Get(ctx, recordKey(user, name)).Result()
	if errors.Is(err, redis.Nil) {
		return Info{}, false, nil
	}
	if err != nil {
		return Info{}, false, err
	}
	srv, info, ok := parseRecord(v)
	if !ok || srv == c.id { // this server's record of a tunnel it no longer holds
		return Info{}, false, nil
	}
	return info, true, nil
}

// list returns the user's tunnels held by other servers.
func (c *Cluster) list(ctx context.Context, user string) ([]Info, error) {
	names, err := c.rdb.SMembers(ctx, indexKey(user)).Result()
	if err != nil || len(names) == 0 {
		return nil, err
	}
	keys := make([]string, len(names))
	for i, n := range names {
		keys[i] = recordKey(user, n)
	}
	vals, err := c.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	var out []Info
	var gone []any
	for i, v := range vals {
		s, _ := v.(string)
		srv, info, ok := parseRecord(s)
		switch {
		case !ok:
			gone = append(gone, names[i])
		case srv != c.id:
			out = append(out, info)
		}
	}
	if len(gone) > 0 {
		c.rdb.SRem(ctx, indexKey(user), gone...)
	}
	return out, nil
}

// publish sends m to server and returns how many subscribers got it.
func (c *Cluster) publish(ctx context.Context, server string, m fwdMsg) (int64, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	return c.rdb.Publish(ctx, c.channel(server), b).Result()
}

// forward calls (user, name) through the server holding it.
func (c *Cluster) forward(ctx context.Context, user, name, endpoint string, payload json.RawMessage, timeout time.Duration) (*Response, error) {
	v, err := c.rdb.Get(ctx, recordKey(user, name)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, grove.Errorf(grove.ErrNotFound, "no tunnel named %q is connected", clip(name, 64))
	}
	if err != nil {
		return nil, grove.Errorf(grove.ErrUnavailable, "tunnel %q: cannot reach Redis to find its server: %v", name, err)
	}
	owner, _, ok := parseRecord(v)
	if !ok || owner == c.id {
		return nil, grove.Errorf(grove.ErrNotFound, "no tunnel named %q is connected", clip(name, 64))
	}
	id := newID()
	l := c.log.With("user", user, "workspace", name, "workspace_id", WorkspaceID(name), "forward_id", id, "endpoint", endpoint, "to_server", owner)
	ch := make(chan fwdMsg, 2)
	c.mu.Lock()
	c.waiting[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}()
	start := time.Now()
	n, err := c.publish(ctx, owner, fwdMsg{Kind: "call", ID: id, From: c.id, User: user, Name: name, Endpoint: endpoint, Payload: payload, TimeoutMS: timeout.Milliseconds()})
	if err != nil {
		l.Warn("tunnel: call not forwarded: Redis", "err", err)
		return nil, grove.Errorf(grove.ErrUnavailable, "tunnel %q: cannot reach its server: %v", name, err)
	}
	if n == 0 {
		// Its record stays until its TTL: meanwhile the tunnel reads as
		// unavailable (its agent is likely reconnecting elsewhere), not
		// as never registered.
		l.Warn("tunnel: call not forwarded: the server holding the tunnel is gone")
		return nil, grove.Errorf(grove.ErrUnavailable, "tunnel %q: the server it is connected to is gone", name)
	}
	l.Info("tunnel: call forwarded to another server", "timeout_ms", timeout.Milliseconds())
	total := time.NewTimer(timeout + c.reg.grace() + 2*time.Second)
	defer total.Stop()
	ack := time.NewTimer(c.ackTimeout())
	defer ack.Stop()
	alive := time.NewTicker(time.Second)
	defer alive.Stop()
	for {
		select {
		case m := <-ch:
			switch m.Kind {
			case "ack":
				ack.Stop()
				continue
			case "response":
				if m.Error != nil {
					l.Info("tunnel: forwarded call failed on the other server", "code", m.Error.Code, "duration_ms", time.Since(start).Milliseconds())
					return nil, wireError(m.Error)
				}
				if m.Response == nil {
					l.Warn("tunnel: empty answer from another server")
					return nil, grove.Errorf(grove.ErrUnavailable, "tunnel %q: empty answer from its server", name)
				}
				l.Info("tunnel: response received from another server", "correlation_id", m.Response.CorrelationID, "success", m.Response.Success, "code", codeOfResponse(m.Response), "duration_ms", time.Since(start).Milliseconds())
				return m.Response, nil
			}
		case <-ack.C:
			l.Warn("tunnel: forwarded call not acknowledged")
			return nil, grove.Errorf(grove.ErrUnavailable, "tunnel %q: the server it is connected to does not answer", name)
		case <-alive.C:
			subs, err := c.rdb.PubSubNumSub(ctx, c.channel(owner)).Result()
			if err == nil && subs[c.channel(owner)] == 0 {
				l.Warn("tunnel: forwarded call failed: the server holding the tunnel is gone")
				return nil, grove.Errorf(grove.ErrUnavailable, "tunnel %q: the server it is connected to is gone", name)
			}
		case <-total.C:
			l.Warn("tunnel: forwarded call timed out without an answer", "timeout_ms", timeout.Milliseconds())
			return nil, grove.Errorf(grove.ErrTimeout, "tunnel %q: no answer to %s within %s", name, clip(endpoint, 100), timeout)
		case <-ctx.Done():
			l.Info("tunnel: forwarded call cancelled by its caller; cancel forwarded")
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			c.publish(cctx, owner, fwdMsg{Kind: "cancel", ID: id, From: c.id})
			cancel()
			return nil, ctx.Err()
		}
	}
}

// receive serves this server's channel.
func (c *Cluster) receive(ctx context.Context) {
	defer close(c.done)
	ch := c.sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case pm, ok := <-ch:
			if !ok {
				return
			}
			var m fwdMsg
			if err := json.Unmarshal([]byte(pm.Payload), &m); err != nil {
				c.log.Warn("tunnel: malformed message from another server", "err", err)
				continue
			}
			c.handle(ctx, m)
		}
	}
}

func (c *Cluster) handle(ctx context.Context, m fwdMsg) {
	switch m.Kind {
	case "ack", "response":
		c.mu.Lock()
		ch := c.waiting[m.ID]
		c.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default:
			}
		}
	case "cancel":
		c.mu.Lock()
		cancel := c.serving[m.From+"/"+m.ID]
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	case "evict":
		c.reg.evict(m.User, m.Name)
	case "call":
		cctx, cancel := context.WithCancel(ctx)
		k := m.From + "/" + m.ID
		c.mu.Lock()
		c.serving[k] = cancel
		c.mu.Unlock()
		go func() {
			defer func() {
				c.mu.Lock()
				delete(c.serving, k)
				c.mu.Unlock()
				cancel()
			}()
			pctx, pcancel := context.WithTimeout(context.WithoutCancel(cctx), 5*time.Second)
			c.publish(pctx, m.From, fwdMsg{Kind: "ack", ID: m.ID, From: c.id})
			pcancel()
			c.log.Info("tunnel: call received from another server", "user", m.User, "workspace", m.Name, "workspace_id", WorkspaceID(m.Name), "forward_id", m.ID, "endpoint", m.Endpoint, "from_server", m.From)
			resp, err := c.reg.callLocal(cctx, m.User, m.Name, m.Endpoint, m.Payload, time.Duration(m.TimeoutMS)*time.Millisecond, "from_server", m.From, "forward_id", m.ID)
			out := fwdMsg{Kind: "response", ID: m.ID, From: c.id, Response: resp}
			if err != nil {
				if cctx.Err() != nil {
					return // cancelled by the caller, who no longer waits
				}
				out.Response, out.Error = nil, errorOf(err)
			}
			pctx, pcancel = context.WithTimeout(context.Background(), 5*time.Second)
			defer pcancel()
			if _, err := c.publish(pctx, m.From, out); err != nil {
				c.log.Warn("tunnel: cannot send the response to the calling server", "forward_id", m.ID, "err", err)
			}
		}()
	}
}

func codeOfResponse(r *Response) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}
