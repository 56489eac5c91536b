package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/lock"
	locallock "github.com/grove-dev/grove/lock/local"
	"github.com/grove-dev/grove/lock/pglock"
)

// openLocks picks the engine's Locker from GROVE_LOCKS: "local" (or unset)
// for one process, a postgres:// DSN for several processes or hosts over
// one database. The returned func closes it.
func openLocks(ctx context.Context, spec string, logger *slog.Logger) (lock.Locker, func(), error) {
	switch {
	case spec == "" || spec == "local":
		return locallock.New(), func() {}, nil
	case strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://"):
		l, err := pglock.Open(ctx, spec, pglock.Options{Logger: logger})
		if err != nil {
			return nil, nil, err
		}
		return l, l.Close, nil
	case strings.HasPrefix(spec, "redis://"):
		return nil, nil, grove.Errorf(grove.ErrNotSupported, "GROVE_LOCKS: Redis locks are not available in this build; use local or a postgres:// DSN")
	}
	// The value may be a DSN with a password: never echo it.
	return nil, nil, grove.Errorf(grove.ErrInvalid, "GROVE_LOCKS: want local or a postgres:// DSN")
}
