package credentials

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/grove-dev/grove"
)

// InstallationToken is a minted GitHub App installation token.
type InstallationToken struct {
	Token     string
	ExpiresAt time.Time
}

// Minter exchanges an App JWT for an installation token limited to one
// repository: it finds the App's installation on repo and mints a token
// for that repository alone. platform/github implements it. It returns an
// error wrapping grove.ErrNotFound when the App is not installed on repo.
type Minter interface {
	MintInstallationToken(ctx context.Context, appJWT string, repo grove.RepoID) (InstallationToken, error)
}

// App is the GitHub App source. Tokens are cached per repository in memory
// until Margin before they expire (GitHub's last an hour).
type App struct {
	ID     int64
	Slug   string // the App's slug, for its "<slug>[bot]" commit identity
	key    *rsa.PrivateKey
	minter Minter
	// Margin is how long before expiry a cached token is replaced
	// (default 5 minutes, so a push never starts on a nearly dead token).
	Margin time.Duration
	Now    func() time.Time

	mu    sync.Mutex
	cache map[string]InstallationToken
}

var _ Source = (*App)(nil)

// NewApp parses the App's PEM private key (PKCS#1 as GitHub issues it, or
// PKCS#8). A malformed key is grove.ErrInvalid; the message never quotes
// the key.
func NewApp(id int64, slug string, privateKeyPEM []byte, m Minter) (*App, error) {
	if id <= 0 {
		return nil, grove.Errorf(grove.ErrInvalid, "GitHub App id must be a positive number")
	}
	if m == nil {
		return nil, grove.Errorf(grove.ErrInvalid, "GitHub App needs a platform to mint tokens")
	}
	key, err := ParsePrivateKey(privateKeyPEM)
	if err != nil {
		return nil, err
	}
	return &App{ID: id, Slug: slug, key: key, minter: m, cache: map[string]InstallationToken{}}, nil
}

// ParsePrivateKey parses an RSA private key in PEM form.
func ParsePrivateKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, grove.Errorf(grove.ErrInvalid, "GitHub App private key is not PEM")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k8, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "GitHub App private key is malformed (want an RSA key, PKCS#1 or PKCS#8)")
	}
	rk, ok := k8.(*rsa.PrivateKey)
	if !ok {
		return nil, grove.Errorf(grove.ErrInvalid, "GitHub App private key is not an RSA key")
	}
	return rk, nil
}

func (a *App) Kind() Kind { return KindApp }

// JWT returns the App's RS256 JSON Web Token: issued a minute in the past
// (GitHub's advice against clock drift), valid for nine minutes.
func (a *App) JWT() (string, error) {
	now := a.now()
	claims := jwt.RegisteredClaims{
		Issuer:    strconv.FormatInt(a.ID, 10),
		IssuedAt:  jwt.NewNumericDate(now.Add(-time.Minute)),
		ExpiresAt: jwt.NewNumericDate(now.Add(9 * time.Minute)),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(a.key)
	if err != nil {
		return "", grove.Errorf(grove.ErrInvalid, "sign GitHub App JWT: %v", err)
	}
	return s, nil
}

// Credential implements Source: a cached installation token for req.Repo,
// or a new one.
func (a *App) Credential(ctx context.Context, req Request) (Credential, error) {
	key := strings.ToLower(req.Repo.Key())
	a.mu.Lock()
	tok, ok := a.cache[key]
	a.mu.Unlock()
	if ok && a.now().Add(a.margin()).Before(tok.ExpiresAt) {
		return a.credential(key, tok), nil
	}
	signed, err := a.JWT()
	if err != nil {
		return Credential{}, err
	}
	tok, err = a.minter.MintInstallationToken(ctx, signed, req.Repo)
	if err != nil {
		return Credential{}, err
	}
	if tok.Token == "" {
		return Credential{}, grove.Errorf(grove.ErrUnavailable, "GitHub returned an empty installation token for %s", req.Repo.Path())
	}
	a.mu.Lock()
	a.cache[key] = tok
	a.mu.Unlock()
	return a.credential(key, tok), nil
}

func (a *App) credential(key string, tok InstallationToken) Credential {
	return Credential{Kind: KindApp, Token: tok.Token, fail: func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.cache[key].Token == tok.Token {
			delete(a.cache, key)
		}
	}}
}

func (a *App) margin() time.Duration {
	if a.Margin > 0 {
		return a.Margin
	}
	return 5 * time.Minute
}

func (a *App) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// BotIdentity is the commit identity GitHub shows as the App:
// "<slug>[bot]" with its users.noreply address. The address carries the
// bot user's id when GitHub gives one; without it GitHub still attributes
// by name. host is the GitHub host ("github.com" or the Enterprise host).
func BotIdentity(slug, host string) (name, email string) {
	if host == "" || host == "github.com" {
		host = "users.noreply.github.com"
	} else {
		host = "users.noreply." + host
	}
	return slug + "[bot]", slug + "[bot]@" + host
}
