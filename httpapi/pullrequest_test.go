package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/client"
	"github.com/grove-dev/grove/credentials"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/platform/github"
	"github.com/grove-dev/grove/platform/github/githubtest"
)

// prFixture is the API over an engine whose repository lives on a GitHub
// Enterprise look-alike, with a GitHub App as the only credential, and an
// edit workspace of alice's with one commit ready to push.
type prFixture struct {
	*fixture
	ghe *githubtest.Enterprise
	ws  string // "/v1/workspaces/<id>"
	id  string
}

func newPRFixture(t *testing.T) *prFixture {
	t.Helper()
	ghe := githubtest.NewEnterprise(t, 7)
	ghe.ServeRepo(t, "octo", "hello", sourceRepo(t), "alice")
	gh, err := github.New(github.Options{BaseURL: ghe.URL})
	if err != nil {
		t.Fatal(err)
	}
	app, err := credentials.NewApp(7, "grove-bot", ghe.AppPEM, gh)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, httpapi.Options{}, func(c *engine.Config) {
		c.BaseURL = ghe.URL
		c.Platform = gh
		c.Credentials = &credentials.Chain{Sources: []credentials.Source{app}, Hosts: []string{gh.Host()}}
	})
	r := f.do(t, f.alice, "POST", "/v1/workspaces", map[string]any{"repo": "octo/hello", "project": "p", "mode": "edit", "conversation": "pr"})
	if r.status != 201 {
		t.Fatalf("acquire: %d %s", r.status, r.body)
	}
	var ws struct{ ID string }
	json.Unmarshal(r.body, &ws)
	p := &prFixture{fixture: f, ghe: ghe, ws: "/v1/workspaces/" + ws.ID, id: ws.ID}
	for _, step := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"PUT", p.ws + "/files/feature.txt", "new\n", 204},
		{"POST", p.ws + "/git/commit", map[string]any{"message": "Add feature"}, 201},
	} {
		if r := f.do(t, f.alice, step.method, step.path, step.body); r.status != step.status {
			t.Fatalf("%s %s: %d %s", step.method, step.path, r.status, r.body)
		}
	}
	return p
}

