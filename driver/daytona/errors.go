package daytona

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/grove-dev/grove"
)

// mapErr turns what a generated client returned into an error wrapping one
// of Grove's kinds. It is the only place that interprets Daytona's status
// codes: 401 → ErrAuthFailed, 403 → ErrForbidden, 404 → ErrNotFound, 409 →
// ErrConflict, 400/422 → ErrInvalid, anything mentioning a quota or limit
// exceeded → ErrResourceLimit, 408, 429 (after retries), 5xx and transport
// failures → ErrUnavailable. ctx's own error is returned as is.
func mapErr(ctx context.Context, op string, resp *http.Response, err error) error {
	if err == nil && (resp == nil || resp.StatusCode < 400) {
		return nil
	}
	if ctx != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if resp == nil {
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("daytona %s: %w: %v", op, grove.ErrUnavailable, err)
		}
		return fmt.Errorf("daytona %s: %w: %v", op, grove.ErrUnavailable, err)
	}
	msg := errorMessage(err)
	kind := grove.ErrUnavailable
	switch code := resp.StatusCode; {
	case strings.Contains(strings.ToLower(msg), "quota") || strings.Contains(strings.ToLower(msg), "limit exceeded"):
		kind = grove.ErrResourceLimit
	case code == http.StatusUnauthorized:
		kind = grove.ErrAuthFailed
	case code == http.StatusForbidden:
		kind = grove.ErrForbidden
	case code == http.StatusNotFound:
		kind = grove.ErrNotFound
	case code == http.StatusConflict:
		kind = grove.ErrConflict
	case code == http.StatusBadRequest || code == http.StatusUnprocessableEntity:
		kind = grove.ErrInvalid
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		kind = grove.ErrUnavailable
	}
	return fmt.Errorf("daytona %s: %w: HTTP %d: %s", op, kind, resp.StatusCode, msg)
}

// errorMessage digs the message out of a generated client's error, whose
// Body holds Daytona's error JSON ({"message": ...}).
func errorMessage(err error) string {
	if err == nil {
		return ""
	}
	var b interface{ Body() []byte }
	if errors.As(err, &b) {
		var body struct {
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(b.Body(), &body) == nil && len(body.Message) > 0 {
			var s string
			if json.Unmarshal(body.Message, &s) == nil {
				return s
			}
			return string(body.Message)
		}
		if t := strings.TrimSpace(string(b.Body())); t != "" {
			if len(t) > 300 {
				t = t[:300]
			}
			return t
		}
	}
	return err.Error()
}

// retryTransport retries requests Daytona answers with 429 (always: the
// request was not processed), 502/503/504 (a gateway in front of the API)
// and, for idempotent methods, 500; with exponential backoff honouring
// Retry-After. Transport errors are retried for idempotent methods only.
type retryTransport struct {
	base     http.RoundTripper
	attempts int
	backoff  time.Duration // first wait; doubles, capped at maxWait
	maxWait  time.Duration
	header   map[string]string // set on every request (SDK headers, auth)
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	wait := t.backoff
	var body []byte
	if req.Body != nil && req.GetBody == nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	idempotent := req.Method == http.MethodGet || req.Method == http.MethodHead || req.Method == http.MethodDelete || req.Method == http.MethodPut
	for attempt := 1; ; attempt++ {
		r := req.Clone(req.Context())
		for k, v := range t.header {
			r.Header.Set(k, v)
		}
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		} else if req.GetBody != nil {
			b, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r.Body = b
		}
		resp, err := t.base.RoundTrip(r)
		retry := false
		if err != nil {
			retry = idempotent
		} else {
			switch c := resp.StatusCode; {
			case c == http.StatusTooManyRequests, c == http.StatusBadGateway, c == http.StatusServiceUnavailable, c == http.StatusGatewayTimeout:
				retry = true
			case c == http.StatusInternalServerError:
				retry = idempotent
			}
		}
		if !retry || attempt >= t.attempts {
			return resp, err
		}
		d := wait
		if resp != nil {
			if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s >= 0 {
				d = time.Duration(s) * time.Second
				if d > t.maxWait {
					d = t.maxWait
				}
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(d):
		}
		if wait *= 2; wait > t.maxWait {
			wait = t.maxWait
		}
	}
}
