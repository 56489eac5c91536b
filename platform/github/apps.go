package github

import (
	"context"
	"net/http"

	gh "github.com/google/go-github/v93/github"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/credentials"
	"github.com/grove-dev/grove/platform"
)

// MintInstallationToken implements credentials.Minter: it looks up the
// App's installation on repo (GET /repos/{owner}/{repo}/installation) and
// mints a token limited to that one repository (POST
// /app/installations/{id}/access_tokens with "repositories").
func (c *Client) MintInstallationToken(ctx context.Context, appJWT string, repo grove.RepoID) (credentials.InstallationToken, error) {
	actx := withToken(ctx, appJWT)
	var inst *gh.Installation
	err := c.do(ctx, "installation lookup", func() (*gh.Response, error) {
		var resp *gh.Response
		var err error
		inst, resp, err = c.gh.Apps.GetRepositoryInstallation(actx, repo.Owner, repo.Name)
		return resp, err
	})
	switch statusOf(err) {
	case 0:
	case http.StatusNotFound:
		return credentials.InstallationToken{}, platform.Fail(platform.ErrAppNotInstalled, grove.ErrNotFound, "the GitHub App is not installed on %s", repo.Path())
	case http.StatusUnauthorized:
		return credentials.InstallationToken{}, grove.Errorf(grove.ErrAuthFailed, "GitHub rejected the App's JWT (wrong App id or private key, or clock skew)")
	}
	if err != nil {
		return credentials.InstallationToken{}, mapErr("installation lookup", repo, err)
	}
	var tok *gh.InstallationToken
	err = c.do(ctx, "installation token", func() (*gh.Response, error) {
		var resp *gh.Response
		var err error
		tok, resp, err = c.gh.Apps.CreateInstallationToken(actx, inst.GetID(), &gh.InstallationTokenOptions{Repositories: []string{repo.Name}})
		return resp, err
	})
	if statusOf(err) == http.StatusUnprocessableEntity {
		return credentials.InstallationToken{}, platform.Fail(platform.ErrAppNotInstalled, grove.ErrNotFound, "the GitHub App's installation does not include %s", repo.Path())
	}
	if err != nil {
		return credentials.InstallationToken{}, mapErr("installation token", repo, err)
	}
	return credentials.InstallationToken{Token: tok.GetToken(), ExpiresAt: tok.GetExpiresAt().Time}, nil
}
