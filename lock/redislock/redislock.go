// Package redislock is the lock.Locker for several Grove processes or hosts
// sharing one Redis server: reader/writer leases kept by Lua scripts, so
// each check-and-set is atomic on the server.
//
// For a key K the server holds three entries under Options.Prefix:
//
//	K:w  the exclusive holder's token, with a lease TTL
//	K:r  a sorted set of shared holders' tokens, scored by lease expiry
//	K:q  a sorted set of waiting writers' tokens, scored by expiry
//
// A writer takes K:w when neither K:w nor a live reader exists; a reader
// joins K:r when there is no K:w and no live waiting writer in K:q, which
// gives writers the preference the port asks for. Expired entries are
// dropped by every script, so a crashed process's locks free themselves
// after one lease (Options.TTL). Times come from the server's clock
// (TIME), never from clients', so clock skew between hosts cannot make two
// holders overlap.
//
// While a lock is held a goroutine renews its lease every TTL/3. If a
// renewal finds the lease gone (the server restarted, the lease expired
// during a long partition), the lock is lost (see lock.Locker): the loss is
// logged and the holder carries on. Waiting polls with a growing backoff
// (Options.Poll up to 20 times that); a waiting writer refreshes its place
// in K:q on each poll and removes it when it gives up.
package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/lock"
)

// Options tune a Locker; the zero value is sensible.
type Options struct {
	// Prefix namespaces the keys; "" means "grove:lock:".
	Prefix string
	// TTL is the lease: how long a lock outlives a process that died
	// holding it. 0 means DefaultTTL.
	TTL time.Duration
	// Poll is the first wait between attempts; 0 means DefaultPoll.
	Poll time.Duration
	// Logger receives lost-lock warnings; nil discards them.
	Logger *slog.Logger
}

// Defaults for Options.
const (
	DefaultTTL  = 10 * time.Second
	DefaultPoll = 5 * time.Millisecond
)

// opTimeout bounds round trips made without the caller's ctx (a try with an
// expired ctx, renewals, unlock).
const opTimeout = 3 * time.Second

// Locker is a lock.Locker over Redis. Safe for concurrent use; Close it.
type Locker struct {
	rdb    *redis.Client
	prefix string
	ttl    time.Duration
	poll   time.Duration
	log    *slog.Logger
}

var _ lock.Locker = (*Locker)(nil)

// Open connects to the server named by url (redis://host:port[/db]) and
// checks that it answers.
func Open(ctx context.Context, url string, opts Options) (*Locker, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "redis lock: bad URL")
	}
	rdb := redis.NewClient(o)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, grove.Errorf(grove.ErrUnavailable, "redis lock: %v", err)
	}
	l := &Locker{rdb: rdb, prefix: opts.Prefix, ttl: opts.TTL, poll: opts.Poll, log: opts.Logger}
	if l.prefix == "" {
		l.prefix = "grove:lock:"
	}
	if l.ttl <= 0 {
		l.ttl = DefaultTTL
	}
	if l.poll <= 0 {
		l.poll = DefaultPoll
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l, nil
}

// Close closes the client; held leases expire on the server.
func (l *Locker) Close() error { return l.rdb.Close() }

// Every script starts by reading the server's clock and dropping expired
// readers and waiting writers. KEYS: w, r, q. ARGV: token, ttl ms.
const prelude = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local ttl = tonumber(ARGV[2])
`

var (
	tryWrite = redis.NewScript(prelude + `
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('ZCARD', KEYS[2]) > 0 then
  redis.call('ZADD', KEYS[3], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[3], 2 * ttl)
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('ZREM', KEYS[3], ARGV[1])
return 1`)

	tryRead = redis.NewScript(prelude + `
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('ZCARD', KEYS[3]) > 0 then
  return 0
end
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[2], 2 * ttl)
return 1`)

	renewWrite = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

	renewRead = redis.NewScript(prelude + `
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[2], 2 * ttl)
  return 1
end
return 0`)

	releaseWrite = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`)

	releaseRead = redis.NewScript(`return redis.call('ZREM', KEYS[2], ARGV[1])`)

	giveUp = redis.NewScript(`return redis.call('ZREM', KEYS[3], ARGV[1])`)
)

// Lock implements lock.Locker.
func (l *Locker) Lock(ctx context.Context, key string) (func(), error) {
	return l.acquire(ctx, key, true)
}

// RLock implements lock.Locker.
func (l *Locker) RLock(ctx context.Context, key string) (func(), error) {
	return l.acquire(ctx, key, false)
}

func (l *Locker) keys(key string) []string {
	k := l.prefix + key
	return []string{k + ":w", k + ":r", k + ":q"}
}

func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (l *Locker) acquire(ctx context.Context, key string, exclusive bool) (func(), error) {
	keys, tok, ttl := l.keys(key), token(), l.ttl.Milliseconds()
	try, renew, release := tryRead, renewRead, releaseRead
	if exclusive {
		try, renew, release = tryWrite, renewWrite, releaseWrite
	}
	wait := l.poll
	for attempt := 0; ; attempt++ {
		// The first attempt runs even when ctx is already done (a
		// try-lock); it gets a context of its own for the round trip.
		actx, cancel := ctx, context.CancelFunc(func() {})
		if attempt == 0 && ctx.Err() != nil {
			actx, cancel = context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		}
		got, err := try.Run(actx, l.rdb, keys, tok, ttl).Int()
		cancel()
		if err != nil {
			l.abandon(keys, tok, exclusive)
			if attempt > 0 && ctx.Err() != nil {
				return nil, fmt.Errorf("redis lock %q: %w", key, ctx.Err())
			}
			return nil, grove.Errorf(grove.ErrUnavailable, "redis lock: %v", err)
		}
		if got == 1 {
			return l.held(key, keys, tok, renew, release), nil
		}
		select {
		case <-ctx.Done():
			l.abandon(keys, tok, exclusive)
			return nil, fmt.Errorf("redis lock %q: %w", key, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 20*l.poll)
	}
}

// abandon withdraws a waiting writer's place so readers are not held back
// by an attempt that gave up.
func (l *Locker) abandon(keys []string, tok string, exclusive bool) {
	if !exclusive {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := giveUp.Run(ctx, l.rdb, keys, tok).Err(); err != nil {
		l.log.Warn("redis lock: could not withdraw a waiting writer; it expires with its lease", "err", err)
	}
}

// held starts the lease renewal and returns the unlock func.
func (l *Locker) held(key string, keys []string, tok string, renew, release *redis.Script) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			n, err := renew.Run(ctx, l.rdb, keys, tok, l.ttl.Milliseconds()).Int()
			cancel()
			if err == nil && n == 0 {
				l.log.Warn("redis lock lost: the lease was gone at renewal", "key", key)
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			n, err := release.Run(ctx, l.rdb, keys, tok).Int()
			switch {
			case err != nil && !errors.Is(err, redis.Nil):
				l.log.Warn("redis lock: release failed; the lease expires on its own", "key", key, "err", err)
			case n == 0:
				l.log.Warn("redis lock lost: the lease was gone at unlock", "key", key)
			}
		})
	}
}
