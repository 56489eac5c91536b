package debug

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/google/go-dap"

	grove "github.com/grove-dev/grove"
)

// message is any DAP message. It is decoded by hand rather than with
// dap.ReadProtocolMessage because adapters send events go-dap does not
// know (lldb-dap's own, for one), and an unknown event must not kill the
// session. Bodies are decoded into go-dap's types where they are used.
type message struct {
	Seq        int             `json:"seq"`
	Type       string          `json:"type"`
	Command    string          `json:"command,omitempty"`
	Event      string          `json:"event,omitempty"`
	RequestSeq int             `json:"request_seq,omitempty"`
	Success    bool            `json:"success,omitempty"`
	Message    string          `json:"message,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
}

// conn is one DAP connection: requests are matched to responses by
// request_seq; events go to onEvent, called from the reader goroutine in
// order.
type conn struct {
	w       io.Writer
	onEvent func(*message)

	wmu sync.Mutex // one message on the wire at a time

	mu      sync.Mutex
	seq     int
	pending map[int]chan *message
	err     error         // why the connection died
	dead    chan struct{} // closed when it did
}

func newConn(r io.Reader, w io.Writer, onEvent func(*message), why func() string) *conn {
	c := &conn{w: w, onEvent: onEvent, pending: map[int]chan *message{}, dead: make(chan struct{})}
	go c.read(bufio.NewReaderSize(r, 64<<10), why)
	return c
}

func (c *conn) read(r *bufio.Reader, why func() string) {
	for {
		b, err := dap.ReadBaseMessage(r)
		if err != nil {
			msg := "debug adapter exited"
			if w := why(); w != "" {
				msg += ": " + w
			}
			c.fail(grove.Errorf(grove.ErrUnavailable, "%s", msg))
			return
		}
		var m message
		if json.Unmarshal(b, &m) != nil {
			continue // garbage from an adapter is skipped, not fatal
		}
		switch m.Type {
		case "response":
			c.mu.Lock()
			ch := c.pending[m.RequestSeq]
			delete(c.pending, m.RequestSeq)
			c.mu.Unlock()
			if ch != nil {
				ch <- &m
			}
		case "event":
			c.onEvent(&m)
		case "request":
			// Reverse requests (runInTerminal, startDebugging): we declared
			// no support, so refuse any that come.
			c.reply(&m)
		}
	}
}

func (c *conn) reply(req *message) {
	c.mu.Lock()
	c.seq++
	seq := c.seq
	c.mu.Unlock()
	_ = c.write(map[string]any{
		"seq": seq, "type": "response", "request_seq": req.Seq, "command": req.Command,
		"success": false, "message": "not supported by Grove",
	})
}

func (c *conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.dead)
	for seq, ch := range c.pending {
		delete(c.pending, seq)
		close(ch)
	}
}

func (c *conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return grove.Errorf(grove.ErrInvalid, "encoding request: %v", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return dap.WriteBaseMessage(c.w, b)
}

// send writes a request and returns the channel its response arrives on
// (closed without a value if the connection dies first).
func (c *conn) send(command string, args any) (<-chan *message, error) {
	ch := make(chan *message, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.seq++
	seq := c.seq
	c.pending[seq] = ch
	c.mu.Unlock()
	req := map[string]any{"seq": seq, "type": "request", "command": command}
	if args != nil {
		req["arguments"] = args
	}
	if err := c.write(req); err != nil {
		c.mu.Lock()
		delete(c.pending, seq)
		c.mu.Unlock()
		c.fail(grove.Errorf(grove.ErrUnavailable, "debug adapter: writing %s: %v", command, err))
		return nil, c.deadErr()
	}
	return ch, nil
}

func (c *conn) deadErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// await waits for a response; body, when non-nil, receives its body.
func (c *conn) await(ctx context.Context, command string, ch <-chan *message, timeout time.Duration, body any) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m, ok := <-ch:
		if !ok {
			return c.deadErr()
		}
		if !m.Success {
			return responseError(command, m)
		}
		if body != nil && len(m.Body) > 0 {
			if err := json.Unmarshal(m.Body, body); err != nil {
				return grove.Errorf(grove.ErrUnavailable, "debug adapter: bad %s response: %v", command, err)
			}
		}
		return nil
	case <-t.C:
		return grove.Errorf(grove.ErrTimeout, "debug adapter did not answer %s within %s", command, timeout)
	case <-ctx.Done():
		return grove.Errorf(grove.ErrTimeout, "%s: %v", command, ctx.Err())
	}
}

// call sends a request and waits for its response.
func (c *conn) call(ctx context.Context, command string, args any, timeout time.Duration, body any) error {
	ch, err := c.send(command, args)
	if err != nil {
		return err
	}
	return c.await(ctx, command, ch, timeout, body)
}

// errAdapter is the kind of an adapter refusing a request: the request
// (a launch configuration, an expression, a line) was not acceptable.
var errAdapter = grove.ErrInvalid

// responseError is a failed response's message: the adapter's formatted
// error when it sent one, which is what a person would be shown.
func responseError(command string, m *message) error {
	return grove.Errorf(errAdapter, "%s: %s", command, failureText(m))
}

func failureText(m *message) string {
	var body dap.ErrorResponseBody
	_ = json.Unmarshal(m.Body, &body)
	text := m.Message
	if body.Error != nil && body.Error.Format != "" {
		f := body.Error.Format
		for k, v := range body.Error.Variables {
			f = strings.ReplaceAll(f, "{"+k+"}", v)
		}
		if text == "" || text == "error" || strings.Contains(f, text) {
			text = f
		} else {
			text += ": " + f
		}
	}
	if text == "" {
		text = "failed"
	}
	return text
}
