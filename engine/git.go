package engine

import (
	"context"
	"errors"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/credentials"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider/execpath"
)

// Status implements grove.Service.
func (e *Engine) Status(ctx context.Context, id string) (*grove.Status, error) {
	ws, err := e.placed(ctx, id)
	if err != nil {
		return nil, err
	}
	return execpath.Status(ctx, e.git(ws), ws.ID)
}

// Diff implements grove.Service.
func (e *Engine) Diff(ctx context.Context, id string, req grove.DiffRequest) (*grove.Diff, error) {
	ws, err := e.placed(ctx, id)
	if err != nil {
		return nil, err
	}
	if req.BaseRef != "" {
		if err := gitrepo.ValidateRevision(req.BaseRef); err != nil {
			return nil, err
		}
	}
	if err := checkGitPaths(req.Paths...); err != nil {
		return nil, err
	}
	return execpath.Diff(ctx, e.git(ws), ws.ID, req)
}

// Log implements grove.Service.
func (e *Engine) Log(ctx context.Context, id string, limit int, path string) ([]grove.Commit, error) {
	ws, err := e.placed(ctx, id)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 20
	}
	if limit > 1000 {
		limit = 1000
	}
	if err := checkGitPaths(path); err != nil {
		return nil, err
	}
	return execpath.Log(ctx, e.git(ws), ws.ID, limit, path)
}

// Commit implements grove.Service: stage and commit inside the workspace's
// runtime (the repository's hooks do not run), then save the branch into
// the user's work repository so the commit survives the workspace.
func (e *Engine) Commit(ctx context.Context, id string, req grove.CommitRequest) (*grove.CommitResult, error) {
	if req.Message == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "empty commit message")
	}
	if req.AuthorName == "" && req.AuthorEmail == "" && e.cfg.BotIdentity.Name != "" {
		req.AuthorName, req.AuthorEmail = e.cfg.BotIdentity.Name, e.cfg.BotIdentity.Email
	}
	if err := checkGitPaths(req.Paths...); err != nil {
		return nil, err
	}
	var res *grove.CommitResult
	err := e.mutate(ctx, id, func(ws *grove.Workspace) error {
		var err error
		if res, err = execpath.Commit(ctx, e.git(ws), ws.ID, req, e.cfg.Committer); err != nil {
			return err
		}
		ws.HeadSHA = res.SHA
		return e.saveBranch(ctx, ws)
	})
	if err != nil {
		return nil, err
	}
	// mutate marked the workspace dirty; after a commit of everything it may
	// be clean again.
	if ws, err := e.workspace(ctx, id); err == nil {
		e.refresh(ctx, ws)
		_ = e.store.UpdateWorkspace(ctx, ws)
	}
	return res, nil
}

// Push implements grove.Service: the workspace's branch is first saved into
// the user's work repository (a bundle out of the runtime), then pushed
// from there, so no token ever enters the runtime and host git never opens
// the workspace. Only the workspace's own branch is pushed,
// never its base branch, the repository's default branch or a configured
// protected pattern (refused before any network call). The token comes
// from the credential chain; a rejected App or GH_TOKEN_LIST token is
// replaced once and the push retried, so a token expiring mid-session
// costs one round trip rather than the push.
func (e *Engine) Push(ctx context.Context, id string, req grove.PushRequest) (*grove.PushResult, error) {
	ws, unlock, err := e.locked(ctx, id, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := ws.RequireWritable(); err != nil {
		return nil, err
	}
	if ws.Branch == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "workspace %s is detached; nothing to push", ws.ID)
	}
	c, err := e.cacheOf(ctx, ws)
	if err != nil {
		return nil, err
	}
	var gitConfig [][2]string
	if grove.IsRemoteCaller(ctx) {
		// The push goes where the cache came from; a network caller may
		// only send there what it could have named itself (a workspace the
		// CLI made on a local path or an unlisted host is the CLI's), and
		// the connection is resolved, pinned and kept from redirecting
		// like a fetch.
		remote, err := e.parseRepo(ctx, c.URL)
		if err != nil {
			return nil, err
		}
		if gitConfig, err = e.sources.FetchConfig(ctx, remote); err != nil {
			return nil, err
		}
	}
	if err := gitrepo.CheckProtected(ws.Branch, e.protected(ctx, ws, c)); err != nil {
		return nil, err
	}
	tip, err := e.saveWork(ctx, ws, "refs/heads/"+ws.Branch, gitrepo.SavedBranchPrefix+ws.Branch)
	if err != nil {
		return nil, err
	}
	if tip == "" {
		return nil, grove.Errorf(grove.ErrNotFound, "branch %s has no commit to push", ws.Branch)
	}
	lease, err := e.prov.ResolveCommit(ctx, c, "refs/heads/"+ws.Branch)
	if errors.Is(err, grove.ErrNotFound) {
		lease = ""
	} else if err != nil {
		return nil, err
	}
	var res *grove.PushResult
	kind, err := e.withCredential(ctx, ws, req.Token, func(token string) error {
		r := req
		r.Token = token
		var err error
		res, err = e.prov.PushWork(ctx, c, ws, r, lease, gitConfig)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := execpath.SetUpstream(ctx, e.git(ws), ws.ID, ws.Branch, res.RemoteSHA); err != nil {
		e.log.Warn("record upstream in the workspace", "workspace", ws.ID, "err", err)
	}
	res.Credential = string(kind)
	e.log.Info("push", "workspace", ws.ID, "branch", ws.Branch, "credential", kind)
	return res, nil
}

// protected lists what ws must never push to: configured patterns, its
// base branch and the cache's default branch (the remote's HEAD, recorded
// at clone time).
func (e *Engine) protected(ctx context.Context, ws *grove.Workspace, c *grove.RepoCache) []string {
	out := append([]string(nil), e.cfg.ProtectedBranches...)
	if b := strings.TrimPrefix(ws.BaseRef, "refs/heads/"); b != "" && b != "HEAD" {
		out = append(out, b)
	}
	if b, err := e.prov.DefaultBranch(ctx, c); err == nil && b != "" {
		out = append(out, b)
	}
	return out
}

// withCredential resolves the credential for ws's repository and runs fn
// with its token; when fn fails authentication with a credential its
// source can replace (an App token, a GH_TOKEN_LIST entry), it is marked
// failed and fn runs once more with the next one.
func (e *Engine) withCredential(ctx context.Context, ws *grove.Workspace, callToken string, fn func(token string) error) (credentials.Kind, error) {
	creq := credentials.Request{Repo: ws.Repo, User: ws.User, Token: callToken}
	for attempt := 0; ; attempt++ {
		cred, err := e.cfg.Credentials.Resolve(ctx, creq)
		if err != nil {
			return "", err
		}
		err = fn(cred.Token)
		if err == nil {
			return cred.Kind, nil
		}
		if attempt < 2 && errors.Is(err, grove.ErrAuthFailed) && cred.Failed() {
			e.log.Warn("credential rejected; trying the next", "workspace", ws.ID, "credential", cred.Kind)
			continue
		}
		return cred.Kind, err
	}
}
