// Package provider defines the workspace provider port: where repo caches
// and workspaces live and how git and files are reached.
//
// The local adapter (provider/local) keeps a bare cache and one working
// repository per workspace on this machine and reaches them with host git
// and os.Root. A remote adapter (git running inside a backend such as a
// Daytona sandbox) implements the same methods through the runtime; a
// workspace then has no LocalPath and the layers above never notice.
//
// # Contract
//
//   - The engine serialises calls: EnsureCache, RemoveCache and SaveBranch
//     run under the repo's exclusive lock; CreateWorkspace under the repo's
//     shared lock and the workspace key's lock; mutating workspace
//     operations (WriteFile, DeleteFile, Commit) under the workspace's
//     exclusive lock, reads under its shared lock. Providers need no locks
//     of their own for these.
//   - Paths are workspace-relative and untrusted; providers refuse escapes
//     with grove.ErrPathOutside. Refs are validated by the engine before
//     they reach a provider.
//   - Tokens arrive per call and are never stored or logged.
//   - Errors wrap the kinds of package grove.
package provider

import (
	"context"
	"io"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// Provider places caches and workspaces and reaches their files and git.
type Provider interface {
	Kind() string

	// CachePath is where the cache of repo lives (recorded in the store).
	CachePath(repo grove.RepoID) string
	// EnsureCache clones the cache if absent and fetches when the ref is
	// missing, when the last fetch is older than the freshness window or
	// when asked.
	EnsureCache(ctx context.Context, c *grove.RepoCache, opt EnsureOptions) (EnsureResult, error)
	RemoveCache(ctx context.Context, c *grove.RepoCache) error
	ResolveCommit(ctx context.Context, c *grove.RepoCache, ref string) (sha string, err error)
	// DefaultBranch is the remote's default branch as the cache recorded
	// it at clone time; "" when HEAD is detached.
	DefaultBranch(ctx context.Context, c *grove.RepoCache) (string, error)

	// WorkspacePath is where ws will live (recorded before creation).
	WorkspacePath(c *grove.RepoCache, ws *grove.Workspace) string
	// CreateWorkspace makes ws at ws.LocalPath: on ws.Branch (re-attached
	// if it exists, never reset) or detached at ws.BaseRef when Branch is
	// empty. It returns the head commit.
	CreateWorkspace(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace) (head string, err error)
	// SaveBranch records ws's branch in the cache so a later workspace on
	// the same branch re-attaches the committed work.
	SaveBranch(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace) error
	// Snapshot saves everything in ws — committed or not — in the cache
	// under a ref named for ws.ID, leaving ws untouched, and returns the
	// ref. Eviction calls it before deleting a dirty workspace.
	Snapshot(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace) (ref string, err error)
	RemoveWorkspace(ctx context.Context, ws *grove.Workspace) error
	// Exists reports whether ws's files are present.
	Exists(ctx context.Context, ws *grove.Workspace) (bool, error)
	Inspect(ctx context.Context, ws *grove.Workspace) (Info, error)
	// Sandbox fills the parts of a runtime spec the provider knows: the
	// workspace's path, what must be visible read-only and what must stay
	// read-only inside it.
	Sandbox(c *grove.RepoCache, ws *grove.Workspace) driver.Spec

	ReadFile(ctx context.Context, ws *grove.Workspace, path string, max int64) ([]byte, error)
	WriteFile(ctx context.Context, ws *grove.Workspace, path string, data []byte) error
	DeleteFile(ctx context.Context, ws *grove.Workspace, path string) error
	ListDir(ctx context.Context, ws *grove.Workspace, path string, depth int) ([]grove.DirEntry, error)
	Search(ctx context.Context, ws *grove.Workspace, req grove.SearchRequest) (*grove.SearchResult, error)

	Status(ctx context.Context, ws *grove.Workspace) (*grove.Status, error)
	Diff(ctx context.Context, ws *grove.Workspace, req grove.DiffRequest) (*grove.Diff, error)
	Log(ctx context.Context, ws *grove.Workspace, limit int, path string) ([]grove.Commit, error)
	Commit(ctx context.Context, ws *grove.Workspace, req grove.CommitRequest) (*grove.CommitResult, error)
	Push(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, req grove.PushRequest) (*grove.PushResult, error)
}

// EnsureOptions tunes EnsureCache.
type EnsureOptions struct {
	Ref      string // fetch if this ref is missing
	Token    string
	Refresh  bool
	Progress io.Writer
}

// EnsureResult says what EnsureCache did.
type EnsureResult struct {
	Cloned    bool
	Fetched   bool
	FetchedAt time.Time
}

// Info is a workspace's observed state.
type Info struct {
	Dirty     bool
	SizeBytes int64
	Head      string
}

// Scanner is implemented by providers that can see their storage directly
// (the local one). Reconcile uses it to find what the store does not know.
type Scanner interface {
	// Scan reports caches whose repository is gone and workspace
	// directories no record points to, and removes stale git lock files
	// (older than any live git holds one) in known caches and
	// workspaces (a crashed git leaves them and they block every later git
	// call), reporting each one removed. Orphan directories are only
	// reported, never deleted: they may hold the only copy of someone's work.
	Scan(ctx context.Context, caches []*grove.RepoCache, workspaces []*grove.Workspace) (ScanReport, error)
}

// ScanReport is what Scan found.
type ScanReport struct {
	MissingCaches []string // ids of caches whose repository is gone
	OrphanDirs    []string
	RemovedLocks  []string
}
