package postgres

import (
	"fmt"
	"time"
)

// nanos encodes t as unix nanoseconds, and the zero time as NULL so that
// it comes back as the zero time (the zero time.Time has no unix
// nanosecond value). BIGINT nanoseconds rather than timestamptz, which
// keeps microseconds only: a record reads back exactly as written, as it
// does from the sqlite adapter.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// timeCol scans a nanos column back into a UTC time.
type timeCol struct{ t *time.Time }

// Scan implements sql.Scanner, which pgx honours.
func (c timeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.t = time.Time{}
	case int64:
		*c.t = time.Unix(0, v).UTC()
	default:
		return fmt.Errorf("time column holds %T, want integer nanoseconds", src)
	}
	return nil
}
