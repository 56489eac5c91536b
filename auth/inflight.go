package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/grove-dev/grove"
)

// ErrKeyRevoked is the cause of every context Inflight cancels: the key the
// work was started with has been revoked.
var ErrKeyRevoked = grove.Errorf(grove.ErrUnauthorized, "API key revoked")

// Inflight is the registry of work running under each API key: requests,
// streams, MCP calls and background processes. Revoking a key cancels all
// of it.
//
// Revocation reaches a server two ways. Revoke cancels at once (a key
// revoked in this process). A key revoked elsewhere — `grove keys revoke`
// is a separate process, and several servers may share one store — is
// noticed by a sweep that asks Check about every key with work in flight,
// every Every (default 2s). The sweep runs only while there is work in
// flight: its goroutine starts with the first Track and ends at the first
// tick with nothing tracked, so an idle server runs no goroutine and makes
// no store queries for it.
type Inflight struct {
	// Check returns which of ids are revoked (or no longer exist). Nil:
	// only Revoke cancels.
	Check func(ctx context.Context, ids []string) ([]string, error)
	// Every is the sweep interval; default 2s.
	Every time.Duration

	mu       sync.Mutex
	keys     map[string]*keyWork
	sweeping bool
}

type keyWork struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	n      int
}

// Track ties ctx to keyID: the returned context ends when parent does or
// when the key is revoked (cause ErrKeyRevoked). done releases it; call it
// when the work ends.
func (in *Inflight) Track(parent context.Context, keyID string) (context.Context, func()) {
	in.mu.Lock()
	if in.keys == nil {
		in.keys = map[string]*keyWork{}
	}
	kw := in.keys[keyID]
	if kw == nil {
		kctx, cancel := context.WithCancelCause(context.Background())
		kw = &keyWork{ctx: kctx, cancel: cancel}
		in.keys[keyID] = kw
	}
	kw.n++
	if in.Check != nil && !in.sweeping {
		in.sweeping = true
		go in.sweep()
	}
	in.mu.Unlock()

	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(kw.ctx, func() { cancel(context.Cause(kw.ctx)) })
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			stop()
			cancel(context.Canceled)
			in.mu.Lock()
			kw.n--
			if kw.n == 0 && in.keys[keyID] == kw {
				delete(in.keys, keyID)
			}
			in.mu.Unlock()
		})
	}
}

// Revoke cancels everything tracked under keyID now.
func (in *Inflight) Revoke(keyID string) {
	in.mu.Lock()
	kw := in.keys[keyID]
	delete(in.keys, keyID)
	in.mu.Unlock()
	if kw != nil {
		kw.cancel(ErrKeyRevoked)
	}
}

// Active is how many keys have work in flight.
func (in *Inflight) Active() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.keys)
}

func (in *Inflight) sweep() {
	every := in.Every
	if every <= 0 {
		every = 2 * time.Second
	}
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		<-t.C
		in.mu.Lock()
		if len(in.keys) == 0 {
			in.sweeping = false
			in.mu.Unlock()
			return
		}
		ids := make([]string, 0, len(in.keys))
		for id := range in.keys {
			ids = append(ids, id)
		}
		in.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), max(every, 5*time.Second))
		revoked, err := in.Check(ctx, ids)
		cancel()
		// A store that cannot answer revokes nothing: the next sweep asks
		// again, and new requests still authenticate against the store.
		if err == nil {
			for _, id := range revoked {
				in.Revoke(id)
			}
		}
		t.Reset(every)
	}
}

// Revoked returns which of ids are revoked or unknown; it is Inflight's
// Check for keys kept in k.Store.
func (k *Keys) Revoked(ctx context.Context, ids []string) ([]string, error) {
	all, err := k.Store.ListAPIKeys(ctx)
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(all))
	for _, rec := range all {
		if rec.RevokedAt.IsZero() {
			live[rec.ID] = true
		}
	}
	var out []string
	for _, id := range ids {
		if !live[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// IsRevoked reports whether err is, or ctx ended because of, a revoked key.
func IsRevoked(err error) bool { return errors.Is(err, ErrKeyRevoked) }
