package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store/internal/sqlrow"
)

// dbError turns a database error into one of grove's kinds. Server errors
// are recognised by SQLSTATE (pgconn.PgError.Code), never by message text;
// the original error stays in the chain for logs. fk is the kind a
// foreign-key violation means for this statement: a missing parent on
// insert or update (ErrNotFound), a live child on delete (ErrConflict).
func dbError(ctx context.Context, err error, what string, fk error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		// A cancelled statement reports 57014 or a closed connection; the
		// cause the caller can act on is ctx.
		return fmt.Errorf("%s: %w", what, ctxErr)
	}
	kind := errorKind(err, fk)
	if kind == nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &sqlrow.KindError{What: what, Kind: kind, Cause: err}
}

// errorKind classifies err, or returns nil when it is none of grove's
// kinds.
func errorKind(err error, fk error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return sqlstateKind(pe.Code, fk)
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err) {
		// The server could not be reached or the connection broke.
		return grove.ErrUnavailable
	}
	return nil
}

// sqlstateKind maps a SQLSTATE (PostgreSQL manual, appendix A) to a kind,
// by exact code first and then by class (its first two characters).
func sqlstateKind(code string, fk error) error {
	switch code {
	case "23505": // unique_violation
		return grove.ErrConflict
	case "23503": // foreign_key_violation
		return fk
	case "23514", "23502": // check_violation, not_null_violation
		return grove.ErrInvalid
	case "40001", "40P01", "55P03": // serialization_failure, deadlock_detected, lock_not_available
		return grove.ErrUnavailable
	case "57014": // query_canceled without a done ctx: statement_timeout
		return grove.ErrTimeout
	}
	if len(code) != 5 {
		return nil
	}
	switch code[:2] {
	case "22": // data exception: a NUL byte in a string, a number out of range
		return grove.ErrInvalid
	case "08", "53", "57": // connection exception, insufficient resources, operator intervention
		return grove.ErrUnavailable
	}
	return nil
}
