// Package remote is the workspace provider for runtimes that keep the
// working trees themselves (a Daytona sandbox): workspaces have no host
// path (grove.Workspace.LocalPath stays empty) and are reached only
// through the runtime's exec and file APIs.
//
// What stays on the Grove server: the repository cache and the
// per-(cache, user) work repositories, exactly as provider/local keeps
// them (this provider delegates to a local.Provider for them). Clone,
// fetch and push therefore run on the server with the call's token, and
// tokens never enter a runtime.
//
// What lives in the runtime (one sandbox per (user, project), see the
// daytona driver), under Root:
//
//	<Root>/<host>/<owner>/<repo>/.bare                    bare repository, filled from bundles
//	<Root>/<host>/<owner>/<repo>/.grove-incoming/<id>     a bundle in transit (removed after use)
//	<Root>/<host>/<owner>/<repo>/worktrees/<user>_<scope>_<branch>   one working tree per workspace
//
// (the same naming as the local layout, gitrepo.CacheDir). A working tree
// is a `git clone --shared` of the in-sandbox bare repository, so two
// branches of one project share one sandbox and its objects.
//
// Objects cross the boundary only as git bundles through the runtime's
// files API (driver.FileTransfer): in, a bundle the server builds from
// the work repository (borrowing the cache) with the workspace's starting
// commit and its whole history; out, a bundle `git bundle create` writes
// to a file inside the runtime, downloaded and fetched into the work
// repository with every object checked (provider.ReceiveWork).
//
// Sandbox-level operations (creating the bare repository, cloning,
// removing a working tree, path checks) run in a control runtime per
// (user, project) whose work directory is Root: the driver gives it the
// same sandbox as the pair's workspaces.
package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider"
	"github.com/grove-dev/grove/provider/local"
)

// Provider keeps caches and work repositories on the server (through
// Local) and working trees inside the runtimes of Driver.
type Provider struct {
	local *local.Provider
	git   *gitrepo.Git
	drv   driver.Driver
	ft    driver.FileTransfer
	root  string
	log   *slog.Logger
	swept sync.Map // control runtime ids swept by this process
}

var _ provider.Provider = (*Provider)(nil)

// Options configure a remote provider.
type Options struct {
	// Local keeps the caches and work repositories on this server; its
	// git is the one this provider runs on them.
	Local *local.Provider
	// Driver runs the working trees; it must implement
	// driver.FileTransfer.
	Driver driver.Driver
	// Root is the directory inside every runtime under which repositories
	// and working trees live (DAYTONA_WORKSPACE_ROOT).
	Root string
	// Log receives what a sandbox sweep removed; nil discards it.
	Log *slog.Logger
}