func TestPullRequestsOverHTTP(t *testing.T) {
	f := newPRFixture(t)
	pr := map[string]any{"title": "Add feature", "body": "why", "reviewers": []string{"alice"}}

	// Not pushed yet: a typed 404, nothing created.
	if r := f.do(t, f.alice, "POST", f.ws+"/pulls", pr); r.status != 404 || r.errCode(t) != "E_NOT_FOUND" {
		t.Fatalf("PR before push: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "POST", f.ws+"/git/push", nil); r.status != 200 {
		t.Fatalf("push: %d %s", r.status, r.body)
	}
	r := f.do(t, f.alice, "POST", f.ws+"/pulls", pr)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var got grove.PullRequest
	json.Unmarshal(r.body, &got)
	if !got.Created || got.Number != 1 || got.Head != "agent/edits-pr" || got.Credential != "app" {
		t.Fatalf("created %+v", got)
	}
	// Idempotent: 200 and created=false, also through the tool endpoint.
	if r := f.do(t, f.alice, "POST", f.ws+"/pulls", pr); r.status != 200 {
		t.Fatalf("repeat: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "POST", f.ws+"/tools/create_pull_request", map[string]any{"title": "Add feature"}); r.status != 200 {
		t.Fatalf("tool: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "POST", f.ws+"/pulls/1/comments", map[string]any{"body": "inline", "path": "feature.txt", "line": 1}); r.status != 201 {
		t.Fatalf("comment: %d %s", r.status, r.body)
	}
	if r := f.do(t, f.alice, "POST", f.ws+"/tools/comment_pull_request", map[string]any{"pr_number": 1, "body": "top"}); r.status != 200 {
		t.Fatalf("comment tool: %d %s", r.status, r.body)
	}
	prs := f.ghe.PRs("octo", "hello")
	if len(prs) != 1 || len(prs[0].Comments) != 2 {
		t.Fatalf("the platform holds %+v", prs)
	}

	// Bad input and other users: clear 4xx, nothing created.
	for _, tc := range []struct {
		key, path string
		body      any
		status    int
	}{
		{f.bob, f.ws + "/pulls", pr, 404},
		{f.bob, f.ws + "/pulls/1/comments", map[string]any{"body": "x"}, 404},
		{f.alice, f.ws + "/pulls", map[string]any{"title": "t", "unknown": 1}, 400},
		{f.alice, f.ws + "/pulls/0/comments", map[string]any{"body": "x"}, 400},
		{f.alice, f.ws + "/pulls/x/comments", map[string]any{"body": "x"}, 400},
		{f.alice, f.ws + "/pulls/1/comments", map[string]any{"body": "x", "path": "feature.txt"}, 400},
	} {
		if r := f.do(t, tc.key, "POST", tc.path, tc.body); r.status != tc.status {
			t.Errorf("POST %s as %s: %d %s, want %d", tc.path, tc.key[:10], r.status, r.body, tc.status)
		}
	}
	if prs := f.ghe.PRs("octo", "hello"); len(prs) != 1 || len(prs[0].Comments) != 2 {
		t.Fatalf("bad input changed the platform: %+v", prs)
	}

	// The Go client speaks it too, with kinds across the wire.
	c := client.New(f.srv.URL, f.alice, nil)
	again, err := c.CreatePullRequest(context.Background(), f.id, grove.CreatePullRequestRequest{Title: "Add feature"})
	if err != nil || again.Created || again.Number != 1 {
		t.Fatalf("client create: %v %+v", err, again)
	}
	if _, err := client.New(f.srv.URL, f.bob, nil).CreatePullRequest(context.Background(), f.id, grove.CreatePullRequestRequest{Title: "t"}); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("bob through the client: %v", err)
	}
}

func TestPullRequestsWithoutAPlatform(t *testing.T) {
	f := newFixture(t, httpapi.Options{})
	id := f.acquire(t, f.alice, "c1")
	r := f.do(t, f.alice, "POST", "/v1/workspaces/"+id+"/pulls", map[string]any{"title": "t"})
	if r.status != 501 || r.errCode(t) != "E_PLATFORM_NOT_CONFIGURED" {
		t.Fatalf("no platform: %d %s", r.status, r.body)
	}
	_, err := client.New(f.srv.URL, f.alice, nil).CreatePullRequest(context.Background(), id, grove.CreatePullRequestRequest{Title: "t"})
	if !errors.Is(err, grove.ErrPlatformNotConfigured) {
		t.Fatalf("client: %v", err)
	}
}

// The agent's path: git_push, create_pull_request and comment_pull_request
// over MCP (streamable HTTP, bound to the workspace) against the platform.
func TestPullRequestToolsOverMCP(t *testing.T) {
	f := newPRFixture(t)
	cs := f.mcpSession(t, f.alice, f.ws+"/mcp")
	if isErr, text, _ := call(t, cs, "create_pull_request", map[string]any{"title": "Add feature"}); !isErr || !strings.HasPrefix(text, "E_NOT_FOUND") {
		t.Fatalf("PR before push: isError=%v %s", isErr, text)
	}
	if isErr, text, out := call(t, cs, "git_push", map[string]any{}); isErr || out["credential"] != "app" {
		t.Fatalf("git_push: %v %s %v", isErr, text, out)
	}
	isErr, text, out := call(t, cs, "create_pull_request", map[string]any{"title": "Add feature", "labels": []string{"agent"}})
	if isErr || out["created"] != true || out["number"] != float64(1) {
		t.Fatalf("create_pull_request: %v %s %v", isErr, text, out)
	}
	if isErr, text, _ := call(t, cs, "comment_pull_request", map[string]any{"pr_number": 1, "body": "done", "path": "feature.txt", "line": 1}); isErr {
		t.Fatalf("comment_pull_request: %s", text)
	}
	if isErr, text, _ := call(t, cs, "comment_pull_request", map[string]any{"pr_number": 1, "body": "x", "line": 1}); !isErr || !strings.HasPrefix(text, "E_INVALID_ARGUMENT") {
		t.Fatalf("line without path: isError=%v %s", isErr, text)
	}
	prs := f.ghe.PRs("octo", "hello")
	if len(prs) != 1 || len(prs[0].Comments) != 1 || len(prs[0].Labels) != 1 {
		t.Fatalf("the platform holds %+v", prs)
	}
}

// With a platform but no credential for the repository, a pull request is
// E_PLATFORM_NOT_CONFIGURED and the platform is never called: an anonymous
// request could only fail, and its 401 read as "the credential was
// rejected".
func TestPullRequestWithoutCredential(t *testing.T) {
	ghe := githubtest.NewEnterprise(t, 7)
	ghe.ServeRepo(t, "octo", "hello", sourceRepo(t), "alice")
	gh, err := github.New(github.Options{BaseURL: ghe.URL})
	if err != nil {
		t.Fatal(err)
	}
	app, err := credentials.NewApp(7, "grove-bot", ghe.AppPEM, gh)
	if err != nil {
		t.Fatal(err)
	}
	// The App clones the repository, then is taken away.
	chain := &credentials.Chain{Sources: []credentials.Source{app}, Hosts: []string{gh.Host()}}
	f := newFixtureWith(t, httpapi.Options{}, func(c *engine.Config) {
		c.BaseURL, c.Platform, c.Credentials = ghe.URL, gh, chain
	})
	r := f.do(t, f.alice, "POST", "/v1/workspaces", map[string]any{"repo": "octo/hello", "project": "p", "conversation": "nocred"})
	if r.status != 201 {
		t.Fatalf("acquire: %d %s", r.status, r.body)
	}
	var ws struct{ ID string }
	json.Unmarshal(r.body, &ws)
	chain.Sources = nil
	before := len(ghe.Paths())

	r = f.do(t, f.alice, "POST", "/v1/workspaces/"+ws.ID+"/pulls", map[string]any{"title": "t"})
	if r.status != 501 || r.errCode(t) != "E_PLATFORM_NOT_CONFIGURED" {
		t.Fatalf("pulls: %d %s", r.status, r.body)
	}
	r = f.do(t, f.alice, "POST", "/v1/workspaces/"+ws.ID+"/tools/create_pull_request", map[string]any{"title": "t"})
	if r.status != 501 || r.errCode(t) != "E_PLATFORM_NOT_CONFIGURED" {
		t.Fatalf("create_pull_request: %d %s", r.status, r.body)
	}
	r = f.do(t, f.alice, "POST", "/v1/workspaces/"+ws.ID+"/tools/comment_pull_request", map[string]any{"pr_number": 1, "body": "x"})
	if r.status != 501 || r.errCode(t) != "E_PLATFORM_NOT_CONFIGURED" {
		t.Fatalf("comment_pull_request: %d %s", r.status, r.body)
	}
	if after := ghe.Paths(); len(after) != before {
		t.Fatalf("the platform was called: %v", after[before:])
	}
}
