// Package engine orchestrates Grove: it turns requests into store records,
// provider calls (caches, workspaces, git, files) and runtime calls, under
// the locks DESIGN.md §5 asks for. It implements grove.Service in-process.
//
// Locking, in the order taken:
//
//	ws-key:<key>   creation of one workspace key (slow path of Acquire)
//	repo:<key>     exclusive for clone, fetch and cache removal; shared
//	               while a workspace is created from the cache
//	work:<key>\x00<user>
//	               writes to that user's work repository on the cache
//	ws:<id>        exclusive for mutating commands and writes; shared for
//	               read commands
//
// Two workspaces never share a ws:<id> lock, so agents on different
// branches never wait for each other's commands.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/credentials"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/lock"
	"github.com/grove-dev/grove/lock/local"
	"github.com/grove-dev/grove/platform"
	"github.com/grove-dev/grove/provider"
	"github.com/grove-dev/grove/store"
)

// Config wires an Engine. Store, Provider and Driver are required.
type Config struct {
	Store    store.Store
	Provider provider.Provider
	Driver   driver.Driver

	// BaseURL is the GitHub base URL owner/repo names resolve against
	// (GITHUB_BASE_URL); empty means https://github.com.
	BaseURL string
	// DataRoot is Grove's own data root (GROVE_ROOT): never a repository
	// source for a network caller, even under a LocalRepoRoots entry.
	DataRoot string
	// LocalRepoRoots are the directories under which callers that come
	// over the network (grove.WithRemoteCaller) may name local
	// repositories (GROVE_LOCAL_REPO_ROOTS); empty: none. The in-process
	// CLI may name any local repository.
	LocalRepoRoots []string
	// AllowedGitHosts are host or host:port entries network callers may
	// fetch from besides the platform's host (GROVE_ALLOWED_GIT_HOSTS);
	// listed hosts may have any address, loopback and private included.
	AllowedGitHosts []string
	// LookupHost resolves repository hosts for the address check; nil
	// uses the system resolver (tests substitute one).
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
	// AllowUnisolatedWrites lets writable workspaces run on a runtime that
	// reports Isolated=false. Off by default: write-capable work never
	// silently falls back to an unisolated host process.
	AllowUnisolatedWrites bool
	// Network is the runtime network mode; empty means the most closed
	// mode the runtime supports (none for isolated runtimes).
	Network driver.NetworkMode
	Limits  driver.Limits
	Image   string
	// SandboxPath is the PATH commands run with when the request sets
	// none; empty leaves the runtime's default. cmd/grove sets it from
	// GROVE_SANDBOX_PATH or the toolchains found on the host.
	SandboxPath string

	// Credentials resolves the token of each push and platform call
	// (per-call → GitHub App → OAuth → env); nil uses only per-call
	// tokens.
	Credentials *credentials.Chain
	// AccessCheckTTL is how long a user's successful access check on a
	// remote repository is remembered (see checkAccess): within it, a
	// re-acquire runs no git; after it, the next acquire or EnsureRepo asks
	// the remote again with the request's credentials. Zero means
	// DefaultAccessCheckTTL (5 minutes); negative means every call checks.
	AccessCheckTTL time.Duration
	// Platform serves pull requests; nil means none is configured
	// (grove.ErrPlatformNotConfigured).
	Platform platform.Platform
	// ProtectedBranches are names or path.Match patterns never pushed to,
	// besides the workspace's base branch and the repository's default
	// branch, which are always refused.
	ProtectedBranches []string
	// Committer signs the commits Grove makes (commit, eviction
	// snapshots); empty means gitrepo.DefaultIdentity.
	Committer gitrepo.Identity
	// BotIdentity authors commits whose request names no author (for a
	// GitHub App: "<slug>[bot]" and its noreply address).
	BotIdentity gitrepo.Identity
	// Locks serialises work on workspaces and repo caches (DESIGN.md §5);
	// nil means in-memory locks, right for one process. Engines in several
	// processes over one store must share a distributed Locker
	// (lock/pglock). Eviction relies on its try-lock semantics.
	Locks lock.Locker

	// Disk bounds the disk workspaces may take (quotas, the reserve kept
	// for Grove itself); zero fields take DiskPolicy's defaults.
	Disk DiskPolicy

	Logger *slog.Logger
	Now    func() time.Time
}

// Engine implements grove.Service on one machine.
type Engine struct {
	cfg   Config
	store store.Store
	prov  provider.Provider
	drv   driver.Driver
	log   *slog.Logger
	now   func() time.Time
	locks lock.Locker
	parse gitrepo.ParseOptions
	disk  DiskPolicy
	// sources restricts what network callers may name and fetch.
	sources *gitrepo.SourcePolicy
	// runtimes remembers which workspaces already have a runtime so the
	// exec path makes no store round trip; it is only a cache of the store.
	runtimes sync.Map
	// recent remembers workspaces for read paths; see placed.
	recent sync.Map
	// lastExec is when each workspace last ran a command in this process;
	// eviction reads it to find idle runtimes without a store write per
	// command.
	lastExec sync.Map // id -> time.Time
	// written counts bytes of file writes per workspace since its size
	// was last measured (checkWrite).
	written sync.Map // id -> *atomic.Int64
	// access remembers successful access checks per (user, repository).
	access accessMemo
	// dbg holds the workspaces' debug sessions (debug.go).
	dbg debugState
}

