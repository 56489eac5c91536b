package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/lock"
	"github.com/grove-dev/grove/lock/filelock"
	locallock "github.com/grove-dev/grove/lock/local"
	"github.com/grove-dev/grove/lock/pglock"
	"github.com/grove-dev/grove/lock/redislock"
)

// openLocks picks the engine's Locker from GROVE_LOCKS: "file" (or unset)
// for the processes of one machine sharing root — a server and CLI
// commands beside it, or two shells; "local" for one process alone; a
// postgres:// DSN or a redis:// URL for several hosts. The returned func
// closes it.
func openLocks(ctx context.Context, spec, root string, logger *slog.Logger) (lock.Locker, func(), error) {
	switch {
	case spec == "" || spec == "file":
		l, err := filelock.New(filepath.Join(root, "locks"))
		if err != nil {
			return nil, nil, err
		}
		return l, func() {}, nil
	case spec == "local":
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
	return nil, nil, grove.Errorf(grove.ErrInvalid, "GROVE_LOCKS: want file, local, a postgres:// DSN or a redis:// URL")
}
