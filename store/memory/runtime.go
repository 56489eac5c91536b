package memory

import (
	"context"

	"github.com/grove-dev/grove"
)

// PutRuntime inserts or replaces the runtime record of r.WorkspaceID.
func (s *Store) PutRuntime(ctx context.Context, r *grove.RuntimeRecord) error {
	if r.WorkspaceID == "" {
		return grove.Errorf(grove.ErrInvalid, "runtime %s: no workspace", r.ID)
	}
	rec := *r
	return s.write(ctx, func(st *state) error {
		if _, ok := st.workspaces[rec.WorkspaceID]; !ok {
			return grove.Errorf(grove.ErrNotFound, "runtime: workspace %s not found", rec.WorkspaceID)
		}
		st.runtimes[rec.WorkspaceID] = &rec
		return nil
	})
}

// GetRuntime returns a copy of the runtime record of workspaceID.
func (s *Store) GetRuntime(ctx context.Context, workspaceID string) (*grove.RuntimeRecord, error) {
	var out grove.RuntimeRecord
	err := s.read(ctx, func(st *state) error {
		r, ok := st.runtimes[workspaceID]
		if !ok {
			return grove.Errorf(grove.ErrNotFound, "runtime of workspace %s not found", workspaceID)
		}
		out = *r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRuntimes returns copies of all runtime records ordered by CreatedAt,
// then workspace id.
func (s *Store) ListRuntimes(ctx context.Context) ([]*grove.RuntimeRecord, error) {
	var out []*grove.RuntimeRecord
	err := s.read(ctx, func(st *state) error {
		out = sortedValues(st.runtimes, nil, func(a, b *grove.RuntimeRecord) int {
			return byCreated(a.CreatedAt, a.WorkspaceID, b.CreatedAt, b.WorkspaceID)
		})
		return nil
	})
	return out, err
}

// DeleteRuntime removes the runtime record of workspaceID.
func (s *Store) DeleteRuntime(ctx context.Context, workspaceID string) error {
	return s.write(ctx, func(st *state) error {
		if _, ok := st.runtimes[workspaceID]; !ok {
			return grove.Errorf(grove.ErrNotFound, "runtime of workspace %s not found", workspaceID)
		}
		delete(st.runtimes, workspaceID)
		return nil
	})
}
