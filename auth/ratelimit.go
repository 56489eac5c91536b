package auth

import (
	"net/netip"
	"sync"
	"time"
)

// FailureLimiter slows down key guessing: after Max failed authentications
// from one client address within Window, that address is refused for a
// back-off (Backoff, doubling with each further round up to MaxBackoff)
// whatever key it sends, so a guesser cannot interleave a valid key to
// reset it. IPv6 addresses count per /64, which one host usually owns.
//
// Memory is bounded: at most MaxEntries addresses are remembered; past
// that, entries that ended their back-off go first, then arbitrary ones.
type FailureLimiter struct {
	Max        int           // failures per Window before a back-off; default 10
	Window     time.Duration // default 1 min
	Backoff    time.Duration // first back-off; default 2s
	MaxBackoff time.Duration // default 1 min
	MaxEntries int           // default 10000
	Now        func() time.Time

	mu sync.Mutex
	m  map[netip.Prefix]*failures
}

type failures struct {
	n       int       // failures since first
	first   time.Time // start of the counting window
	until   time.Time // refused until
	strikes int       // back-offs so far, for doubling
	last    time.Time
}

func (l *FailureLimiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *FailureLimiter) defaults() (max int, window, backoff, maxBackoff time.Duration, entries int) {
	max, window, backoff, maxBackoff, entries = l.Max, l.Window, l.Backoff, l.MaxBackoff, l.MaxEntries
	if max <= 0 {
		max = 10
	}
	if window <= 0 {
		window = time.Minute
	}
	if backoff <= 0 {
		backoff = 2 * time.Second
	}
	if maxBackoff <= 0 {
		maxBackoff = time.Minute
	}
	if entries <= 0 {
		entries = 10000
	}
	return
}

// clientKey maps a client address (an IP, optionally with a port) to the
// unit that is limited. Unparseable addresses share one bucket.
func clientKey(addr string) netip.Prefix {
	ap, err := netip.ParseAddrPort(addr)
	ip := ap.Addr()
	if err != nil {
		if ip, err = netip.ParseAddr(addr); err != nil {
			return netip.Prefix{}
		}
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// Allow reports whether addr may try to authenticate now; when not, how
// long until it may.
func (l *FailureLimiter) Allow(addr string) (retryAfter time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.m[clientKey(addr)]
	if f == nil {
		return 0, true
	}
	if d := f.until.Sub(l.now()); d > 0 {
		return d, false
	}
	return 0, true
}

// Fail records a failed authentication from addr and returns the back-off
// it now has (0: none yet).
func (l *FailureLimiter) Fail(addr string) time.Duration {
	max, window, backoff, maxBackoff, entries := l.defaults()
	now := l.now()
	k := clientKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[netip.Prefix]*failures{}
	}
	f := l.m[k]
	if f == nil {
		l.prune(now, window, entries-1)
		f = &failures{first: now}
		l.m[k] = f
	}
	if now.Sub(f.last) > 10*window {
		f.strikes = 0 // quiet for long enough: start over
	}
	f.last = now
	if now.Sub(f.first) > window {
		f.n, f.first = 0, now
	}
	f.n++
	if f.n < max {
		return 0
	}
	d := backoff << min(f.strikes, 30)
	if d <= 0 || d > maxBackoff {
		d = maxBackoff
	}
	f.strikes++
	f.n, f.first, f.until = 0, now, now.Add(d)
	return d
}

// prune keeps at most keep entries, dropping finished ones first.
func (l *FailureLimiter) prune(now time.Time, window time.Duration, keep int) {
	if len(l.m) <= keep {
		return
	}
	for k, f := range l.m {
		if now.After(f.until) && now.Sub(f.last) > window {
			delete(l.m, k)
		}
	}
	for k := range l.m {
		if len(l.m) <= keep {
			break
		}
		delete(l.m, k)
	}
}

// Len is how many client addresses are remembered.
func (l *FailureLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
