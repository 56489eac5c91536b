package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/internal/sqlrow"
)

const selectWorkspace = `SELECT ` + sqlrow.WorkspaceColumns + ` FROM workspaces`

// CreateWorkspace inserts w. ErrConflict when its id, key or (repo cache,
// user, branch) is taken; ErrNotFound when its repo cache does not exist.
func (s *Store) CreateWorkspace(ctx context.Context, w *grove.Workspace) error {
	_, err := s.exec(ctx, `INSERT INTO workspaces (`+sqlrow.WorkspaceColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, sqlrow.WorkspaceArgs(w)...)
	if err != nil {
		return dbError(ctx, err, "create workspace "+w.ID, grove.ErrNotFound)
	}
	return nil
}

// GetWorkspace returns the workspace with id.
func (s *Store) GetWorkspace(ctx context.Context, id string) (*grove.Workspace, error) {
	return oneWorkspace(ctx, s.stmt(ctx, s.hot.wsByID).QueryRowContext(ctx, id), id)
}

// GetWorkspaceByKey returns the workspace with key (the re-acquire path).
func (s *Store) GetWorkspaceByKey(ctx context.Context, key string) (*grove.Workspace, error) {
	return oneWorkspace(ctx, s.stmt(ctx, s.hot.wsByKey).QueryRowContext(ctx, key), key)
}

func oneWorkspace(ctx context.Context, row *sql.Row, name string) (*grove.Workspace, error) {
	w, err := sqlrow.ScanWorkspace(row)
	if errors.Is(err, sql.ErrNoRows) {
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
			where = append(where, c.col+" = ?")
			args = append(args, c.val)
		}
	}
	q := selectWorkspace
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	rows, err := s.q.QueryContext(ctx, q+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, dbError(ctx, err, "list workspaces", nil)
	}
	return collect(ctx, rows, sqlrow.ScanWorkspace, "list workspaces")
}

// UpdateWorkspace replaces the workspace with w.ID.
func (s *Store) UpdateWorkspace(ctx context.Context, w *grove.Workspace) error {
	args := append(sqlrow.WorkspaceArgs(w)[1:], w.ID)
	res, err := s.exec(ctx, `UPDATE workspaces SET ws_key = ?, repo_cache_id = ?, host = ?, owner = ?, name = ?,
		user_id = ?, project_id = ?, mode = ?, scope = ?, base_ref = ?, branch = ?, head_sha = ?, local_path = ?,
		state = ?, dirty = ?, pinned = ?, size_bytes = ?, runtime_kind = ?, created_at = ?, updated_at = ?, last_used_at = ?
		WHERE id = ?`, args...)
	return changedOne(ctx, res, err, "update workspace "+w.ID, grove.ErrNotFound)
}

// DeleteWorkspace deletes the workspace with id and, by cascade, its
// runtime record.
func (s *Store) DeleteWorkspace(ctx context.Context, id string) error {
	res, err := s.exec(ctx, `DELETE FROM workspaces WHERE id = ?`, id)
	return changedOne(ctx, res, err, "delete workspace "+id, nil)
}
