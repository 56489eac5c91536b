// Package githubtest is a local HTTP server implementing the subset of
// GitHub's published REST API that Grove uses, for tests: repository
// lookup, App installation lookup and repository-scoped installation
// tokens (the App JWT's RS256 signature is verified), pull request create,
// list and get, review requests, labels, issue and review comments,
// collaborator checks — served both at the root (github.com layout) and
// under /api/v3 (GitHub Enterprise Server). Failures are injected with
// Fail. It also answers whether a token may reach a repository over git,
// so a smart-HTTP test server can authenticate pushes with it.
package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Repo is a repository the server knows.
type Repo struct {
	Owner, Name   string
	DefaultBranch string
	// Branches answers whether a branch exists and how many commits it
	// has that base lacks; nil means every branch exists with 1 commit.
	Branches func(branch, base string) (exists bool, ahead int)
	// Collaborators may be requested as reviewers.
	Collaborators []string
	// Installed says the App is installed on this repository.
	Installed bool
}

// PR is a pull request held by the server.
type PR struct {
	Number    int
	Title     string
	Body      string
	Head      string
	Base      string
	Draft     bool
	State     string
	Reviewers []string
	Labels    []string
	Comments  []Comment
}

// Comment is a top-level or inline comment.
type Comment struct {
	ID       int64
	Body     string
	Path     string
	Line     int
	CommitID string
}

type token struct {
	repos   map[string]bool // owner/name
	expires time.Time
}

// Server is the fake. Lock-protected; safe for concurrent use.
type Server struct {
	*httptest.Server
	AppID  int64
	AppKey *rsa.PublicKey
	// Tokens are static tokens (PATs, OAuth) with access to every repo;
	// ReadOnly ones get 403 on writes.
	Tokens   map[string]bool
	ReadOnly map[string]bool

	mu     sync.Mutex
	repos  map[string]*Repo
	prs    map[string][]*PR
	minted map[string]*token
	nextID int64
	fail   []int
	paths  []string
}

// New starts a server; close it with Close (t.Cleanup).
func New(appID int64, appKey *rsa.PublicKey) *Server {
	s := &Server{AppID: appID, AppKey: appKey, Tokens: map[string]bool{}, ReadOnly: map[string]bool{},
		repos: map[string]*Repo{}, prs: map[string][]*PR{}, minted: map[string]*token{}, nextID: 1000}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// AddRepo registers a repository.
func (s *Server) AddRepo(r Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.DefaultBranch == "" {
		r.DefaultBranch = "main"
	}
	s.repos[r.Owner+"/"+r.Name] = &r
}

// Fail makes the next len(statuses) API requests answer with those
// statuses: 429 and 403 come as rate limits (X-RateLimit-Remaining: 0),
// others as server errors.
func (s *Server) Fail(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = append(s.fail, statuses...)
}

// PRs returns copies of a repository's pull requests.
func (s *Server) PRs(owner, name string) []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PR
	for _, p := range s.prs[owner+"/"+name] {
		out = append(out, *p)
	}
	return out
}

// Paths lists the request paths seen, in order.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// MintedTokens lists the installation tokens minted so far.
func (s *Server) MintedTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for t := range s.minted {
		out = append(out, t)
	}
	return out
}

// SetToken grants (or, with ok false, withdraws) a static token while the
// server runs; set Tokens directly only before it serves requests.
func (s *Server) SetToken(tok string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		s.Tokens[tok] = true
	} else {
		delete(s.Tokens, tok)
	}
}

// ExpireTokens makes every minted installation token expired, as an hour
// passing would.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.minted {
		t.expires = time.Now().Add(-time.Second)
	}
}

// Allows reports whether tok may reach owner/name: a static token, or an
// unexpired installation token scoped to that repository.
func (s *Server) Allows(tok, owner, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allows(tok, owner+"/"+name)
}

func (s *Server) allows(tok, repo string) bool {
	if s.Tokens[tok] {
		return true
	}
	t, ok := s.minted[tok]
	return ok && time.Now().Before(t.expires) && t.repos[repo]
}

type apiError struct {
	Message string       `json:"message"`
	Errors  []fieldError `json:"errors,omitempty"`
}

