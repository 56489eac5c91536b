package engine

import (
	"context"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/search"
)

// DefaultReadMax caps ReadFile when the caller names no limit.
const DefaultReadMax = 10 << 20

// Reads of files, listings and searches take no workspace lock: writes are
// atomic renames, so a reader sees the old or the new file, never a torn
// one, and a long test run does not block an agent from reading.

// ReadFile implements grove.Service.
func (e *Engine) ReadFile(ctx context.Context, id, path string, maxBytes int64) ([]byte, error) {
	ws, err := e.placed(ctx, id)
	if err != nil {
		return nil, err
	}
	if maxBytes <= 0 {
		maxBytes = DefaultReadMax
	}
	return e.prov.ReadFile(ctx, ws, path, maxBytes)
}

// ListDir implements grove.Service.
func (e *Engine) ListDir(ctx context.Context, id, path string, depth int) ([]grove.DirEntry, error) {
	ws, err := e.placed(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.prov.ListDir(ctx, ws, path, depth)
}

// Search implements grove.Service.
func (e *Engine) Search(ctx context.Context, id string, req grove.SearchRequest) (*grove.SearchResult, error) {
	ws, err := e.placed(ctx, id)
	if err != nil {
		return nil, err
	}
	if req.Pattern == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "empty search pattern")
	}
	if req.Path != "" {
		if req.Path, err = fsops.CleanPath(req.Path); err != nil {
			return nil, err
		}
	}
	// rg runs where the sandbox's view is the only view: no path checked
	// here can be swapped for a symlink to the host before rg opens it.
	return search.InRuntime(ctx, e.git(ws), ws.ID, req)
}

// WriteFile implements grove.Service.
func (e *Engine) WriteFile(ctx context.Context, id, path string, data []byte) error {
	return e.mutate(ctx, id, func(ws *grove.Workspace) error {
		if err := e.checkWrite(ctx, ws, int64(len(data))); err != nil {
			return err
		}
		return e.prov.WriteFile(ctx, ws, path, data)
	})
}

// DeleteFile implements grove.Service.
func (e *Engine) DeleteFile(ctx context.Context, id, path string) error {
	return e.mutate(ctx, id, func(ws *grove.Workspace) error {
		return e.prov.DeleteFile(ctx, ws, path)
	})
}

// mutate runs fn on a writable workspace under its exclusive lock and marks
// the workspace dirty.
func (e *Engine) mutate(ctx context.Context, id string, fn func(ws *grove.Workspace) error) error {
	ws, unlock, err := e.locked(ctx, id, true)
	if err != nil {
		return err
	}
	defer unlock()
	if err := ws.RequireWritable(); err != nil {
		return err
	}
	if err := fn(ws); err != nil {
		return err
	}
	if !ws.Dirty {
		ws.Dirty = true
		ws.UpdatedAt = e.now().UTC()
		return e.store.UpdateWorkspace(ctx, ws)
	}
	return nil
}
