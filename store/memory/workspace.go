package memory

import (
	"context"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

func validWorkspace(w *grove.Workspace) error {
	switch {
	case w.ID == "":
		return grove.Errorf(grove.ErrInvalid, "workspace: empty id")
	case w.Key == "":
		return grove.Errorf(grove.ErrInvalid, "workspace %s: empty key", w.ID)
	case w.RepoCacheID == "":
		return grove.Errorf(grove.ErrInvalid, "workspace %s: no repo cache", w.ID)
	}
	return nil
}

// claimable reports whether w may hold its key and branch in st, given
// that the record with w.ID (if any) is being replaced.
func (st *state) claimable(w *grove.Workspace) error {
	if _, ok := st.caches[w.RepoCacheID]; !ok {
		return grove.Errorf(grove.ErrNotFound, "workspace %s: repo cache %s not found", w.ID, w.RepoCacheID)
	}
	if id, ok := st.wsByKey[w.Key]; ok && id != w.ID {
		return grove.Errorf(grove.ErrConflict, "workspace %q already exists", w.Key)
	}
	if w.Branch != "" {
		if id, ok := st.wsByBranch[branchKey{w.RepoCacheID, w.User, w.Branch}]; ok && id != w.ID {
			return grove.Errorf(grove.ErrConflict, "branch %q is checked out in workspace %s", w.Branch, id)
		}
	}
	return nil
}

func (st *state) index(w *grove.Workspace) {
	st.workspaces[w.ID] = w
	st.wsByKey[w.Key] = w.ID
	if w.Branch != "" {
		st.wsByBranch[branchKey{w.RepoCacheID, w.User, w.Branch}] = w.ID
	}
	st.wsByCacheCnt[w.RepoCacheID]++
}

func (st *state) unindex(w *grove.Workspace) {
	delete(st.workspaces, w.ID)
	delete(st.wsByKey, w.Key)
	if w.Branch != "" {
		delete(st.wsByBranch, branchKey{w.RepoCacheID, w.User, w.Branch})
	}
	if st.wsByCacheCnt[w.RepoCacheID]--; st.wsByCacheCnt[w.RepoCacheID] == 0 {
		delete(st.wsByCacheCnt, w.RepoCacheID)
	}
}

// CreateWorkspace stores a copy of w.
func (s *Store) CreateWorkspace(ctx context.Context, w *grove.Workspace) error {
	if err := validWorkspace(w); err != nil {
		return err
	}
	rec := *w
	return s.write(ctx, func(st *state) error {
		if _, ok := st.workspaces[rec.ID]; ok {
			return grove.Errorf(grove.ErrConflict, "workspace %s already exists", rec.ID)
		}
		if err := st.claimable(&rec); err != nil {
			return err
		}
		st.index(&rec)
		return nil
	})
}

// GetWorkspace returns a copy of the workspace with id.
func (s *Store) GetWorkspace(ctx context.Context, id string) (*grove.Workspace, error) {
	var out grove.Workspace
	err := s.read(ctx, func(st *state) error {
		w, ok := st.workspaces[id]
		if !ok {
			return grove.Errorf(grove.ErrNotFound, "workspace %s not found", id)
		}
		out = *w
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// GetWorkspaceByKey returns a copy of the workspace with key.
func (s *Store) GetWorkspaceByKey(ctx context.Context, key string) (*grove.Workspace, error) {
	var out grove.Workspace
	err := s.read(ctx, func(st *state) error {
		id, ok := st.wsByKey[key]
		if !ok {
			return grove.Errorf(grove.ErrNotFound, "workspace %q not found", key)
		}
		out = *st.workspaces[id]
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListWorkspaces returns copies of the workspaces f selects, ordered by
// CreatedAt, then id.
func (s *Store) ListWorkspaces(ctx context.Context, f store.WorkspaceFilter) ([]*grove.Workspace, error) {
	keep := func(w *grove.Workspace) bool {
		return (f.User == "" || w.User == f.User) &&
			(f.Project == "" || w.Project == f.Project) &&
			(f.RepoCacheID == "" || w.RepoCacheID == f.RepoCacheID)
	}
	var out []*grove.Workspace
	err := s.read(ctx, func(st *state) error {
		out = sortedValues(st.workspaces, keep, func(a, b *grove.Workspace) int {
			return byCreated(a.CreatedAt, a.ID, b.CreatedAt, b.ID)
		})
		return nil
	})
	return out, err
}

// UpdateWorkspace replaces the workspace with w.ID by a copy of w.
func (s *Store) UpdateWorkspace(ctx context.Context, w *grove.Workspace) error {
	if err := validWorkspace(w); err != nil {
		return err
	}
	rec := *w
	return s.write(ctx, func(st *state) error {
		old, ok := st.workspaces[rec.ID]
		if !ok {
			return grove.Errorf(grove.ErrNotFound, "workspace %s not found", rec.ID)
		}
		if err := st.claimable(&rec); err != nil {
			return err
		}
		st.unindex(old)
		st.index(&rec)
		return nil
	})
}

// DeleteWorkspace removes the workspace with id and its runtime record.
func (s *Store) DeleteWorkspace(ctx context.Context, id string) error {
	return s.write(ctx, func(st *state) error {
		w, ok := st.workspaces[id]
		if !ok {
			return grove.Errorf(grove.ErrNotFound, "workspace %s not found", id)
		}
		st.unindex(w)
		delete(st.runtimes, id)
		return nil
	})
}