type fieldError struct {
	Resource string `json:"resource"`
	Field    string `json:"field"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, r.Method+" "+r.URL.Path)
	if len(s.fail) > 0 {
		st := s.fail[0]
		s.fail = s.fail[1:]
		if st == 429 || st == 403 {
			w.Header().Set("X-RateLimit-Limit", "5000")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
			reply(w, st, apiError{Message: "API rate limit exceeded"})
			return
		}
		reply(w, st, apiError{Message: "server error"})
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/api/v3")
	seg := strings.Split(strings.Trim(p, "/"), "/")
	auth, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")

	// App endpoints authenticate with the App's JWT.
	if len(seg) == 4 && seg[0] == "app" && seg[1] == "installations" && seg[3] == "access_tokens" && r.Method == "POST" {
		s.mintToken(w, r, auth, seg[2])
		return
	}
	if len(seg) < 3 || seg[0] != "repos" {
		reply(w, 404, apiError{Message: "Not Found"})
		return
	}
	key := seg[1] + "/" + seg[2]
	repo := s.repos[key]
	rest := seg[3:]
	if len(rest) == 1 && rest[0] == "installation" && r.Method == "GET" {
		if !s.validJWT(auth) {
			reply(w, 401, apiError{Message: "A JSON web token could not be decoded"})
			return
		}
		if repo == nil || !repo.Installed {
			reply(w, 404, apiError{Message: "Not Found"})
			return
		}
		reply(w, 200, map[string]any{"id": 77, "app_id": s.AppID})
		return
	}
	if !s.allows(auth, key) {
		reply(w, 401, apiError{Message: "Bad credentials"})
		return
	}
	if repo == nil {
		reply(w, 404, apiError{Message: "Not Found"})
		return
	}
	if r.Method != "GET" && s.ReadOnly[auth] {
		reply(w, 403, apiError{Message: "Resource not accessible by integration"})
		return
	}
	switch {
	case len(rest) == 0 && r.Method == "GET":
		reply(w, 200, map[string]any{"name": repo.Name, "full_name": key, "default_branch": repo.DefaultBranch})
	case len(rest) == 2 && rest[0] == "collaborators" && r.Method == "GET":
		for _, c := range repo.Collaborators {
			if strings.EqualFold(c, rest[1]) {
				w.WriteHeader(204)
				return
			}
		}
		reply(w, 404, apiError{Message: "Not Found"})
	case len(rest) == 1 && rest[0] == "pulls" && r.Method == "GET":
		s.listPRs(w, r, key)
	case len(rest) == 1 && rest[0] == "pulls" && r.Method == "POST":
		s.createPR(w, r, repo, key)
	case len(rest) == 2 && rest[0] == "pulls" && r.Method == "GET":
		if pr := s.pr(key, rest[1]); pr != nil {
			reply(w, 200, s.prJSON(key, pr))
			return
		}
		reply(w, 404, apiError{Message: "Not Found"})
	case len(rest) == 3 && rest[0] == "pulls" && rest[2] == "requested_reviewers" && r.Method == "POST":
		pr := s.pr(key, rest[1])
		var b struct{ Reviewers []string }
		if pr == nil || json.NewDecoder(r.Body).Decode(&b) != nil {
			reply(w, 404, apiError{Message: "Not Found"})
			return
		}
		pr.Reviewers = append(pr.Reviewers, b.Reviewers...)
		reply(w, 201, s.prJSON(key, pr))
	case len(rest) == 3 && rest[0] == "issues" && rest[2] == "labels" && r.Method == "POST":
		pr := s.pr(key, rest[1])
		var labels []string
		if pr == nil || json.NewDecoder(r.Body).Decode(&labels) != nil {
			reply(w, 404, apiError{Message: "Not Found"})
			return
		}
		pr.Labels = append(pr.Labels, labels...)
		out := []map[string]string{}
		for _, l := range pr.Labels {
			out = append(out, map[string]string{"name": l})
		}
		reply(w, 200, out)
	case len(rest) == 3 && (rest[0] == "issues" || rest[0] == "pulls") && rest[2] == "comments" && r.Method == "POST":
		s.comment(w, r, key, rest[1], rest[0] == "pulls")
	default:
		reply(w, 404, apiError{Message: "Not Found"})
	}
}

func (s *Server) validJWT(raw string) bool {
	if raw == "" || s.AppKey == nil {
		return false
	}
	claims := &jwt.RegisteredClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return s.AppKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(strconv.FormatInt(s.AppID, 10)), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil || !tok.Valid {
		return false
	}
	// GitHub refuses JWTs valid for more than ten minutes.
	return claims.ExpiresAt.Sub(claims.IssuedAt.Time) <= 10*time.Minute
}

func (s *Server) mintToken(w http.ResponseWriter, r *http.Request, auth, inst string) {
	if !s.validJWT(auth) {
		reply(w, 401, apiError{Message: "A JSON web token could not be decoded"})
		return
	}
	if inst != "77" {
		reply(w, 404, apiError{Message: "Not Found"})
		return
	}
	var b struct {
		Repositories []string `json:"repositories"`
	}
	_ = json.NewDecoder(r.Body).Decode(&b)
	t := &token{repos: map[string]bool{}, expires: time.Now().Add(time.Hour)}
	// Scoping: only named repositories the App is installed on.
	for _, name := range b.Repositories {
		found := false
		for k, repo := range s.repos {
			if repo.Name == name && repo.Installed {
				t.repos[k] = true
				found = true
			}
		}
		if !found {
			reply(w, 422, apiError{Message: "There is at least one repository that does not exist or is not accessible to the parent installation."})
			return
		}
	}
	if len(b.Repositories) == 0 {
		for k, repo := range s.repos {
			if repo.Installed {
				t.repos[k] = true
			}
		}
	}
	var rnd [16]byte
	_, _ = rand.Read(rnd[:])
	val := "ghs_" + hex.EncodeToString(rnd[:])
	s.minted[val] = t
	reply(w, 201, map[string]any{"token": val, "expires_at": t.expires.UTC().Format(time.RFC3339)})
}

func (s *Server) pr(key, num string) *PR {
	n, _ := strconv.Atoi(num)
	for _, p := range s.prs[key] {
		if p.Number == n {
			return p
		}
	}
	return nil
}

func (s *Server) prJSON(key string, p *PR) map[string]any {
	owner := strings.Split(key, "/")[0]
	return map[string]any{
		"number": p.Number, "title": p.Title, "body": p.Body, "state": p.State, "draft": p.Draft,
		"html_url": fmt.Sprintf("%s/%s/pull/%d", s.URL, key, p.Number),
		"head":     map[string]any{"ref": p.Head, "sha": strings.Repeat("a", 40), "label": owner + ":" + p.Head},
		"base":     map[string]any{"ref": p.Base},
	}
}

func (s *Server) listPRs(w http.ResponseWriter, r *http.Request, key string) {
	q := r.URL.Query()
	out := []map[string]any{}
	for _, p := range s.prs[key] {
		state := q.Get("state")
		if state == "" {
			state = "open"
		}
		if state != "all" && p.State != state {
			continue
		}
		if h := q.Get("head"); h != "" {
			if _, ref, _ := strings.Cut(h, ":"); ref != p.Head {
				continue
			}
		}
		if b := q.Get("base"); b != "" && b != p.Base {
			continue
		}
		out = append(out, s.prJSON(key, p))
	}
	reply(w, 200, out)
}

func (s *Server) createPR(w http.ResponseWriter, r *http.Request, repo *Repo, key string) {
	var b struct {
		Title, Head, Base, Body string
		Draft                   bool
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		reply(w, 400, apiError{Message: "Problems parsing JSON"})
		return
	}
	invalid := func(field, msg string) {
		reply(w, 422, apiError{Message: "Validation Failed", Errors: []fieldError{{Resource: "PullRequest", Field: field, Code: "custom", Message: msg}}})
	}
	if b.Title == "" || len([]rune(b.Title)) > 256 {
		invalid("title", "title is invalid")
		return
	}
	exists := func(br string) (bool, int) {
		if repo.Branches == nil {
			return true, 1
		}
		return repo.Branches(br, b.Base)
	}
	if ok, _ := exists(b.Base); !ok {
		invalid("base", "base is invalid")
		return
	}
	ok, ahead := exists(b.Head)
	if !ok {
		invalid("head", "head is invalid")
		return
	}
	if ahead == 0 {
		invalid("", "No commits between "+b.Base+" and "+b.Head)
		return
	}
	for _, p := range s.prs[key] {
		if p.State == "open" && p.Head == b.Head && p.Base == b.Base {
			invalid("", "A pull request already exists for "+b.Head+".")
			return
		}
	}
	p := &PR{Number: len(s.prs[key]) + 1, Title: b.Title, Body: b.Body, Head: b.Head, Base: b.Base, Draft: b.Draft, State: "open"}
	s.prs[key] = append(s.prs[key], p)
	reply(w, 201, s.prJSON(key, p))
}

func (s *Server) comment(w http.ResponseWriter, r *http.Request, key, num string, inline bool) {
	pr := s.pr(key, num)
	if pr == nil {
		reply(w, 404, apiError{Message: "Not Found"})
		return
	}
	var b struct {
		Body     string `json:"body"`
		Path     string `json:"path"`
		Line     int    `json:"line"`
		CommitID string `json:"commit_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.Body == "" {
		reply(w, 422, apiError{Message: "Validation Failed"})
		return
	}
	if inline && (b.Path == "" || b.Line <= 0 || b.CommitID == "") {
		reply(w, 422, apiError{Message: "Validation Failed", Errors: []fieldError{{Field: "line", Code: "missing_field"}}})
		return
	}
	s.nextID++
	c := Comment{ID: s.nextID, Body: b.Body, Path: b.Path, Line: b.Line, CommitID: b.CommitID}
	pr.Comments = append(pr.Comments, c)
	kind := "issuecomment"
	if inline {
		kind = "discussion_r"
	}
	reply(w, 201, map[string]any{"id": c.ID, "body": c.Body, "html_url": fmt.Sprintf("%s/%s/pull/%d#%s-%d", s.URL, key, pr.Number, kind, c.ID)})
}

// Handler serves the API, for mounting under /api/v3 of a server that
// also speaks git (as GitHub Enterprise does).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }
