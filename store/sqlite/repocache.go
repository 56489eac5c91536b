package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store/internal/sqlrow"
)

// CreateRepoCache inserts c.
func (s *Store) CreateRepoCache(ctx context.Context, c *grove.RepoCache) error {
	_, err := s.exec(ctx, `INSERT INTO repo_caches (`+sqlrow.CacheColumns+`, cache_key)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		append(sqlrow.CacheArgs(c), c.Repo.Key())...)
	if err != nil {
		return dbError(ctx, err, "create repo cache "+c.ID, nil)
	}
	return nil
}

// GetRepoCache returns the cache with id.
func (s *Store) GetRepoCache(ctx context.Context, id string) (*grove.RepoCache, error) {
	return s.getCache(ctx, "id", id)
}

// GetRepoCacheByKey returns the cache whose Repo.Key() is key.
func (s *Store) GetRepoCacheByKey(ctx context.Context, key string) (*grove.RepoCache, error) {
	return s.getCache(ctx, "cache_key", key)
}

// getCache looks a cache up by a unique column; col is a constant.
func (s *Store) getCache(ctx context.Context, col, val string) (*grove.RepoCache, error) {
	c, err := sqlrow.ScanCache(s.q.QueryRowContext(ctx, `SELECT `+sqlrow.CacheColumns+` FROM repo_caches WHERE `+col+` = ?`, val))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, grove.Errorf(grove.ErrNotFound, "repo cache %q not found", val)
	}
	if err != nil {
		return nil, dbError(ctx, err, "get repo cache", nil)
	}
	return c, nil
}

// ListRepoCaches returns all caches ordered by CreatedAt, then id.
func (s *Store) ListRepoCaches(ctx context.Context) ([]*grove.RepoCache, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT `+sqlrow.CacheColumns+` FROM repo_caches ORDER BY created_at, id`)
	if err != nil {
		return nil, dbError(ctx, err, "list repo caches", nil)
	}
	return collect(ctx, rows, sqlrow.ScanCache, "list repo caches")
}

// UpdateRepoCache replaces the cache with c.ID.
func (s *Store) UpdateRepoCache(ctx context.Context, c *grove.RepoCache) error {
	res, err := s.exec(ctx, `UPDATE repo_caches SET host = ?, owner = ?, name = ?, cache_key = ?, url = ?,
		local_path = ?, state = ?, size_bytes = ?, last_fetched_at = ?, last_used_at = ?, created_at = ?, updated_at = ?
		WHERE id = ?`,
		c.Repo.Host, c.Repo.Owner, c.Repo.Name, c.Repo.Key(), c.URL, c.LocalPath, c.State, c.SizeBytes,
		sqlrow.Nanos(c.LastFetchedAt), sqlrow.Nanos(c.LastUsedAt), sqlrow.Nanos(c.CreatedAt), sqlrow.Nanos(c.UpdatedAt), c.ID)
	return changedOne(ctx, res, err, "update repo cache "+c.ID, nil)
}

// DeleteRepoCache deletes the cache with id; ErrConflict while workspaces
// use it.
func (s *Store) DeleteRepoCache(ctx context.Context, id string) error {
	res, err := s.exec(ctx, `DELETE FROM repo_caches WHERE id = ?`, id)
	return changedOne(ctx, res, err, "delete repo cache "+id, grove.ErrConflict)
}

// changedOne checks that an update or delete touched a row.
func changedOne(ctx context.Context, res sql.Result, err error, what string, fk error) error {
	if err != nil {
		return dbError(ctx, err, what, fk)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return dbError(ctx, err, what, nil)
	}
	if n == 0 {
		return grove.Errorf(grove.ErrNotFound, "%s: not found", what)
	}
	return nil
}

// collect scans every row and closes rows.
func collect[T any](ctx context.Context, rows *sql.Rows, scan func(sqlrow.Scanner) (*T, error), what string) ([]*T, error) {
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, dbError(ctx, err, what, nil)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError(ctx, err, what, nil)
	}
	return out, nil
}
