package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/credentials"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider"
)

// maxNameLen bounds user, project, conversation and task ids: they become
// part of keys, branch names and directory names.
const maxNameLen = 128

// plan is a validated acquire request.
type plan struct {
	remote gitrepo.Remote
	key    grove.WorkspaceKey
	branch string
	base   string // ref to start from ("" = the cache's HEAD)
}

func validName(what, s string, required bool) error {
	if s == "" {
		if required {
			return grove.Errorf(grove.ErrInvalid, "%s is required", what)
		}
		return nil
	}
	if len(s) > maxNameLen {
		return grove.Errorf(grove.ErrInvalid, "%s is longer than %d bytes", what, maxNameLen)
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !ok {
			return grove.Errorf(grove.ErrInvalid, "%s %q: only letters, digits, '.', '_' and '-' are allowed", what, s)
		}
	}
	if s[0] == '-' || s[0] == '.' {
		return grove.Errorf(grove.ErrInvalid, "%s %q must not start with '-' or '.'", what, s)
	}
	return nil
}

func (e *Engine) plan(ctx context.Context, req grove.AcquireRequest) (*plan, error) {
	mode, err := grove.ParseMode(string(req.Mode))
	if err != nil {
		return nil, err
	}
	if err := validName("user", req.User, true); err != nil {
		return nil, err
	}
	if err := validName("project", req.Project, true); err != nil {
		return nil, err
	}
	if req.Ref != "" {
		if err := gitrepo.ValidateRef(req.Ref); err != nil {
			return nil, err
		}
	}
	p := &plan{base: req.Ref}
	var scope string
	switch mode {
	case grove.ModeAnalysis:
		if req.Conversation != "" || req.Task != "" || req.Branch != "" {
			return nil, grove.Errorf(grove.ErrInvalid, "analysis workspaces are detached: conversation, task and branch are not accepted")
		}
		scope = req.Ref
		if scope == "" {
			scope = "HEAD"
		}
	case grove.ModeEdit:
		if req.Task != "" {
			return nil, grove.Errorf(grove.ErrInvalid, "edit mode is keyed by conversation, not task")
		}
		if err := validName("conversation", req.Conversation, true); err != nil {
			return nil, err
		}
		scope = req.Conversation
	case grove.ModeTask:
		if req.Conversation != "" {
			return nil, grove.Errorf(grove.ErrInvalid, "task mode is keyed by task, not conversation")
		}
		if err := validName("task", req.Task, true); err != nil {
			return nil, err
		}
		scope = req.Task
	}
	if mode != grove.ModeAnalysis {
		p.branch = req.Branch
		if p.branch == "" {
			p.branch = grove.DefaultBranch(mode, scope)
		}
		if err := gitrepo.ValidateBranch(p.branch); err != nil {
			return nil, err
		}
	}
	if p.remote, err = e.parseRepo(ctx, req.Repo); err != nil {
		return nil, err
	}
	p.key = grove.WorkspaceKey{User: req.User, Project: req.Project, Repo: p.remote.ID, Mode: mode, Scope: scope}
	return p, nil
}

