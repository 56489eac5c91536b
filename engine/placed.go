package engine

import (
	"context"
	"time"

	"github.com/grove-dev/grove"
)

// placedTTL bounds how long a read path trusts a remembered workspace
// without asking the store. Another process (a CLI next to a server) may
// destroy a workspace; within this window a read of it fails on the
// missing files instead of on the store, which is the same answer.
const placedTTL = time.Second

type placedEntry struct {
	ws *grove.Workspace
	at time.Time
}

// placed returns a workspace for read paths (files, search, git reads),
// which only need what never changes after creation: id, owner, mode and
// path. It saves a store round trip per read, which is most of Grove's own
// cost on a small file read.
func (e *Engine) placed(ctx context.Context, id string) (*grove.Workspace, error) {
	if v, ok := e.recent.Load(id); ok {
		if p := v.(placedEntry); e.now().Sub(p.at) < placedTTL {
			return p.ws, nil
		}
	}
	ws, err := e.workspace(ctx, id)
	if err != nil {
		e.recent.Delete(id)
		return nil, err
	}
	if ws.State == grove.WorkspaceReady || ws.State == grove.WorkspaceReleased {
		e.recent.Store(id, placedEntry{ws: ws, at: e.now()})
	}
	return ws, nil
}

// forget drops a workspace from the read-path memory.
func (e *Engine) forget(id string) { e.recent.Delete(id) }
