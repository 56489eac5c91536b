// Package store defines the durable record of repo caches, workspaces and
// runtimes. Adapters live in child packages (memory, sqlite, later
// postgres); every adapter passes the conformance suite in storetest.
//
// # Contract
//
//   - Records are returned as copies: mutating a returned value never
//     changes the store until it is passed to an Update method.
//   - Create methods fail with grove.ErrConflict when a unique key is taken:
//     a repo cache's Repo.Key(), a workspace's Key, and the triple
//     (RepoCacheID, User, Branch) for workspaces with a non-empty Branch —
//     one user never holds the same branch of one repo twice, while two
//     users may each hold it (their unpushed work is separate; they meet
//     only at the remote).
//   - Get, Update and Delete of an absent record fail with grove.ErrNotFound.
//   - DeleteRepoCache fails with grove.ErrConflict while workspaces refer to
//     the cache.
//   - Tx runs fn atomically: if fn returns an error nothing it did is kept
//     and the error is returned unchanged. Inside fn use only the Store
//     passed to it. Transactions are serialisable with respect to each
//     other, so read-modify-write inside Tx never loses an update.
//   - Open runs the embedded migrations; running them again is a no-op.
//
// All methods are safe for concurrent use and honour ctx.
package store

import (
	"context"
	"time"

	"github.com/grove-dev/grove"
)

// Store is the persistence port.
type Store interface {
	CreateRepoCache(ctx context.Context, c *grove.RepoCache) error
	GetRepoCache(ctx context.Context, id string) (*grove.RepoCache, error)
	GetRepoCacheByKey(ctx context.Context, key string) (*grove.RepoCache, error)
	ListRepoCaches(ctx context.Context) ([]*grove.RepoCache, error)
	UpdateRepoCache(ctx context.Context, c *grove.RepoCache) error
	DeleteRepoCache(ctx context.Context, id string) error

	CreateWorkspace(ctx context.Context, w *grove.Workspace) error
	GetWorkspace(ctx context.Context, id string) (*grove.Workspace, error)
	GetWorkspaceByKey(ctx context.Context, key string) (*grove.Workspace, error)
	ListWorkspaces(ctx context.Context, f WorkspaceFilter) ([]*grove.Workspace, error)
	UpdateWorkspace(ctx context.Context, w *grove.Workspace) error
	DeleteWorkspace(ctx context.Context, id string) error

	// PutRuntime inserts or replaces the runtime record of r.WorkspaceID
	// (one runtime per workspace).
	PutRuntime(ctx context.Context, r *grove.RuntimeRecord) error
	GetRuntime(ctx context.Context, workspaceID string) (*grove.RuntimeRecord, error)
	ListRuntimes(ctx context.Context) ([]*grove.RuntimeRecord, error)
	DeleteRuntime(ctx context.Context, workspaceID string) error

	Tx(ctx context.Context, fn func(ctx context.Context, tx Store) error) error
	Close() error
}

// WorkspaceFilter selects workspaces; empty fields match everything.
// Results are ordered by CreatedAt, then ID.
type WorkspaceFilter struct {
	User        string
	Project     string
	RepoCacheID string
}

// APIKey is an HTTP API key. Only the SHA-256 of the secret is stored; the
// secret itself is shown once, when the key is created.
type APIKey struct {
	ID         string    // public identifier, safe to print
	User       string    // the user every request with this key acts as
	Admin      bool      // operators: see and manage every user's records
	Hash       string    // hex SHA-256 of the secret; unique
	CreatedAt  time.Time //
	LastUsedAt time.Time // zero until first use (adapters may update lazily)
	RevokedAt  time.Time // zero while the key is valid
}

// KeyStore is an optional interface of a Store: the API keys of the HTTP
// server. It is discovered by type assertion so that adapters without it
// still serve the in-process CLI.
//
//   - CreateAPIKey fails with grove.ErrConflict when the ID or Hash is
//     taken, and grove.ErrInvalid when ID, User or Hash is empty.
//   - GetAPIKeyByHash returns revoked keys too (callers check RevokedAt)
//     and grove.ErrNotFound for unknown hashes.
//   - ListAPIKeys orders by CreatedAt, then ID.
//   - RevokeAPIKey sets RevokedAt; grove.ErrNotFound for unknown ids;
//     revoking twice keeps the first time.
type KeyStore interface {
	CreateAPIKey(ctx context.Context, k *APIKey) error
	GetAPIKeyByHash(ctx context.Context, hash string) (*APIKey, error)
	ListAPIKeys(ctx context.Context) ([]*APIKey, error)
	RevokeAPIKey(ctx context.Context, id string, at time.Time) error
}
