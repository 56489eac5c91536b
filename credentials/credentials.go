// Package credentials resolves the token Grove uses for one git or platform
// call on one repository. A Chain asks its Sources in order and reports the
// Kind of credential it used, never the credential itself.
//
// The default order (DESIGN §6): a token given with the call; a GitHub App
// installation token scoped to the one repository; the user's OAuth token
// from the embedding platform; environment tokens GH_TOKEN, GITHUB_TOKEN,
// then GH_TOKEN_LIST, rotated with failing entries skipped.
//
// Tokens live in memory only: nothing here writes them anywhere, and a
// Credential formats (fmt, %v, %+v, slog) as its kind alone.
package credentials

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/grove-dev/grove"
)

// Kind names where a credential came from.
type Kind string

const (
	KindCall  Kind = "call"  // given with the request
	KindApp   Kind = "app"   // GitHub App installation token
	KindOAuth Kind = "oauth" // the user's OAuth token
	KindEnv   Kind = "env"   // GH_TOKEN, GITHUB_TOKEN or GH_TOKEN_LIST
	KindNone  Kind = "none"  // anonymous
)

// Request says who needs a credential for which repository.
type Request struct {
	Repo  grove.RepoID
	User  string
	Token string // a per-call token; wins over every Source
}

// Credential is a token and where it came from. Its String, GoString and
// LogValue show the kind only, so it cannot leak through a format verb or
// a log line.
type Credential struct {
	Kind  Kind
	Token string
	// fail is called by Failed: the source forgets a cached token or skips
	// a rotated entry.
	fail func()
}

func (c Credential) String() string             { return "credential(" + string(c.Kind) + ")" }
func (c Credential) GoString() string           { return c.String() }
func (c Credential) LogValue() slog.Value       { return slog.StringValue(string(c.Kind)) }
func (c Credential) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// Failed tells the credential's source that the remote rejected it (an
// authentication failure): an App token is dropped from the cache so the
// next Resolve mints a new one, a GH_TOKEN_LIST entry is skipped for a
// while. It reports whether a retry may get a different credential.
func (c Credential) Failed() bool {
	if c.fail == nil {
		return false
	}
	c.fail()
	return true
}

// ErrNoCredential is what a Source returns when it has nothing for the
// request, so the Chain moves on. It is not a grove kind: it never leaves
// the Chain.
var ErrNoCredential = errors.New("no credential from this source")

// Source yields a credential for a request, ErrNoCredential when it has
// none, or an error (wrapping a grove kind) when it should have one and
// cannot produce it — such an error is returned only if no later source
// has a credential either.
type Source interface {
	Kind() Kind
	Credential(ctx context.Context, req Request) (Credential, error)
}

// Chain asks Sources in order. Hosts limits the Sources to repositories on
// those hosts (the GitHub or GitHub Enterprise host): a GitHub token must
// never be sent to another server. A per-call token is used for any host —
// the caller chose to send it there. The zero Chain yields KindNone.
type Chain struct {
	Sources []Source
	Hosts   []string
}

// Resolve returns the first credential the chain has for req, KindNone
// with no error when nobody has one, or the first source's error when a
// source failed and no later one had a credential.
func (c *Chain) Resolve(ctx context.Context, req Request) (Credential, error) {
	if req.Token != "" {
		return Credential{Kind: KindCall, Token: req.Token}, nil
	}
	if c == nil || !c.serves(req.Repo.Host) {
		return Credential{Kind: KindNone}, nil
	}
	var first error
	for _, s := range c.Sources {
		cred, err := s.Credential(ctx, req)
		switch {
		case err == nil && cred.Token != "":
			cred.Kind = s.Kind()
			return cred, nil
		case err == nil, errors.Is(err, ErrNoCredential):
		default:
			if ctx.Err() != nil {
				return Credential{}, ctx.Err()
			}
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return Credential{}, first
	}
	return Credential{Kind: KindNone}, nil
}

func (c *Chain) serves(host string) bool {
	for _, h := range c.Hosts {
		if h == host {
			return true
		}
	}
	return false
}
