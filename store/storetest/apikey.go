package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

// RunKeys checks the store.KeyStore contract. open must return a new,
// empty store that implements store.KeyStore.
func RunKeys(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	ctx := context.Background()
	s := open(t)
	t.Cleanup(func() { s.Close() })
	ks, ok := s.(store.KeyStore)
	if !ok {
		t.Fatalf("%T does not implement store.KeyStore", s)
	}
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	a := &store.APIKey{ID: "k1", User: "alice", Hash: "h1", CreatedAt: t0}
	b := &store.APIKey{ID: "k2", User: "root", Admin: true, Hash: "h2", CreatedAt: t0.Add(time.Second)}
	for _, k := range []*store.APIKey{b, a} {
		if err := ks.CreateAPIKey(ctx, k); err != nil {
			t.Fatalf("CreateAPIKey %s: %v", k.ID, err)
		}
	}
	bad := []struct {
		name string
		k    store.APIKey
		kind error
	}{
		{"same id", store.APIKey{ID: "k1", User: "x", Hash: "other"}, grove.ErrConflict},
		{"same hash", store.APIKey{ID: "k3", User: "x", Hash: "h1"}, grove.ErrConflict},
		{"no user", store.APIKey{ID: "k4", Hash: "h4"}, grove.ErrInvalid},
		{"no hash", store.APIKey{ID: "k5", User: "x"}, grove.ErrInvalid},
		{"no id", store.APIKey{User: "x", Hash: "h6"}, grove.ErrInvalid},
	}
	for _, tc := range bad {
		if err := ks.CreateAPIKey(ctx, &tc.k); !errors.Is(err, tc.kind) {
			t.Errorf("CreateAPIKey(%s) = %v, want %v", tc.name, err, tc.kind)
		}
	}
	got, err := ks.GetAPIKeyByHash(ctx, "h2")
	if err != nil || got.ID != "k2" || got.User != "root" || !got.Admin || !got.CreatedAt.Equal(b.CreatedAt) || !got.RevokedAt.IsZero() {
		t.Fatalf("GetAPIKeyByHash(h2) = %+v, %v", got, err)
	}
	if _, err := ks.GetAPIKeyByHash(ctx, "nope"); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("GetAPIKeyByHash(unknown) = %v, want not found", err)
	}
	list, err := ks.ListAPIKeys(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "k1" || list[1].ID != "k2" {
		t.Fatalf("ListAPIKeys = %+v, %v; want k1, k2", list, err)
	}
	list[0].User = "mallory" // a copy
	revoked := t0.Add(time.Hour)
	if err := ks.RevokeAPIKey(ctx, "k1", revoked); err != nil {
		t.Fatal(err)
	}
	if err := ks.RevokeAPIKey(ctx, "k1", revoked.Add(time.Hour)); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	got, err = ks.GetAPIKeyByHash(ctx, "h1")
	if err != nil || got.User != "alice" || !got.RevokedAt.Equal(revoked) {
		t.Fatalf("after revoke: %+v, %v; want alice revoked at %v", got, err, revoked)
	}
	if err := ks.RevokeAPIKey(ctx, "nope", revoked); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("RevokeAPIKey(unknown) = %v, want not found", err)
	}
}
