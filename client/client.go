// Package client is the Go client of Grove's HTTP API. *Client implements
// grove.Service, so code written against the in-process engine runs
// against a server unchanged; error codes come back as grove kinds, so
// errors.Is works across the wire.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/wire"
)

// Client talks to one server with one API key.
type Client struct {
	base string
	key  string
	http *http.Client
}

var _ grove.Service = (*Client)(nil)

// New returns a client of the server at baseURL (http://host:port).
func New(baseURL, apiKey string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), key: apiKey, http: hc}
}

func (c *Client) request(ctx context.Context, method, path string, q url.Values, body any, accept string) (*http.Response, error) {
	var rd io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case []byte:
		rd, ctype = bytes.NewReader(b), "application/octet-stream"
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(j)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "request: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if rd != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, grove.Errorf(grove.ErrUnavailable, "grove server: %v", err)
	}
	if res.StatusCode >= 400 {
		defer res.Body.Close()
		return nil, decodeError(res)
	}
	return res, nil
}

// decodeError turns the API's error shape back into a grove kind.
func decodeError(res *http.Response) error {
	var e wire.ErrorBody
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" {
		return grove.Errorf(kindOfStatus(res.StatusCode), "grove server: HTTP %d", res.StatusCode)
	}
	return remoteError(e.Error)
}

func remoteError(d wire.ErrorDetail) error {
	kind := grove.KindFromCode(d.Code)
	if kind == nil {
		return fmt.Errorf("%s: %s", d.Code, d.Message)
	}
	return grove.Errorf(kind, "%s", d.Message)
}

func kindOfStatus(s int) error {
	switch s {
	case 400:
		return grove.ErrInvalid
	case 401:
		return grove.ErrUnauthorized
	case 403:
		return grove.ErrForbidden
	case 404:
		return grove.ErrNotFound
	case 409:
		return grove.ErrConflict
	case 413:
		return grove.ErrTooLarge
	case 429:
		return grove.ErrResourceLimit
	case 504:
		return grove.ErrTimeout
	}
	return grove.ErrUnavailable
}

// call does a JSON request and decodes a JSON response into out (if any).
func (c *Client) call(ctx context.Context, method, path string, q url.Values, body, out any) (int, error) {
	res, err := c.request(ctx, method, path, q, body, "")
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if out != nil {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			return res.StatusCode, grove.Errorf(grove.ErrUnavailable, "grove server: bad response: %v", err)
		}
	}
	return res.StatusCode, nil
}

func ws(id string, rest ...string) string {
	return "/v1/workspaces/" + url.PathEscape(id) + strings.Join(rest, "")
}

func filePath(id, p string) string {
	parts := strings.Split(p, "/")
	for i := range parts {
		parts[i] = url.PathEscape(parts[i])
	}
	return ws(id, "/files/", strings.Join(parts, "/"))
}

func (c *Client) EnsureRepo(ctx context.Context, req grove.EnsureRepoRequest) (*grove.RepoCache, error) {
	var rc grove.RepoCache
	_, err := c.call(ctx, "POST", "/v1/repos", nil, wire.EnsureRepoBody{Repo: req.Repo, Ref: req.Ref, Token: req.Token, Refresh: req.Refresh}, &rc)
	return &rc, err
}

func (c *Client) ListRepos(ctx context.Context) ([]*grove.RepoCache, error) {
	var l wire.RepoList
	_, err := c.call(ctx, "GET", "/v1/repos", nil, nil, &l)
	return l.Repos, err
}

func (c *Client) RemoveRepo(ctx context.Context, id string, force bool) error {
	_, err := c.call(ctx, "DELETE", "/v1/repos/"+url.PathEscape(id), url.Values{"force": {strconv.FormatBool(force)}}, nil, nil)
	return err
}

func (c *Client) Acquire(ctx context.Context, req grove.AcquireRequest) (*grove.Workspace, bool, error) {
	var w grove.Workspace
	status, err := c.call(ctx, "POST", "/v1/workspaces", nil, wire.AcquireBody{Repo: req.Repo, Project: req.Project, Mode: req.Mode,
		Conversation: req.Conversation, Task: req.Task, Ref: req.Ref, Branch: req.Branch, Token: req.Token, Refresh: req.Refresh}, &w)
	if err != nil {
		return nil, false, err
	}
	return &w, status == http.StatusCreated, nil
}

