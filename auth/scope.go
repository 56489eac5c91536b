package auth

import (
	"context"
	"strings"

	"github.com/grove-dev/grove"
)

// Scope confines svc to what p may see and touch, so every transport
// (HTTP handlers, the tool catalog, MCP) enforces the same rule in one
// place:
//
//   - Acquire and EnsureRepo always act as p.User, whatever the request
//     says: the engine checks that this user's credentials can read the
//     repository.
//   - A workspace of another user answers ErrNotFound, exactly like an
//     unknown id, so ids cannot be probed. Admins see every workspace.
//   - Repo caches are shared between users, so a user sees the caches
//     their own workspaces use; only admins remove caches (others get
//     ErrNotFound for caches they cannot see, ErrForbidden otherwise).
//   - Host paths are the server's business: workspaces and caches reach a
//     non-admin without LocalPath, and a local repository's cache without
//     its URL (which is a path). Admins see them.
//
// The result implements grove.PullRequester and grove.Debugger exactly
// when svc does, each workspace call after the same ownership check.
func Scope(svc grove.Service, p Principal) grove.Service {
	s := &scoped{svc: svc, p: p}
	_, isPR := svc.(grove.PullRequester)
	d, isDebug := svc.(grove.Debugger)
	switch {
	case isPR && isDebug:
		return scopedPRDebug{scopedPR{s}, scopedDebug{s, d}}
	case isPR:
		return scopedPR{s}
	case isDebug:
		return scopedDebugger{s, scopedDebug{s, d}}
	}
	return s
}

type scoped struct {
	svc grove.Service
	p   Principal
}

var _ grove.Service = (*scoped)(nil)

// own returns the workspace id if p may use it.
func (s *scoped) own(ctx context.Context, id string) (*grove.Workspace, error) {
	ws, err := s.svc.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !s.p.Admin && ws.User != s.p.User {
		return nil, grove.Errorf(grove.ErrNotFound, "workspace %s not found", clip(id))
	}
	return ws, nil
}

func (s *scoped) check(ctx context.Context, id string) error {
	_, err := s.own(ctx, id)
	return err
}

func (s *scoped) EnsureRepo(ctx context.Context, req grove.EnsureRepoRequest) (*grove.RepoCache, error) {
	req.User = s.p.User
	c, err := s.svc.EnsureRepo(ctx, req)
	return s.cache(c), err
}

// workspace returns what p may see of ws: a copy without the host path
// unless p is an admin.
func (s *scoped) workspace(ws *grove.Workspace) *grove.Workspace {
	if ws == nil || s.p.Admin {
		return ws
	}
	cp := *ws
	cp.LocalPath = ""
	return &cp
}

// cache is workspace for repo caches; a local repository's URL is a host
// path too.
func (s *scoped) cache(c *grove.RepoCache) *grove.RepoCache {
	if c == nil || s.p.Admin {
		return c
	}
	cp := *c
	cp.LocalPath = ""
	if cp.Repo.Host == "local" || strings.HasPrefix(cp.URL, "/") {
		cp.URL = ""
	}
	return &cp
}

func (s *scoped) visibleCaches(ctx context.Context) (map[string]bool, error) {
	wss, err := s.svc.List(ctx, grove.WorkspaceFilter{User: s.p.User})
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, w := range wss {
		ids[w.RepoCacheID] = true
	}
	return ids, nil
}

func (s *scoped) ListRepos(ctx context.Context) ([]*grove.RepoCache, error) {
	all, err := s.svc.ListRepos(ctx)
	if err != nil || s.p.Admin {
		return all, err
	}
	vis, err := s.visibleCaches(ctx)
	if err != nil {
		return nil, err
	}
	out := []*grove.RepoCache{}
	for _, c := range all {
		if vis[c.ID] {
			out = append(out, s.cache(c))
		}
	}
	return out, nil
}

func (s *scoped) RemoveRepo(ctx context.Context, id string, force bool) error {
	if !s.p.Admin {
		vis, err := s.visibleCaches(ctx)
		if err != nil {
			return err
		}
		if !vis[id] {
			return grove.Errorf(grove.ErrNotFound, "repo cache %s not found", clip(id))
		}
		return grove.Errorf(grove.ErrForbidden, "repo caches are shared between users; only an admin removes them")
	}
	return s.svc.RemoveRepo(ctx, id, force)
}

func (s *scoped) Acquire(ctx context.Context, req grove.AcquireRequest) (*grove.Workspace, bool, error) {
	req.User = s.p.User
	ws, created, err := s.svc.Acquire(ctx, req)
	return s.workspace(ws), created, err
}

func (s *scoped) Get(ctx context.Context, id string) (*grove.Workspace, error) {
	ws, err := s.own(ctx, id)
	return s.workspace(ws), err
}

func (s *scoped) List(ctx context.Context, f grove.WorkspaceFilter) ([]*grove.Workspace, error) {
	if s.p.Admin {
		return s.svc.List(ctx, f)
	}
	f.User = s.p.User
	wss, err := s.svc.List(ctx, f)
	for i, ws := range wss {
		wss[i] = s.workspace(ws)
	}
	return wss, err
}

func (s *scoped) Release(ctx context.Context, id string) error {
	if err := s.check(ctx, id); err != nil {
		return err
	}
	return s.svc.Release(ctx, id)
}

func (s *scoped) Destroy(ctx context.Context, id string) error {
	if err := s.check(ctx, id); err != nil {
		return err
	}
	return s.svc.Destroy(ctx, id)
}

