package tunnel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/grove-dev/grove"
)

// IDPrefix starts the id of every tunnel workspace: "local-<name>". Engine
// ids are "ws_<hex>", so the two never collide; and a tunnel id is looked
// up among the caller's own tunnels only, so another user's "local-x" is
// an unknown id.
const IDPrefix = "local-"

// WorkspaceID is the workspace id of the tunnel name.
func WorkspaceID(name string) string { return IDPrefix + name }

// NameOf returns the tunnel name of a tunnel workspace id.
func NameOf(id string) (string, bool) {
	name, ok := strings.CutPrefix(id, IDPrefix)
	if !ok || !ValidName(name) {
		return "", false
	}
	return name, true
}

// Bounds of calls the Service makes.
const (
	defaultCallTimeout = time.Minute
	maxCallTimeout     = 30 * time.Minute // the agent's own maximum
)

// Scope returns inner as seen by user with user's live tunnels added as
// workspaces of mode local (grove.ModeLocal, id WorkspaceID(name), runtime
// "tunnel"): List and Get include them, and every method on their ids is
// a call to the agent over reg (Registry.Call, so also through another
// server of a Cluster). Everything else — and ids that name no live
// tunnel of user — is inner's: an unknown or another user's "local-x"
// answers exactly as inner answers an unknown id.
//
// Inner is normally auth.Scope's result for the same user. The result
// implements grove.Debugger (tunnel ids call the agent's debug routes;
// other ids go to inner's Debugger, or are ErrNotSupported), and
// grove.PullRequester exactly when inner does.
func Scope(inner grove.Service, reg *Registry, user string) grove.Service {
	s := &Service{Inner: inner, Registry: reg, User: user}
	if _, ok := inner.(grove.PullRequester); ok {
		return servicePR{s}
	}
	return s
}

// Service is the decorator Scope returns (without PullRequester).
type Service struct {
	Inner    grove.Service
	Registry *Registry
	User     string
}

var (
	_ grove.Service  = (*Service)(nil)
	_ grove.Debugger = (*Service)(nil)
)

// tunnelOf returns the tunnel name when id names a tunnel workspace.
func (s *Service) tunnelOf(id string) (string, bool) {
	if s.Registry == nil {
		return "", false
	}
	return NameOf(id)
}

// unknown answers for an id that names no live tunnel of the user: as
// inner answers an unknown workspace id.
func (s *Service) unknown(ctx context.Context, id string) error {
	if s.Inner != nil {
		if _, err := s.Inner.Get(ctx, id); err != nil {
			return err
		}
	}
	return grove.Errorf(grove.ErrNotFound, "workspace %s not found", clip(id, 100))
}

func (s *Service) workspace(info Info) *grove.Workspace {
	t := info.Connected
	return &grove.Workspace{
		ID:          WorkspaceID(info.Workspace),
		Key:         strings.Join([]string{s.User, "", "tunnel", info.Workspace, string(grove.ModeLocal), info.Workspace}, "|"),
		Repo:        grove.RepoID{Host: "tunnel", Name: info.Workspace},
		User:        s.User,
		Mode:        grove.ModeLocal,
		Scope:       info.Workspace,
		State:       grove.WorkspaceReady,
		ReadOnly:    info.ReadOnly,
		RuntimeKind: "tunnel",
		CreatedAt:   t,
		UpdatedAt:   t,
		LastUsedAt:  t,
	}
}

// call calls endpoint on the tunnel of workspace id with req and decodes
// the agent's result into out (unless nil). The agent's errors come back
// as Grove errors of their kind, with the agent's text.
func (s *Service) call(ctx context.Context, id, endpoint string, req any, timeout time.Duration, out any) error {
	name, _ := s.tunnelOf(id)
	var payload json.RawMessage
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return err
		}
		payload = b
	} else {
		payload = json.RawMessage("{}")
	}
	if timeout <= 0 {
		timeout = defaultCallTimeout
	}
	resp, err := s.Registry.Call(ctx, s.User, name, endpoint, payload, min(timeout, maxCallTimeout))
	if errors.Is(err, grove.ErrNotFound) {
		return s.unknown(ctx, id)
	}
	if err != nil {
		return err
	}
	if !resp.Success {
		return wireError(resp.Error)
	}
	if out == nil || len(resp.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return grove.Errorf(grove.ErrUnavailable, "tunnel %q: the agent's answer to %s does not decode: %v", name, endpoint, err)
	}
	return nil
}