// New returns a remote provider.
func New(opt Options) (*Provider, error) {
	ft, ok := opt.Driver.(driver.FileTransfer)
	if !ok {
		return nil, grove.Errorf(grove.ErrNotSupported, "runtime %q has no files API: remote workspaces need one", opt.Driver.Kind())
	}
	if opt.Local == nil {
		return nil, grove.Errorf(grove.ErrInvalid, "remote provider: Local is required")
	}
	if !path.IsAbs(opt.Root) || path.Clean(opt.Root) != opt.Root {
		return nil, grove.Errorf(grove.ErrInvalid, "remote provider: root %q must be a clean absolute path", opt.Root)
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Provider{local: opt.Local, git: opt.Local.Git(), drv: opt.Driver, ft: ft, root: opt.Root, log: log}, nil
}

// Kind implements provider.Provider.
func (p *Provider) Kind() string { return "remote" }

// --- Server side: caches and work repositories (delegated). ---

// CachePath implements provider.Provider.
func (p *Provider) CachePath(repo grove.RepoID) string { return p.local.CachePath(repo) }

// EnsureCache implements provider.Provider.
func (p *Provider) EnsureCache(ctx context.Context, c *grove.RepoCache, opt provider.EnsureOptions) (provider.EnsureResult, error) {
	return p.local.EnsureCache(ctx, c, opt)
}

// RemoveCache implements provider.Provider. The in-sandbox bare
// repositories stay (they belong to the sandbox, deleted with it).
func (p *Provider) RemoveCache(ctx context.Context, c *grove.RepoCache) error {
	return p.local.RemoveCache(ctx, c)
}

// CheckAccess implements provider.Provider.
func (p *Provider) CheckAccess(ctx context.Context, repo grove.RepoID, url, token string, gitConfig [][2]string) error {
	return p.local.CheckAccess(ctx, repo, url, token, gitConfig)
}

// ResolveCommit implements provider.Provider.
func (p *Provider) ResolveCommit(ctx context.Context, c *grove.RepoCache, ref string) (string, error) {
	return p.local.ResolveCommit(ctx, c, ref)
}

// DefaultBranch implements provider.Provider.
func (p *Provider) DefaultBranch(ctx context.Context, c *grove.RepoCache) (string, error) {
	return p.local.DefaultBranch(ctx, c)
}

// WorkRef implements provider.Provider.
func (p *Provider) WorkRef(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, ref string) (string, error) {
	return p.local.WorkRef(ctx, c, ws, ref)
}

// HasWork implements provider.Provider.
func (p *Provider) HasWork(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, sha string) bool {
	return p.local.HasWork(ctx, c, ws, sha)
}

// SetWorkRef implements provider.Provider.
func (p *Provider) SetWorkRef(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, ref, sha string) error {
	return p.local.SetWorkRef(ctx, c, ws, ref, sha)
}

// ReceiveWork implements provider.Provider: the bundle (downloaded from
// the runtime by the engine) is checked into the work repository on the
// server.
func (p *Provider) ReceiveWork(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, src, dst, tip string, write func(io.Writer) error) error {
	return p.local.ReceiveWork(ctx, c, ws, src, dst, tip, write)
}

// PushWork implements provider.Provider: from the work repository on the
// server, with the call's token — never from the runtime.
func (p *Provider) PushWork(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace, req grove.PushRequest, lease string, gitConfig [][2]string) (*grove.PushResult, error) {
	return p.local.PushWork(ctx, c, ws, req, lease, gitConfig)
}

// --- Runtime side: working trees. ---

// WorkspacePath implements provider.Provider: remote workspaces have no
// host path. Their place inside the runtime is Dir.
func (p *Provider) WorkspacePath(*grove.RepoCache, *grove.Workspace) string { return "" }

// repoDir is the directory of ws's repository inside the runtime.
func (p *Provider) repoDir(repo grove.RepoID) string {
	return path.Clean(gitrepo.CacheDir(p.root, repo))
}

// Dir is the working tree of ws inside its runtime.
func (p *Provider) Dir(ws *grove.Workspace) string {
	return path.Join(gitrepo.WorkspacesDir(p.repoDir(ws.Repo)), gitrepo.WorkspaceDirName(ws.User, ws.Scope, ws.Branch))
}

// Sandbox implements provider.Provider: the runtime's work directory is
// the working tree inside it; there is no host path to show.
func (p *Provider) Sandbox(_ *grove.RepoCache, ws *grove.Workspace) driver.Spec {
	return driver.Spec{WorkDir: p.Dir(ws)}
}

// controlID is the runtime id of the control runtime of (user, project).
func controlID(user, project string) string {
	h := sha256.Sum256([]byte(user + "\x00" + project))
	return "grove-ctl-" + hex.EncodeToString(h[:12])
}

// control returns the id of ws's control runtime, creating it (in the
// pair's sandbox) when needed; the driver's Create is idempotent. The
// first use in this process sweeps the sandbox's crash leftovers.
func (p *Provider) control(ctx context.Context, ws *grove.Workspace) (string, error) {
	id := controlID(ws.User, ws.Project)
	if _, err := p.drv.Create(ctx, driver.Spec{WorkspaceID: id, User: ws.User, Project: ws.Project, WorkDir: p.root, Writable: true}); err != nil {
		return "", err
	}
	p.sweepSandbox(ctx, id)
	return id, nil
}

// sh runs script in ws's control runtime with args as $1.. and returns
// the result; a non-zero exit is returned, not an error.
func (p *Provider) sh(ctx context.Context, ws *grove.Workspace, class grove.CommandClass, timeout time.Duration, script string, args ...string) (*grove.ExecResult, error) {
	id, err := p.control(ctx, ws)
	if err != nil {
		return nil, err
	}
	argv := append([]string{"sh", "-c", script, "sh"}, args...)
	return p.drv.Exec(ctx, id, grove.ExecRequest{Argv: argv, Class: class, Timeout: timeout})
}

func failed(what string, res *grove.ExecResult) error {
	msg := strings.TrimSpace(string(res.Stderr))
	if len(msg) > 500 {
		msg = msg[:500]
	}
	return grove.Errorf(grove.ErrUnavailable, "%s in the runtime: exit %d: %s", what, res.ExitCode, msg)
}

// transferRef names a ref carrying a workspace's starting point: in the
// work repository for the moment a bundle is made, and in the
// in-sandbox bare repository for the workspace's life (it keeps the
// objects the working tree borrows from being pruned).
func transferRef(wsID, what string) string { return "refs/grove/transfer/" + wsID + "/" + what }

// createScript builds the working tree: bare repository if missing,
// objects from the bundle, a shared clone beside the target renamed into
// place, the branch (or detached HEAD) at the start commit, and a
// snapshot restored as uncommitted changes. The bundle is "-" when the
// bare repository already holds every commit needed. Exit 3: the target
// exists and is not empty; exit 6: the bundle could not be fetched or a
// commit is missing (a thin bundle whose prerequisites are gone).
const createScript = `set -e
bare=$1 dir=$2 bundle=$3 id=$4 branch=$5 start=$6 snap=$7
[ "$bundle" = - ] || trap 'rm -f "$bundle"' EXIT
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
if [ -e "$dir" ]; then
  rmdir "$dir" 2>/dev/null || exit 3
fi
if [ ! -d "$bare/objects" ]; then
  mkdir -p "$bare"
  git init -q --bare --template= "$bare"
fi
if [ "$bundle" != - ]; then
  git -C "$bare" fetch -q "$bundle" "+refs/grove/transfer/$id/*:refs/grove/transfer/$id/*" || exit 6
fi
git -C "$bare" update-ref "refs/grove/transfer/$id/start" "$start" || exit 6
if [ -n "$snap" ]; then git -C "$bare" update-ref "refs/grove/transfer/$id/restore" "$snap" || exit 6; fi
mkdir -p "$(dirname "$dir")"
tmp="$dir.tmp-$id"
rm -rf "$tmp"
git clone -q --shared --no-checkout --template= -- "$bare" "$tmp" 2>/dev/null
cd "$tmp"
mkdir -p .git/hooks
if [ -n "$branch" ]; then
  git checkout -q -B "$branch" "$start" --
  git config --local "branch.$branch.remote" origin
  git config --local "branch.$branch.merge" "refs/heads/$branch"
else
  git checkout -q --detach "$start" --
fi
if [ -n "$snap" ]; then
  git read-tree -m -u HEAD "$snap"
  git reset -q --no-refresh
fi
cd /
mv "$tmp" "$dir"
git -C "$dir" rev-parse HEAD`

// CreateWorkspace implements provider.Provider. The start commit is
// chosen as the local provider chooses it: the branch saved in the user's
// work repository, else the cache's branch, else BaseRef (or the cache's
// HEAD). A snapshot saved at eviction is restored as uncommitted changes.
// The tree-size budget the local provider checks before a checkout is not
// applied here (the sandbox's own disk bounds it).
func (p *Provider) CreateWorkspace(ctx context.Context, c *grove.RepoCache, ws *grove.Workspace) (string, error) {
	if ws.Branch != "" {
		if err := gitrepo.ValidateBranch(ws.Branch); err != nil {
			return "", err
		}
	}
	work := gitrepo.WorkRepoPath(c.LocalPath, ws.User)
	if err := p.git.EnsureWorkRepo(ctx, c.LocalPath, work); err != nil {
		return "", err
	}
	start, err := p.start(ctx, c, work, ws)
	if err != nil {
		return "", err
	}
	restore := gitrepo.SavedPrefix + gitrepo.SnapshotKey(ws.Key)
	snap, err := p.git.LookupRef(ctx, work, restore)
	if err != nil {
		return "", err
	}

	// What the sandbox's bare repository holds already stays out of the
	// bundle (every working tree of the pair shares that repository).
	have, held, err := p.sandboxTips(ctx, ws, work, start, snap)
	if err != nil {
		return "", err
	}
	res, err := p.build(ctx, ws, work, start, snap, have, held)
	if err == nil && res.ExitCode == 6 && (len(have) > 0 || len(held) > 0) {
		// Commits gone from the sandbox since it was asked: carry
		// everything.
		res, err = p.build(ctx, ws, work, start, snap, nil, nil)
	}
	if err != nil {
		return "", err
	}
	if res.ExitCode == 3 {
		return "", grove.Errorf(grove.ErrConflict, "workspace directory %s already exists in the runtime", path.Base(p.Dir(ws)))
	}
	if res.ExitCode != 0 {
		return "", failed("create workspace", res)
	}
	head := strings.TrimSpace(string(res.Stdout))
	if !gitrepo.IsCommitID(head) {
		return "", grove.Errorf(grove.ErrUnavailable, "create workspace: the runtime printed no commit id")
	}
	if snap != "" {
		// The work is back in a workspace; a later eviction saves it anew.
		if err := p.git.DeleteRef(ctx, work, restore); err != nil {
			return "", err
		}
	}
	return head, nil
}

// sandboxTips returns the commits the in-sandbox bare repository of ws's
// repository keeps (its transfer refs, at most 32) that the work
// repository also has — exclusions for a thin bundle — and which of want
// the bare repository already holds (a commit there always came with its
// history: fetches keep a repository connected).
func (p *Provider) sandboxTips(ctx context.Context, ws *grove.Workspace, work string, want ...string) (have []string, held map[string]bool, err error) {
	args := []string{gitrepo.BarePath(p.repoDir(ws.Repo))}
	for _, w := range want {
		if w != "" {
			args = append(args, w)
		}
	}
	res, err := p.sh(ctx, ws, grove.ClassRead, 30*time.Second, `[ -d "$1" ] || exit 0
bare=$1; shift
git -C "$bare" for-each-ref --format='%(objectname)' refs/grove/transfer/ | sort -u | head -n 32
for c in "$@"; do git -C "$bare" cat-file -e "$c^{commit}" 2>/dev/null && echo "held $c"; done
exit 0`, args...)
	if err != nil {
		return nil, nil, err
	}
	held = map[string]bool{}
	if res.ExitCode != 0 {
		return nil, held, nil // a bare repository git cannot read: send everything
	}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if sha, ok := strings.CutPrefix(line, "held "); ok {
			held[sha] = true
		} else if gitrepo.IsCommitID(line) && p.git.HasCommit(ctx, work, line) {
			have = append(have, line)
		}
	}
	return have, held, nil
}

