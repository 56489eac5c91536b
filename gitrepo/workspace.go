package gitrepo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/dirsize"
)

// WorkspaceOptions say what a new workspace checks out.
type WorkspaceOptions struct {
	Branch string // "": a detached checkout of Base
	Base   string // ref or sha a new branch (or the detached HEAD) starts at; "": the cache's HEAD
	// WorkRepo is the user's work repository (EnsureWorkRepo): the
	// workspace borrows its objects after the cache's, and a branch saved
	// there is re-attached.
	WorkRepo string
	// Restore names a snapshot ref in WorkRepo (SavedPrefix...) whose
	// work is put back as uncommitted changes on top of the checkout, if
	// it exists; it is deleted once restored.
	Restore string
	// MaxFiles and MaxBytes bound what the checkout (and a restored
	// snapshot) may write: the entries and bytes of the tree, counted
	// before git writes anything (0: the defaults).
	MaxFiles, MaxBytes int64
}

// CreateWorkspace makes the workspace repository dir from the bare cache at
// barePath (see the package doc for why it is a shared clone and not a git
// worktree) and returns the commit checked out.
//
// The branch comes from, in order: refs/grove/branches/<branch> in the
// user's work repository (work Grove saved earlier), refs/heads/<branch>
// in the cache, or a new branch at Base. An existing branch is re-attached at its tip, never
// reset to Base. The workspace is built in a temporary directory beside dir
// and renamed into place, so dir is either absent or complete; an existing
// dir is grove.ErrConflict.
func (g *Git) CreateWorkspace(ctx context.Context, barePath, dir string, opt WorkspaceOptions) (head string, err error) {
	if opt.Branch != "" {
		if err := ValidateBranch(opt.Branch); err != nil {
			return "", err
		}
	}
	if opt.Base != "" {
		if err := ValidateRef(opt.Base); err != nil {
			return "", err
		}
	}
	// Absolute paths: the alternates file and origin URL record them, and
	// a sandbox mounts them at the same place.
	if barePath, err = filepath.Abs(barePath); err != nil {
		return "", grove.Errorf(grove.ErrInvalid, "cache path: %v", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", grove.Errorf(grove.ErrInvalid, "workspace path: %v", err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return "", grove.Errorf(grove.ErrConflict, "workspace directory %s already exists", filepath.Base(dir))
	}
	sha := ""
	if opt.Branch != "" && opt.WorkRepo != "" {
		if sha, err = g.LookupRef(ctx, opt.WorkRepo, SavedBranchPrefix+opt.Branch); err != nil {
			return "", err
		}
	}
	if sha == "" {
		if sha, err = g.workspaceStart(ctx, barePath, opt); err != nil {
			return "", err
		}
	}

	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", grove.Errorf(grove.ErrUnavailable, "create workspace parent: %v", err)
	}
	tmp, err := os.MkdirTemp(parent, ".ws-tmp-")
	if err != nil {
		return "", grove.Errorf(grove.ErrUnavailable, "create workspace: %v", err)
	}
	defer os.RemoveAll(tmp) // no-op after the rename

	// --template= keeps sample hooks out of the new .git; --shared borrows
	// the cache's objects through alternates instead of copying them.
	if _, err := g.run(ctx, call{
		args: []string{"clone", "--shared", "--no-checkout", "--quiet", "--template=", "--", barePath, tmp},
		dir:  parent,
	}); err != nil {
		return "", err
	}
	if opt.WorkRepo != "" {
		// Written by Grove into a directory no sandbox has seen yet.
		alt := filepath.Join(tmp, ".git", "objects", "info", "alternates")
		own, err := filepath.Abs(WorkRepoObjects(opt.WorkRepo))
		if err != nil {
			return "", grove.Errorf(grove.ErrInvalid, "work repository path: %v", err)
		}
		f, err := os.OpenFile(alt, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return "", grove.Errorf(grove.ErrUnavailable, "create workspace: %v", err)
		}
		_, err = f.WriteString(own + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", grove.Errorf(grove.ErrUnavailable, "create workspace: %v", err)
		}
	}
	// An empty hooks directory exists so that a sandbox can mount it
	// read-only (Protected); host git ignores it either way (core.hooksPath).
	if err := os.MkdirAll(filepath.Join(tmp, ".git", "hooks"), 0o755); err != nil {
		return "", grove.Errorf(grove.ErrUnavailable, "create workspace: %v", err)
	}
	env := workEnv(tmp)
	if err := g.checkTree(ctx, tmp, sha, opt.MaxFiles, opt.MaxBytes); err != nil {
		return "", err
	}
	if opt.Branch == "" {
		_, err = g.run(ctx, call{args: []string{"checkout", "--quiet", "--detach", sha, "--"}, dir: tmp, env: env})
	} else {
		_, err = g.run(ctx, call{args: []string{"checkout", "--quiet", "-B", opt.Branch, sha, "--"}, dir: tmp, env: env})
	}
	if err != nil {
		return "", err
	}
	if opt.Branch != "" {
		// The branch's upstream is its namesake on origin, as a push from
		// Grove makes it. Set here, before any sandbox sees the workspace:
		// inside one, .git/config is read-only.
		for _, kv := range [][2]string{{"remote", "origin"}, {"merge", "refs/heads/" + opt.Branch}} {
			if _, err := g.run(ctx, call{args: []string{"config", "--local", "--", "branch." + opt.Branch + "." + kv[0], kv[1]}, dir: tmp, env: env}); err != nil {
				return "", err
			}
		}
	}
	if err := g.dropCloneBranch(ctx, barePath, tmp, opt.Branch); err != nil {
		return "", err
	}
	restored, err := g.restoreSnapshot(ctx, tmp, opt)
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Lstat(dir); statErr == nil {
			return "", grove.Errorf(grove.ErrConflict, "workspace directory %s already exists", filepath.Base(dir))
		}
		return "", grove.Errorf(grove.ErrUnavailable, "install workspace: %v", err)
	}
	if restored != "" {
		// The work is back in a workspace; a later eviction saves it anew.
		if _, err := g.run(ctx, call{args: []string{"update-ref", "-d", "--", opt.Restore, restored}, env: bareEnv(opt.WorkRepo)}); err != nil {
			g.logger().Warn("drop restored snapshot", "ref", opt.Restore, "err", err)
		}
	}
	return sha, nil
}

