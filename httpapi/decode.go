package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/grove-dev/grove"
)

// Decode reads exactly one JSON value into v, refusing unknown fields and
// trailing data. A body over the MaxBytesReader limit is ErrTooLarge; any
// other problem is ErrInvalid with a message that names it.
func Decode(body io.Reader, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeError(err)
		}
		return grove.Errorf(grove.ErrInvalid, "request body: want one JSON value, found more")
	}
	return nil
}

func decodeError(err error) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var bt *bodyTimeoutError
	switch {
	case errors.As(err, &bt):
		return bt
	case errors.As(err, &mbe):
		return grove.Errorf(grove.ErrTooLarge, "request body is over %d bytes", mbe.Limit)
	case errors.Is(err, io.EOF):
		return grove.Errorf(grove.ErrInvalid, "request body: empty, want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return grove.Errorf(grove.ErrInvalid, "request body: truncated JSON")
	case errors.As(err, &se):
		return grove.Errorf(grove.ErrInvalid, "request body: malformed JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return grove.Errorf(grove.ErrInvalid, "request body: field %q: want %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	// Unknown fields and the rest: encoding/json's messages name the
	// field and hold no secrets from the body.
	return grove.Errorf(grove.ErrInvalid, "request body: %s", clip(fmt.Sprint(err), 200))
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