// build carries start (and snap) into the sandbox — as a bundle without
// the history of have, or no bundle when the sandbox holds both — and
// makes the working tree (createScript).
func (p *Provider) build(ctx context.Context, ws *grove.Workspace, work, start, snap string, have []string, held map[string]bool) (*grove.ExecResult, error) {
	incoming := "-"
	if !held[start] || snap != "" && !held[snap] {
		// The bundle: temporary refs in the work repository (which
		// borrows the cache's objects), removed once written.
		refs := []string{transferRef(ws.ID, "start")}
		if err := p.git.SetRef(ctx, work, refs[0], start); err != nil {
			return nil, err
		}
		if snap != "" {
			refs = append(refs, transferRef(ws.ID, "restore"))
			if err := p.git.SetRef(ctx, work, refs[1], snap); err != nil {
				return nil, err
			}
		}
		var bundle bytes.Buffer
		berr := p.git.CreateBundle(ctx, work, &bundle, refs, have)
		for _, r := range refs {
			if err := p.git.DeleteRef(context.WithoutCancel(ctx), work, r); err != nil && berr == nil {
				berr = err
			}
		}
		if berr != nil {
			return nil, berr
		}
		ctl, err := p.control(ctx, ws)
		if err != nil {
			return nil, err
		}
		incoming = path.Join(p.repoDir(ws.Repo), ".grove-incoming", ws.ID+".bundle")
		if err := p.ft.Upload(ctx, ctl, incoming, &bundle); err != nil {
			return nil, err
		}
	}
	return p.sh(ctx, ws, grove.ClassWrite, 10*time.Minute, createScript,
		gitrepo.BarePath(p.repoDir(ws.Repo)), p.Dir(ws), incoming, ws.ID, ws.Branch, start, snap)
}