// restoreSnapshot puts the work of opt.Restore back into the new workspace
// at tmp (before any sandbox has seen it) as uncommitted changes: the
// working tree becomes the snapshot's tree — changed, new and deleted files
// alike — while HEAD and the index stay at the checkout. It returns the
// snapshot commit, or "" when there is none.
func (g *Git) restoreSnapshot(ctx context.Context, tmp string, opt WorkspaceOptions) (string, error) {
	if opt.Restore == "" || opt.WorkRepo == "" {
		return "", nil
	}
	if !strings.HasPrefix(opt.Restore, SavedPrefix) {
		return "", grove.Errorf(grove.ErrInvalid, "restore %q: not a saved snapshot", opt.Restore)
	}
	snap, err := g.LookupRef(ctx, opt.WorkRepo, opt.Restore)
	if err != nil || snap == "" {
		return "", err
	}
	if err := g.checkTree(ctx, tmp, snap, opt.MaxFiles, opt.MaxBytes); err != nil {
		return "", err
	}
	env := workEnv(tmp)
	for _, args := range [][]string{
		{"read-tree", "-m", "-u", "HEAD", snap},
		{"reset", "--quiet", "--no-refresh"},
	} {
		if _, err := g.run(ctx, call{args: args, dir: tmp, env: env}); err != nil {
			return "", err
		}
	}
	return snap, nil
}

// workspaceStart resolves the commit a new workspace checks out, trying
// every candidate in one `git cat-file --batch-check` rather than a
// process per ref (acquire latency is measured against raw git).
func (g *Git) workspaceStart(ctx context.Context, barePath string, opt WorkspaceOptions) (string, error) {
	var cands []string
	if opt.Branch != "" {
		cands = append(cands, "refs/heads/"+opt.Branch)
	}
	base := opt.Base
	if base == "" {
		base = "HEAD"
	}
	cands = append(cands, base)
	var in strings.Builder
	for _, c := range cands {
		in.WriteString(c + "^{commit}\n")
	}
	out, err := g.run(ctx, call{
		args:  []string{"cat-file", "--batch-check=%(objectname) %(objecttype)"},
		env:   bareEnv(barePath),
		stdin: strings.NewReader(in.String()),
	})
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if sha, typ, ok := strings.Cut(line, " "); ok && typ == "commit" && isHexSHA(sha) {
			return sha, nil
		}
	}
	return "", grove.Errorf(grove.ErrNotFound, "ref %q not found in the repo cache", base)
}