// Acquire implements grove.Service. A re-acquire of an existing, healthy
// workspace is one store read and one stat: no git process, no fetch —
// within the access-check TTL of the user on the repository; after it, one
// `git ls-remote` with the request's credentials comes first (checkAccess).
func (e *Engine) Acquire(ctx context.Context, req grove.AcquireRequest) (*grove.Workspace, bool, error) {
	p, err := e.plan(ctx, req)
	if err != nil {
		return nil, false, err
	}
	if grove.CapabilitiesFor(p.key.Mode).Writable && !e.drv.Capabilities().Isolated && !e.cfg.AllowUnisolatedWrites {
		return nil, false, grove.Errorf(grove.ErrRejected,
			"runtime %q is not isolated; refusing a writable workspace (allow unisolated writes explicitly to override)", e.drv.Kind())
	}
	// Access is per user: the shared cache (or this user's own workspace)
	// existing proves nothing about what this request may read. Within the
	// TTL this is a map lookup, so the fast path below stays git-free.
	if err := e.checkAccess(ctx, p.key.User, p.remote, req.Token); err != nil {
		return nil, false, err
	}
	key := p.key.String()
	if ws, ok := e.reuse(ctx, key, req.Branch); ok {
		return ws, false, nil
	}

	unlock, err := e.locks.Lock(ctx, "ws-key:"+key)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if ws, ok := e.reuse(ctx, key, req.Branch); ok {
		return ws, false, nil
	}

	cache, err := e.ensureCache(ctx, p.key.User, p.remote, p.base, req.Token, req.Refresh)
	if err != nil {
		return nil, false, err
	}
	existing, err := e.store.GetWorkspaceByKey(ctx, key)
	switch {
	case err == nil:
		// A row whose files are missing (or a crash mid-creation): rebuild the
		// files; the branch is re-attached from what the cache saved.
		ws, err := e.materialise(ctx, cache, existing)
		return ws, false, err
	case !errors.Is(err, grove.ErrNotFound):
		return nil, false, err
	}

	// A new workspace needs room: the reserve and the user's share.
	if err := e.diskLow(); err != nil {
		return nil, false, err
	}
	if err := e.checkUserQuota(ctx, p.key.User); err != nil {
		return nil, false, err
	}
	now := e.now().UTC()
	ws := &grove.Workspace{
		ID:          newID("ws_"),
		Key:         key,
		RepoCacheID: cache.ID,
		Repo:        p.remote.ID,
		User:        p.key.User,
		Project:     p.key.Project,
		Mode:        p.key.Mode,
		Scope:       p.key.Scope,
		BaseRef:     p.base,
		Branch:      p.branch,
		State:       grove.WorkspaceCreating,
		RuntimeKind: e.drv.Kind(),
		CreatedAt:   now,
		UpdatedAt:   now,
		LastUsedAt:  now,
	}
	ws.LocalPath = e.prov.WorkspacePath(cache, ws)
	// The row goes in first: the store's uniqueness on (cache, user,
	// branch) turns a second workspace of this user on a branch they have
	// checked out into a conflict before any file is touched. Other users'
	// workspaces on the same branch name never conflict (nor are they
	// mentioned): their unpushed work lives in their own work repositories,
	// and the users meet only at the remote, when pushing.
	if err := e.store.CreateWorkspace(ctx, ws); err != nil {
		if errors.Is(err, grove.ErrConflict) && ws.Branch != "" {
			return nil, false, grove.Errorf(grove.ErrConflict, "branch %q of %s is already checked out by another of your workspaces", ws.Branch, p.remote.ID)
		}
		return nil, false, err
	}
	created, err := e.materialise(ctx, cache, ws)
	if err != nil {
		// Nothing was acknowledged: undo the reservation.
		if derr := e.store.DeleteWorkspace(context.WithoutCancel(ctx), ws.ID); derr != nil {
			e.log.Error("undo workspace reservation", "workspace", ws.ID, "err", derr)
		}
		return nil, false, err
	}
	e.log.Info("workspace created", "workspace", ws.ID, "repo", p.remote.ID.String(), "mode", ws.Mode, "branch", ws.Branch)
	return created, true, nil
}

// reuse returns the workspace of key when it is ready and its files exist.
func (e *Engine) reuse(ctx context.Context, key, branch string) (*grove.Workspace, bool) {
	ws, err := e.store.GetWorkspaceByKey(ctx, key)
	if err != nil || ws.State == grove.WorkspaceCreating || ws.State == grove.WorkspaceBroken {
		return nil, false
	}
	if branch != "" && ws.Branch != branch {
		// The key names this workspace but the caller asks for another
		// branch: let the slow path report it.
		return nil, false
	}
	if ok, err := e.prov.Exists(ctx, ws); err != nil || !ok {
		return nil, false
	}
	ws.LastUsedAt = e.now().UTC()
	if ws.State == grove.WorkspaceReleased {
		ws.State = grove.WorkspaceReady
	}
	if err := e.store.UpdateWorkspace(ctx, ws); err != nil {
		return nil, false
	}
	return ws, true
}

// materialise creates ws's files and marks it ready.
func (e *Engine) materialise(ctx context.Context, cache *grove.RepoCache, ws *grove.Workspace) (*grove.Workspace, error) {
	unlock, err := e.locks.RLock(ctx, "repo:"+cache.Repo.Key())
	if err != nil {
		return nil, err
	}
	defer unlock()
	if ok, _ := e.prov.Exists(ctx, ws); !ok {
		head, err := e.prov.CreateWorkspace(ctx, cache, ws)
		if err != nil {
			return nil, err
		}
		ws.HeadSHA = head
		// New files: the runtime must be set up for them again (a root
		// bwrap hands a writable tree to the sandbox's uid at Create).
		e.runtimes.Delete(ws.ID)
		e.forget(ws.ID)
		e.closeDebug(ws.ID) // sessions on the old tree end
	}
	ws.State = grove.WorkspaceReady
	ws.UpdatedAt = e.now().UTC()
	ws.LastUsedAt = ws.UpdatedAt
	if err := e.store.UpdateWorkspace(ctx, ws); err != nil {
		return nil, err
	}
	return ws, nil
}

