package httpapi

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPServer returns an http.Server for s with its request limits:
// MaxHeaderBytes, a header timeout and an idle timeout. Body and write
// deadlines are per request (see withBodyDeadline and extendWrite), so
// long commands and event streams are not cut off by a fixed
// ReadTimeout/WriteTimeout. Serve it on s.Listener(ln).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    s.lim.MaxHeaderBytes,
	}
}

// Listener wraps ln with the connection limits (Limits.MaxConns and
// MaxConnsPerIP).
func (s *Server) Listener(ln net.Listener) *ConnLimiter {
	return LimitListener(ln, s.lim.MaxConns, s.lim.MaxConnsPerIP)
}

// ConnLimiter is a net.Listener that holds at most total connections, and
// at most perIP from one client address. A connection over either limit
// never reaches the server: it gets a canned 503 (Retry-After: 1,
// Connection: close, the API's error shape) and is closed. The 503 is
// written once the client has started sending its request — an HTTP
// client reads an answer that arrives before its request as a broken
// connection — by one of at most refusers goroutines, each done within
// refuseTime; when all are busy (a flood), the connection is closed at
// once instead. Either way the accept loop never stalls, and refusing
// costs at most refusers extra descriptors for refuseTime.
type ConnLimiter struct {
	net.Listener
	total, perIP int

	mu   sync.Mutex
	n    int
	byIP map[string]int

	refusing chan struct{}
	refused  atomic.Int64
}

const (
	refusers   = 32
	refuseTime = time.Second
)

// LimitListener wraps ln; a limit of 0 or less means none.
func LimitListener(ln net.Listener, total, perIP int) *ConnLimiter {
	return &ConnLimiter{Listener: ln, total: total, perIP: perIP, byIP: map[string]int{}, refusing: make(chan struct{}, refusers)}
}

// Refused counts connections turned away so far.
func (l *ConnLimiter) Refused() int64 { return l.refused.Load() }

// Open is how many accepted connections are open.
func (l *ConnLimiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

var refusal = func() []byte {
	body := `{"error":{"code":"E_RESOURCE_LIMIT","message":"too many connections; retry later","details":{}}}` + "\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// Accept returns the next connection within the limits.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		if l.take(ip) {
			return &limitedConn{Conn: c, release: func() { l.put(ip) }}, nil
		}
		l.refused.Add(1)
		l.refuse(c)
	}
}

func (l *ConnLimiter) refuse(c net.Conn) {
	select {
	case l.refusing <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refuseTime))
		var buf [4096]byte
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
		if _, err := c.Write(refusal); err != nil {
			return
		}
		// Closing with unread request bytes would reset the connection and
		// could destroy the answer before the client reads it: half-close,
		// then take what the client still sends until it closes.
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	}()
}

// remoteIP is the unit the per-address limit counts: the IPv4 address, or
// the IPv6 /64 (one host usually holds a whole /64, so counting single
// IPv6 addresses would limit nothing).
func remoteIP(c net.Conn) string {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	ip := ap.Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

func (l *ConnLimiter) take(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if (l.total > 0 && l.n >= l.total) || (l.perIP > 0 && l.byIP[ip] >= l.perIP) {
		return false
	}
	l.n++
	l.byIP[ip]++
	return true
}

func (l *ConnLimiter) put(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