// wireError turns a protocol error back into a Grove error of its kind.
// A code of no known kind (E_INTERNAL) is an error of no kind, which the
// transports report as E_INTERNAL again; E_CANCELLED is context.Canceled.
func wireError(e *Error) error {
	if e == nil {
		return grove.Errorf(grove.ErrUnavailable, "the agent answered a failure without an error")
	}
	if k := grove.KindFromCode(e.Code); k != nil {
		return grove.Errorf(k, "%s", e.Message)
	}
	if e.Code == "E_CANCELLED" {
		return fmt.Errorf("%s: %w", e.Message, context.Canceled)
	}
	return errors.New(e.Message)
}

// Catalog-level methods: inner's.

func (s *Service) EnsureRepo(ctx context.Context, req grove.EnsureRepoRequest) (*grove.RepoCache, error) {
	return s.Inner.EnsureRepo(ctx, req)
}

func (s *Service) ListRepos(ctx context.Context) ([]*grove.RepoCache, error) {
	return s.Inner.ListRepos(ctx)
}

func (s *Service) RemoveRepo(ctx context.Context, id string, force bool) error {
	return s.Inner.RemoveRepo(ctx, id, force)
}

func (s *Service) Acquire(ctx context.Context, req grove.AcquireRequest) (*grove.Workspace, bool, error) {
	return s.Inner.Acquire(ctx, req)
}

func (s *Service) Get(ctx context.Context, id string) (*grove.Workspace, error) {
	if name, ok := s.tunnelOf(id); ok {
		info, found, err := s.Registry.Lookup(ctx, s.User, name)
		if err != nil {
			return nil, grove.Errorf(grove.ErrUnavailable, "tunnel %q: %v", name, err)
		}
		if found {
			return s.workspace(info), nil
		}
	}
	return s.Inner.Get(ctx, id)
}

// List adds the user's tunnels to inner's workspaces, unless f selects by
// project or repository (tunnels have neither) or another user.
func (s *Service) List(ctx context.Context, f grove.WorkspaceFilter) ([]*grove.Workspace, error) {
	wss, err := s.Inner.List(ctx, f)
	if err != nil || s.Registry == nil || f.Project != "" || f.Repo != "" || (f.User != "" && f.User != s.User) {
		return wss, err
	}
	for _, info := range s.Registry.ListAll(ctx, s.User) {
		wss = append(wss, s.workspace(info))
	}
	return wss, nil
}

// Release is a no-op on a tunnel workspace: the developer's checkout has
// no runtime to hibernate.
func (s *Service) Release(ctx context.Context, id string) error {
	if _, ok := s.isTunnel(ctx, id); ok {
		return nil
	}
	return s.Inner.Release(ctx, id)
}

// isTunnel reports whether id is one of the user's live tunnels.
func (s *Service) isTunnel(ctx context.Context, id string) (string, bool) {
	name, ok := s.tunnelOf(id)
	if !ok {
		return "", false
	}
	_, found, err := s.Registry.Lookup(ctx, s.User, name)
	return name, err == nil && found
}

// Destroy is refused on a tunnel workspace: it is the developer's
// checkout. Stopping `grove tunnel` removes it.
func (s *Service) Destroy(ctx context.Context, id string) error {
	if _, ok := s.isTunnel(ctx, id); ok {
		return grove.Errorf(grove.ErrNotSupported, "workspace %s is a developer's own checkout served by grove tunnel: stop the tunnel to remove it", id)
	}
	return s.Inner.Destroy(ctx, id)
}

// Pin is a no-op on a tunnel workspace: nothing evicts it.
func (s *Service) Pin(ctx context.Context, id string, pinned bool) error {
	if _, ok := s.isTunnel(ctx, id); ok {
		return nil
	}
	return s.Inner.Pin(ctx, id, pinned)
}