// ensureCache returns the cache record of remote, cloning or fetching under
// the repo's exclusive lock. The caller has run checkAccess for user.
func (e *Engine) ensureCache(ctx context.Context, user string, remote gitrepo.Remote, ref, token string, refresh bool) (*grove.RepoCache, error) {
	if token == "" && !remote.Local && e.cfg.Credentials != nil {
		// Clone and fetch use the credential chain too (App, the user's
		// OAuth token, env); the token lives for this call only.
		cred, err := e.cfg.Credentials.Resolve(ctx, credentials.Request{Repo: remote.ID, User: user})
		if err != nil {
			return nil, err
		}
		token = cred.Token
	}
	unlock, err := e.locks.Lock(ctx, "repo:"+remote.ID.Key())
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := e.store.GetRepoCacheByKey(ctx, remote.ID.Key())
	isNew := errors.Is(err, grove.ErrNotFound)
	if err != nil && !isNew {
		return nil, err
	}
	var gitConfig [][2]string
	if grove.IsRemoteCaller(ctx) {
		// The fetch goes to the cache's URL, which the first caller chose
		// (another spelling of the same repository may share the cache):
		// that URL is what must pass the source rules, resolved and pinned
		// here, right before git runs.
		target := remote
		if !isNew {
			if target, err = e.parseRepo(ctx, c.URL); err != nil {
				return nil, err
			}
		}
		if gitConfig, err = e.sources.FetchConfig(ctx, target); err != nil {
			return nil, err
		}
	}
	now := e.now().UTC()
	if isNew {
		if err := e.checkNewCache(ctx); err != nil {
			return nil, err
		}
		c = &grove.RepoCache{
			ID:        newID("rc_"),
			Repo:      remote.ID,
			URL:       remote.URL,
			LocalPath: e.prov.CachePath(remote.ID),
			State:     grove.CacheReady,
			CreatedAt: now,
		}
	}
	res, err := e.prov.EnsureCache(ctx, c, provider.EnsureOptions{Ref: ref, Token: token, Refresh: refresh, Progress: progressOf(ctx), GitConfig: gitConfig})
	if err != nil {
		return nil, err
	}
	if res.Fetched || res.Cloned {
		c.LastFetchedAt = res.FetchedAt.UTC()
	}
	c.State = grove.CacheReady
	c.LastUsedAt = now
	c.UpdatedAt = now
	if isNew {
		err = e.store.CreateRepoCache(ctx, c)
	} else {
		err = e.store.UpdateRepoCache(ctx, c)
	}
	if err != nil {
		return nil, fmt.Errorf("record repo cache: %w", err)
	}
	return c, nil
}

// EnsureRepo implements grove.Service.
func (e *Engine) EnsureRepo(ctx context.Context, req grove.EnsureRepoRequest) (*grove.RepoCache, error) {
	if req.Ref != "" {
		if err := gitrepo.ValidateRef(req.Ref); err != nil {
			return nil, err
		}
	}
	if err := validName("user", req.User, false); err != nil {
		return nil, err
	}
	remote, err := e.parseRepo(ctx, req.Repo)
	if err != nil {
		return nil, err
	}
	if err := e.checkAccess(ctx, req.User, remote, req.Token); err != nil {
		return nil, err
	}
	return e.ensureCache(ctx, req.User, remote, req.Ref, req.Token, req.Refresh)
}

// ListRepos implements grove.Service.
func (e *Engine) ListRepos(ctx context.Context) ([]*grove.RepoCache, error) {
	return e.store.ListRepoCaches(ctx)
}

// RemoveRepo implements grove.Service.
func (e *Engine) RemoveRepo(ctx context.Context, id string, force bool) error {
	if !validID("rc_", id) {
		return grove.Errorf(grove.ErrNotFound, "repo cache %q not found", id)
	}
	c, err := e.store.GetRepoCache(ctx, id)
	if err != nil {
		return err
	}
	wss, err := e.store.ListWorkspaces(ctx, storeFilter(grove.WorkspaceFilter{}, c.ID))
	if err != nil {
		return err
	}
	if len(wss) > 0 && !force {
		return grove.Errorf(grove.ErrConflict, "repo cache %s has %d workspace(s); destroy them first or force", c.Repo, len(wss))
	}
	for _, ws := range wss {
		if err := e.Destroy(ctx, ws.ID); err != nil && !errors.Is(err, grove.ErrNotFound) {
			return err
		}
	}
	unlock, err := e.locks.Lock(ctx, "repo:"+c.Repo.Key())
	if err != nil {
		return err
	}
	defer unlock()
	if err := e.prov.RemoveCache(ctx, c); err != nil {
		return err
	}
	return e.store.DeleteRepoCache(ctx, c.ID)
}