var _ grove.Service = (*Engine)(nil)

// New returns an Engine. It does not touch the disk; call Reconcile at
// start-up.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil || cfg.Provider == nil || cfg.Driver == nil {
		return nil, errors.New("engine: Store, Provider and Driver are required")
	}
	e := &Engine{
		cfg:   cfg,
		store: cfg.Store,
		prov:  cfg.Provider,
		drv:   cfg.Driver,
		log:   cfg.Logger,
		now:   cfg.Now,
		locks: cfg.Locks,
		parse: gitrepo.ParseOptions{BaseURL: cfg.BaseURL},
		disk:  cfg.Disk,
	}
	e.disk.defaults()
	e.sources = &gitrepo.SourcePolicy{
		LocalRoots:       cfg.LocalRepoRoots,
		AllowedHosts:     cfg.AllowedGitHosts,
		PlatformHost:     e.parse.PlatformHost(),
		PlatformExplicit: cfg.BaseURL != "",
		LookupHost:       cfg.LookupHost,
	}
	if cfg.DataRoot != "" {
		e.sources.DenyRoots = []string{cfg.DataRoot}
	}
	if e.locks == nil {
		e.locks = local.New()
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = time.Now
	}
	supported := e.drv.Capabilities().Network
	switch {
	case e.cfg.Network != "" && !slices.Contains(supported, e.cfg.Network):
		return nil, grove.Errorf(grove.ErrNotSupported, "runtime %q cannot provide network mode %q", e.drv.Kind(), e.cfg.Network)
	case e.cfg.Network == "":
		// The most closed mode the runtime can really enforce.
		for _, m := range []driver.NetworkMode{driver.NetworkNone, driver.NetworkLimited, driver.NetworkDefault} {
			if slices.Contains(supported, m) {
				e.cfg.Network = m
				break
			}
		}
	}
	return e, nil
}

// parseRepo parses a caller's repository for ctx's origin: a network
// caller (grove.IsRemoteCaller) names local repositories only under the
// allowed roots and remote ones only on allowed hosts.
func (e *Engine) parseRepo(ctx context.Context, repo string) (gitrepo.Remote, error) {
	if !grove.IsRemoteCaller(ctx) {
		return gitrepo.ParseRepo(repo, e.parse)
	}
	opt := e.parse
	opt.Sources = e.sources
	r, err := gitrepo.ParseRepo(repo, opt)
	if err != nil {
		return r, err
	}
	return r, e.sources.CheckHost(r)
}

// Driver returns the runtime driver in use.
func (e *Engine) Driver() driver.Driver { return e.drv }

type progressKey struct{}

// WithProgress returns a ctx under which clone and fetch report progress to
// w.
func WithProgress(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, progressKey{}, w)
}

func progressOf(ctx context.Context) io.Writer {
	w, _ := ctx.Value(progressKey{}).(io.Writer)
	return w
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// validID reports whether id has the shape newID makes, so hostile ids never
// reach the store or a path.
func validID(prefix, id string) bool {
	if len(id) != len(prefix)+16 || id[:len(prefix)] != prefix {
		return false
	}
	_, err := hex.DecodeString(id[len(prefix):])
	return err == nil
}

func (e *Engine) workspace(ctx context.Context, id string) (*grove.Workspace, error) {
	if !validID("ws_", id) {
		return nil, grove.Errorf(grove.ErrNotFound, "workspace %q not found", id)
	}
	ws, err := e.store.GetWorkspace(ctx, id)
	if err != nil {
		return nil, err
	}
	return ws, nil
}

// locked takes the lock of workspace id — exclusive or shared — and then
// reads its record, so the caller acts on the record as it is while the lock
// is held (a Destroy that won the race is seen as ErrNotFound).
func (e *Engine) locked(ctx context.Context, id string, exclusive bool) (*grove.Workspace, func(), error) {
	if !validID("ws_", id) {
		return nil, nil, grove.Errorf(grove.ErrNotFound, "workspace %q not found", id)
	}
	lock := e.locks.RLock
	if exclusive {
		lock = e.locks.Lock
	}
	unlock, err := lock(ctx, "ws:"+id)
	if err != nil {
		return nil, nil, err
	}
	ws, err := e.store.GetWorkspace(ctx, id)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return ws, unlock, nil
}

func (e *Engine) cacheOf(ctx context.Context, ws *grove.Workspace) (*grove.RepoCache, error) {
	c, err := e.store.GetRepoCache(ctx, ws.RepoCacheID)
	if err != nil {
		return nil, fmt.Errorf("repo cache of workspace %s: %w", ws.ID, err)
	}
	return c, nil
}