func (s *Service) Exec(ctx context.Context, id string, req grove.ExecRequest) (*grove.ExecResult, error) {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.Exec(ctx, id, req)
	}
	p, timeout, capped, err := execPayload(req)
	if err != nil {
		return nil, err
	}
	var r ExecResult
	if err := s.call(ctx, id, RouteExecute, p, timeout, &r); err != nil {
		return nil, err
	}
	res := groveExecResult(r)
	if capped {
		res.CappedTimeout = timeout
	}
	return res, nil
}

// execPayload maps a grove.ExecRequest to the agent's payload. A command
// of the read class is not mirrored into the developer's terminal
// (Hidden): those are the catalog's own probes (rg, stat), not the
// agent's commands.
func execPayload(req grove.ExecRequest) (p ExecRequest, timeout time.Duration, capped bool, err error) {
	if len(req.Stdin) > 0 && !utf8.Valid(req.Stdin) {
		return p, 0, false, grove.Errorf(grove.ErrInvalid, "stdin of a command on a tunnel workspace must be UTF-8 text")
	}
	timeout = req.Timeout
	if timeout <= 0 {
		timeout = defaultCallTimeout
	}
	if timeout > maxCallTimeout {
		timeout, capped = maxCallTimeout, true
	}
	dir := req.Dir
	if dir == "." {
		dir = ""
	}
	p = ExecRequest{
		Argv: req.Argv, Shell: req.Shell, Cwd: dir, Env: req.Env, Stdin: string(req.Stdin),
		TimeoutMS: timeout.Milliseconds(), MaxOutput: req.MaxOutput, Hidden: req.Class == grove.ClassRead,
	}
	return p, timeout, capped, nil
}

// ExecStream on a tunnel workspace starts the command as an async
// session on the agent (ExecRequest.Async) and polls its output
// (RouteSessionPrefix+"<id>/output", waiting up to a second each time for
// the command to end), emitting what arrives: output reaches the caller
// within about a second. A caller that gives up (ctx, or emit failing)
// kills the command (…/signal KILL). An agent that answers the start with
// the command's result instead (one without async sessions) ran it
// synchronously: its whole output is emitted once, at the end.
func (s *Service) ExecStream(ctx context.Context, id string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.ExecStream(ctx, id, req, emit)
	}
	p, timeout, capped, err := execPayload(req)
	if err != nil {
		return nil, err
	}
	p.Async = true
	var started struct {
		SessionID string `json:"session_id"`
		ExecResult
	}
	if err := s.call(ctx, id, RouteExecute, p, timeout, &started); err != nil {
		return nil, err
	}
	var res *grove.ExecResult
	if started.SessionID == "" {
		res = groveExecResult(started.ExecResult)
		for _, c := range []grove.Chunk{{Stream: grove.Stdout, Data: res.Stdout}, {Stream: grove.Stderr, Data: res.Stderr}} {
			if len(c.Data) == 0 {
				continue
			}
			if err := emit(c); err != nil {
				return nil, err
			}
		}
	} else {
		res, err = s.follow(ctx, id, started.SessionID, req, timeout, emit)
		if err != nil {
			return nil, err
		}
	}
	if capped {
		res.CappedTimeout = timeout
	}
	if req.StreamOnly {
		res.Stdout, res.Stderr = nil, nil
	}
	return res, nil
}

// polledOutput is SessionOutput with the offsets to pass back.
type polledOutput struct {
	Running    bool        `json:"running"`
	Stdout     string      `json:"stdout"`
	Stderr     string      `json:"stderr"`
	StdoutNext int64       `json:"stdout_next_offset"`
	StderrNext int64       `json:"stderr_next_offset"`
	Result     *ExecResult `json:"result,omitempty"`
}

