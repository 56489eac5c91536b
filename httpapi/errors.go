package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/tools"
)

// StatusOf maps an error's kind to an HTTP status. Choices worth noting:
//   - ErrForbidden is 403, but another user's workspace is ErrNotFound
//     (404) before it gets here, so ids cannot be probed.
//   - ErrReadOnly is 409: the key is fine, the workspace's mode conflicts
//     with the request (403 would read as "your key may not").
//   - ErrNotPaused (a debug call that needs a stopped program) is 409
//     like the ErrConflict it wraps; ErrDebugAdapterUnavailable is 501
//     like the ErrNotInstalled it wraps.
//   - ErrAuthFailed is git's upstream authentication, not the API key:
//     502, so clients do not drop their key.
func StatusOf(err error) int {
	var bt *bodyTimeoutError
	if errors.As(err, &bt) {
		return http.StatusRequestTimeout
	}
	switch grove.KindOf(err) {
	case grove.ErrNotFound:
		return http.StatusNotFound
	case grove.ErrInvalid, grove.ErrPathOutside, grove.ErrIsDirectory:
		return http.StatusBadRequest
	case grove.ErrConflict, grove.ErrReadOnly, grove.ErrNothingToCommit, grove.ErrNotPaused:
		return http.StatusConflict
	case grove.ErrUnauthorized:
		return http.StatusUnauthorized
	case grove.ErrForbidden:
		return http.StatusForbidden
	case grove.ErrTooLarge:
		return http.StatusRequestEntityTooLarge
	case grove.ErrResourceLimit:
		return http.StatusTooManyRequests
	case grove.ErrUnavailable:
		return http.StatusServiceUnavailable
	case grove.ErrTimeout:
		return http.StatusGatewayTimeout
	case grove.ErrNotSupported, grove.ErrNotInstalled, grove.ErrPlatformNotConfigured, grove.ErrDebugAdapterUnavailable:
		return http.StatusNotImplemented
	case grove.ErrRejected, grove.ErrBinaryFile:
		return http.StatusUnprocessableEntity
	case grove.ErrAuthFailed:
		return http.StatusBadGateway
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout
	}
	if errors.Is(err, context.Canceled) {
		return StatusClientClosedRequest
	}
	return http.StatusInternalServerError
}

// StatusClientClosedRequest is the status recorded (and, if anyone still
// listens, sent) when the client closed the request before it finished —
// nginx's 499. It is the client's doing, not a server error.
const StatusClientClosedRequest = 499

// errorBody renders err in the one error shape. Errors of no kind are
// internal: their text may hold paths, so it is replaced.
func errorBody(err error, reqID string) ErrorBody {
	code := grove.Code(err)
	var te *tools.Error
	if errors.As(err, &te) {
		code = te.Code
	}
	msg := err.Error()
	if grove.KindOf(err) == nil {
		msg = "internal error"
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			code, msg = "E_TIMEOUT", "deadline exceeded"
		case errors.Is(err, context.Canceled):
			code, msg = "E_CANCELLED", "the request was cancelled"
		}
	}
	d := map[string]any{"request_id": reqID}
	if te != nil && te.Hint != "" {
		d["hint"] = te.Hint
	}
	return ErrorBody{Error: ErrorDetail{Code: code, Message: msg, Details: d}}
}

func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := StatusOf(err)
	if l := loggerFrom(r.Context()); l != nil {
		switch status {
		case http.StatusInternalServerError:
			l.ErrorContext(r.Context(), "internal error", "request_id", requestID(r.Context()), "err", clip(err.Error(), 1024)) // clipped: an error may quote a caller's (huge) path
		case StatusClientClosedRequest:
			l.InfoContext(r.Context(), "request cancelled by the client", "request_id", requestID(r.Context()))
		}
	}
	setRetryAfter(w, err, status)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="grove"`)
	}
	writeJSON(w, status, errorBody(err, requestID(r.Context())))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
