package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/internal/sqlrow"
)

const selectWorkspace = `SELECT ` + sqlrow.WorkspaceColumns + ` FROM workspaces`

// CreateWorkspace inserts w. ErrConflict when its id, key or (repo cache,
// user, branch) is taken; ErrNotFound when its repo cache does not exist.
func (s *Store) CreateWorkspace(ctx context.Context, w *grove.Workspace) error {
	_, err := s.exec(ctx, `INSERT INTO workspaces (`+sqlrow.WorkspaceColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)`,
		sqlrow.WorkspaceArgs(w)...)
	if err != nil {
		return dbError(ctx, err, "create workspace "+w.ID, grove.ErrNotFound)
	}
	return nil
}

// GetWorkspace returns the workspace with id.
func (s *Store) GetWorkspace(ctx context.Context, id string) (*grove.Workspace, error) {
	return oneWorkspace(ctx, s.q.QueryRow(ctx, selectWorkspace+` WHERE id = $1`, id), id)
}

// GetWorkspaceByKey returns the workspace with key (the re-acquire path).
func (s *Store) GetWorkspaceByKey(ctx context.Context, key string) (*grove.Workspace, error) {
	return oneWorkspace(ctx, s.q.QueryRow(ctx, selectWorkspace+` WHERE ws_key = $1`, key), key)
}

func oneWorkspace(ctx context.Context, row pgx.Row, name string) (*grove.Workspace, error) {
	w, err := sqlrow.ScanWorkspace(row)
	if noRows(err) {
		return nil, grove.Errorf(grove.ErrNotFound, "workspace %q not found", name)
	}
	if err != nil {
		return nil, dbError(ctx, err, "get workspace", nil)
	}
	return w, nil
}

// ListWorkspaces returns the workspaces f selects, ordered by CreatedAt,
// then id.
func (s *Store) ListWorkspaces(ctx context.Context, f store.WorkspaceFilter) ([]*grove.Workspace, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, val string }{
		{"user_id", f.User}, {"project_id", f.Project}, {"repo_cache_id", f.RepoCacheID},
	} {
		if c.val != "" {
			args = append(args, c.val)
			where = append(where, c.col+" = $"+strconv.Itoa(len(args)))
		}
	}
	q := selectWorkspace
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := s.q.Query(ctx, q+` ORDER BY created_at NULLS FIRST, id`, args...)
	if err != nil {
		return nil, dbError(ctx, err, "list workspaces", nil)
	}
	return collect(ctx, rows, sqlrow.ScanWorkspace, "list workspaces")
}

// UpdateWorkspace replaces the workspace with w.ID.
func (s *Store) UpdateWorkspace(ctx context.Context, w *grove.Workspace) error {
	args := append(sqlrow.WorkspaceArgs(w)[1:], w.ID)
	tag, err := s.exec(ctx, `UPDATE workspaces SET ws_key = $1, repo_cache_id = $2, host = $3, owner = $4,
		name = $5, user_id = $6, project_id = $7, mode = $8, scope = $9, base_ref = $10, branch = $11,
		head_sha = $12, local_path = $13, state = $14, dirty = $15, pinned = $16, size_bytes = $17,
		runtime_kind = $18, created_at = $19, updated_at = $20, last_used_at = $21
		WHERE id = $22`, args...)
	return changedOne(ctx, tag, err, "update workspace "+w.ID, grove.ErrNotFound)
}

// DeleteWorkspace deletes the workspace with id and, by cascade, its
// runtime record.
func (s *Store) DeleteWorkspace(ctx context.Context, id string) error {
	tag, err := s.exec(ctx, `DELETE FROM workspaces WHERE id = $1`, id)
	return changedOne(ctx, tag, err, "delete workspace "+id, nil)
}
