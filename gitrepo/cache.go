package gitrepo

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/rmtree"
)

// DefaultFreshness is how long a fetch stays good enough when the caller
// configures nothing.
const DefaultFreshness = 5 * time.Minute

// fetchMarker is touched after every clone and fetch; its mtime is the last
// fetch time when the caller has none recorded.
const fetchMarker = "grove-fetched"

// Caches manages bare repository caches under Root.
//
// Concurrency: the caller must serialise, per bare repository, Ensure
// (clone and fetch), SaveBranch and Remove — they write the cache's refs and
// packed-refs, which git guards only with lock files that make the loser
// fail rather than wait. CreateWorkspace and ResolveCommit only read the
// cache and may run concurrently with each other and with a fetch, but not
// with Remove. The engine holds these per-repo locks.
type Caches struct {
	Git       *Git
	Root      string
	Freshness time.Duration    // 0: DefaultFreshness
	Now       func() time.Time // nil: time.Now
	// MaxBytes bounds what one clone (or one fetch) may add to the disk:
	// past it git is stopped and the call fails with
	// grove.ErrResourceLimit. 0 means DefaultMaxCloneBytes; negative, none.
	MaxBytes int64
}

// DefaultMaxCloneBytes is Caches.MaxBytes when unset.
const DefaultMaxCloneBytes = 20 << 30

// EnsureOptions say what Ensure must guarantee.
type EnsureOptions struct {
	Ref         string    // must resolve afterwards; "" means just have the repo
	Token       string    // per call; never stored
	Refresh     bool      // fetch even when fresh
	LastFetched time.Time // from the store; zero: use the cache's marker
	Progress    io.Writer // git's --progress lines for clone and fetch
	// GitConfig is forced on clone and fetch (SourcePolicy.FetchConfig:
	// no redirects, a pinned address).
	GitConfig [][2]string
}

// EnsureResult describes what Ensure did.
type EnsureResult struct {
	Path      string // the bare repository
	Cloned    bool
	Fetched   bool
	FetchedAt time.Time // last successful clone or fetch
}

func (c *Caches) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Caches) git() *Git {
	if c.Git == nil {
		return &Git{}
	}
	return c.Git
}

// Path is the bare repository of remote under Root.
func (c *Caches) Path(remote Remote) string { return BarePath(CacheDir(c.Root, remote.ID)) }

// Ensure makes sure the bare cache of remote exists and, when opt.Ref is
// set, that the ref resolves. It clones once, into a temporary directory
// renamed into place so a crash never leaves half a cache, and fetches only
// when the ref is missing, the last fetch is older than Freshness, or
// opt.Refresh — and then only the exact refspec needed.
func (c *Caches) Ensure(ctx context.Context, remote Remote, opt EnsureOptions) (EnsureResult, error) {
	if opt.Ref != "" {
		if err := ValidateRef(opt.Ref); err != nil {
			return EnsureResult{}, err
		}
	}
	if remote.URL == "" || strings.HasPrefix(remote.URL, "-") {
		return EnsureResult{}, grove.Errorf(grove.ErrInvalid, "remote has no usable URL")
	}
	g := c.git()
	bare, err := filepath.Abs(c.Path(remote))
	if err != nil {
		return EnsureResult{}, grove.Errorf(grove.ErrInvalid, "repos root: %v", err)
	}
	res := EnsureResult{Path: bare}

	if _, err := os.Stat(filepath.Join(bare, "HEAD")); errors.Is(err, os.ErrNotExist) {
		if err := c.clone(ctx, remote, bare, opt); err != nil {
			return res, err
		}
		res.Cloned, res.FetchedAt = true, c.touchFetched(bare)
		if opt.Ref == "" {
			return res, nil
		}
		if _, err := g.ResolveCommit(ctx, bare, opt.Ref); err == nil {
			return res, nil
		}
		// A sha or ref the clone did not bring (not under refs/heads or
		// refs/tags): fetch it exactly.
		if err := c.fetchRef(ctx, bare, opt); err != nil {
			return res, err
		}
		res.Fetched, res.FetchedAt = true, c.touchFetched(bare)
		return res, nil
	} else if err != nil {
		return res, grove.Errorf(grove.ErrUnavailable, "repo cache %s: %v", remote.ID, err)
	}

	last := opt.LastFetched
	if fi, err := os.Stat(filepath.Join(bare, fetchMarker)); err == nil && fi.ModTime().After(last) {
		last = fi.ModTime()
	}
	res.FetchedAt = last
	fresh := c.freshness()
	need := opt.Refresh || last.IsZero() || c.now().Sub(last) >= fresh
	if !need && opt.Ref != "" {
		if _, err := g.ResolveCommit(ctx, bare, opt.Ref); err != nil {
			if !errors.Is(err, grove.ErrNotFound) {
				return res, err
			}
			need = true
		}
	}
	if !need {
		return res, nil
	}
	err = c.bounded(ctx, bare, func(ctx context.Context) error {
		if opt.Ref == "" {
			return c.fetchAll(ctx, bare, opt)
		}
		return c.fetchRef(ctx, bare, opt)
	})
	if err != nil {
		return res, err
	}
	res.Fetched, res.FetchedAt = true, c.touchFetched(bare)
	return res, nil
}

