package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/lock"
	locallock "github.com/grove-dev/grove/lock/local"
	"github.com/grove-dev/grove/lock/pglock"
	"github.com/grove-dev/grove/lock/redislock"
)

// openLocks picks the engine's Locker from GROVE_LOCKS: "local" (or unset)
// for one process; a postgres:// DSN or a redis:// URL for several
// processes or hosts. The returned func closes it.
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
	case strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://"):
		l, err := redislock.Open(ctx, spec, redislock.Options{Logger: logger})
		if err != nil {
			return nil, nil, err
		}
		return l, func() { l.Close() }, nil
	}
	// The value may be a DSN with a password: never echo it.
	return nil, nil, grove.Errorf(grove.ErrInvalid, "GROVE_LOCKS: want local, a postgres:// DSN or a redis:// URL")
}
