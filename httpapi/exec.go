package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/wire"
)

// exec runs a command. With Accept: text/event-stream the output streams as
// "stdout" and "stderr" events (data {"data": "..."}) and ends with one
// "exit" event (an ExecResponse) or one "error" event (an ErrorBody).
// The command runs under the request's context: a client that disconnects
// cancels it, and the runtime kills its process group.
func (s *Server) exec(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b ExecBody
	if err := Decode(r.Body, &b); err != nil {
		return err
	}
	if b.TimeoutMS < 0 {
		return grove.Errorf(grove.ErrInvalid, "timeout_ms must not be negative")
	}
	// A timeout over the cap is lowered to it, and the result says so: a
	// client asking for long work should get it bounded, not refused.
	var capped time.Duration
	if b.TimeoutMS > s.opt.MaxTimeout.Milliseconds() {
		b.TimeoutMS, capped = s.opt.MaxTimeout.Milliseconds(), s.opt.MaxTimeout
	}
	if b.MaxOutput < 0 || b.MaxOutput > s.lim.MaxOutput {
		return grove.Errorf(grove.ErrInvalid, "max_output must be between 0 (the runtime's default) and this server's cap of %d bytes per stream", s.lim.MaxOutput)
	}
	id := r.PathValue("id")
	// Ownership first, so another user's id is 404 even when the caller's
	// slots are full.
	if _, err := c.svc.Get(r.Context(), id); err != nil {
		return err
	}
	release, err := s.acquireSlot(c.p.User)
	if err != nil {
		return err
	}
	defer release()
	if !wantsEventStream(r) {
		res, err := c.svc.Exec(r.Context(), id, b.Request())
		if err != nil {
			return err
		}
		res.CappedTimeout = capped
		writeExecResult(w, res)
		return nil
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return grove.Errorf(grove.ErrNotSupported, "streaming is not supported by this connection")
	}
	sse := &sseWriter{w: w, f: flusher}
	stopKeepAlive := sse.keepAlive(s.lim.SSEKeepAlive)
	res, err := c.svc.ExecStream(r.Context(), id, b.Request(), func(ch grove.Chunk) error {
		return sse.event(string(ch.Stream), ChunkEvent{Data: string(ch.Data)})
	})
	stopKeepAlive()
	err = revokedCause(r.Context(), err)
	if err != nil && !sse.started {
		// Nothing streamed yet: a plain status and error body is clearer.
		return err
	}
	if err != nil {
		_ = sse.event("error", errorBody(err, requestID(r.Context())))
		return nil
	}
	res.CappedTimeout = capped
	// The output went out as events; the exit event does not repeat it.
	exit := wire.ExecResponseOf(res)
	exit.Stdout, exit.Stderr = "", ""
	_ = sse.event("exit", exit)
	return nil
}

func wantsEventStream(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		if strings.Contains(a, "text/event-stream") {
			return true
		}
	}
	return false
}

type sseWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	f       http.Flusher
	started bool // headers sent; read after the stream's writers stopped
}

// startLocked sends the headers once: lazily, so an error before any
// output is a plain status and error body.
func (s *sseWriter) startLocked() {
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		s.w.WriteHeader(200)
	}
}

// event writes one event; JSON data never holds a raw newline, so it is
// always a single data line.
func (s *sseWriter) event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked()
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

// keepAlive sends a comment line every interval, so a client (and any
// proxy) sees a live stream during a long silent command, and a client
// that went away is noticed by the failed write (the write deadline bounds
// each write). It returns a stop func that waits for the goroutine to end.
func (s *sseWriter) keepAlive(interval time.Duration) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.mu.Lock()
				s.startLocked()
				_, err := io.WriteString(s.w, ": keep-alive\n\n")
				if err == nil {
					s.f.Flush()
				}
				s.mu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}()
	return func() { close(done); <-ended }
}
