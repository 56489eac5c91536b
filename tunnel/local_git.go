package tunnel

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider/execpath"
)

// The git routes run the machine's git in the directory through
// provider/execpath, exactly as a server workspace's git runs in its
// runtime: the same arguments, parsers and results. execpath's forced
// configuration applies (hooks and fsmonitor off, no pager, no signing),
// on the developer's own checkout too: a commit made through the tunnel
// does not run the repository's hooks. The developer's own configuration
// (HOME) is read otherwise, and gives the commit's committer.

func checkGitPaths(paths ...string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := fsops.CleanPath(p); err != nil {
			return err
		}
	}
	return nil
}

func (l *Local) gitStatus(ctx context.Context, payload json.RawMessage) (any, error) {
	var req struct{}
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	return execpath.Status(ctx, localExecer{l}, l.workspace)
}

func (l *Local) gitDiff(ctx context.Context, payload json.RawMessage) (any, error) {
	var req grove.DiffRequest
	if err := decode(payload, &req); err != nil {
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
	if req.MaxBytes < 0 {
		return nil, grove.Errorf(grove.ErrInvalid, "max_bytes must not be negative")
	}
	req.MaxBytes = min(req.MaxBytes, MaxFileBytes)
	return execpath.Diff(ctx, localExecer{l}, l.workspace, req)
}

func (l *Local) gitLog(ctx context.Context, payload json.RawMessage) (any, error) {
	var req LogRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, 1000)
	if err := checkGitPaths(req.Path); err != nil {
		return nil, err
	}
	commits, err := execpath.Log(ctx, localExecer{l}, l.workspace, limit, req.Path)
	if err != nil {
		return nil, err
	}
	if commits == nil {
		commits = []grove.Commit{}
	}
	return LogResult{Commits: commits}, nil
}

func (l *Local) gitCommit(ctx context.Context, payload json.RawMessage) (any, error) {
	if l.ReadOnly {
		return nil, grove.Errorf(grove.ErrReadOnly, "this tunnel is read-only: commits are refused")
	}
	var req grove.CommitRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	if err := checkGitPaths(req.Paths...); err != nil {
		return nil, err
	}
	return execpath.Commit(ctx, localExecer{l}, l.workspace, req, l.gitIdentity(ctx))
}

// gitIdentity is the developer's user.name and user.email, as their own
// commits would have; execpath falls back to Grove's default identity
// when either is unset.
func (l *Local) gitIdentity(ctx context.Context) gitrepo.Identity {
	get := func(key string) string {
		res, err := localExecer{l}.Exec(ctx, l.workspace, grove.ExecRequest{
			Argv: []string{"git", "config", "--get", key}, Env: map[string]string{"GIT_TERMINAL_PROMPT": "0"}, MaxOutput: 4096,
		})
		if err != nil || res.ExitCode != 0 {
			return ""
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	id := gitrepo.Identity{Name: get("user.name"), Email: get("user.email")}
	if id.Validate("committer") != nil {
		return gitrepo.Identity{}
	}
	return id
}