// follow polls async session sid until its command ends, emitting its
// output, and returns its result with the output (each stream kept up to
// req.MaxOutput, default MaxOutputBytes).
func (s *Service) follow(ctx context.Context, id, sid string, req grove.ExecRequest, timeout time.Duration, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	kill := func() {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.call(kctx, id, RouteSessionPrefix+sid+"/signal", SignalRequest{Signal: "KILL"}, 5*time.Second, nil)
	}
	keep := req.MaxOutput
	if keep <= 0 || keep > MaxOutputBytes {
		keep = MaxOutputBytes
	}
	var stdout, stderr []byte
	var outOff, errOff, outOmit, errOmit int64
	add := func(buf []byte, data string, omitted *int64) []byte {
		if req.StreamOnly {
			return buf
		}
		room := max(keep-len(buf), 0)
		if len(data) > room {
			*omitted += int64(len(data) - room)
			data = data[:room]
		}
		return append(buf, data...)
	}
	deadline := time.Now().Add(timeout + 30*time.Second)
	for {
		var o polledOutput
		err := s.call(ctx, id, RouteSessionPrefix+sid+"/output", SessionOutputRequest{StdoutOffset: outOff, StderrOffset: errOff, WaitMS: 1000}, 30*time.Second, &o)
		if err != nil {
			if ctx.Err() != nil {
				kill()
				return nil, ctx.Err()
			}
			return nil, err
		}
		for _, c := range []grove.Chunk{{Stream: grove.Stdout, Data: []byte(o.Stdout)}, {Stream: grove.Stderr, Data: []byte(o.Stderr)}} {
			if len(c.Data) == 0 {
				continue
			}
			if err := emit(c); err != nil {
				kill()
				return nil, err
			}
		}
		stdout, stderr = add(stdout, o.Stdout, &outOmit), add(stderr, o.Stderr, &errOmit)
		outOff, errOff = nextOffset(outOff, o.StdoutNext, o.Stdout), nextOffset(errOff, o.StderrNext, o.Stderr)
		if o.Result != nil {
			res := groveExecResult(*o.Result)
			res.Stdout, res.Stderr = stdout, stderr
			res.StdoutOmitted += outOmit
			res.StderrOmitted += errOmit
			res.Truncated = res.Truncated || outOmit > 0 || errOmit > 0
			return res, nil
		}
		if time.Now().After(deadline) {
			kill()
			return nil, grove.Errorf(grove.ErrTimeout, "the command did not end within %s", timeout)
		}
	}
}

// nextOffset is the offset after a chunk: the agent's, or (from an agent that
// does not send it) the old one plus the chunk's length.
func nextOffset(old, agent int64, chunk string) int64 {
	if agent > 0 {
		return agent
	}
	return old + int64(len(chunk))
}

func groveExecResult(r ExecResult) *grove.ExecResult {
	return &grove.ExecResult{
		ExitCode: r.ExitCode, Stdout: []byte(r.Stdout), Stderr: []byte(r.Stderr),
		TimedOut: r.TimedOut, Truncated: r.Truncated, StdoutOmitted: r.StdoutOmitted, StderrOmitted: r.StderrOmitted,
		Duration: time.Duration(r.DurationMS) * time.Millisecond,
	}
}

// defaultReadCap is ReadFile's cap when the caller gives none (the agent's
// own maximum).
const defaultReadCap = 8 << 20

func (s *Service) ReadFile(ctx context.Context, id, path string, maxBytes int64) ([]byte, error) {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.ReadFile(ctx, id, path, maxBytes)
	}
	var r ReadResult
	if err := s.call(ctx, id, RouteRead, ReadRequest{Path: path}, 0, &r); err != nil {
		return nil, err
	}
	data := []byte(r.Content)
	if r.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(r.Content)
		if err != nil {
			return nil, grove.Errorf(grove.ErrUnavailable, "the agent's base64 content of %s does not decode", clip(path, 200))
		}
		data = b
	}
	if maxBytes <= 0 {
		maxBytes = defaultReadCap
	}
	if int64(len(data)) > maxBytes {
		return nil, grove.Errorf(grove.ErrTooLarge, "%s is %d bytes, over the limit of %d", clip(path, 200), len(data), maxBytes)
	}
	return data, nil
}

