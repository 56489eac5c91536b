// Package gitrepo is Grove's host-git layer: repository identity
// (ParseRepo, CacheDir), ref validation, a hardened git runner (Git), bare
// repository caches (Caches) and the workspaces built on them.
//
// # Workspaces are shared clones, not git worktrees
//
// DESIGN §1 allows either. A workspace here is its own repository, made
// with `git clone --shared --no-checkout` from the bare cache: it borrows
// the cache's objects through .git/objects/info/alternates and has its own
// refs, index, config and new objects. We chose this over `git worktree
// add` because of isolation (DESIGN §3): linked worktrees share the cache's
// object store and ref namespace read-write, so a `git commit`, `git
// update-ref` or `git gc` run inside one workspace's sandbox could rewrite
// another workspace's branch or the cache itself. With a shared clone a
// sandbox mounts CacheObjects(bare) read-only and the workspace read-write
// (keeping Protected(dir) read-only), and nothing it does reaches beyond its
// own directory. The cost was measured equal to `git worktree add` on an
// 11k-file tree (about 1 s each; the private .git is 1.4 MB).
//
// Consequences:
//   - The cache never prunes objects (gc.pruneExpire=never, gc.auto=0): a
//     workspace may point at a commit the remote has force-pushed away.
//   - "Branch checked out elsewhere" is not a git error any more; the engine
//     enforces one workspace per branch.
//   - Committed work lives in the workspace until SaveBranch copies it into
//     the cache as refs/grove/branches/<branch>, from which CreateWorkspace
//     re-attaches it.
//
// # Safety
//
// Every git call goes through Git.run: argv only (no shell), untrusted
// values validated and placed after "--" or --end-of-options, a clean
// environment (PATH, HOME, LANG=C and git's own switches), and config forced
// through GIT_CONFIG_COUNT so that repository hooks never run on the host,
// credential helpers and fsmonitor are off and ext:: transports are
// refused. A token is sent only as an http.extraHeader in that environment
// and is redacted from every error and log line.
package gitrepo