// start resolves the commit a new workspace checks out.
func (p *Provider) start(ctx context.Context, c *grove.RepoCache, work string, ws *grove.Workspace) (string, error) {
	if ws.Branch != "" {
		sha, err := p.git.LookupRef(ctx, work, gitrepo.SavedBranchPrefix+ws.Branch)
		if err != nil || sha != "" {
			return sha, err
		}
		if sha, err := p.git.ResolveCommit(ctx, c.LocalPath, "refs/heads/"+ws.Branch); err == nil {
			return sha, nil
		}
	}
	base := ws.BaseRef
	if base == "" {
		base = "HEAD"
	}
	sha, err := p.git.ResolveCommit(ctx, c.LocalPath, base)
	if err != nil {
		return "", grove.Errorf(grove.ErrNotFound, "ref %q not found in the repo cache", base)
	}
	return sha, nil
}

// removeScript deletes a working tree (renamed aside first, so a crash
// never leaves a half tree that looks whole) and the transfer refs that
// kept its starting objects.
const removeScript = `bare=$1 dir=$2 id=$3
if [ -e "$dir" ]; then
  aside="$dir.removing-$id"
  mv "$dir" "$aside" && rm -rf "$aside" || exit 1
fi
if [ -d "$bare" ]; then
  git -C "$bare" for-each-ref --format='%(refname)' "refs/grove/transfer/$id/" | while read -r r; do git -C "$bare" update-ref -d "$r"; done
fi
exit 0`

