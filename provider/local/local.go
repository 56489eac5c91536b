// Package local is the workspace provider for this machine: a bare cache
// per repository and one working repository per workspace under one root,
// reached with host git (gitrepo), os.Root (fsops) and ripgrep (search).
//
// Layout (DESIGN.md §1):
//
//	<root>/<owner>/<repo>/.bare                      the repo cache
//	<root>/<owner>/<repo>/worktrees/<user>_<scope>_<branch>   workspaces
//
// with <root>/<host>/... for hosts other than github.com.
package local

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider"
)

// Provider keeps caches and workspaces under Root.
type Provider struct {
	root   string
	git    *gitrepo.Git
	caches *gitrepo.Caches
	fsOpts fsops.Options
	// roots keeps one open os.Root per workspace directory: opening one
	// costs more than a small read. Entries are dropped when the directory
	// is removed or replaced.
	roots sync.Map // path -> *fsops.FS
}

// MaxListEntries bounds one directory listing.
const MaxListEntries = 5000

var (
	_ provider.Provider = (*Provider)(nil)
	_ provider.Scanner  = (*Provider)(nil)
)

// New returns a provider rooted at caches.Root, running git through
// caches.Git. fsOpts tunes file writes (fsync is on unless NoSync); its
// TempDir defaults to <root>/.grove-tmp.
func New(caches *gitrepo.Caches, fsOpts fsops.Options) *Provider {
	if caches.Git == nil {
		caches.Git = &gitrepo.Git{}
	}
	if fsOpts.TempDir == "" && caches.Root != "" {
		// Beside the workspaces (same filesystem), outside every one of them.
		fsOpts.TempDir = filepath.Join(caches.Root, ".grove-tmp")
	}
	return &Provider{root: caches.Root, git: caches.Git, caches: caches, fsOpts: fsOpts}
}

// Kind implements provider.Provider.
func (p *Provider) Kind() string { return "local" }

// Git is the git this provider runs on its repositories (provider/remote
// runs it on the same caches and work repositories).
func (p *Provider) Git() *gitrepo.Git { return p.git }

func remoteOf(c *grove.RepoCache) gitrepo.Remote {
	return gitrepo.Remote{ID: c.Repo, URL: c.URL, Local: c.Repo.Host == gitrepo.LocalHost}
}

// CachePath implements provider.Provider.
func (p *Provider) CachePath(repo grove.RepoID) string {
	return gitrepo.BarePath(gitrepo.CacheDir(p.root, repo))
}

// EnsureCache implements provider.Provider.
func (p *Provider) EnsureCache(ctx context.Context, c *grove.RepoCache, opt provider.EnsureOptions) (provider.EnsureResult, error) {
	res, err := p.caches.Ensure(ctx, remoteOf(c), gitrepo.EnsureOptions{
		Ref: opt.Ref, Token: opt.Token, Refresh: opt.Refresh, LastFetched: c.LastFetchedAt, Progress: opt.Progress, GitConfig: opt.GitConfig,
	})
	if err != nil {
		return provider.EnsureResult{}, err
	}
	return provider.EnsureResult{Cloned: res.Cloned, Fetched: res.Fetched, FetchedAt: res.FetchedAt}, nil
}

// RemoveCache implements provider.Provider.
func (p *Provider) RemoveCache(ctx context.Context, c *grove.RepoCache) error {
	return p.caches.Remove(ctx, c.LocalPath)
}

// CheckAccess implements provider.Provider with one `git ls-remote`.
func (p *Provider) CheckAccess(ctx context.Context, _ grove.RepoID, url, token string, gitConfig [][2]string) error {
	return p.git.CheckAccess(ctx, url, token, gitConfig)
}

// ResolveCommit implements provider.Provider.
func (p *Provider) ResolveCommit(ctx context.Context, c *grove.RepoCache, ref string) (string, error) {
	return p.git.ResolveCommit(ctx, c.LocalPath, ref)
}

// DefaultBranch implements provider.Provider.
func (p *Provider) DefaultBranch(_ context.Context, c *grove.RepoCache) (string, error) {
	return gitrepo.DefaultBranch(c.LocalPath)
}

// WorkspacePath implements provider.Provider.
func (p *Provider) WorkspacePath(c *grove.RepoCache, ws *grove.Workspace) string {
	return filepath.Join(gitrepo.WorkspacesDir(filepath.Dir(c.LocalPath)), gitrepo.WorkspaceDirName(ws.User, ws.Scope, ws.Branch))
}

// CreateWorkspace implements provider.Provider.
func (p *Provider) CreateWorkspace(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace) (string, error) {
	p.forget(ws.LocalPath)
	work := p.workRepo(c, ws)
	if err := p.git.EnsureWorkRepo(ctx, c.LocalPath, work); err != nil {
		return "", err
	}
	return p.git.CreateWorkspace(ctx, c.LocalPath, ws.LocalPath, gitrepo.WorkspaceOptions{
		Branch: ws.Branch, Base: ws.BaseRef, WorkRepo: work, Restore: gitrepo.SavedPrefix + gitrepo.SnapshotKey(ws.Key),
	})
}

// workRepo is the work repository of ws's user on cache c.
func (p *Provider) workRepo(c *grove.RepoCache, ws *grove.Workspace) string {
	return gitrepo.WorkRepoPath(c.LocalPath, ws.User)
}

// WorkRef implements provider.Provider.
func (p *Provider) WorkRef(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, ref string) (string, error) {
	return p.git.LookupRef(ctx, p.workRepo(c, ws), ref)
}

