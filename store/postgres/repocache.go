package postgres

import (
	"context"

	"github.com/grove-dev/grove"
)

const cacheColumns = `id, host, owner, name, url, local_path, state, size_bytes,
	last_fetched_at, last_used_at, created_at, updated_at`

func scanCache(row scanner) (*grove.RepoCache, error) {
	var c grove.RepoCache
	err := row.Scan(&c.ID, &c.Repo.Host, &c.Repo.Owner, &c.Repo.Name, &c.URL, &c.LocalPath, &c.State, &c.SizeBytes,
		timeCol{&c.LastFetchedAt}, timeCol{&c.LastUsedAt}, timeCol{&c.CreatedAt}, timeCol{&c.UpdatedAt})
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// CreateRepoCache inserts c.
func (s *Store) CreateRepoCache(ctx context.Context, c *grove.RepoCache) error {
	_, err := s.exec(ctx, `INSERT INTO repo_caches (`+cacheColumns+`, cache_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		c.ID, c.Repo.Host, c.Repo.Owner, c.Repo.Name, c.URL, c.LocalPath, c.State, c.SizeBytes,
		nanos(c.LastFetchedAt), nanos(c.LastUsedAt), nanos(c.CreatedAt), nanos(c.UpdatedAt), c.Repo.Key())
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
	c, err := scanCache(s.q.QueryRow(ctx, `SELECT `+cacheColumns+` FROM repo_caches WHERE `+col+` = $1`, val))
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
	rows, err := s.q.Query(ctx, `SELECT `+cacheColumns+` FROM repo_caches ORDER BY created_at NULLS FIRST, id`)
	if err != nil {
		return nil, dbError(ctx, err, "list repo caches", nil)
	}
	return collect(ctx, rows, scanCache, "list repo caches")
}

// UpdateRepoCache replaces the cache with c.ID.
func (s *Store) UpdateRepoCache(ctx context.Context, c *grove.RepoCache) error {
	tag, err := s.exec(ctx, `UPDATE repo_caches SET host = $1, owner = $2, name = $3, cache_key = $4, url = $5,
		local_path = $6, state = $7, size_bytes = $8, last_fetched_at = $9, last_used_at = $10, created_at = $11,
		updated_at = $12 WHERE id = $13`,
		c.Repo.Host, c.Repo.Owner, c.Repo.Name, c.Repo.Key(), c.URL, c.LocalPath, c.State, c.SizeBytes,
		nanos(c.LastFetchedAt), nanos(c.LastUsedAt), nanos(c.CreatedAt), nanos(c.UpdatedAt), c.ID)
	return changedOne(ctx, tag, err, "update repo cache "+c.ID, nil)
}

// DeleteRepoCache deletes the cache with id; ErrConflict while workspaces
// use it.
func (s *Store) DeleteRepoCache(ctx context.Context, id string) error {
	tag, err := s.exec(ctx, `DELETE FROM repo_caches WHERE id = $1`, id)
	return changedOne(ctx, tag, err, "delete repo cache "+id, grove.ErrConflict)
}
