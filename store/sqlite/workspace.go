package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

const workspaceColumns = `id, ws_key, repo_cache_id, host, owner, name, user_id, project_id, mode, scope,
	base_ref, branch, head_sha, local_path, state, dirty, pinned, size_bytes, runtime_kind,
	created_at, updated_at, last_used_at`

const selectWorkspace = `SELECT ` + workspaceColumns + ` FROM workspaces`

func scanWorkspace(row scanner) (*grove.Workspace, error) {
	var w grove.Workspace
	err := row.Scan(&w.ID, &w.Key, &w.RepoCacheID, &w.Repo.Host, &w.Repo.Owner, &w.Repo.Name,
		&w.User, &w.Project, &w.Mode, &w.Scope, &w.BaseRef, &w.Branch, &w.HeadSHA, &w.LocalPath,
		&w.State, &w.Dirty, &w.Pinned, &w.SizeBytes, &w.RuntimeKind,
		timeCol{&w.CreatedAt}, timeCol{&w.UpdatedAt}, timeCol{&w.LastUsedAt})
	if err != nil {
		return nil, err
	}
	return &w, nil
}

// workspaceArgs are w's values in workspaceColumns order.
func workspaceArgs(w *grove.Workspace) []any {
	return []any{w.ID, w.Key, w.RepoCacheID, w.Repo.Host, w.Repo.Owner, w.Repo.Name,
		w.User, w.Project, w.Mode, w.Scope, w.BaseRef, w.Branch, w.HeadSHA, w.LocalPath,
		w.State, w.Dirty, w.Pinned, w.SizeBytes, w.RuntimeKind,
		nanos(w.CreatedAt), nanos(w.UpdatedAt), nanos(w.LastUsedAt)}
}

// CreateWorkspace inserts w. ErrConflict when its id, key or (repo cache,
// branch) is taken; ErrNotFound when its repo cache does not exist.
func (s *Store) CreateWorkspace(ctx context.Context, w *grove.Workspace) error {
	_, err := s.exec(ctx, `INSERT INTO workspaces (`+workspaceColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, workspaceArgs(w)...)
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
	w, err := scanWorkspace(row)
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
	return collect(ctx, rows, scanWorkspace, "list workspaces")
}

// UpdateWorkspace replaces the workspace with w.ID.
func (s *Store) UpdateWorkspace(ctx context.Context, w *grove.Workspace) error {
	args := append(workspaceArgs(w)[1:], w.ID)
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
