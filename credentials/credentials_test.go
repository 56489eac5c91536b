package credentials

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/grove-dev/grove"
)

var repo = grove.RepoID{Host: "github.com", Owner: "octo", Name: "hello"}

type fakeMinter struct {
	key   *rsa.PublicKey
	calls atomic.Int32
	ttl   time.Duration
	err   error
}

func (f *fakeMinter) MintInstallationToken(_ context.Context, appJWT string, r grove.RepoID) (InstallationToken, error) {
	n := f.calls.Add(1)
	if f.err != nil {
		return InstallationToken{}, f.err
	}
	tok, err := jwt.Parse(appJWT, func(*jwt.Token) (any, error) { return f.key, nil }, jwt.WithValidMethods([]string{"RS256"}))
	if err != nil || !tok.Valid {
		return InstallationToken{}, fmt.Errorf("bad jwt: %v", err)
	}
	return InstallationToken{Token: fmt.Sprintf("ghs_%s_%d", r.Name, n), ExpiresAt: time.Now().Add(f.ttl)}, nil
}

func testKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

func TestChainOrder(t *testing.T) {
	ctx := context.Background()
	k, pemKey := testKey(t)
	m := &fakeMinter{key: &k.PublicKey, ttl: time.Hour}
	app, err := NewApp(42, "grove", pemKey, m)
	if err != nil {
		t.Fatal(err)
	}
	env, err := EnvFrom(func(k string) string { return map[string]string{"GITHUB_TOKEN": "env-tok"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	oauth := OAuth{Provider: oauthFunc(func(user string) string {
		if user == "alice" {
			return "alice-oauth"
		}
		return ""
	})}
	notInstalled := &fakeMinter{err: grove.Errorf(grove.ErrNotFound, "app not installed")}
	appOff, _ := NewApp(42, "grove", pemKey, notInstalled)

	tests := []struct {
		name     string
		chain    *Chain
		req      Request
		wantKind Kind
		wantTok  string
		wantErr  error
	}{
		{"call wins", &Chain{Sources: []Source{app, oauth, env}, Hosts: []string{"github.com"}}, Request{Repo: repo, Token: "call-tok"}, KindCall, "call-tok", nil},
		{"app", &Chain{Sources: []Source{app, oauth, env}, Hosts: []string{"github.com"}}, Request{Repo: repo, User: "alice"}, KindApp, "ghs_hello_1", nil},
		{"oauth after uninstalled app", &Chain{Sources: []Source{appOff, oauth, env}, Hosts: []string{"github.com"}}, Request{Repo: repo, User: "alice"}, KindOAuth, "alice-oauth", nil},
		{"env for a user without oauth", &Chain{Sources: []Source{appOff, oauth, env}, Hosts: []string{"github.com"}}, Request{Repo: repo, User: "bob"}, KindEnv, "env-tok", nil},
		{"app error when nobody else has one", &Chain{Sources: []Source{appOff, oauth}, Hosts: []string{"github.com"}}, Request{Repo: repo, User: "bob"}, "", "", grove.ErrNotFound},
		{"other host gets nothing", &Chain{Sources: []Source{app, env}, Hosts: []string{"github.com"}}, Request{Repo: grove.RepoID{Host: "evil.example", Owner: "o", Name: "r"}}, KindNone, "", nil},
		{"nil chain", nil, Request{Repo: repo}, KindNone, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.chain.Resolve(ctx, tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || c.Kind != tt.wantKind || c.Token != tt.wantTok {
				t.Fatalf("got %s %q %v, want %s %q", c.Kind, c.Token, err, tt.wantKind, tt.wantTok)
			}
		})
	}
}

type oauthFunc func(user string) string

func (f oauthFunc) OAuthToken(_ context.Context, user string, _ grove.RepoID) (string, error) {
	return f(user), nil
}

func TestAppCacheAndExpiry(t *testing.T) {
	k, pemKey := testKey(t)
	m := &fakeMinter{key: &k.PublicKey, ttl: time.Hour}
	app, _ := NewApp(7, "grove", pemKey, m)
	now := time.Now()
	app.Now = func() time.Time { return now }
	ctx := context.Background()
	c1, err := app.Credential(ctx, Request{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := app.Credential(ctx, Request{Repo: repo})
	if c1.Token != c2.Token || m.calls.Load() != 1 {
		t.Fatalf("second call minted again: %d mints", m.calls.Load())
	}
	// Another repository gets its own token: tokens are scoped per repo.
	other, _ := app.Credential(ctx, Request{Repo: grove.RepoID{Host: "github.com", Owner: "octo", Name: "other"}})
	if other.Token == c1.Token {
		t.Fatal("two repositories share a token")
	}
	// Shortly before expiry the token is replaced.
	now = now.Add(56 * time.Minute)
	c3, _ := app.Credential(ctx, Request{Repo: repo})
	if c3.Token == c1.Token {
		t.Fatal("nearly expired token reused")
	}
	// A rejected token is forgotten.
	if !c3.Failed() {
		t.Fatal("app credential should be retryable")
	}
	c4, _ := app.Credential(ctx, Request{Repo: repo})
	if c4.Token == c3.Token {
		t.Fatal("failed token reused")
	}
}

func TestJWTClaims(t *testing.T) {
	k, pemKey := testKey(t)
	app, _ := NewApp(12345, "grove", pemKey, &fakeMinter{})
	s, err := app.JWT()
	if err != nil {
		t.Fatal(err)
	}
	claims := &jwt.RegisteredClaims{}
	if _, err := jwt.ParseWithClaims(s, claims, func(*jwt.Token) (any, error) { return &k.PublicKey, nil }, jwt.WithValidMethods([]string{"RS256"})); err != nil {
		t.Fatal(err)
	}
	if claims.Issuer != "12345" || claims.ExpiresAt.Sub(claims.IssuedAt.Time) > 10*time.Minute {
		t.Fatalf("claims %+v", claims)
	}
	other, _ := testKey(t)
	if _, err := jwt.Parse(s, func(*jwt.Token) (any, error) { return &other.PublicKey, nil }); err == nil {
		t.Fatal("JWT verified with the wrong key")
	}
}

func TestBadInput(t *testing.T) {
	_, pemKey := testKey(t)
	tests := []struct {
		name string
		fn   func() error
	}{
		{"not pem", func() error { _, err := NewApp(1, "s", []byte("hello"), &fakeMinter{}); return err }},
		{"truncated key", func() error {
			_, err := NewApp(1, "s", []byte(strings.Replace(string(pemKey), "A", "!", 40)), &fakeMinter{})
			return err
		}},
		{"garbage in pem", func() error {
			_, err := NewApp(1, "s", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("nope")}), &fakeMinter{})
			return err
		}},
		{"app id", func() error { _, err := NewApp(0, "s", pemKey, &fakeMinter{}); return err }},
		{"empty list entry", func() error { _, err := EnvFrom(envMap{"GH_TOKEN_LIST": "a,,b"}.get); return err }},
		{"whitespace list entry", func() error { _, err := EnvFrom(envMap{"GH_TOKEN_LIST": "a, \t ,b"}.get); return err }},
		{"trailing comma", func() error { _, err := EnvFrom(envMap{"GH_TOKEN_LIST": "a,b,"}.get); return err }},
		{"space in GH_TOKEN", func() error { _, err := EnvFrom(envMap{"GH_TOKEN": "a b"}.get); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.fn()
			if !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatalf("error quotes the key: %v", err)
			}
		})
	}
}

type envMap map[string]string

func (m envMap) get(k string) string { return m[k] }

func TestEnvRotation(t *testing.T) {
	ctx := context.Background()
	e, err := EnvFrom(envMap{"GH_TOKEN_LIST": " t1 , t2,t3"}.get)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 4 {
		c, err := e.Credential(ctx, Request{})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Token)
		if c.Token == "t2" {
			c.Failed()
		}
	}
	if strings.Join(got, ",") != "t1,t2,t3,t1" {
		t.Fatalf("rotation = %v", got)
	}
	c, _ := e.Credential(ctx, Request{})
	if c.Token != "t3" {
		t.Fatalf("failed entry not skipped: got %s", c.Token)
	}
	// GH_TOKEN wins over GITHUB_TOKEN and the list.
	e2, _ := EnvFrom(envMap{"GH_TOKEN": "gh", "GITHUB_TOKEN": "github", "GH_TOKEN_LIST": "l"}.get)
	if c, _ := e2.Credential(ctx, Request{}); c.Token != "gh" {
		t.Fatalf("GH_TOKEN not first: %s", c.Token)
	}
	if e3, err := EnvFrom(envMap{}.get); e3 != nil || err != nil {
		t.Fatal("no variables should give no source")
	}
	// All entries failing is an auth error, not a silent anonymous call.
	e4, _ := EnvFrom(envMap{"GH_TOKEN_LIST": "x"}.get)
	c4, _ := e4.Credential(ctx, Request{})
	c4.Failed()
	if _, err := e4.Credential(ctx, Request{}); !errors.Is(err, grove.ErrAuthFailed) {
		t.Fatalf("all failed = %v", err)
	}
}

func TestCredentialNeverFormatsToken(t *testing.T) {
	c := Credential{Kind: KindApp, Token: "ghs_supersecret"}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "cred", c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s %q", c, c, c, c, c), logs.String(), fmt.Sprintf("%v", []Credential{c})} {
		if strings.Contains(s, "supersecret") {
			t.Fatalf("token leaked: %s", s)
		}
	}
	if !strings.Contains(fmt.Sprint(c), "app") {
		t.Fatal("kind not shown")
	}
}

func TestBotIdentity(t *testing.T) {
	n, e := BotIdentity("grove-agent", "")
	if n != "grove-agent[bot]" || e != "grove-agent[bot]@users.noreply.github.com" {
		t.Fatal(n, e)
	}
	if _, e := BotIdentity("g", "ghe.example.com"); e != "g[bot]@users.noreply.ghe.example.com" {
		t.Fatal(e)
	}
}

func FuzzEnvFrom(f *testing.F) {
	f.Add("a,b,c")
	f.Add(" ,a")
	f.Fuzz(func(t *testing.T, list string) {
		e, err := EnvFrom(envMap{"GH_TOKEN_LIST": list}.get)
		if err != nil || e == nil {
			return
		}
		for _, tok := range e.list {
			if tok == "" || strings.TrimSpace(tok) != tok {
				t.Fatalf("entry %q accepted", tok)
			}
		}
	})
}
