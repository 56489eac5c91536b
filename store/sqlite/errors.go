package sqlite

import (
	"context"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store/internal/sqlrow"
)

// dbError turns a database error into one of grove's kinds. Constraint
// violations are recognised by SQLite's extended result code, never by
// message text; the SQLite error stays in the chain for logs. fk is the
// kind a foreign-key violation means for this statement: a missing parent
// on insert (ErrNotFound), a live child on delete (ErrConflict).
func dbError(ctx context.Context, err error, what string, fk error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		// An interrupted statement reports SQLITE_INTERRUPT or
		// sql.ErrTxDone; the cause the caller can act on is ctx.
		return fmt.Errorf("%s: %w", what, ctxErr)
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("%s: %w", what, err)
	}
	var kind error
	switch code := se.Code(); code {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		kind = grove.ErrConflict
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		kind = fk
	case sqlite3.SQLITE_CONSTRAINT_CHECK, sqlite3.SQLITE_CONSTRAINT_NOTNULL:
		kind = grove.ErrInvalid
	default:
		// Still locked after busy_timeout: another process holds the
		// database; trying again later may work.
		if primary := code & 0xff; primary == sqlite3.SQLITE_BUSY || primary == sqlite3.SQLITE_LOCKED {
			kind = grove.ErrUnavailable
		}
	}
	if kind == nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &sqlrow.KindError{What: what, Kind: kind, Cause: err}
}
