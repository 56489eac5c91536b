package gitrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/grove-dev/grove"
)

// A work repository is the Grove-owned bare repository that holds one
// user's unpushed work on one repo cache: the branches Grove saved from
// that user's workspaces (refs/grove/branches/<branch>), their eviction
// snapshots (refs/grove/saved/<id>) and what was last pushed from them
// (refs/grove/pushed/<branch>). It borrows the cache's objects through
// alternates and adds only the user's own.
//
// It exists for two invariants at once (DESIGN.md §3):
//
//   - Host git never opens a workspace's repository. Work leaves a
//     workspace only as a bundle produced inside the workspace's runtime,
//     which ReceiveBundle fetches here with every object checked; push and
//     eviction work from here.
//   - Users are separated. The shared cache holds only what came from the
//     remote; a user's workspaces borrow objects from the cache and their
//     own work repository, and no other user's sandbox ever mounts it.
const (
	// SavedBranchPrefix is where a workspace's branch is kept between
	// workspaces.
	SavedBranchPrefix = "refs/grove/branches/"
	// PushedPrefix records the commit last pushed from a branch: the lease
	// of the next force-with-lease.
	PushedPrefix = "refs/grove/pushed/"
)

// WorkReposDir is the directory holding a cache's work repositories.
func WorkReposDir(cacheDir string) string { return filepath.Join(cacheDir, "work") }

// WorkRepoPath is the work repository of user on the cache whose bare
// repository is barePath. The name is a hash of the exact user name, so
// users whose names sanitise alike never share one.
func WorkRepoPath(barePath, user string) string {
	sum := sha256.Sum256([]byte(user))
	name := sanitizeName(user)
	if len(name) > 40 {
		name = name[:40]
	}
	return filepath.Join(WorkReposDir(filepath.Dir(barePath)), name+"-"+hex.EncodeToString(sum[:])[:16]+".git")
}

// EnsureWorkRepo creates the work repository at workPath, borrowing the
// objects of the cache at barePath, if it does not exist yet. The caller
// serialises it with other writes to the cache's work repositories.
func (g *Git) EnsureWorkRepo(ctx context.Context, barePath, workPath string) error {
	if isGitDir(workPath) {
		return nil
	}
	parent := filepath.Dir(workPath)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return grove.Errorf(grove.ErrUnavailable, "create work repository: %v", err)
	}
	tmp, err := os.MkdirTemp(parent, ".work-tmp-")
	if err != nil {
		return grove.Errorf(grove.ErrUnavailable, "create work repository: %v", err)
	}
	defer os.RemoveAll(tmp) // no-op after the rename
	if _, err := g.run(ctx, call{args: []string{"init", "--quiet", "--bare", "--template=", "--", tmp}, dir: parent}); err != nil {
		return err
	}
	abs, err := filepath.Abs(CacheObjects(barePath))
	if err != nil {
		return grove.Errorf(grove.ErrInvalid, "cache path: %v", err)
	}
	info := filepath.Join(tmp, "objects", "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return grove.Errorf(grove.ErrUnavailable, "create work repository: %v", err)
	}
	if err := os.WriteFile(filepath.Join(info, "alternates"), []byte(abs+"\n"), 0o644); err != nil {
		return grove.Errorf(grove.ErrUnavailable, "create work repository: %v", err)
	}
	if err := os.Rename(tmp, workPath); err != nil && !isGitDir(workPath) {
		return grove.Errorf(grove.ErrUnavailable, "install work repository: %v", err)
	}
	return nil
}

// WorkRepoObjects is the object directory of a work repository, which the
// user's workspaces borrow (after the cache's) and a sandbox of that user
// sees read-only at the same path.
func WorkRepoObjects(workPath string) string { return filepath.Join(workPath, "objects") }

// ReceiveBundle fetches the objects of the git bundle at bundlePath — made
// inside a workspace's runtime, so untrusted data — into the work
// repository at workPath, and points dst at want. Every object is checked
// (transfer.fsckObjects) and the bundle's prerequisites must already be in
// the work repository or the cache. Only this host's git reads the bundle;
// nothing of the workspace is opened. want must be what the bundle's
// src ref names, or the call fails and dst is unchanged.
func (g *Git) ReceiveBundle(ctx context.Context, workPath, bundlePath, src, dst, want string) error {
	if !isHexSHA(want) {
		return grove.Errorf(grove.ErrInvalid, "receive bundle: %q is not a commit id", want)
	}
	for _, r := range []string{src, dst} {
		if err := ValidateRef(r); err != nil {
			return err
		}
	}
	tmpRef := "refs/grove/incoming/" + randomSuffix()
	if _, err := g.run(ctx, call{
		args: []string{
			"-c", "transfer.fsckObjects=true", "-c", "fetch.fsckObjects=true",
			"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc",
			"--", bundlePath, "+" + src + ":" + tmpRef,
		},
		env: bareEnv(workPath),
	}); err != nil {
		var gerr *Error
		if errors.As(err, &gerr) && gerr.Kind == nil {
			return grove.Errorf(grove.ErrInvalid, "workspace work could not be received: %s", firstLine(gerr.Stderr))
		}
		return err
	}
	defer g.run(context.WithoutCancel(ctx), call{args: []string{"update-ref", "-d", "--", tmpRef}, env: bareEnv(workPath)}) //nolint:errcheck // best effort
	got, err := g.ResolveCommit(ctx, workPath, tmpRef)
	if err != nil {
		return err
	}
	if got != want {
		return grove.Errorf(grove.ErrInvalid, "workspace bundle names %s, expected %s", got, want)
	}
	return g.SetRef(ctx, workPath, dst, want)
}