func (c *Caches) freshness() time.Duration {
	if c.Freshness > 0 {
		return c.Freshness
	}
	return DefaultFreshness
}

func (c *Caches) touchFetched(bare string) time.Time {
	now := c.now()
	p := filepath.Join(bare, fetchMarker)
	if f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		f.Close()
	}
	_ = os.Chtimes(p, now, now) // best effort: the store's LastFetched is authoritative
	return now
}

func (c *Caches) clone(ctx context.Context, remote Remote, bare string, opt EnsureOptions) (err error) {
	g := c.git()
	parent := filepath.Dir(bare)
	// A failed clone leaves no empty <host>/<owner>/<name> behind: remove
	// the directories made here, deepest first (os.Remove spares any that
	// a concurrent clone has put something in).
	made := missingDirs(c.Root, parent)
	defer func() {
		for i := 0; err != nil && i < len(made); i++ {
			_ = os.Remove(made[i])
		}
	}()
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return grove.Errorf(grove.ErrUnavailable, "create cache directory: %v", err)
	}
	tmp, err := os.MkdirTemp(parent, ".bare-tmp-")
	if err != nil {
		return grove.Errorf(grove.ErrUnavailable, "create cache directory: %v", err)
	}
	defer os.RemoveAll(tmp) // no-op after the rename
	args := []string{"clone", "--bare", "--template="}
	if opt.Progress != nil {
		args = append(args, "--progress")
	} else {
		args = append(args, "--quiet")
	}
	args = append(args, "--", remote.URL, tmp)
	if err := c.bounded(ctx, tmp, func(ctx context.Context) error {
		_, err := g.run(ctx, call{args: args, dir: parent, token: opt.Token, progress: opt.Progress, config: opt.GitConfig})
		return err
	}); err != nil {
		return err
	}
	// A bare clone copies branches but records no fetch refspec; later
	// fetches must mirror branches and tags onto themselves. Objects are
	// never pruned: workspaces borrow them through alternates and may point
	// at commits the remote has since force-pushed away.
	settings := [][]string{
		{"--replace-all", "remote.origin.fetch", "+refs/heads/*:refs/heads/*"},
		{"--add", "remote.origin.fetch", "+refs/tags/*:refs/tags/*"},
		{"gc.pruneExpire", "never"},
		{"gc.auto", "0"},
		{"core.logAllRefUpdates", "false"},
	}
	if remote.Local {
		settings = append(settings, []string{"remote.origin.uploadpack", hardenedUploadPack})
	}
	for _, kv := range settings {
		args := append([]string{"config"}, kv...)
		if _, err := g.run(ctx, call{args: args, env: bareEnv(tmp)}); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, bare); err != nil {
		if _, statErr := os.Stat(filepath.Join(bare, "HEAD")); statErr == nil {
			return nil // another process won the race; its cache is as good
		}
		return grove.Errorf(grove.ErrUnavailable, "install repo cache: %v", err)
	}
	return nil
}

// missingDirs lists dir and those of its ancestors below root that do
// not exist yet, deepest first.
func missingDirs(root, dir string) []string {
	var out []string
	for dir != filepath.Clean(root) {
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
			return out
		}
		out = append(out, dir)
		up := filepath.Dir(dir)
		if up == dir {
			return out
		}
		dir = up
	}
	return out
}

func (c *Caches) fetchArgs(opt EnsureOptions, refspecs ...string) []string {
	args := []string{"fetch", "--no-tags", "--no-write-fetch-head"}
	if opt.Progress != nil {
		args = append(args, "--progress")
	} else {
		args = append(args, "--quiet")
	}
	return append(append(args, "--", "origin"), refspecs...)
}

