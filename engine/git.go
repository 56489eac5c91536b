package engine

import (
	"context"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo"
)

// Status implements grove.Service.
func (e *Engine) Status(ctx context.Context, id string) (*grove.Status, error) {
	ws, err := e.placed(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.prov.Status(ctx, ws)
}

// Diff implements grove.Service.
func (e *Engine) Diff(ctx context.Context, id string, req grove.DiffRequest) (*grove.Diff, error) {
	ws, err := e.placed(ctx, id)
	if err != nil {
		return nil, err
	}
	if req.BaseRef != "" {
		if err := gitrepo.ValidateRef(req.BaseRef); err != nil {
			return nil, err
		}
	}
	return e.prov.Diff(ctx, ws, req)
}

// Log implements grove.Service.
func (e *Engine) Log(ctx context.Context, id string, limit int, path string) ([]grove.Commit, error) {
	ws, err := e.placed(ctx, id)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 20
	}
	if limit > 1000 {
		limit = 1000
	}
	return e.prov.Log(ctx, ws, limit, path)
}

// Commit implements grove.Service: stage, commit (the repository's hooks do
// not run), and record the branch in the cache so the commit survives the
// workspace.
func (e *Engine) Commit(ctx context.Context, id string, req grove.CommitRequest) (*grove.CommitResult, error) {
	if req.Message == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "empty commit message")
	}
	var res *grove.CommitResult
	err := e.mutate(ctx, id, func(ws *grove.Workspace) error {
		var err error
		if res, err = e.prov.Commit(ctx, ws, req); err != nil {
			return err
		}
		ws.HeadSHA = res.SHA
		return e.saveBranch(ctx, ws)
	})
	if err != nil {
		return nil, err
	}
	// mutate marked the workspace dirty; after a commit of everything it may
	// be clean again.
	if ws, err := e.workspace(ctx, id); err == nil {
		e.refresh(ctx, ws)
		_ = e.store.UpdateWorkspace(ctx, ws)
	}
	return res, nil
}

// Push implements grove.Service: only the workspace's own branch is pushed,
// with a token used for this call alone.
func (e *Engine) Push(ctx context.Context, id string, req grove.PushRequest) (*grove.PushResult, error) {
	ws, unlock, err := e.locked(ctx, id, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := ws.RequireWritable(); err != nil {
		return nil, err
	}
	if ws.Branch == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "workspace %s is detached; nothing to push", ws.ID)
	}
	c, err := e.cacheOf(ctx, ws)
	if err != nil {
		return nil, err
	}
	return e.prov.Push(ctx, c, ws, req)
}
