// Package provider defines the workspace provider port: where repo caches
// and workspaces live and how git and files are reached.
//
// The local adapter (provider/local) keeps a bare cache, a work repository
// per (cache, user) and one working repository per workspace on this
// machine; it runs host git only on the Grove-owned repositories and
// reaches workspace files through os.Root. A remote adapter (a backend
// such as a Daytona sandbox) implements the same methods through the
// runtime; a workspace then has no LocalPath and the layers above never
// notice: workspace git goes through the runtime either way.
//
// # Contract
//
//   - The engine serialises calls: EnsureCache and RemoveCache run under
//     the repo's exclusive lock; CreateWorkspace under the repo's shared
//     lock and the workspace key's lock; writes to a user's work
//     repository under that (repo, user) pair's lock; mutating workspace
//     operations (WriteFile, DeleteFile) under the workspace's exclusive
//     lock, reads under its shared lock. Providers need no locks of their
//     own for these.
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

// Provider places caches and workspaces and keeps Grove-owned
// repositories. It never runs git over a workspace's repository: a
// workspace's files and .git are written by agent code, so its git state is
// read and written inside its runtime (provider/execpath), and work leaves
// it only as a bundle that ReceiveWork checks into the user's work
// repository — the Grove-owned repository that pushes and saved work come
// from.
type Provider interface {
	Kind() string

	// CachePath is where the cache of repo lives (recorded in the store).
	CachePath(repo grove.RepoID) string
	// EnsureCache clones the cache if absent and fetches when the ref is
	// missing, when the last fetch is older than the freshness window or
	// when asked.
	EnsureCache(ctx context.Context, c *grove.RepoCache, opt EnsureOptions) (EnsureResult, error)
	RemoveCache(ctx context.Context, c *grove.RepoCache) error
	// CheckAccess reports whether token ("" for none) can read repo at
	// url on its remote now, without touching any cache: nil, or an error
	// of kind ErrAuthFailed or ErrNotFound when it cannot (or another kind
	// when the remote could not be asked). The engine calls it before a
	// user may use a cache that another user's credential filled.
	// gitConfig is forced on the check as on a fetch (EnsureOptions).
	CheckAccess(ctx context.Context, repo grove.RepoID, url, token string, gitConfig [][2]string) error
	ResolveCommit(ctx context.Context, c *grove.RepoCache, ref string) (sha string, err error)
	// DefaultBranch is the remote's default branch as the cache recorded
	// it at clone time; "" when HEAD is detached.
	DefaultBranch(ctx context.Context, c *grove.RepoCache) (string, error)

	// WorkspacePath is where ws will live (recorded before creation).
	WorkspacePath(c *grove.RepoCache, ws *grove.Workspace) string
	// CreateWorkspace makes ws at ws.LocalPath: on ws.Branch (re-attached
	// at the tip its user's work repository saved, else the cache's
	// branch; never reset) or detached at ws.BaseRef when Branch is empty.
	// It returns the head commit.
	CreateWorkspace(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace) (head string, err error)
	RemoveWorkspace(ctx context.Context, ws *grove.Workspace) error
	// Exists reports whether ws's files are present.
	Exists(ctx context.Context, ws *grove.Workspace) (bool, error)
	// SizeBytes is the disk space ws's own files take.
	SizeBytes(ctx context.Context, ws *grove.Workspace) int64
	// Sandbox fills the parts of a runtime spec the provider knows: the
	// workspace's path, what must be visible read-only (the cache's and
	// the user's work repository's objects) and what must stay read-only
	// inside it.
	Sandbox(c *grove.RepoCache, ws *grove.Workspace) driver.Spec

	// WorkRef returns the commit ref names in ws's user's work
	// repository, or "" when there is none.
	WorkRef(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, ref string) (string, error)
	// HasWork reports whether ws's user's work repository (or the cache)
	// already holds commit sha and its history.
	HasWork(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, sha string) bool
	// SetWorkRef points ref in ws's user's work repository at sha, which
	// HasWork reported present.
	SetWorkRef(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, ref, sha string) error
	// ReceiveWork calls write with a file of the provider's own, expecting
	// a git bundle whose ref src is at tip, fetches it into ws's user's
	// work repository with every object checked, and points dst at tip.
	// The bundle is untrusted data.
	ReceiveWork(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, src, dst, tip string, write func(io.Writer) error) error
	// PushWork pushes the commit saved for ws's branch in the work
	// repository to the cache's remote. lease is the remote branch's
	// commit as the cache last saw it ("" when absent) for a first
	// force-with-lease. gitConfig is forced on the push as on a fetch
	// (EnsureOptions.GitConfig).
	PushWork(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, req grove.PushRequest, lease string, gitConfig [][2]string) (*grove.PushResult, error)

	ReadFile(ctx context.Context, ws *grove.Workspace, path string, max int64) ([]byte, error)
	WriteFile(ctx context.Context, ws *grove.Workspace, path string, data []byte) error
	DeleteFile(ctx context.Context, ws *grove.Workspace, path string) error
	ListDir(ctx context.Context, ws *grove.Workspace, path string, depth int) ([]grove.DirEntry, error)
}

// EnsureOptions tunes EnsureCache.
type EnsureOptions struct {
	Ref      string // fetch if this ref is missing
	Token    string
	Refresh  bool
	Progress io.Writer
	// GitConfig is forced on clone and fetch: what SourcePolicy.FetchConfig
	// returns for a network caller.
	GitConfig [][2]string
}

// EnsureResult says what EnsureCache did.
type EnsureResult struct {
	Cloned    bool
	Fetched   bool
	FetchedAt time.Time
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
	// SweepTemp removes Grove's own temporary files and directories that
	// a crash left behind (old enough that no live process is building
	// them) and returns what it removed.
	SweepTemp(ctx context.Context) ([]string, error)
}

// ScanReport is what Scan found.
type ScanReport struct {
	MissingCaches []string // ids of caches whose repository is gone
	// MissingWorkspaces are ids of workspaces whose files Scan found gone
	// where the engine does not probe them itself (remote workspaces in
	// running sandboxes).
	MissingWorkspaces []string
	OrphanDirs        []string
	RemovedLocks      []string
	RemovedTemp       []string // Grove's own temporaries a crash left behind
}
