package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/grove-dev/grove"
)

const runtimeColumns = `workspace_id, id, kind, backend_id, image, state,
	last_started_at, last_used_at, created_at, updated_at`

func scanRuntime(row scanner) (*grove.RuntimeRecord, error) {
	var r grove.RuntimeRecord
	err := row.Scan(&r.WorkspaceID, &r.ID, &r.Kind, &r.BackendID, &r.Image, &r.State,
		timeCol{&r.LastStartedAt}, timeCol{&r.LastUsedAt}, timeCol{&r.CreatedAt}, timeCol{&r.UpdatedAt})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// PutRuntime inserts or replaces the runtime record of r.WorkspaceID;
// ErrNotFound when that workspace does not exist.
func (s *Store) PutRuntime(ctx context.Context, r *grove.RuntimeRecord) error {
	_, err := s.exec(ctx, `INSERT INTO runtimes (`+runtimeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (workspace_id) DO UPDATE SET id = excluded.id, kind = excluded.kind,
			backend_id = excluded.backend_id, image = excluded.image, state = excluded.state,
			last_started_at = excluded.last_started_at, last_used_at = excluded.last_used_at,
			created_at = excluded.created_at, updated_at = excluded.updated_at`,
		r.WorkspaceID, r.ID, r.Kind, r.BackendID, r.Image, r.State,
		nanos(r.LastStartedAt), nanos(r.LastUsedAt), nanos(r.CreatedAt), nanos(r.UpdatedAt))
	if err != nil {
		return dbError(ctx, err, "put runtime of workspace "+r.WorkspaceID, grove.ErrNotFound)
	}
	return nil
}

// GetRuntime returns the runtime record of workspaceID.
func (s *Store) GetRuntime(ctx context.Context, workspaceID string) (*grove.RuntimeRecord, error) {
	r, err := scanRuntime(s.q.QueryRowContext(ctx,
		`SELECT `+runtimeColumns+` FROM runtimes WHERE workspace_id = ?`, workspaceID))
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
	rows, err := s.q.QueryContext(ctx, `SELECT `+runtimeColumns+` FROM runtimes ORDER BY created_at, workspace_id`)
	if err != nil {
		return nil, dbError(ctx, err, "list runtimes", nil)
	}
	return collect(ctx, rows, scanRuntime, "list runtimes")
}

// DeleteRuntime deletes the runtime record of workspaceID.
func (s *Store) DeleteRuntime(ctx context.Context, workspaceID string) error {
	res, err := s.exec(ctx, `DELETE FROM runtimes WHERE workspace_id = ?`, workspaceID)
	return changedOne(ctx, res, err, "delete runtime of workspace "+workspaceID, nil)
}