// RemoveWorkspace implements provider.Provider: the working tree goes,
// the sandbox and its bare repository stay.
func (p *Provider) RemoveWorkspace(ctx context.Context, ws *grove.Workspace) error {
	res, err := p.sh(ctx, ws, grove.ClassWrite, 5*time.Minute, removeScript, gitrepo.BarePath(p.repoDir(ws.Repo)), p.Dir(ws), ws.ID)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return failed("remove workspace", res)
	}
	return nil
}

// Exists implements provider.Provider with one stat in the runtime.
func (p *Provider) Exists(ctx context.Context, ws *grove.Workspace) (bool, error) {
	res, err := p.sh(ctx, ws, grove.ClassRead, 30*time.Second, `test -e "$1/.git"`, p.Dir(ws))
	if err != nil {
		return false, err
	}
	return res.ExitCode == 0, nil
}

// SizeBytes implements provider.Provider with du in the runtime (0 when
// it cannot be measured). Objects borrowed from the in-sandbox bare
// repository are not counted.
func (p *Provider) SizeBytes(ctx context.Context, ws *grove.Workspace) int64 {
	res, err := p.sh(ctx, ws, grove.ClassRead, time.Minute, `du -sb -- "$1" 2>/dev/null | cut -f1`, p.Dir(ws))
	if err != nil || res.ExitCode != 0 {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(res.Stdout)), 10, 64)
	return n
}

// --- Files: contents through the files API, checks in the runtime. ---

