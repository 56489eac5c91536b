package credentials

import (
	"context"

	"github.com/grove-dev/grove"
)

// OAuthProvider is implemented by the platform embedding Grove: it knows
// which user signed in with which GitHub OAuth token. It returns "" and no
// error when the user has none.
type OAuthProvider interface {
	OAuthToken(ctx context.Context, user string, repo grove.RepoID) (string, error)
}

// OAuth adapts an OAuthProvider to a Source.
type OAuth struct{ Provider OAuthProvider }

var _ Source = OAuth{}

func (o OAuth) Kind() Kind { return KindOAuth }

// Credential implements Source.
func (o OAuth) Credential(ctx context.Context, req Request) (Credential, error) {
	if o.Provider == nil || req.User == "" {
		return Credential{}, ErrNoCredential
	}
	tok, err := o.Provider.OAuthToken(ctx, req.User, req.Repo)
	if err != nil {
		return Credential{}, err
	}
	if tok == "" {
		return Credential{}, ErrNoCredential
	}
	return Credential{Kind: KindOAuth, Token: tok}, nil
}
