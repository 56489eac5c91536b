// Package auth turns HTTP API keys into principals and confines a
// grove.Service to what one principal may see.
//
// A key's secret is "grove_" followed by 43 characters of base64url (256
// random bits). Only its SHA-256 is stored, so a leaked database does not
// leak working keys; the secret is shown once, at creation.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

// Prefix starts every key secret, so leaked keys are easy to scan for.
const Prefix = "grove_"

// Principal is an authenticated caller.
type Principal struct {
	User  string
	Admin bool
	KeyID string
}

// Hash is the stored form of a secret: hex SHA-256.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Keys manages API keys in a store.KeyStore.
type Keys struct {
	Store store.KeyStore
	Now   func() time.Time
}

func (k *Keys) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now().UTC()
}

// Create makes a key for user and returns its record and its secret. The
// secret exists nowhere else afterwards.
func (k *Keys) Create(ctx context.Context, user string, admin bool) (*store.APIKey, string, error) {
	if err := ValidUser(user); err != nil {
		return nil, "", err
	}
	var raw [32]byte
	var id [6]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, "", err
	}
	if _, err := rand.Read(id[:]); err != nil {
		return nil, "", err
	}
	secret := Prefix + base64.RawURLEncoding.EncodeToString(raw[:])
	rec := &store.APIKey{ID: "key_" + hex.EncodeToString(id[:]), User: user, Admin: admin, Hash: Hash(secret), CreatedAt: k.now()}
	if err := k.Store.CreateAPIKey(ctx, rec); err != nil {
		return nil, "", err
	}
	return rec, secret, nil
}

// List returns every key (hashes included, secrets never).
func (k *Keys) List(ctx context.Context) ([]*store.APIKey, error) { return k.Store.ListAPIKeys(ctx) }

// Revoke makes key id stop working at once.
func (k *Keys) Revoke(ctx context.Context, id string) error {
	return k.Store.RevokeAPIKey(ctx, id, k.now())
}

// Authenticate returns the principal of secret; ErrUnauthorized for
// unknown, malformed or revoked keys — the same error for each, so a caller
// learns nothing about which keys exist. The message never holds the secret.
func (k *Keys) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !strings.HasPrefix(secret, Prefix) || len(secret) > 256 {
		return Principal{}, grove.Errorf(grove.ErrUnauthorized, "invalid API key")
	}
	rec, err := k.Store.GetAPIKeyByHash(ctx, Hash(secret))
	if errors.Is(err, grove.ErrNotFound) || (err == nil && !rec.RevokedAt.IsZero()) {
		return Principal{}, grove.Errorf(grove.ErrUnauthorized, "invalid API key")
	}
	if err != nil {
		return Principal{}, err
	}
	return Principal{User: rec.User, Admin: rec.Admin, KeyID: rec.ID}, nil
}

// ValidUser accepts user names that are safe in workspace keys and
// directory names: 1–64 of [A-Za-z0-9._-], not starting with '.' or '-'.
func ValidUser(u string) error {
	if u == "" || len(u) > 64 || u[0] == '.' || u[0] == '-' {
		return grove.Errorf(grove.ErrInvalid, "user %q: want 1-64 of [A-Za-z0-9._-], not starting with '.' or '-'", clip(u))
	}
	for _, r := range u {
		ok := r == '.' || r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return grove.Errorf(grove.ErrInvalid, "user %q: want 1-64 of [A-Za-z0-9._-]", clip(u))
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