func (c *Caches) fetchAll(ctx context.Context, bare string, opt EnsureOptions) error {
	_, err := c.git().run(ctx, call{
		args:  c.fetchArgs(opt, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"),
		env:   bareEnv(bare),
		token: opt.Token, progress: opt.Progress, config: opt.GitConfig,
	})
	return err
}

// fetchRef fetches exactly opt.Ref: as a branch, then as a tag, then as a
// commit sha (stored under refs/grove/commits/ so it stays reachable). A
// full 40/64-hex name skips the branch and tag attempts: no real branch is
// named like that, and each attempt is a network round trip. A
// "refs/..." name is fetched onto itself.
func (c *Caches) fetchRef(ctx context.Context, bare string, opt EnsureOptions) error {
	g := c.git()
	ref := opt.Ref
	var specs []string
	switch {
	case strings.HasPrefix(ref, "refs/"):
		specs = []string{"+" + ref + ":" + ref}
	case isHexSHA(ref):
		specs = []string{ref + ":refs/grove/commits/" + ref}
	default:
		specs = []string{"+refs/heads/" + ref + ":refs/heads/" + ref, "+refs/tags/" + ref + ":refs/tags/" + ref}
	}
	for _, spec := range specs {
		_, err := g.run(ctx, call{args: c.fetchArgs(opt, spec), env: bareEnv(bare), token: opt.Token, progress: opt.Progress, config: opt.GitConfig})
		if err == nil {
			if _, rerr := g.ResolveCommit(ctx, bare, ref); rerr == nil {
				return nil
			}
			continue
		}
		if !errors.Is(err, grove.ErrNotFound) {
			return err
		}
	}
	if isHex(ref) && len(ref) >= 4 && !isHexSHA(ref) {
		// An abbreviated sha can only be found among what the remote has:
		// fetch everything, then resolve locally.
		if err := c.fetchAll(ctx, bare, opt); err != nil {
			return err
		}
		if _, err := g.ResolveCommit(ctx, bare, ref); err == nil {
			return nil
		}
	}
	return grove.Errorf(grove.ErrNotFound, "ref %q not found in the remote repository", ref)
}

// ResolveCommit returns the full sha of the commit ref names in the
// repository at gitDir (a bare cache or a workspace's .git), or
// grove.ErrNotFound.
func (g *Git) ResolveCommit(ctx context.Context, gitDir, ref string) (string, error) {
	if err := ValidateRef(ref); err != nil {
		return "", err
	}
	out, err := g.run(ctx, call{
		args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}"},
		env:  []string{"GIT_DIR=" + gitDir},
	})
	if err != nil {
		var gerr *Error
		if errors.As(err, &gerr) && gerr.ExitCode == 1 {
			return "", grove.Errorf(grove.ErrNotFound, "ref %q not found", ref)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Remove deletes the bare repository at path. It is first renamed aside, so
// a crash half-way leaves a trash directory, never a half cache that looks
// valid. The caller must make sure no workspace borrows its objects.
func (c *Caches) Remove(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !isGitDir(path) || filepath.Base(path) != ".bare" {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return grove.Errorf(grove.ErrInvalid, "%s is not a repo cache", filepath.Base(path))
	}
	return removeAside(path)
}

// removeAside renames dir to a hidden sibling and deletes that.
func removeAside(dir string) error {
	trash := filepath.Join(filepath.Dir(dir), ".trash-"+filepath.Base(dir)+"-"+randomSuffix())
	if err := os.Rename(dir, trash); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return grove.Errorf(grove.ErrUnavailable, "remove %s: %v", filepath.Base(dir), err)
	}
	if err := rmtree.RemoveAll(trash); err != nil {
		return grove.Errorf(grove.ErrUnavailable, "remove %s: %v", filepath.Base(dir), err)
	}
	return nil
}

// DefaultBranch reads the bare cache's HEAD symref — the remote's default
// branch as recorded at clone time — without starting git. It is "" when
// HEAD is detached.
func DefaultBranch(barePath string) (string, error) {
	b, err := os.ReadFile(filepath.Join(barePath, "HEAD"))
	if err != nil {
		return "", err
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: refs/heads/")
	if !ok {
		return "", nil
	}
	return ref, nil
}

// errTooBig is the cause bounded stops git with.
var errTooBig = errors.New("repository over the size limit")

// bounded runs fn (a clone or fetch into dir) while a watchdog measures
// dir every half second and stops fn once dir grew by more than MaxBytes:
// a repository (or a hostile server) cannot fill the disk.
func (c *Caches) bounded(ctx context.Context, dir string, fn func(ctx context.Context) error) error {
	limit := c.MaxBytes
	if limit == 0 {
		limit = DefaultMaxCloneBytes
	}
	if limit < 0 {
		return fn(ctx)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := DiskUsage(dir)
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if DiskUsage(dir)-start > limit {
					cancel(errTooBig)
					return
				}
			}
		}
	}()
	err := fn(ctx)
	close(done)
	<-watched
	// A transfer faster than the watchdog's first look is measured once
	// more at the end (a clone's directory is then still temporary).
	if err == nil && DiskUsage(dir)-start > limit {
		cancel(errTooBig)
	}
	if errors.Is(context.Cause(ctx), errTooBig) {
		return grove.Errorf(grove.ErrResourceLimit, "the repository is larger than this server's limit of %d bytes per clone or fetch", limit)
	}
	return err
}
