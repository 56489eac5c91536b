package memory

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

var _ store.KeyStore = (*Store)(nil)

// keys are kept beside the transactional state: key management never runs
// inside a Tx, so a plain mutex is enough.
type keys struct {
	mu   sync.Mutex
	byID map[string]store.APIKey
}

func (s *Store) keyTable() (*keys, error) {
	s.db.mu.RLock()
	defer s.db.mu.RUnlock()
	if s.db.closed {
		return nil, errClosed
	}
	return &s.db.keys, nil
}

// CreateAPIKey stores a copy of k.
func (s *Store) CreateAPIKey(ctx context.Context, k *store.APIKey) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if k.ID == "" || k.User == "" || k.Hash == "" {
		return grove.Errorf(grove.ErrInvalid, "api key: id, user and hash are required")
	}
	t, err := s.keyTable()
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[string]store.APIKey{}
	}
	for _, o := range t.byID {
		if o.ID == k.ID || o.Hash == k.Hash {
			return grove.Errorf(grove.ErrConflict, "api key %s already exists", k.ID)
		}
	}
	t.byID[k.ID] = *k
	return nil
}

// GetAPIKeyByHash returns a copy of the key with this hash.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash string) (*store.APIKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := s.keyTable()
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range t.byID {
		if k.Hash == hash {
			return &k, nil
		}
	}
	return nil, grove.Errorf(grove.ErrNotFound, "api key not found")
}

// ListAPIKeys returns copies of every key.
func (s *Store) ListAPIKeys(ctx context.Context) ([]*store.APIKey, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := s.keyTable()
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*store.APIKey, 0, len(t.byID))
	for _, k := range t.byID {
		out = append(out, &k)
	}
	slices.SortFunc(out, func(a, b *store.APIKey) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RevokeAPIKey marks key id revoked, keeping an earlier revocation.
func (s *Store) RevokeAPIKey(ctx context.Context, id string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := s.keyTable()
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.byID[id]
	if !ok {
		return grove.Errorf(grove.ErrNotFound, "api key %s not found", id)
	}
	if k.RevokedAt.IsZero() {
		k.RevokedAt = at
		t.byID[id] = k
	}
	return nil
}