// HasCommit reports whether the repository at gitDir (with its alternates)
// holds commit sha.
func (g *Git) HasCommit(ctx context.Context, gitDir, sha string) bool {
	if !isHexSHA(sha) {
		return false
	}
	_, err := g.run(ctx, call{args: []string{"cat-file", "-e", "--end-of-options", sha + "^{commit}"}, env: bareEnv(gitDir)})
	return err == nil
}

// SetRef points ref at commit sha in the Grove-owned repository at gitDir.
func (g *Git) SetRef(ctx context.Context, gitDir, ref, sha string) error {
	if err := ValidateRef(ref); err != nil {
		return err
	}
	if !isHexSHA(sha) {
		return grove.Errorf(grove.ErrInvalid, "%q is not a commit id", sha)
	}
	_, err := g.run(ctx, call{args: []string{"update-ref", "-m", "grove", "--end-of-options", ref, sha}, env: bareEnv(gitDir)})
	return err
}

// LookupRef returns the commit ref names in the repository at gitDir, or
// "" when it does not exist (or gitDir is no repository).
func (g *Git) LookupRef(ctx context.Context, gitDir, ref string) (string, error) {
	if !isGitDir(gitDir) {
		return "", nil
	}
	sha, err := g.ResolveCommit(ctx, gitDir, ref)
	if errors.Is(err, grove.ErrNotFound) {
		return "", nil
	}
	return sha, err
}

// PushWork sends the commit saved for branch in the work repository at
// workPath to refs/heads/<branch> at remoteURL (credential-free; the token
// travels as an HTTP header). With ForceWithLease the lease is what Grove
// last pushed from this branch, else the cache's copy of the remote branch
// (lease), else "must not exist". A rejected push is grove.ErrConflict. On
// success refs/grove/pushed/<branch> records the pushed commit.
func (g *Git) PushWork(ctx context.Context, workPath, remoteURL, branch, lease string, opt PushOptions) (*grove.PushResult, error) {
	if err := ValidateBranch(branch); err != nil {
		return nil, err
	}
	if err := checkPushURL(remoteURL); err != nil {
		return nil, err
	}
	if err := CheckProtected(branch, opt.Protected); err != nil {
		return nil, err
	}
	local, err := g.ResolveCommit(ctx, workPath, SavedBranchPrefix+branch)
	if err != nil {
		return nil, err
	}
	ref := "refs/heads/" + branch
	args := []string{"push", "--porcelain", "--no-verify"}
	if opt.Progress != nil {
		args = append(args, "--progress")
	}
	if opt.ForceWithLease {
		if pushed, err := g.LookupRef(ctx, workPath, PushedPrefix+branch); err != nil {
			return nil, err
		} else if pushed != "" {
			lease = pushed
		}
		args = append(args, "--force-with-lease="+ref+":"+lease)
	}
	if isLocalURL(remoteURL) {
		args = append(args, "--receive-pack="+hardenedReceivePack)
	}
	args = append(args, "--", remoteURL, local+":"+ref)
	out, runErr := g.run(ctx, call{args: args, env: bareEnv(workPath), token: opt.Token, progress: opt.Progress})
	flag, summary, found := parsePushPorcelain(out, ref)
	if found && flag == '!' {
		return nil, grove.Errorf(grove.ErrConflict, "push of %s rejected: %s", branch, summary)
	}
	if runErr != nil {
		return nil, runErr
	}
	if !found {
		return nil, grove.Errorf(grove.ErrUnavailable, "push of %s: git reported no status for the branch", branch)
	}
	if err := g.SetRef(ctx, workPath, PushedPrefix+branch, local); err != nil {
		return nil, err
	}
	return &grove.PushResult{Branch: branch, RemoteSHA: local, CreatedBranch: flag == '*', UpToDate: flag == '='}, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
