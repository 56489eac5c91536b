package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/tools"
)

func (s *Server) acquire(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b AcquireBody
	if err := Decode(r.Body, &b); err != nil {
		return err
	}
	if b.Mode == "" {
		m, err := grove.InferMode(b.Conversation, b.Task)
		if err != nil {
			return err
		}
		b.Mode = m
	}
	ws, created, err := c.svc.Acquire(r.Context(), grove.AcquireRequest{Repo: b.Repo, Project: b.Project, Mode: b.Mode,
		Conversation: b.Conversation, Task: b.Task, Ref: b.Ref, Branch: b.Branch, Token: c.gitToken(b.Token), Refresh: b.Refresh})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, ws)
	return nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := r.URL.Query()
	f := grove.WorkspaceFilter{User: q.Get("user"), Project: q.Get("project"), Repo: q.Get("repo")}
	wss, err := c.svc.List(r.Context(), f)
	if err != nil {
		return err
	}
	if wss == nil {
		wss = []*grove.Workspace{}
	}
	writeJSON(w, 200, WorkspaceList{Workspaces: wss})
	return nil
}

func (s *Server) show(w http.ResponseWriter, r *http.Request, c *caller) error {
	ws, err := c.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, 200, ws)
	return nil
}

func noContent(w http.ResponseWriter, err error) error {
	if err == nil {
		w.WriteHeader(http.StatusNoContent)
	}
	return err
}

func (s *Server) destroy(w http.ResponseWriter, r *http.Request, c *caller) error {
	return noContent(w, c.svc.Destroy(r.Context(), r.PathValue("id")))
}

func (s *Server) release(w http.ResponseWriter, r *http.Request, c *caller) error {
	return noContent(w, c.svc.Release(r.Context(), r.PathValue("id")))
}

func (s *Server) pin(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b PinBody
	if r.ContentLength != 0 {
		if err := Decode(r.Body, &b); err != nil {
			return err
		}
	}
	pinned := b.Pinned == nil || *b.Pinned
	return noContent(w, c.svc.Pin(r.Context(), r.PathValue("id"), pinned))
}

func (s *Server) readFile(w http.ResponseWriter, r *http.Request, c *caller) error {
	limit := s.opt.MaxFileBytes
	if v := r.URL.Query().Get("max_bytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return grove.Errorf(grove.ErrInvalid, "max_bytes: want a positive integer")
		}
		limit = min(n, limit)
	}
	data, release, err := s.readLarge(r, c, limit)
	if err != nil {
		return err
	}
	defer release()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(200)
	writeChunked(w, data)
	return nil
}

func (s *Server) writeFile(w http.ResponseWriter, r *http.Request, c *caller) error {
	// A large upload is held in memory whole: it takes a slot.
	if r.ContentLength < 0 || r.ContentLength > s.lim.LargeBody {
		release, err := s.acquireSlot(c.p.User)
		if err != nil {
			return err
		}
		defer release()
	}
	// r.Body is capped at MaxFileBytes, not MaxBodyBytes (see authed).
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	return noContent(w, c.svc.WriteFile(r.Context(), r.PathValue("id"), r.PathValue("path"), data))
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, c *caller) error {
	return noContent(w, c.svc.DeleteFile(r.Context(), r.PathValue("id"), r.PathValue("path")))
}

// queryInt parses an optional non-negative integer parameter.
func queryInt(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1<<30 {
		return 0, grove.Errorf(grove.ErrInvalid, "%s: want a non-negative integer", name)
	}
	return n, nil
}

func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, grove.Errorf(grove.ErrInvalid, "%s: want true or false", name)
	}
	return b, nil
}

