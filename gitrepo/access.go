package gitrepo

import (
	"context"
)

// CheckAccess reports whether token ("" for none) can read the repository
// at url now: one `git ls-remote` of the branch heads (the pattern HEAD
// keeps the output empty), run with the hardened environment and the
// token only as an HTTP header in git's environment, like clone and fetch.
// It returns nil, or an *Error whose Kind says why (ErrAuthFailed,
// ErrNotFound, ErrUnavailable, ...). Callers that must not reveal whether
// a repository exists fold the first two into one answer.
//
// It runs outside any repository (GIT_DIR names none), so no repository
// configuration — the server's working directory may be inside one — can
// rewrite the URL or add a transport. config is forced on it as on a
// fetch (SourcePolicy.FetchConfig: no redirects, the address pinned).
func (g *Git) CheckAccess(ctx context.Context, url, token string, config [][2]string) error {
	_, err := g.run(ctx, call{
		args:   []string{"ls-remote", "--heads", "--", url, "HEAD"},
		dir:    "/",
		env:    []string{"GIT_DIR=/nonexistent/grove-no-repository"},
		token:  token,
		config: config,
	})
	return err
}