// checkScript resolves $2 under the working tree $1 inside the runtime
// and refuses it (exit 5) when its parent directory, or — followed — the
// path itself, resolves outside the tree or into its .git. With $3 =
// entry a final symlink is not followed (deleting a link removes the
// link, wherever it points). It prints the
// kind of the final target (f file, d directory, - missing, o other), its
// size and whether the last component is a symlink, then the resolved
// parent directory and the resolved path.
const checkScript = `root=$(realpath -e -- "$1") || exit 4
p="$root/$2"
[ "$2" = "." ] && p=$root
inside() { case "$1/" in "$root/.git/"*) return 1;; "$root/"*) return 0;; *) return 1;; esac; }
parent=$(realpath -m -- "$(dirname -- "$p")") || exit 5
r=$(realpath -m -- "$p") || exit 5
if [ "$p" = "$root" ]; then parent=$root; fi
inside "$parent" || exit 5
link=0
[ -L "$p" ] && link=1
if [ "$link$3" = 1entry ]; then
  printf 'l 0 1\n%s\n%s\n' "$parent" "$p"
  exit 0
fi
inside "$r" || exit 5
if [ -d "$r" ]; then k=d s=0
elif [ -f "$r" ]; then k=f s=$(stat -c %s -- "$r")
elif [ -e "$r" ]; then k=o s=0
else k=- s=0; fi
printf '%s %s %s\n%s\n%s\n' "$k" "$s" "$link" "$parent" "$r"`

type target struct {
	abs   string // the path resolved inside the runtime (symlinks followed)
	entry string // the path itself, its parent resolved (a symlink not followed)
	kind  byte   // 'f' file, 'd' directory, '-' missing, 'o' other, 'l' a symlink not followed
	size  int64
	link  bool // the last component is a symlink
}

// resolve confines rel to ws's working tree. rel must be clean, relative
// and outside .git (fsops.CleanPath); then, checked in the runtime just
// before the operation (realpath), its parent directory must resolve
// inside the tree, and so must the path itself with symlinks followed —
// as the local provider's os.Root rule: symlinks that stay inside the
// workspace (and out of .git) are followed, others refused.
func (p *Provider) resolve(ctx context.Context, ws *grove.Workspace, rel string, entry bool) (target, error) {
	clean, err := fsops.CleanPath(rel)
	if err != nil {
		return target{}, err
	}
	mode := "follow"
	if entry {
		mode = "entry"
	}
	res, err := p.sh(ctx, ws, grove.ClassRead, 30*time.Second, checkScript, p.Dir(ws), clean, mode)
	if err != nil {
		return target{}, err
	}
	switch res.ExitCode {
	case 0:
	case 4:
		return target{}, grove.Errorf(grove.ErrNotFound, "workspace %s: its files are missing", ws.ID)
	case 5:
		return target{}, grove.Errorf(grove.ErrPathOutside, "path %q leads outside the workspace (or into .git) through a symlink", rel)
	default:
		return target{}, failed("check path", res)
	}
	lines := strings.Split(strings.TrimSuffix(string(res.Stdout), "\n"), "\n")
	var t target
	var kind string
	var link int
	if len(lines) != 3 {
		return target{}, grove.Errorf(grove.ErrUnavailable, "check path: unexpected answer %q", res.Stdout)
	}
	if _, err := fmt.Sscanf(lines[0], "%s %d %d", &kind, &t.size, &link); err != nil || len(kind) != 1 {
		return target{}, grove.Errorf(grove.ErrUnavailable, "check path: unexpected answer %q", res.Stdout)
	}
	t.kind, t.link, t.abs = kind[0], link == 1, lines[2]
	t.entry = lines[1]
	if clean != "." {
		t.entry = path.Join(lines[1], path.Base(clean))
	}
	if !path.IsAbs(t.abs) || !path.IsAbs(t.entry) {
		return target{}, grove.Errorf(grove.ErrUnavailable, "check path: unexpected answer %q", res.Stdout)
	}
	return t, nil
}