func (s *Service) WriteFile(ctx context.Context, id, path string, data []byte) error {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.WriteFile(ctx, id, path, data)
	}
	req := WriteRequest{Path: path, Content: string(data)}
	if !utf8.Valid(data) {
		req.Content, req.Encoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return s.call(ctx, id, RouteWrite, req, 0, nil)
}

func (s *Service) DeleteFile(ctx context.Context, id, path string) error {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.DeleteFile(ctx, id, path)
	}
	return s.call(ctx, id, RouteDelete, DeleteRequest{Path: path}, 0, nil)
}

func (s *Service) ListDir(ctx context.Context, id, path string, depth int) ([]grove.DirEntry, error) {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.ListDir(ctx, id, path, depth)
	}
	var r ListResult
	if err := s.call(ctx, id, RouteList, ListRequest{Path: path, Depth: depth}, 0, &r); err != nil {
		return nil, err
	}
	if r.Entries == nil {
		r.Entries = []grove.DirEntry{}
	}
	return r.Entries, nil
}

func (s *Service) Search(ctx context.Context, id string, req grove.SearchRequest) (*grove.SearchResult, error) {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.Search(ctx, id, req)
	}
	var r grove.SearchResult
	if err := s.call(ctx, id, RouteSearch, req, 0, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Service) Status(ctx context.Context, id string) (*grove.Status, error) {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.Status(ctx, id)
	}
	var r grove.Status
	if err := s.call(ctx, id, RouteGitStatus, nil, 0, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Service) Diff(ctx context.Context, id string, req grove.DiffRequest) (*grove.Diff, error) {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.Diff(ctx, id, req)
	}
	var r grove.Diff
	if err := s.call(ctx, id, RouteGitDiff, req, 0, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Service) Log(ctx context.Context, id string, limit int, path string) ([]grove.Commit, error) {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.Log(ctx, id, limit, path)
	}
	var r LogResult
	if err := s.call(ctx, id, RouteGitLog, LogRequest{Limit: limit, Path: path}, 0, &r); err != nil {
		return nil, err
	}
	if r.Commits == nil {
		r.Commits = []grove.Commit{}
	}
	return r.Commits, nil
}

func (s *Service) Commit(ctx context.Context, id string, req grove.CommitRequest) (*grove.CommitResult, error) {
	if _, ok := s.tunnelOf(id); !ok {
		return s.Inner.Commit(ctx, id, req)
	}
	var r grove.CommitResult
	if err := s.call(ctx, id, RouteGitCommit, req, 2*time.Minute, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Push is refused on a tunnel workspace: the developer pushes from their
// machine, with their own credentials.
func (s *Service) Push(ctx context.Context, id string, req grove.PushRequest) (*grove.PushResult, error) {
	if _, ok := s.isTunnel(ctx, id); ok {
		return nil, grove.Errorf(grove.ErrNotSupported, "workspace %s is a developer's own checkout: the developer pushes from their machine", id)
	}
	return s.Inner.Push(ctx, id, req)
}

// servicePR is Service over an inner grove.PullRequester. Pull requests on
// a tunnel workspace are refused like Push.
type servicePR struct{ *Service }

var _ grove.PullRequester = servicePR{}

func (s servicePR) CreatePullRequest(ctx context.Context, id string, req grove.CreatePullRequestRequest) (*grove.PullRequest, error) {
	if _, ok := s.isTunnel(ctx, id); ok {
		return nil, grove.Errorf(grove.ErrNotSupported, "workspace %s is a developer's own checkout: the developer pushes and opens pull requests from their machine", id)
	}
	return s.Inner.(grove.PullRequester).CreatePullRequest(ctx, id, req)
}

func (s servicePR) CommentPullRequest(ctx context.Context, id string, req grove.CommentRequest) (*grove.Comment, error) {
	if _, ok := s.isTunnel(ctx, id); ok {
		return nil, grove.Errorf(grove.ErrNotSupported, "workspace %s is a developer's own checkout: pull requests are the developer's", id)
	}
	return s.Inner.(grove.PullRequester).CommentPullRequest(ctx, id, req)
}
