package engine

import (
	"context"
	"errors"
	"io"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider/execpath"
)

// Workspace git runs in the workspace's runtime, never on the host
// (DESIGN.md §3; see provider/execpath): the engine hands execpath an
// Execer that creates the runtime on first use and otherwise goes straight
// to the driver. The caller holds whatever workspace lock the operation
// needs; this adapter takes none (engine.Exec's locks would deadlock
// against the caller's).

// inRuntime is execpath.Execer (and search.StreamExecer) over ws's runtime.
type inRuntime struct {
	e  *Engine
	ws *grove.Workspace
}

func (e *Engine) git(ws *grove.Workspace) inRuntime { return inRuntime{e: e, ws: ws} }

func (r inRuntime) Exec(ctx context.Context, id string, req grove.ExecRequest) (*grove.ExecResult, error) {
	if err := r.e.requirePresent(ctx, r.ws); err != nil {
		return nil, err
	}
	if err := r.e.ensureRuntime(ctx, r.ws); err != nil {
		return nil, err
	}
	return r.e.drv.Exec(ctx, id, req)
}

func (r inRuntime) ExecStream(ctx context.Context, id string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	if err := r.e.requirePresent(ctx, r.ws); err != nil {
		return nil, err
	}
	if err := r.e.ensureRuntime(ctx, r.ws); err != nil {
		return nil, err
	}
	return r.e.drv.ExecStream(ctx, id, req, emit)
}

// checkGitPaths validates workspace-relative paths a caller gives to git:
// inside the workspace and never into .git.
func checkGitPaths(paths ...string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := fsops.CleanPath(p); err != nil {
			return err
		}
	}
	return nil
}

// saveWork copies the commit ref names in ws — its branch, or the
// snapshot eviction just made — into ws's user's work repository as dst,
// so it outlives the workspace and can be pushed. Only a bundle made
// inside the runtime crosses to the host, and it is fetched with every
// object checked. It returns the commit saved, or "" when ref does not
// exist (a branch with no commit yet).
func (e *Engine) saveWork(ctx context.Context, ws *grove.Workspace, ref, dst string) (string, error) {
	c, err := e.cacheOf(ctx, ws)
	if err != nil {
		return "", err
	}
	x := e.git(ws)
	tip, err := execpath.Head(ctx, x, ws.ID, ref)
	if errors.Is(err, grove.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	unlock, err := e.locks.Lock(ctx, "work:"+c.Repo.Key()+"\x00"+ws.User)
	if err != nil {
		return "", err
	}
	defer unlock()
	cur, err := e.prov.WorkRef(ctx, c, ws, dst)
	if err != nil {
		return "", err
	}
	switch {
	case cur == tip:
		return tip, nil
	case e.prov.HasWork(ctx, c, ws, tip):
		return tip, e.prov.SetWorkRef(ctx, c, ws, dst, tip)
	}
	// What the work repository or the cache already holds stays out of
	// the bundle; the workspace has those commits through its alternates.
	var exclude []string
	if cur != "" {
		exclude = append(exclude, cur)
	}
	base := ws.BaseRef
	if base == "" {
		base = "HEAD"
	}
	if sha, err := e.prov.ResolveCommit(ctx, c, base); err == nil {
		exclude = append(exclude, sha)
	}
	receive := func(exclude []string) error {
		return e.prov.ReceiveWork(ctx, c, ws, ref, dst, tip, func(w io.Writer) error {
			return e.bundleOut(ctx, x, ws, ref, exclude, w)
		})
	}
	err = receive(exclude)
	if err != nil && len(exclude) > 0 && ctx.Err() == nil && !errors.Is(err, grove.ErrTooLarge) {
		// An excluded commit the workspace cannot see (a cache
		// maintained since): carry the whole history instead.
		e.log.Debug("bundle with exclusions failed; retrying without", "workspace", ws.ID, "err", err)
		err = receive(nil)
	}
	if err != nil {
		return "", err
	}
	return tip, nil
}

// snapshot saves everything in ws — committed or not — as
// refs/grove/saved/<key> in its user's work repository, leaving ws
// untouched, and returns the ref. Acquiring the same key again restores
// it (provider CreateWorkspace).
func (e *Engine) snapshot(ctx context.Context, ws *grove.Workspace) (string, error) {
	if _, err := execpath.Snapshot(ctx, e.git(ws), ws.ID, "grove: work of workspace "+ws.ID+" saved before eviction", e.cfg.Committer); err != nil {
		return "", err
	}
	ref := gitrepo.SavedPrefix + gitrepo.SnapshotKey(ws.Key)
	if _, err := e.saveWork(ctx, ws, execpath.SnapshotRef, ref); err != nil {
		return "", err
	}
	return ref, nil
}

// requirePresent fails with grove.ErrNotFound, and records the workspace
// as broken, when its files were deleted behind Grove's back; acquiring
// its key again rebuilds it. A command would otherwise fail with whatever
// the runtime makes of a missing directory.
func (e *Engine) requirePresent(ctx context.Context, ws *grove.Workspace) error {
	if ws.LocalPath == "" {
		return nil
	}
	if ok, err := e.prov.Exists(ctx, ws); err != nil || ok {
		return err
	}
	e.forget(ws.ID)
	e.runtimes.Delete(ws.ID)
	if ws.State != grove.WorkspaceBroken {
		ws.State = grove.WorkspaceBroken
		ws.UpdatedAt = e.now().UTC()
		if err := e.store.UpdateWorkspace(ctx, ws); err != nil {
			e.log.Warn("record a workspace whose files are missing", "workspace", ws.ID, "err", err)
		}
	}
	return grove.Errorf(grove.ErrNotFound, "workspace %s: its files are missing (now marked broken); acquire it again to rebuild it", ws.ID)
}
