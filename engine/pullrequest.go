package engine

import (
	"context"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/platform"
)

var _ grove.PullRequester = (*Engine)(nil)

// prTarget checks, without any network call, that ws may act on a pull
// request: writable, on a branch, on a repository the platform serves.
func (e *Engine) prTarget(ctx context.Context, id string) (*grove.Workspace, func(), error) {
	ws, unlock, err := e.locked(ctx, id, false)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*grove.Workspace, func(), error) { unlock(); return nil, nil, err }
	if err := ws.RequireWritable(); err != nil {
		return fail(err)
	}
	if e.cfg.Platform == nil {
		return fail(grove.Errorf(grove.ErrPlatformNotConfigured, "no git platform is configured on this server"))
	}
	if !e.cfg.Platform.Serves(ws.Repo) {
		return fail(grove.Errorf(grove.ErrPlatformNotConfigured, "repository %s is not on the configured %s (%s); no platform serves it", ws.Repo.Path(), e.cfg.Platform.Name(), ws.Repo.Host))
	}
	if ws.Branch == "" {
		return fail(grove.Errorf(grove.ErrInvalid, "workspace %s is detached; pull requests need a branch", ws.ID))
	}
	return ws, unlock, nil
}

// requireCredential refuses, before any request, to call the platform
// with no credential: an anonymous call can only fail, and its 401 would
// read as a rejected credential.
func requireCredential(ws *grove.Workspace, token string) error {
	if token == "" {
		return grove.Errorf(grove.ErrPlatformNotConfigured, "no credential for %s is configured on this server, and the call sent no git token", ws.Repo.Host)
	}
	return nil
}

// CreatePullRequest implements grove.PullRequester.
func (e *Engine) CreatePullRequest(ctx context.Context, id string, req grove.CreatePullRequestRequest) (*grove.PullRequest, error) {
	ws, unlock, err := e.prTarget(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	spec := platform.PullRequestSpec{
		Head: ws.Branch, Base: req.Base, Title: strings.TrimSpace(req.Title), Body: req.Body,
		Draft: req.Draft, Reviewers: req.Reviewers, Labels: req.Labels,
	}
	// Everything checkable locally is checked before the first request.
	check := spec
	if check.Base == "" {
		check.Base = "\x00default" // stands in until the platform names it
	}
	if err := check.Validate(); err != nil {
		return nil, err
	}
	if spec.Base != "" {
		if err := gitrepo.ValidateBranch(spec.Base); err != nil {
			return nil, err
		}
	}
	var pr *grove.PullRequest
	kind, err := e.withCredential(ctx, ws, req.Token, func(token string) error {
		if err := requireCredential(ws, token); err != nil {
			return err
		}
		if spec.Base == "" {
			b, err := e.cfg.Platform.DefaultBranch(ctx, ws.Repo, token)
			if err != nil {
				return err
			}
			spec.Base = b
		}
		var err error
		pr, err = e.cfg.Platform.CreatePullRequest(ctx, ws.Repo, token, spec)
		return err
	})
	if err != nil {
		return nil, err
	}
	pr.Credential = string(kind)
	e.log.Info("pull request", "workspace", ws.ID, "number", pr.Number, "created", pr.Created, "credential", kind)
	return pr, nil
}

// CommentPullRequest implements grove.PullRequester.
func (e *Engine) CommentPullRequest(ctx context.Context, id string, req grove.CommentRequest) (*grove.Comment, error) {
	ws, unlock, err := e.prTarget(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := platform.ValidateComment(req); err != nil {
		return nil, err
	}
	var cm *grove.Comment
	_, err = e.withCredential(ctx, ws, req.Token, func(token string) error {
		if err := requireCredential(ws, token); err != nil {
			return err
		}
		var err error
		cm, err = e.cfg.Platform.CommentPullRequest(ctx, ws.Repo, token, req)
		return err
	})
	return cm, err
}
