package postgres

import (
	"context"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store/internal/sqlrow"
)

// PutRuntime inserts or replaces the runtime record of r.WorkspaceID;
// ErrNotFound when that workspace does not exist.
func (s *Store) PutRuntime(ctx context.Context, r *grove.RuntimeRecord) error {
	_, err := s.exec(ctx, `INSERT INTO runtimes (`+sqlrow.RuntimeColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (workspace_id) DO UPDATE SET id = EXCLUDED.id, kind = EXCLUDED.kind,
			backend_id = EXCLUDED.backend_id, image = EXCLUDED.image, state = EXCLUDED.state,
			last_started_at = EXCLUDED.last_started_at, last_used_at = EXCLUDED.last_used_at,
			created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`,
		sqlrow.RuntimeArgs(r)...)
	if err != nil {
		return dbError(ctx, err, "put runtime of workspace "+r.WorkspaceID, grove.ErrNotFound)
	}
	return nil
}

// GetRuntime returns the runtime record of workspaceID.
func (s *Store) GetRuntime(ctx context.Context, workspaceID string) (*grove.RuntimeRecord, error) {
	r, err := sqlrow.ScanRuntime(s.q.QueryRow(ctx,
		`SELECT `+sqlrow.RuntimeColumns+` FROM runtimes WHERE workspace_id = $1`, workspaceID))
	if noRows(err) {
		return nil, grove.Errorf(grove.ErrNotFound, "runtime of workspace %s not found", workspaceID)
	}
	if err != nil {
		return nil, dbError(ctx, err, "get runtime", nil)
	}
	return r, nil
}

// ListRuntimes returns all runtime records ordered by CreatedAt, then
// workspace id.
func (s *Store) ListRuntimes(ctx context.Context) ([]*grove.RuntimeRecord, error) {
	rows, err := s.q.Query(ctx, `SELECT `+sqlrow.RuntimeColumns+` FROM runtimes ORDER BY created_at NULLS FIRST, workspace_id`)
	if err != nil {
		return nil, dbError(ctx, err, "list runtimes", nil)
	}
	return collect(ctx, rows, sqlrow.ScanRuntime, "list runtimes")
}

// DeleteRuntime deletes the runtime record of workspaceID.
func (s *Store) DeleteRuntime(ctx context.Context, workspaceID string) error {
	tag, err := s.exec(ctx, `DELETE FROM runtimes WHERE workspace_id = $1`, workspaceID)
	return changedOne(ctx, tag, err, "delete runtime of workspace "+workspaceID, nil)
}
