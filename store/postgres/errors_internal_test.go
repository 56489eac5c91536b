package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/grove-dev/grove"
)

func TestErrorKinds(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code, Message: "m"}) }
	tests := []struct {
		name string
		err  error
		fk   error
		want error // nil: no kind
	}{
		{"unique", pg("23505"), nil, grove.ErrConflict},
		{"foreign key on insert", pg("23503"), grove.ErrNotFound, grove.ErrNotFound},
		{"foreign key on delete", pg("23503"), grove.ErrConflict, grove.ErrConflict},
		{"check", pg("23514"), nil, grove.ErrInvalid},
		{"not null", pg("23502"), nil, grove.ErrInvalid},
		{"NUL byte", pg("22021"), nil, grove.ErrInvalid},
		{"serialization failure", pg("40001"), nil, grove.ErrUnavailable},
		{"deadlock", pg("40P01"), nil, grove.ErrUnavailable},
		{"admin shutdown", pg("57P01"), nil, grove.ErrUnavailable},
		{"too many connections", pg("53300"), nil, grove.ErrUnavailable},
		{"connection failure", pg("08006"), nil, grove.ErrUnavailable},
		{"statement timeout", pg("57014"), nil, grove.ErrTimeout},
		{"syntax error", pg("42601"), nil, nil},
		{"malformed code", pg("2"), nil, nil},
		{"broken connection", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), nil, grove.ErrUnavailable},
		{"other", errors.New("something else"), nil, nil},
	}
	kinds := []error{grove.ErrConflict, grove.ErrNotFound, grove.ErrInvalid, grove.ErrUnavailable, grove.ErrTimeout}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := dbError(context.Background(), tc.err, "op", tc.fk)
			if !errors.Is(err, tc.err) {
				t.Errorf("dbError dropped the cause: %v", err)
			}
			for _, k := range kinds {
				if got := errors.Is(err, k); got != (k == tc.want) {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", err, k, got, k == tc.want)
				}
			}
		})
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := dbError(ctx, pg("57014"), "op", nil); !errors.Is(err, context.Canceled) || errors.Is(err, grove.ErrTimeout) {
		t.Errorf("dbError with a cancelled ctx = %v, want context.Canceled only", err)
	}
}
