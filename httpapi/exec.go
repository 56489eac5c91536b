package httpapi

import (
	"encoding/json"
	"fmt"
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
		writeJSON(w, 200, wire.ExecResponseOf(res))
		return nil
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return grove.Errorf(grove.ErrNotSupported, "streaming is not supported by this connection")
	}
	sse := &sseWriter{w: w, f: flusher}
	started := false
	start := func() {
		if !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-store")
			h.Set("X-Accel-Buffering", "no")
			w.WriteHeader(200)
			flusher.Flush()
		}
	}
	res, err := c.svc.ExecStream(r.Context(), id, b.Request(), func(ch grove.Chunk) error {
		start()
		return sse.event(string(ch.Stream), ChunkEvent{Data: string(ch.Data)})
	})
	if err != nil && !started {
		// Nothing streamed yet: a plain status and error body is clearer.
		return err
	}
	start()
	if err != nil {
		_ = sse.event("error", errorBody(err, requestID(r.Context())))
		return nil
	}
	res.CappedTimeout = capped
	_ = sse.event("exit", wire.ExecResponseOf(res))
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
	mu sync.Mutex
	w  http.ResponseWriter
	f  http.Flusher
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
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}