func (s *Server) tree(w http.ResponseWriter, r *http.Request, c *caller) error {
	depth, err := queryInt(r, "depth")
	if err != nil {
		return err
	}
	entries, err := c.svc.ListDir(r.Context(), r.PathValue("id"), r.URL.Query().Get("path"), depth)
	if err != nil {
		return err
	}
	if entries == nil {
		entries = []grove.DirEntry{}
	}
	writeJSON(w, 200, Tree{Entries: entries})
	return nil
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := r.URL.Query()
	req := grove.SearchRequest{Pattern: q.Get("pattern"), Path: q.Get("path"), Glob: q.Get("glob")}
	var err error
	for _, p := range []struct {
		name string
		dst  *int
	}{{"context", &req.Context}, {"max_results", &req.MaxResults}, {"offset", &req.Offset}} {
		if *p.dst, err = queryInt(r, p.name); err != nil {
			return err
		}
	}
	if req.FixedString, err = queryBool(r, "fixed_string"); err != nil {
		return err
	}
	if req.CaseInsensitive, err = queryBool(r, "case_insensitive"); err != nil {
		return err
	}
	if req.Offset+req.MaxResults > s.lim.MaxSearchOffset {
		return grove.Errorf(grove.ErrInvalid, "offset + max_results is over this server's cap of %d; narrow the search instead", s.lim.MaxSearchOffset)
	}
	if _, err := c.svc.Get(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	release, err := s.acquireSlot(c.p.User)
	if err != nil {
		return err
	}
	defer release()
	res, err := c.svc.Search(r.Context(), r.PathValue("id"), req)
	if err != nil {
		return err
	}
	if res.Matches == nil {
		res.Matches = []grove.SearchMatch{}
	}
	writeJSON(w, 200, res)
	return nil
}

func (s *Server) gitStatus(w http.ResponseWriter, r *http.Request, c *caller) error {
	st, err := c.svc.Status(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, 200, st)
	return nil
}

func (s *Server) gitDiff(w http.ResponseWriter, r *http.Request, c *caller) error {
	q := r.URL.Query()
	req := grove.DiffRequest{BaseRef: q.Get("base_ref"), Paths: q["path"]}
	var err error
	if req.StagedOnly, err = queryBool(r, "staged_only"); err != nil {
		return err
	}
	if req.StatOnly, err = queryBool(r, "stat_only"); err != nil {
		return err
	}
	if req.MaxBytes, err = queryInt(r, "max_bytes"); err != nil {
		return err
	}
	d, err := c.svc.Diff(r.Context(), r.PathValue("id"), req)
	if err != nil {
		return err
	}
	if d.Files == nil {
		d.Files = []grove.DiffFile{}
	}
	writeJSON(w, 200, d)
	return nil
}

func (s *Server) gitLog(w http.ResponseWriter, r *http.Request, c *caller) error {
	limit, err := queryInt(r, "limit")
	if err != nil {
		return err
	}
	commits, err := c.svc.Log(r.Context(), r.PathValue("id"), limit, r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	if commits == nil {
		commits = []grove.Commit{}
	}
	writeJSON(w, 200, CommitLog{Commits: commits})
	return nil
}

func (s *Server) gitCommit(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b grove.CommitRequest
	if err := Decode(r.Body, &b); err != nil {
		return err
	}
	res, err := c.svc.Commit(r.Context(), r.PathValue("id"), b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, res)
	return nil
}

func (s *Server) gitPush(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b PushBody
	if r.ContentLength != 0 {
		if err := Decode(r.Body, &b); err != nil {
			return err
		}
	}
	res, err := c.svc.Push(r.Context(), r.PathValue("id"), grove.PushRequest{Token: c.gitToken(b.Token), ForceWithLease: b.ForceWithLease, SetUpstream: b.SetUpstream})
	if err != nil {
		return err
	}
	writeJSON(w, 200, res)
	return nil
}

func (s *Server) listRepos(w http.ResponseWriter, r *http.Request, c *caller) error {
	rcs, err := c.svc.ListRepos(r.Context())
	if err != nil {
		return err
	}
	if rcs == nil {
		rcs = []*grove.RepoCache{}
	}
	writeJSON(w, 200, RepoList{Repos: rcs})
	return nil
}

func (s *Server) ensureRepo(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b EnsureRepoBody
	if err := Decode(r.Body, &b); err != nil {
		return err
	}
	rc, err := c.svc.EnsureRepo(r.Context(), grove.EnsureRepoRequest{Repo: b.Repo, Ref: b.Ref, Token: c.gitToken(b.Token), Refresh: b.Refresh})
	if err != nil {
		return err
	}
	writeJSON(w, 200, rc)
	return nil
}

func (s *Server) removeRepo(w http.ResponseWriter, r *http.Request, c *caller) error {
	force, err := queryBool(r, "force")
	if err != nil {
		return err
	}
	return noContent(w, c.svc.RemoveRepo(r.Context(), r.PathValue("id"), force))
}

// callTool runs a catalog tool with the same handler MCP uses. The body is
// the tool's JSON input, validated against its schema by Toolset.Call.
func (s *Server) callTool(w http.ResponseWriter, r *http.Request, c *caller) error {
	name := r.PathValue("name")
	if _, ok := s.opt.Tools.Lookup(name); !ok {
		return grove.Errorf(grove.ErrNotFound, "unknown tool %q", clip(name, 64))
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = []byte("{}")
	}
	if !json.Valid(raw) {
		return grove.Errorf(grove.ErrInvalid, "request body: malformed JSON")
	}
	// Prove the workspace is the caller's before the tool runs.
	if _, err := c.svc.Get(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	release, err := s.acquireSlot(c.p.User)
	if err != nil {
		return err
	}
	defer release()
	ctx := tools.WithCaller(r.Context(), tools.Caller{User: c.p.User, Token: c.token, Bind: c.bind})
	res, err := s.opt.Tools.Call(ctx, c.svc, r.PathValue("id"), name, raw, nil)
	if err != nil {
		return err
	}
	writeJSON(w, 200, ToolResponse{Text: res.Text, Structured: res.Structured})
	return nil
}
