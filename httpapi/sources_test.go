package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/httpapi"
)

// TestAttackRepositorySources: an API caller names the server's disk and
// internal network every way it can, through POST /v1/workspaces,
// POST /v1/repos, the workspace list filter and MCP's workspace_open. Local
// paths outside GROVE_LOCAL_REPO_ROOTS all get one answer, whatever is
// there; hosts outside the allow-list are refused before git runs.
func TestAttackRepositorySources(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	allowedDir := filepath.Dir(f.repo)
	other := sourceRepo(t) // a repository outside every allowed root
	// Grove's own cache, which an earlier acquire created.
	f.acquire(t, f.alice, "c0")
	var caches httpapi.RepoList
	r := f.do(t, f.admin, "GET", "/v1/repos", nil)
	json.Unmarshal(r.body, &caches)
	if len(caches.Repos) != 1 || caches.Repos[0].LocalPath == "" {
		t.Fatalf("admin repo list: %s", r.body)
	}
	groveCache := caches.Repos[0].LocalPath
	link := filepath.Join(allowedDir, "link-out")
	os.Symlink(other, link) // a symlink inside the allowed root to a repository outside it

	local := []string{
		other,
		"file://" + other,
		"file://localhost" + other,
		"file://elsewhere" + other,
		other + "/.git",
		filepath.Join(other, "missing"),
		"/nonexistent/repo",
		"/etc",
		"/",
		"/proc/self/cwd",
		groveCache,
		filepath.Dir(groveCache),
		"file://" + groveCache,
		link,
		filepath.Dir(other) + "/../" + filepath.Base(allowedDir) + "/upstream", // '..' into the allowed root
		allowedDir + "/./upstream",
		"upstream", "./upstream", "~/x/upstream", "../../etc",
	}
	want := ""
	for _, repo := range local {
		for _, route := range []struct{ method, path string }{{"POST", "/v1/workspaces"}, {"POST", "/v1/repos"}} {
			body := map[string]any{"repo": repo}
			if route.path == "/v1/workspaces" {
				body = map[string]any{"repo": repo, "project": "p", "mode": "analysis"}
			}
			r := f.do(t, f.alice, route.method, route.path, body)
			if r.status != 404 {
				t.Errorf("%s %s %q: %d %s", route.method, route.path, repo, r.status, r.body)
				continue
			}
			var e httpapi.ErrorBody
			json.Unmarshal(r.body, &e)
			got := e.Error.Code + ": " + e.Error.Message
			if want == "" {
				want = got
			}
			if got != want {
				t.Errorf("%s %q answers %s, another path answered %s", route.path, repo, r.body, want)
			}
		}
	}
	if !strings.Contains(want, gitrepo.NotAccessibleMessage) || strings.Contains(want, "/") {
		t.Errorf("refusal = %s", want)
	}
	// The list filter takes a repository too: no probing there either.
	for _, repo := range []string{other, "/nonexistent/repo"} {
		if r := f.do(t, f.alice, "GET", "/v1/workspaces?repo="+repo, nil); r.status != 404 || !strings.Contains(string(r.body), gitrepo.NotAccessibleMessage) {
			t.Errorf("list filter %q: %d %s", repo, r.status, r.body)
		}
	}

	hosts := []struct {
		repo string
		code string
	}{
		{"http://127.0.0.1:1/o/r", "E_FORBIDDEN"},
		{"http://localhost/o/r", "E_FORBIDDEN"},
		{"http://2130706433/o/r", "E_FORBIDDEN"},
		{"http://0x7f.1/o/r", "E_FORBIDDEN"},
		{"http://0177.0.0.1/o/r", "E_FORBIDDEN"},
		{"http://127.1/o/r", "E_FORBIDDEN"},
		{"http://169.254.169.254/latest/meta-data", "E_FORBIDDEN"},
		{"http://metadata.google.internal/o/r", "E_FORBIDDEN"},
		{"https://evil.example/o/r", "E_FORBIDDEN"},
		{"git@evil.example:o/r", "E_FORBIDDEN"},
		{"ssh://git@10.0.0.1/o/r", "E_FORBIDDEN"},
		{"git://evil.example/o/r", "E_FORBIDDEN"},
		{"http://[::1]/o/r", "E_INVALID_ARGUMENT"},
		{"https://user:secret@github.com/o/r", "E_INVALID_ARGUMENT"},
		{"https://token@evil.example/o/r", "E_INVALID_ARGUMENT"},
		{"ext::sh -c id", "E_INVALID_ARGUMENT"},
	}
	for _, h := range hosts {
		r := f.do(t, f.alice, "POST", "/v1/workspaces", map[string]any{"repo": h.repo, "project": "p", "mode": "analysis"})
		if got := r.errCode(t); got != h.code {
			t.Errorf("%q: %d %s, want %s", h.repo, r.status, r.body, h.code)
		}
	}

	// MCP over HTTP is a network caller too.
	cs := f.mcpSession(t, f.alice, "/v1/mcp")
	for _, repo := range []string{other, "/etc", "http://169.254.169.254/o/r"} {
		if isErr, text, _ := call(t, cs, "workspace_open", map[string]any{"repo": repo, "mode": "analysis"}); !isErr || strings.Contains(text, other) {
			t.Errorf("MCP workspace_open %q: error=%v %s", repo, isErr, text)
		}
	}
}