func (s *scoped) Pin(ctx context.Context, id string, pinned bool) error {
	if err := s.check(ctx, id); err != nil {
		return err
	}
	return s.svc.Pin(ctx, id, pinned)
}

func (s *scoped) Exec(ctx context.Context, id string, req grove.ExecRequest) (*grove.ExecResult, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.Exec(ctx, id, req)
}

func (s *scoped) ExecStream(ctx context.Context, id string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.ExecStream(ctx, id, req, emit)
}

func (s *scoped) ReadFile(ctx context.Context, id, path string, maxBytes int64) ([]byte, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.ReadFile(ctx, id, path, maxBytes)
}

func (s *scoped) WriteFile(ctx context.Context, id, path string, data []byte) error {
	if err := s.check(ctx, id); err != nil {
		return err
	}
	return s.svc.WriteFile(ctx, id, path, data)
}

func (s *scoped) DeleteFile(ctx context.Context, id, path string) error {
	if err := s.check(ctx, id); err != nil {
		return err
	}
	return s.svc.DeleteFile(ctx, id, path)
}

func (s *scoped) ListDir(ctx context.Context, id, path string, depth int) ([]grove.DirEntry, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.ListDir(ctx, id, path, depth)
}

func (s *scoped) Search(ctx context.Context, id string, req grove.SearchRequest) (*grove.SearchResult, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.Search(ctx, id, req)
}

func (s *scoped) Status(ctx context.Context, id string) (*grove.Status, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.Status(ctx, id)
}

func (s *scoped) Diff(ctx context.Context, id string, req grove.DiffRequest) (*grove.Diff, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.Diff(ctx, id, req)
}

func (s *scoped) Log(ctx context.Context, id string, limit int, path string) ([]grove.Commit, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.Log(ctx, id, limit, path)
}

func (s *scoped) Commit(ctx context.Context, id string, req grove.CommitRequest) (*grove.CommitResult, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.Commit(ctx, id, req)
}

func (s *scoped) Push(ctx context.Context, id string, req grove.PushRequest) (*grove.PushResult, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.Push(ctx, id, req)
}

// scopedPR forwards grove.PullRequester when the wrapped Service has it,
// after the same ownership check as every workspace call.
type scopedPR struct{ *scoped }

var _ grove.PullRequester = scopedPR{}

func (s scopedPR) CreatePullRequest(ctx context.Context, id string, req grove.CreatePullRequestRequest) (*grove.PullRequest, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.(grove.PullRequester).CreatePullRequest(ctx, id, req)
}

func (s scopedPR) CommentPullRequest(ctx context.Context, id string, req grove.CommentRequest) (*grove.Comment, error) {
	if err := s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.svc.(grove.PullRequester).CommentPullRequest(ctx, id, req)
}

// scopedDebug forwards grove.Debugger when the wrapped Service has it,
// after the same ownership check as every workspace call: another user's
// workspace (and so their sessions) answers ErrNotFound.
type scopedDebug struct {
	s *scoped
	d grove.Debugger
}

type scopedDebugger struct {
	*scoped
	scopedDebug
}

type scopedPRDebug struct {
	scopedPR
	scopedDebug
}

var (
	_ grove.Debugger      = scopedDebugger{}
	_ grove.Debugger      = scopedPRDebug{}
	_ grove.PullRequester = scopedPRDebug{}
)

func (s scopedDebug) DebugContext(ctx context.Context, id string) (*grove.DebugContext, error) {
	if err := s.s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.d.DebugContext(ctx, id)
}

func (s scopedDebug) DebugStart(ctx context.Context, id string, req grove.DebugStartRequest) (*grove.DebugSession, error) {
	if err := s.s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.d.DebugStart(ctx, id, req)
}

func (s scopedDebug) DebugBreakpoints(ctx context.Context, id string, req grove.DebugBreakpointsRequest) (*grove.DebugBreakpointsResult, error) {
	if err := s.s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.d.DebugBreakpoints(ctx, id, req)
}

func (s scopedDebug) DebugContinue(ctx context.Context, id string, req grove.DebugContinueRequest) (*grove.DebugSnapshot, error) {
	if err := s.s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.d.DebugContinue(ctx, id, req)
}

func (s scopedDebug) DebugStep(ctx context.Context, id string, req grove.DebugStepRequest) (*grove.DebugSnapshot, error) {
	if err := s.s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.d.DebugStep(ctx, id, req)
}

func (s scopedDebug) DebugSnapshot(ctx context.Context, id string, req grove.DebugSnapshotRequest) (*grove.DebugSnapshot, error) {
	if err := s.s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.d.DebugSnapshot(ctx, id, req)
}

func (s scopedDebug) DebugEvaluate(ctx context.Context, id string, req grove.DebugEvaluateRequest) (*grove.DebugEvaluation, error) {
	if err := s.s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.d.DebugEvaluate(ctx, id, req)
}

func (s scopedDebug) DebugSessions(ctx context.Context, id string) ([]grove.DebugSession, error) {
	if err := s.s.check(ctx, id); err != nil {
		return nil, err
	}
	return s.d.DebugSessions(ctx, id)
}

func (s scopedDebug) DebugStop(ctx context.Context, id, session string) error {
	if err := s.s.check(ctx, id); err != nil {
		return err
	}
	return s.d.DebugStop(ctx, id, session)
}
