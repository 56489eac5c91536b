package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store/internal/sqlrow"
)

// PutRuntime inserts or replaces the runtime record of r.WorkspaceID;
// ErrNotFound when that workspace does not exist.
func (s *Store) PutRuntime(ctx context.Context, r *grove.RuntimeRecord) error {
	_, err := s.exec(ctx, `INSERT INTO runtimes (`+sqlrow.RuntimeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (workspace_id) DO UPDATE SET id = excluded.id, kind = excluded.kind,
			backend_id = excluded.backend_id, image = excluded.image, state = excluded.state,
			last_started_at = excluded.last_started_at, last_used_at = excluded.last_used_at,
			created_at = excluded.created_at, updated_at = excluded.updated_at`,
		sqlrow.RuntimeArgs(r)...)
	if err != nil {
		return dbError(ctx, err, "put runtime of workspace "+r.WorkspaceID, grove.ErrNotFound)
	}
	return nil
}

// GetRuntime returns the runtime record of workspaceID.
func (s *Store) GetRuntime(ctx context.Context, workspaceID string) (*grove.RuntimeRecord, error) {
	r, err := sqlrow.ScanRuntime(s.q.QueryRowContext(ctx,
		`SELECT `+sqlrow.RuntimeColumns+` FROM runtimes WHERE workspace_id = ?`, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
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
	rows, err := s.q.QueryContext(ctx, `SELECT `+sqlrow.RuntimeColumns+` FROM runtimes ORDER BY created_at, workspace_id`)
	if err != nil {
		return nil, dbError(ctx, err, "list runtimes", nil)
	}
	return collect(ctx, rows, sqlrow.ScanRuntime, "list runtimes")
}

// DeleteRuntime deletes the runtime record of workspaceID.
func (s *Store) DeleteRuntime(ctx context.Context, workspaceID string) error {
	res, err := s.exec(ctx, `DELETE FROM runtimes WHERE workspace_id = ?`, workspaceID)
	return changedOne(ctx, res, err, "delete runtime of workspace "+workspaceID, nil)
}
