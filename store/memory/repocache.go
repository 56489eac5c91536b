package memory

import (
	"context"

	"github.com/grove-dev/grove"
)

// CreateRepoCache stores a copy of c.
func (s *Store) CreateRepoCache(ctx context.Context, c *grove.RepoCache) error {
	if c.ID == "" {
		return grove.Errorf(grove.ErrInvalid, "repo cache: empty id")
	}
	rec := *c
	return s.write(ctx, func(st *state) error {
		if _, ok := st.caches[rec.ID]; ok {
			return grove.Errorf(grove.ErrConflict, "repo cache %s already exists", rec.ID)
		}
		if _, ok := st.cacheByKey[rec.Repo.Key()]; ok {
			return grove.Errorf(grove.ErrConflict, "repo cache for %s already exists", rec.Repo)
		}
		st.caches[rec.ID] = &rec
		st.cacheByKey[rec.Repo.Key()] = rec.ID
		return nil
	})
}

// GetRepoCache returns a copy of the cache with id.
func (s *Store) GetRepoCache(ctx context.Context, id string) (*grove.RepoCache, error) {
	var out grove.RepoCache
	err := s.read(ctx, func(st *state) error {
		c, ok := st.caches[id]
		if !ok {
			return grove.Errorf(grove.ErrNotFound, "repo cache %s not found", id)
		}
		out = *c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// GetRepoCacheByKey returns a copy of the cache whose Repo.Key() is key.
func (s *Store) GetRepoCacheByKey(ctx context.Context, key string) (*grove.RepoCache, error) {
	var out grove.RepoCache
	err := s.read(ctx, func(st *state) error {
		id, ok := st.cacheByKey[key]
		if !ok {
			return grove.Errorf(grove.ErrNotFound, "repo cache %q not found", key)
		}
		out = *st.caches[id]
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRepoCaches returns copies of all caches ordered by CreatedAt, then id.
func (s *Store) ListRepoCaches(ctx context.Context) ([]*grove.RepoCache, error) {
	var out []*grove.RepoCache
	err := s.read(ctx, func(st *state) error {
		out = sortedValues(st.caches, nil, func(a, b *grove.RepoCache) int {
			return byCreated(a.CreatedAt, a.ID, b.CreatedAt, b.ID)
		})
		return nil
	})
	return out, err
}

// UpdateRepoCache replaces the cache with c.ID by a copy of c.
func (s *Store) UpdateRepoCache(ctx context.Context, c *grove.RepoCache) error {
	rec := *c
	return s.write(ctx, func(st *state) error {
		old, ok := st.caches[rec.ID]
		if !ok {
			return grove.Errorf(grove.ErrNotFound, "repo cache %s not found", rec.ID)
		}
		if id, ok := st.cacheByKey[rec.Repo.Key()]; ok && id != rec.ID {
			return grove.Errorf(grove.ErrConflict, "repo cache for %s already exists", rec.Repo)
		}
		delete(st.cacheByKey, old.Repo.Key())
		st.caches[rec.ID] = &rec
		st.cacheByKey[rec.Repo.Key()] = rec.ID
		return nil
	})
}

// DeleteRepoCache removes the cache with id unless workspaces use it.
func (s *Store) DeleteRepoCache(ctx context.Context, id string) error {
	return s.write(ctx, func(st *state) error {
		c, ok := st.caches[id]
		if !ok {
			return grove.Errorf(grove.ErrNotFound, "repo cache %s not found", id)
		}
		if n := st.wsByCacheCnt[id]; n > 0 {
			return grove.Errorf(grove.ErrConflict, "repo cache %s is used by %d workspaces", id, n)
		}
		delete(st.caches, id)
		delete(st.cacheByKey, c.Repo.Key())
		return nil
	})
}