// ReadFile implements provider.Provider through the files API.
func (p *Provider) ReadFile(ctx context.Context, ws *grove.Workspace, rel string, max int64) ([]byte, error) {
	t, err := p.resolve(ctx, ws, rel, false)
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case '-':
		return nil, grove.Errorf(grove.ErrNotFound, "%s: no such file", rel)
	case 'd':
		return nil, grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
	case 'o':
		return nil, grove.Errorf(grove.ErrInvalid, "%s is not a regular file", rel)
	}
	if max > 0 && t.size > max {
		return nil, grove.Errorf(grove.ErrTooLarge, "%s is %d bytes, more than %d", rel, t.size, max)
	}
	ctl, err := p.control(ctx, ws)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := p.ft.Download(ctx, ctl, t.abs, &limited{w: &buf, n: max}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// limited fails a copy past n bytes (n <= 0: no limit): the file may have
// grown since it was checked.
type limited struct {
	w io.Writer
	n int64
}

func (l *limited) Write(b []byte) (int, error) {
	if l.n > 0 {
		if int64(len(b)) > l.n {
			return 0, grove.Errorf(grove.ErrTooLarge, "the file grew past the limit while being read")
		}
		l.n -= int64(len(b))
	}
	return l.w.Write(b)
}

// WriteFile implements provider.Provider through the files API.
func (p *Provider) WriteFile(ctx context.Context, ws *grove.Workspace, rel string, data []byte) error {
	t, err := p.resolve(ctx, ws, rel, false)
	if err != nil {
		return err
	}
	switch t.kind {
	case 'd':
		return grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
	case 'o':
		return grove.Errorf(grove.ErrInvalid, "%s is not a regular file", rel)
	}
	ctl, err := p.control(ctx, ws)
	if err != nil {
		return err
	}
	return p.ft.Upload(ctx, ctl, t.abs, bytes.NewReader(data))
}

// DeleteFile implements provider.Provider.
func (p *Provider) DeleteFile(ctx context.Context, ws *grove.Workspace, rel string) error {
	t, err := p.resolve(ctx, ws, rel, true)
	if err != nil {
		return err
	}
	switch {
	case t.link:
		// The link itself goes, never what it points to.
	case t.kind == '-':
		return grove.Errorf(grove.ErrNotFound, "%s: no such file", rel)
	case t.kind == 'd':
		return grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
	}
	res, err := p.sh(ctx, ws, grove.ClassWrite, 30*time.Second, `rm -f -- "$1"`, t.entry)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return failed("delete", res)
	}
	return nil
}

// listScript prints one NUL-terminated record per entry under $1 (depth
// $2), .git and what is under it left out, symlinks not followed:
// type, size, mtime seconds, path relative to $1.
const listScript = `cd "$1" || exit 4
find . -mindepth 1 -maxdepth "$2" \( -name .git -prune \) -o -printf '%y\t%s\t%T@\t%P\0' | head -c 67108864`

// ListDir implements provider.Provider with one find in the runtime.
func (p *Provider) ListDir(ctx context.Context, ws *grove.Workspace, rel string, depth int) ([]grove.DirEntry, error) {
	t, err := p.resolve(ctx, ws, rel, false)
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case '-':
		return nil, grove.Errorf(grove.ErrNotFound, "%s: no such directory", rel)
	case 'f', 'o':
		return nil, grove.Errorf(grove.ErrInvalid, "%s is not a directory", rel)
	}
	depth = min(max(depth, 1), fsops.MaxDepth)
	id, err := p.control(ctx, ws)
	if err != nil {
		return nil, err
	}
	res, err := p.drv.Exec(ctx, id, grove.ExecRequest{Argv: []string{"sh", "-c", listScript, "sh", t.abs, strconv.Itoa(depth)}, Class: grove.ClassRead, Timeout: time.Minute, MaxOutput: 64 << 20})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, failed("list", res)
	}
	prefix, _ := fsops.CleanPath(rel)
	var out []grove.DirEntry
	for _, rec := range strings.Split(string(res.Stdout), "\x00") {
		f := strings.SplitN(rec, "\t", 4)
		if len(f) != 4 || f[3] == "" {
			continue
		}
		if len(out) >= local.MaxListEntries {
			return nil, grove.Errorf(grove.ErrTooLarge, "listing %q has more than %d entries; list a subdirectory or use a smaller depth", rel, local.MaxListEntries)
		}
		size, _ := strconv.ParseInt(f[1], 10, 64)
		secs, _ := strconv.ParseFloat(f[2], 64)
		p := f[3]
		if prefix != "." {
			p = prefix + "/" + p
		}
		e := grove.DirEntry{Path: p, Name: path.Base(p), IsDir: f[0] == "d", Size: size, ModTime: time.Unix(int64(secs), 0).UTC()}
		if e.IsDir {
			e.Size = 0
		}
		out = append(out, e)
	}
	return out, nil
}
