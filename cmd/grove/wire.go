package main

import (
	"context"
	"fmt"
	"github.com/grove-dev/grove"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/bwrap"
	"github.com/grove-dev/grove/driver/daytona"
	"github.com/grove-dev/grove/driver/docker"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider"
	"github.com/grove-dev/grove/provider/local"
	"github.com/grove-dev/grove/provider/remote"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/postgres"
	"github.com/grove-dev/grove/store/sqlite"
)

// app is an opened Grove. svc is what commands use; engine is set only
// in-process, for the commands that need the machine itself (reconcile).
type app struct {
	svc    grove.Service
	engine *engine.Engine
	store  store.Store // set only in-process: grove serve reads API keys from it
	close  func()
}

// openEngine wires the embedded defaults: SQLite under the root, the local
// provider, and the configured runtime.
func openEngine(ctx context.Context, cfg config, logger *slog.Logger) (*app, error) {
	if err := os.MkdirAll(cfg.Root, 0o700); err != nil {
		return nil, err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	home := filepath.Join(cfg.Root, "githome")
	if err := os.MkdirAll(home, 0o700); err != nil {
		st.Close()
		return nil, err
	}
	git := &gitrepo.Git{
		Home:     home,
		Logger:   logger,
		Identity: gitrepo.Identity{Name: cfg.AuthorName, Email: cfg.AuthorEmail},
	}
	prov := local.New(&gitrepo.Caches{Git: git, Root: filepath.Join(cfg.Root, "repos"), Freshness: cfg.Freshness, MaxBytes: cfg.MaxRepoBytes}, fsops.Options{NoSync: cfg.NoSync})
	runtimeKind, _ := cfg.pickRuntime() // openDriver reports its error
	drv, err := openDriver(ctx, cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	var wsProv provider.Provider = prov
	allowUnisolated := cfg.AllowUnisolated
	if d, ok := drv.(*daytona.Driver); ok {
		// Remote workspaces: caches and work repositories stay here,
		// working trees live in the sandboxes (docs/DAYTONA.md).
		if wsProv, err = remote.New(remote.Options{Local: prov, Driver: d, Root: d.WorkspaceRoot(), Log: logger}); err != nil {
			st.Close()
			return nil, err
		}
		// A Daytona sandbox cannot reach this host. The driver reports
		// Isolated=false because the workspaces of one (user, project)
		// share a sandbox user, as they share a container on the docker
		// runtime; writes are therefore allowed (docs/DAYTONA.md).
		allowUnisolated = true
	}
	gh, chain, bot, protected, err := gitPlatform(cfg.BaseURL)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("git platform: %w", err)
	}
	var botID gitrepo.Identity
	if bot != nil && os.Getenv("GROVE_AUTHOR_NAME") == "" {
		botID = *bot
		git.Identity = botID
	}
	locks, closeLocks, err := openLocks(ctx, cfg.Locks, cfg.Root, logger)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("locks: %w", err)
	}
	eng, err := engine.New(engine.Config{
		Locks:    locks,
		Platform: gh, Credentials: chain, ProtectedBranches: protected, BotIdentity: botID,
		Committer:             git.Identity,
		Store:                 st,
		Provider:              wsProv,
		Driver:                drv,
		BaseURL:               cfg.BaseURL,
		DataRoot:              cfg.Root,
		LocalRepoRoots:        cfg.LocalRepoRoots,
		AllowedGitHosts:       cfg.AllowedGitHosts,
		AllowUnisolatedWrites: allowUnisolated,
		AccessCheckTTL:        cfg.AccessCheckTTL,
		Network:               driver.NetworkMode(cfg.Network),
		Disk: engine.DiskPolicy{
			WorkspaceQuota: cfg.WorkspaceQuota, UserQuota: cfg.UserQuota,
			Reserve: cfg.DiskReserve, PinsPerUser: cfg.PinsPerUser, WorkspacesPerUser: cfg.WorkspacesPer, MaxCaches: cfg.MaxCaches, Root: cfg.Root,
		},
		SandboxPath: cfg.sandboxPath(runtimeKind),
		Limits:      cfg.SandboxLimits,
		Logger:      logger,
	})
	if err != nil {
		closeLocks()
		st.Close()
		return nil, err
	}
	// Closing the engine ends debug sessions (adapters and debuggees) first.
	return &app{svc: eng, engine: eng, store: st, close: func() { eng.Close(); closeLocks(); st.Close(); runClosers() }}, nil
}

func openDriver(ctx context.Context, cfg config) (driver.Driver, error) {
	kind, err := cfg.pickRuntime()
	if err != nil {
		return nil, err
	}
	switch kind {
	case "bwrap":
		return bwrap.New(bwrap.Options{})
	case "subprocess":
		if err := os.MkdirAll(filepath.Join(cfg.Root, "runtime"), 0o700); err != nil {
			return nil, err
		}
		return subprocess.New(subprocess.Options{AllowMutating: cfg.AllowUnisolated, HomeRoot: filepath.Join(cfg.Root, "runtime")}), nil
	case "docker":
		return docker.New(ctx, docker.Options{Image: cfg.Image})
	case "daytona":
		return openDaytona(ctx)
	}
	return nil, fmt.Errorf("runtime %q is not available in this build", kind)
}

// keyedStore is a store that also keeps the HTTP API keys, as every
// adapter cmd wires does: grove keys and grove serve must share one.
type keyedStore interface {
	store.Store
	store.KeyStore
}

// openStore opens the store GROVE_STORE names: SQLite under the root
// (the default), or a PostgreSQL database that several Grove processes
// share.
func openStore(ctx context.Context, cfg config) (keyedStore, error) {
	// Each case returns nil, not a typed nil pointer, on failure.
	switch dsn := cfg.Store; {
	case dsn == "" || dsn == "sqlite":
		// The first command on a new machine may be "grove keys create".
		if err := os.MkdirAll(cfg.Root, 0o700); err != nil {
			return nil, err
		}
		st, err := sqlite.Open(ctx, filepath.Join(cfg.Root, "grove.db"))
		if err != nil {
			return nil, err
		}
		return st, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	// Not echoed: a mistyped DSN may still hold a password.
	return nil, grove.Errorf(grove.ErrInvalid, "GROVE_STORE: want sqlite or a postgres:// URL")
}
