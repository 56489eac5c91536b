package gitrepo

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/grove-dev/grove"
)

// SavedPrefix is where Snapshot records a workspace's work in the cache.
const SavedPrefix = "refs/grove/saved/"

// Snapshot records everything in the workspace at dir — commits, staged and
// unstaged changes and untracked files that are not ignored — as one commit
// on top of HEAD, stored in the bare cache as refs/grove/saved/<name>. The
// workspace's branch, index and files are left exactly as they were (the
// commit is built with a private index), so eviction can save work before it
// deletes a directory, and a person can recover it with
// `git fetch <cache> refs/grove/saved/<name>`. It returns the commit.
func (g *Git) Snapshot(ctx context.Context, barePath, dir, name, message string) (string, error) {
	if !snapshotName(name) {
		return "", grove.Errorf(grove.ErrInvalid, "snapshot name %q: want letters, digits and '_'", name)
	}
	ref := SavedPrefix + name
	gitDir := filepath.Join(dir, ".git")
	index, err := os.CreateTemp(gitDir, "grove-snapshot-index-")
	if err != nil {
		return "", err
	}
	index.Close()
	defer os.Remove(index.Name())
	// Start from the real index so `add -A` only hashes what changed.
	if cur, err := os.ReadFile(filepath.Join(gitDir, "index")); err == nil {
		if err := os.WriteFile(index.Name(), cur, 0o600); err != nil {
			return "", err
		}
	} else {
		os.Remove(index.Name()) // no index yet: let git start an empty one
	}
	env := append(workEnv(dir), "GIT_INDEX_FILE="+index.Name())
	if _, err := g.run(ctx, call{args: []string{"add", "-A"}, dir: dir, env: env}); err != nil {
		return "", err
	}
	tree, err := g.run(ctx, call{args: []string{"write-tree"}, dir: dir, env: env})
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree"}
	if head, err := g.ResolveCommit(ctx, gitDir, "HEAD"); err == nil {
		args = append(args, "-p", head)
	}
	id := g.Identity
	if id.Name == "" || id.Email == "" {
		id = DefaultIdentity
	}
	env = append(env, "GIT_AUTHOR_NAME="+id.Name, "GIT_AUTHOR_EMAIL="+id.Email,
		"GIT_COMMITTER_NAME="+id.Name, "GIT_COMMITTER_EMAIL="+id.Email)
	out, err := g.run(ctx, call{args: append(args, "-F", "-", "--end-of-options", strings.TrimSpace(string(tree))), dir: dir, env: env, stdin: strings.NewReader(message)})
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(out))
	// Hand the commit to the cache through a ref of the workspace's own, the
	// way SaveBranch does, so the cache fetches it with the hardened
	// upload-pack.
	if _, err := g.run(ctx, call{args: []string{"update-ref", "--", "refs/grove/snapshot", sha}, dir: dir, env: workEnv(dir)}); err != nil {
		return "", err
	}
	if _, err := g.run(ctx, call{
		args: []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--upload-pack=" + hardenedUploadPack, "--", dir, "+refs/grove/snapshot:" + ref},
		env:  bareEnv(barePath),
	}); err != nil {
		return "", err
	}
	return sha, nil
}

// snapshotName accepts the names the engine uses (workspace ids).
func snapshotName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