// HasWork implements provider.Provider.
func (p *Provider) HasWork(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, sha string) bool {
	return p.git.HasCommit(ctx, p.workRepo(c, ws), sha)
}

// SetWorkRef implements provider.Provider.
func (p *Provider) SetWorkRef(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, ref, sha string) error {
	work := p.workRepo(c, ws)
	if err := p.git.EnsureWorkRepo(ctx, c.LocalPath, work); err != nil {
		return err
	}
	return p.git.SetRef(ctx, work, ref, sha)
}

// ReceiveWork implements provider.Provider. The bundle is spooled to a
// file in the work repositories' directory (Grove's, never the
// workspace's) and removed afterwards.
func (p *Provider) ReceiveWork(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, src, dst, tip string, write func(io.Writer) error) error {
	work := p.workRepo(c, ws)
	if err := p.git.EnsureWorkRepo(ctx, c.LocalPath, work); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(work), ".bundle-tmp-")
	if err != nil {
		return grove.Errorf(grove.ErrUnavailable, "receive work: %v", err)
	}
	defer os.Remove(f.Name())
	werr := write(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	return p.git.ReceiveBundle(ctx, work, f.Name(), src, dst, tip)
}

// PushWork implements provider.Provider: the saved branch goes from the
// work repository straight to the cache's remote URL with the call's token.
func (p *Provider) PushWork(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, req grove.PushRequest, lease string, gitConfig [][2]string) (*grove.PushResult, error) {
	return p.git.PushWork(ctx, p.workRepo(c, ws), c.URL, ws.Branch, lease, gitrepo.PushOptions{Token: req.Token, ForceWithLease: req.ForceWithLease, Config: gitConfig})
}

// RemoveWorkspace implements provider.Provider.
func (p *Provider) RemoveWorkspace(ctx context.Context, ws *grove.Workspace) error {
	p.forget(ws.LocalPath)
	return p.git.RemoveWorkspace(ctx, ws.LocalPath)
}

// Exists implements provider.Provider.
func (p *Provider) Exists(_ context.Context, ws *grove.Workspace) (bool, error) {
	if ws.LocalPath == "" {
		return false, nil
	}
	_, err := os.Stat(filepath.Join(ws.LocalPath, ".git"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// SizeBytes implements provider.Provider. The walk never follows a
// symlink and only reads sizes.
func (p *Provider) SizeBytes(_ context.Context, ws *grove.Workspace) int64 {
	return gitrepo.DiskUsage(ws.LocalPath)
}

// Sandbox implements provider.Provider: the sandbox sees the workspace, and
// read-only the cache's objects and its own user's work repository's
// objects (the workspace borrows both through git alternates at the same
// absolute paths) — never another user's — and never the workspace's git
// configuration, hooks or alternates as writable.
func (p *Provider) Sandbox(c *grove.RepoCache, ws *grove.Workspace) driver.Spec {
	return driver.Spec{
		WorkDir:        ws.LocalPath,
		ReadOnlyPaths:  []string{gitrepo.CacheObjects(c.LocalPath), gitrepo.WorkRepoObjects(p.workRepo(c, ws))},
		ProtectedPaths: gitrepo.Protected(ws.LocalPath),
	}
}

func (p *Provider) files(ws *grove.Workspace) (*fsops.FS, error) {
	if ws.LocalPath == "" {
		return nil, grove.Errorf(grove.ErrNotSupported, "workspace %s has no local files", ws.ID)
	}
	if f, ok := p.roots.Load(ws.LocalPath); ok {
		return f.(*fsops.FS), nil
	}
	f, err := fsops.Open(ws.LocalPath, p.fsOpts)
	if err != nil {
		return nil, err
	}
	if prev, loaded := p.roots.LoadOrStore(ws.LocalPath, f); loaded {
		f.Close()
		return prev.(*fsops.FS), nil
	}
	return f, nil
}

// forget closes the cached root of dir. A root opened on a directory that
// was since removed would keep pointing at the deleted inode.
func (p *Provider) forget(dir string) {
	if f, ok := p.roots.LoadAndDelete(dir); ok {
		f.(*fsops.FS).Close()
	}
}

// ReadFile implements provider.Provider.
func (p *Provider) ReadFile(_ context.Context, ws *grove.Workspace, path string, max int64) ([]byte, error) {
	f, err := p.files(ws)
	if err != nil {
		return nil, err
	}
	return f.ReadFile(path, max)
}

// WriteFile implements provider.Provider.
func (p *Provider) WriteFile(_ context.Context, ws *grove.Workspace, path string, data []byte) error {
	f, err := p.files(ws)
	if err != nil {
		return err
	}
	return f.WriteFile(path, data, 0o644)
}

// DeleteFile implements provider.Provider.
func (p *Provider) DeleteFile(_ context.Context, ws *grove.Workspace, path string) error {
	f, err := p.files(ws)
	if err != nil {
		return err
	}
	return f.DeleteFile(path)
}

// ListDir implements provider.Provider.
func (p *Provider) ListDir(_ context.Context, ws *grove.Workspace, path string, depth int) ([]grove.DirEntry, error) {
	f, err := p.files(ws)
	if err != nil {
		return nil, err
	}
	ents, truncated, err := f.ListDir(path, depth, MaxListEntries)
	if err != nil {
		return nil, err
	}
	if truncated {
		return nil, grove.Errorf(grove.ErrTooLarge, "listing %q has more than %d entries; list a subdirectory or use a smaller depth", path, MaxListEntries)
	}
	return ents, nil
}
