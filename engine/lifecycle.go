package engine

import (
	"context"
	"errors"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider/execpath"
	"github.com/grove-dev/grove/store"
)

func storeFilter(f grove.WorkspaceFilter, cacheID string) store.WorkspaceFilter {
	return store.WorkspaceFilter{User: f.User, Project: f.Project, RepoCacheID: cacheID}
}

// Get implements grove.Service.
func (e *Engine) Get(ctx context.Context, id string) (*grove.Workspace, error) {
	return e.workspace(ctx, id)
}

// List implements grove.Service.
func (e *Engine) List(ctx context.Context, f grove.WorkspaceFilter) ([]*grove.Workspace, error) {
	cacheID := ""
	if f.Repo != "" {
		remote, err := e.parseRepo(ctx, f.Repo)
		if err != nil {
			return nil, err
		}
		c, err := e.store.GetRepoCacheByKey(ctx, remote.ID.Key())
		if errors.Is(err, grove.ErrNotFound) {
			return []*grove.Workspace{}, nil
		}
		if err != nil {
			return nil, err
		}
		cacheID = c.ID
	}
	return e.store.ListWorkspaces(ctx, storeFilter(f, cacheID))
}

// Release hibernates the workspace's runtime and records the workspace's
// observed state; the files stay.
func (e *Engine) Release(ctx context.Context, id string) error {
	ws, unlock, err := e.locked(ctx, id, true)
	if err != nil {
		return err
	}
	defer unlock()
	return e.releaseHeld(ctx, ws)
}

// releaseHeld releases ws; the caller holds its exclusive lock.
func (e *Engine) releaseHeld(ctx context.Context, ws *grove.Workspace) error {
	// Debug sessions end with the runtime, before the branch is saved, so
	// no debuggee writes behind the save.
	e.closeDebug(ws.ID)
	// Saving and inspecting run in the runtime: before it stops.
	if err := e.saveBranch(ctx, ws); err != nil {
		return err
	}
	e.refresh(ctx, ws)
	if err := e.drv.Stop(ctx, ws.ID); err != nil && !errors.Is(err, grove.ErrNotFound) {
		return err
	}
	if rt, err := e.store.GetRuntime(ctx, ws.ID); err == nil {
		rt.State = "stopped"
		rt.UpdatedAt = e.now().UTC()
		_ = e.store.PutRuntime(ctx, rt)
	}
	ws.State = grove.WorkspaceReleased
	return e.store.UpdateWorkspace(ctx, ws)
}

// refresh records dirty, size and head as observed now (git state from
// inside the runtime).
func (e *Engine) refresh(ctx context.Context, ws *grove.Workspace) {
	info, err := execpath.Inspect(ctx, e.git(ws), ws.ID)
	if err != nil {
		e.log.Warn("inspect workspace", "workspace", ws.ID, "err", err)
		return
	}
	ws.Dirty, ws.SizeBytes = info.Dirty, e.prov.SizeBytes(ctx, ws)
	if info.Head != "" {
		ws.HeadSHA = info.Head
	}
	ws.UpdatedAt = e.now().UTC()
}

// saveBranch records ws's branch in its user's work repository so its
// commits outlive the workspace.
func (e *Engine) saveBranch(ctx context.Context, ws *grove.Workspace) error {
	if ws.Branch == "" {
		return nil
	}
	if ok, _ := e.prov.Exists(ctx, ws); !ok {
		return nil
	}
	_, err := e.saveWork(ctx, ws, "refs/heads/"+ws.Branch, gitrepo.SavedBranchPrefix+ws.Branch)
	return err
}

// Destroy removes the workspace's runtime, files and record. Its branch's
// commits stay in its user's work repository, so acquiring the same key again re-attaches
// them; uncommitted changes are gone.
func (e *Engine) Destroy(ctx context.Context, id string) error {
	ws, unlock, err := e.locked(ctx, id, true)
	if err != nil {
		return err
	}
	defer unlock()
	if err := e.saveBranch(ctx, ws); err != nil {
		if transient(err) {
			return err
		}
		// The workspace's own git refuses to give its branch up (agent
		// code may have broken or booby-trapped it): the owner asked for
		// the destroy, and a workspace nobody can destroy would hold its
		// disk forever. Committed work saved earlier stays saved.
		e.log.Warn("destroying a workspace whose branch could not be saved", "workspace", ws.ID, "err", err)
	}
	return e.removeHeld(ctx, ws)
}

// transient reports errors worth waiting out rather than acting on: the
// runtime or the disk being unreachable for now, or the caller going away.
func transient(err error) bool {
	return errors.Is(err, grove.ErrUnavailable) || errors.Is(err, grove.ErrTimeout) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// destroyHeld saves ws's branch and destroys ws; the caller holds its
// exclusive lock. Eviction uses it: nothing is destroyed that could not be
// saved.
func (e *Engine) destroyHeld(ctx context.Context, ws *grove.Workspace) error {
	if err := e.saveBranch(ctx, ws); err != nil {
		return err
	}
	return e.removeHeld(ctx, ws)
}

// removeHeld removes ws's runtime, files and record.
func (e *Engine) removeHeld(ctx context.Context, ws *grove.Workspace) error {
	e.closeDebug(ws.ID)
	if err := e.drv.Destroy(ctx, ws.ID); err != nil {
		return err
	}
	e.runtimes.Delete(ws.ID)
	e.forget(ws.ID)
	if err := e.store.DeleteRuntime(ctx, ws.ID); err != nil && !errors.Is(err, grove.ErrNotFound) {
		return err
	}
	if err := e.prov.RemoveWorkspace(ctx, ws); err != nil {
		return err
	}
	e.log.Info("workspace destroyed", "workspace", ws.ID)
	return e.store.DeleteWorkspace(ctx, ws.ID)
}

// Pin marks a workspace as never to be evicted (or clears the mark).
func (e *Engine) Pin(ctx context.Context, id string, pinned bool) error {
	return e.store.Tx(ctx, func(ctx context.Context, tx store.Store) error {
		if !validID("ws_", id) {
			return grove.Errorf(grove.ErrNotFound, "workspace %q not found", id)
		}
		ws, err := tx.GetWorkspace(ctx, id)
		if err != nil {
			return err
		}
		if pinned && !ws.Pinned {
			// Pinned work is never evicted, so pins are bounded.
			mine, err := tx.ListWorkspaces(ctx, store.WorkspaceFilter{User: ws.User})
			if err != nil {
				return err
			}
			n := 0
			for _, w := range mine {
				if w.Pinned {
					n++
				}
			}
			if n >= e.disk.PinsPerUser {
				return grove.Errorf(grove.ErrResourceLimit, "you have %d pinned workspaces, the most allowed; unpin one first", n)
			}
		}
		ws.Pinned = pinned
		ws.UpdatedAt = e.now().UTC()
		return tx.UpdateWorkspace(ctx, ws)
	})
}