func (c *Client) Get(ctx context.Context, id string) (*grove.Workspace, error) {
	var w grove.Workspace
	if _, err := c.call(ctx, "GET", ws(id), nil, nil, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// List ignores f.User: the server lists the key's own workspaces (all of
// them for admin keys, filtered by user when given).
func (c *Client) List(ctx context.Context, f grove.WorkspaceFilter) ([]*grove.Workspace, error) {
	q := url.Values{}
	for k, v := range map[string]string{"user": f.User, "project": f.Project, "repo": f.Repo} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var l wire.WorkspaceList
	_, err := c.call(ctx, "GET", "/v1/workspaces", q, nil, &l)
	return l.Workspaces, err
}

func (c *Client) Release(ctx context.Context, id string) error {
	_, err := c.call(ctx, "POST", ws(id, "/release"), nil, nil, nil)
	return err
}

func (c *Client) Destroy(ctx context.Context, id string) error {
	_, err := c.call(ctx, "DELETE", ws(id), nil, nil, nil)
	return err
}

func (c *Client) Pin(ctx context.Context, id string, pinned bool) error {
	_, err := c.call(ctx, "POST", ws(id, "/pin"), nil, wire.PinBody{Pinned: &pinned}, nil)
	return err
}

func (c *Client) Exec(ctx context.Context, id string, req grove.ExecRequest) (*grove.ExecResult, error) {
	var r wire.ExecResponse
	if _, err := c.call(ctx, "POST", ws(id, "/exec"), nil, wire.ExecBodyOf(req), &r); err != nil {
		return nil, err
	}
	return r.Result(), nil
}

// ExecStream reads the server's event stream; cancelling ctx closes the
// request, and the server kills the command.
func (c *Client) ExecStream(ctx context.Context, id string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	res, err := c.request(ctx, "POST", ws(id, "/exec"), nil, wire.ExecBodyOf(req), "text/event-stream")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var event string
	// The exit event does not repeat the output the events carried; the
	// result gets it back from them, as a local ExecStream's would.
	var out [2][]byte
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			event = name
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch event {
		case "stdout", "stderr":
			var ch wire.ChunkEvent
			if err := json.Unmarshal([]byte(data), &ch); err != nil {
				return nil, grove.Errorf(grove.ErrUnavailable, "grove server: bad event: %v", err)
			}
			if event == "stdout" {
				out[0] = append(out[0], ch.Data...)
			} else {
				out[1] = append(out[1], ch.Data...)
			}
			if err := emit(grove.Chunk{Stream: grove.Stream(event), Data: []byte(ch.Data)}); err != nil {
				return nil, err
			}
		case "exit":
			var r wire.ExecResponse
			if err := json.Unmarshal([]byte(data), &r); err != nil {
				return nil, grove.Errorf(grove.ErrUnavailable, "grove server: bad exit event: %v", err)
			}
			res := r.Result()
			if len(res.Stdout) == 0 && len(res.Stderr) == 0 {
				res.Stdout, res.Stderr = out[0], out[1]
			}
			return res, nil
		case "error":
			var e wire.ErrorBody
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				return nil, grove.Errorf(grove.ErrUnavailable, "grove server: bad error event: %v", err)
			}
			return nil, remoteError(e.Error)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, grove.Errorf(grove.ErrUnavailable, "grove server: stream ended without an exit event")
}

func (c *Client) ReadFile(ctx context.Context, id, path string, maxBytes int64) ([]byte, error) {
	var q url.Values
	if maxBytes > 0 {
		q = url.Values{"max_bytes": {strconv.FormatInt(maxBytes, 10)}}
	}
	res, err := c.request(ctx, "GET", filePath(id, path), q, nil, "")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	return io.ReadAll(res.Body)
}

func (c *Client) WriteFile(ctx context.Context, id, path string, data []byte) error {
	if data == nil {
		data = []byte{}
	}
	_, err := c.call(ctx, "PUT", filePath(id, path), nil, data, nil)
	return err
}

func (c *Client) DeleteFile(ctx context.Context, id, path string) error {
	_, err := c.call(ctx, "DELETE", filePath(id, path), nil, nil, nil)
	return err
}

func (c *Client) ListDir(ctx context.Context, id, path string, depth int) ([]grove.DirEntry, error) {
	var t wire.Tree
	_, err := c.call(ctx, "GET", ws(id, "/tree"), url.Values{"path": {path}, "depth": {strconv.Itoa(depth)}}, nil, &t)
	return t.Entries, err
}

func (c *Client) Search(ctx context.Context, id string, req grove.SearchRequest) (*grove.SearchResult, error) {
	q := url.Values{"pattern": {req.Pattern}, "path": {req.Path}, "glob": {req.Glob},
		"fixed_string": {strconv.FormatBool(req.FixedString)}, "case_insensitive": {strconv.FormatBool(req.CaseInsensitive)},
		"context": {strconv.Itoa(req.Context)}, "max_results": {strconv.Itoa(req.MaxResults)}, "offset": {strconv.Itoa(req.Offset)}}
	var r grove.SearchResult
	if _, err := c.call(ctx, "GET", ws(id, "/search"), q, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (c *Client) Status(ctx context.Context, id string) (*grove.Status, error) {
	var s grove.Status
	if _, err := c.call(ctx, "GET", ws(id, "/git/status"), nil, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func (c *Client) Diff(ctx context.Context, id string, req grove.DiffRequest) (*grove.Diff, error) {
	q := url.Values{"base_ref": {req.BaseRef}, "path": req.Paths, "staged_only": {strconv.FormatBool(req.StagedOnly)},
		"stat_only": {strconv.FormatBool(req.StatOnly)}, "max_bytes": {strconv.Itoa(req.MaxBytes)}}
	var d grove.Diff
	if _, err := c.call(ctx, "GET", ws(id, "/git/diff"), q, nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

func (c *Client) Log(ctx context.Context, id string, limit int, path string) ([]grove.Commit, error) {
	var l wire.CommitLog
	_, err := c.call(ctx, "GET", ws(id, "/git/log"), url.Values{"limit": {strconv.Itoa(limit)}, "path": {path}}, nil, &l)
	return l.Commits, err
}

func (c *Client) Commit(ctx context.Context, id string, req grove.CommitRequest) (*grove.CommitResult, error) {
	var r grove.CommitResult
	if _, err := c.call(ctx, "POST", ws(id, "/git/commit"), nil, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (c *Client) Push(ctx context.Context, id string, req grove.PushRequest) (*grove.PushResult, error) {
	var r grove.PushResult
	body := wire.PushBody{Token: req.Token, ForceWithLease: req.ForceWithLease, SetUpstream: req.SetUpstream}
	if _, err := c.call(ctx, "POST", ws(id, "/git/push"), nil, body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