// dropCloneBranch deletes the branch clone created for the cache's HEAD
// when it is not the workspace's branch: a stale copy of the default branch
// in every workspace only invites pushes of the wrong thing. The branch is
// read from the cache's HEAD file rather than asked of git, saving a
// process on every acquire.
func (g *Git) dropCloneBranch(ctx context.Context, barePath, dir, keep string) error {
	head, err := os.ReadFile(filepath.Join(barePath, "HEAD"))
	if err != nil {
		return grove.Errorf(grove.ErrUnavailable, "read cache HEAD: %v", err)
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !ok || ref == "refs/heads/"+keep || !strings.HasPrefix(ref, "refs/heads/") {
		return nil // a detached cache HEAD makes clone create no branch
	}
	_, err = g.run(ctx, call{args: []string{"update-ref", "-d", "--", ref}, dir: dir, env: workEnv(dir)})
	return err
}

// RemoveWorkspace deletes the workspace at dir (renamed aside first, so a
// crash never leaves a half workspace that looks whole). A missing dir is
// not an error.
func (g *Git) RemoveWorkspace(ctx context.Context, dir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if fi, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return grove.Errorf(grove.ErrUnavailable, "remove workspace: %v", err)
	} else if !fi.IsDir() {
		return grove.Errorf(grove.ErrInvalid, "%s is not a workspace directory", filepath.Base(dir))
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return grove.Errorf(grove.ErrInvalid, "%s is not a workspace (no .git)", filepath.Base(dir))
	}
	return removeAside(dir)
}

// DiskUsage is the disk the tree at dir takes: allocated blocks of every
// inode plus a charge per inode (internal/dirsize), measured without ever
// following a link or leaving the filesystem — agent code may swap any
// directory for a symlink while the walk runs. Objects borrowed from the
// cache are not counted: they are not under dir.
func DiskUsage(dir string) int64 { return dirsize.Of(dir).Bytes }

// staleLockAge is how old a git lock file must be before start-up
// reconcile may call it stale: git holds them for milliseconds.
const staleLockAge = time.Minute

// StaleLocks lists git lock files in the workspace (or bare repo) at dir
// older than a minute — index.lock, HEAD.lock, config.lock,
// packed-refs.lock and refs/**/*.lock — that a crashed git left behind.
// Start-up reconcile reports and removes them.
func StaleLocks(dir string) []string {
	gitDir := filepath.Join(dir, ".git")
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		gitDir = dir // a bare repository
	}
	cutoff := time.Now().Add(-staleLockAge)
	var out []string
	old := func(p string) bool {
		fi, err := os.Lstat(p)
		return err == nil && fi.ModTime().Before(cutoff)
	}
	for _, f := range []string{"index.lock", "HEAD.lock", "config.lock", "packed-refs.lock", "shallow.lock"} {
		if p := filepath.Join(gitDir, f); old(p) {
			out = append(out, p)
		}
	}
	_ = filepath.WalkDir(filepath.Join(gitDir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".lock") && old(p) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// Protected lists what a sandbox must mount read-only inside a workspace:
// the config (which could name programs git runs — fsmonitor, filters,
// sshCommand — or move hooksPath), the hooks, and the alternates file
// (rewriting it could point git at another cache).
func Protected(dir string) []string {
	g := filepath.Join(dir, ".git")
	return []string{
		filepath.Join(g, "config"),
		filepath.Join(g, "hooks"),
		filepath.Join(g, "objects", "info", "alternates"),
	}
}

// CacheObjects is the object directory of a bare cache, which workspaces
// borrow through alternates and a sandbox must see read-only at the same
// path.
func CacheObjects(barePath string) string { return filepath.Join(barePath, "objects") }

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