// TestAttackRedirectToDisallowedHost: an allowed git host answers with a
// redirect to a host that is not allowed; git must not follow it.
func TestAttackRedirectToDisallowedHost(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "should never be reached", 500)
	}))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(target.URL, "127.0.0.1", "localhost", 1)+r.URL.Path+"?"+r.URL.RawQuery, http.StatusFound)
	}))
	defer redirector.Close()
	host := strings.TrimPrefix(redirector.URL, "http://")
	f := newFixtureWith(t, httpapi.Options{}, func(c *engine.Config) { c.AllowedGitHosts = []string{host} })
	r := f.do(t, f.alice, "POST", "/v1/workspaces", map[string]any{"repo": redirector.URL + "/o/r.git", "project": "p", "mode": "analysis"})
	if r.status < 400 {
		t.Fatalf("acquire through a redirect: %d %s", r.status, r.body)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("git followed the redirect: the disallowed host got %d requests", n)
	}
	// Not listed at all: refused before any connection.
	r = f.do(t, f.alice, "POST", "/v1/repos", map[string]any{"repo": target.URL + "/o/r.git"})
	if r.errCode(t) != "E_FORBIDDEN" || hits.Load() != 0 {
		t.Fatalf("unlisted host: %d %s (hits %d)", r.status, r.body, hits.Load())
	}
}

// TestHostPathsOnlyForAdmins: Workspace and RepoCache paths (and a local
// cache's URL) reach only admins.
func TestHostPathsOnlyForAdmins(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	r := f.do(t, f.alice, "POST", "/v1/workspaces", map[string]any{"repo": f.repo, "project": "p", "mode": "edit", "conversation": "c1"})
	if r.status != 201 {
		t.Fatalf("acquire: %d %s", r.status, r.body)
	}
	var ws struct{ ID string }
	json.Unmarshal(r.body, &ws)
	leaks := func(who string, r resp) {
		t.Helper()
		if strings.Contains(string(r.body), f.repo) || strings.Contains(string(r.body), os.TempDir()) {
			t.Errorf("%s: host path in %s", who, r.body)
		}
	}
	leaks("acquire", r)
	leaks("show", f.do(t, f.alice, "GET", "/v1/workspaces/"+ws.ID, nil))
	leaks("list", f.do(t, f.alice, "GET", "/v1/workspaces", nil))
	leaks("repos", f.do(t, f.alice, "GET", "/v1/repos", nil))
	leaks("ensure", f.do(t, f.alice, "POST", "/v1/repos", map[string]any{"repo": f.repo}))
	cs := f.mcpSession(t, f.alice, "/v1/mcp")
	if _, text, st := call(t, cs, "workspace_open", map[string]any{"repo": f.repo, "mode": "edit", "conversation": "c1"}); strings.Contains(text, os.TempDir()) || st["root"] != nil && st["root"] != "" {
		t.Errorf("MCP workspace_open shows a host path: %s %v", text, st)
	}

	for _, p := range []string{"/v1/workspaces/" + ws.ID, "/v1/repos"} {
		if r := f.do(t, f.admin, "GET", p, nil); !strings.Contains(string(r.body), `"path":"/`) {
			t.Errorf("admin %s: no path in %s", p, r.body)
		}
	}
}
