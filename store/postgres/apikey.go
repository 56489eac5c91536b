package postgres

import (
	"context"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/store/internal/sqlrow"
)

var _ store.KeyStore = (*Store)(nil)

const apiKeyColumns = `id, user_name, admin, secret_hash, created_at, last_used_at, revoked_at`

func scanAPIKey(row sqlrow.Scanner) (*store.APIKey, error) {
	var k store.APIKey
	if err := row.Scan(&k.ID, &k.User, &k.Admin, &k.Hash,
		sqlrow.Time(&k.CreatedAt), sqlrow.Time(&k.LastUsedAt), sqlrow.Time(&k.RevokedAt)); err != nil {
		return nil, err
	}
	return &k, nil
}

// CreateAPIKey stores k.
func (s *Store) CreateAPIKey(ctx context.Context, k *store.APIKey) error {
	if k.ID == "" || k.User == "" || k.Hash == "" {
		return grove.Errorf(grove.ErrInvalid, "api key: id, user and hash are required")
	}
	_, err := s.exec(ctx, `INSERT INTO api_keys (`+apiKeyColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		k.ID, k.User, k.Admin, k.Hash, sqlrow.Nanos(k.CreatedAt), sqlrow.Nanos(k.LastUsedAt), sqlrow.Nanos(k.RevokedAt))
	if err != nil {
		return dbError(ctx, err, "create api key "+k.ID, nil)
	}
	return nil
}

// GetAPIKeyByHash returns the key whose secret hashes to hash.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash string) (*store.APIKey, error) {
	k, err := scanAPIKey(s.q.QueryRow(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE secret_hash = $1`, hash))
	if noRows(err) {
		// The hash is not echoed: it identifies a secret.
		return nil, grove.Errorf(grove.ErrNotFound, "api key not found")
	}
	if err != nil {
		return nil, dbError(ctx, err, "get api key", nil)
	}
	return k, nil
}

// ListAPIKeys returns every key, revoked ones included.
func (s *Store) ListAPIKeys(ctx context.Context) ([]*store.APIKey, error) {
	rows, err := s.q.Query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys ORDER BY created_at NULLS FIRST, id`)
	if err != nil {
		return nil, dbError(ctx, err, "list api keys", nil)
	}
	return collect(ctx, rows, scanAPIKey, "list api keys")
}

// RevokeAPIKey marks key id revoked at at, keeping an earlier revocation.
func (s *Store) RevokeAPIKey(ctx context.Context, id string, at time.Time) error {
	tag, err := s.exec(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, sqlrow.Nanos(at), id)
	return changedOne(ctx, tag, err, "revoke api key "+id, nil)
}
