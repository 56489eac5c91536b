package postgres

import (
	"context"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store/internal/sqlrow"
)

// CreateRepoCache inserts c.
func (s *Store) CreateRepoCache(ctx context.Context, c *grove.RepoCache) error {
	_, err := s.exec(ctx, `INSERT INTO repo_caches (`+sqlrow.CacheColumns+`, cache_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
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
	c, err := sqlrow.ScanCache(s.q.QueryRow(ctx, `SELECT `+sqlrow.CacheColumns+` FROM repo_caches WHERE `+col+` = $1`, val))
	if noRows(err) {
		return nil, grove.Errorf(grove.ErrNotFound, "repo cache %q not found", val)
	}
	if err != nil {
		return nil, dbError(ctx, err, "get repo cache", nil)
	}
	return c, nil
}

// ListRepoCaches returns all caches ordered by CreatedAt, then id.
func (s *Store) ListRepoCaches(ctx context.Context) ([]*grove.RepoCache, error) {
	rows, err := s.q.Query(ctx, `SELECT `+sqlrow.CacheColumns+` FROM repo_caches ORDER BY created_at NULLS FIRST, id`)
	if err != nil {
		return nil, dbError(ctx, err, "list repo caches", nil)
	}
	return collect(ctx, rows, sqlrow.ScanCache, "list repo caches")
}

// UpdateRepoCache replaces the cache with c.ID.
func (s *Store) UpdateRepoCache(ctx context.Context, c *grove.RepoCache) error {
	tag, err := s.exec(ctx, `UPDATE repo_caches SET host = $1, owner = $2, name = $3, cache_key = $4, url = $5,
		local_path = $6, state = $7, size_bytes = $8, last_fetched_at = $9, last_used_at = $10, created_at = $11,
		updated_at = $12 WHERE id = $13`,
		c.Repo.Host, c.Repo.Owner, c.Repo.Name, c.Repo.Key(), c.URL, c.LocalPath, c.State, c.SizeBytes,
		sqlrow.Nanos(c.LastFetchedAt), sqlrow.Nanos(c.LastUsedAt), sqlrow.Nanos(c.CreatedAt), sqlrow.Nanos(c.UpdatedAt), c.ID)
	return changedOne(ctx, tag, err, "update repo cache "+c.ID, nil)
}

// DeleteRepoCache deletes the cache with id; ErrConflict while workspaces
// use it.
func (s *Store) DeleteRepoCache(ctx context.Context, id string) error {
	tag, err := s.exec(ctx, `DELETE FROM repo_caches WHERE id = $1`, id)
	return changedOne(ctx, tag, err, "delete repo cache "+id, grove.ErrConflict)
}
