package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/store/memory"
)

func TestKeysLifecycle(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	k := &auth.Keys{Store: st}
	rec, secret, err := k.Create(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, auth.Prefix) || len(secret) < 40 {
		t.Fatalf("secret %q lacks prefix or entropy", secret)
	}
	if rec.Hash == secret || strings.Contains(rec.Hash, secret[len(auth.Prefix):]) || rec.Hash != auth.Hash(secret) {
		t.Fatalf("stored hash %q is not the SHA-256 of the secret", rec.Hash)
	}
	p, err := k.Authenticate(ctx, secret)
	if err != nil || p.User != "alice" || p.Admin || p.KeyID != rec.ID {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}
	_, admin, err := k.Create(ctx, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := k.Authenticate(ctx, admin); err != nil || !p.Admin {
		t.Fatalf("admin key: %+v, %v", p, err)
	}
	if err := k.Revoke(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"revoked": secret, "unknown": auth.Prefix + "nope", "no prefix": "abc", "empty": "", "huge": auth.Prefix + strings.Repeat("a", 1000)} {
		_, err := k.Authenticate(ctx, s)
		if !errors.Is(err, grove.ErrUnauthorized) {
			t.Errorf("%s: Authenticate = %v, want unauthorized", name, err)
		}
		if err != nil && s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q contains the secret", name, err)
		}
	}
	for _, u := range []string{"", "-x", ".x", "a b", "a/b", "a|b", strings.Repeat("u", 65)} {
		if _, _, err := k.Create(ctx, u, false); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("Create(%q) = %v, want invalid", u, err)
		}
	}
	list, err := k.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %d keys, %v", len(list), err)
	}
}

func FuzzValidUser(f *testing.F) {
	for _, s := range []string{"alice", "a.b-c_d", "", "-x", "a|b", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if auth.ValidUser(u) != nil {
			return
		}
		if strings.ContainsAny(u, "|/ \x00\n") || strings.HasPrefix(u, "-") || u == "" || len(u) > 64 {
			t.Fatalf("ValidUser accepted %q", u)
		}
	})
}
