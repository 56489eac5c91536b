package github_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/credentials"
	"github.com/grove-dev/grove/platform"
	"github.com/grove-dev/grove/platform/github"
	"github.com/grove-dev/grove/platform/github/githubtest"
)

var hello = grove.RepoID{Host: "github.com", Owner: "octo", Name: "hello"}

func key(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

// setup returns the fake and a client on it, Enterprise-style (API under
// /api/v3) when enterprise is set.
func setup(t *testing.T, enterprise bool) (*githubtest.Server, *github.Client, []byte) {
	t.Helper()
	k, pemKey := key(t)
	srv := githubtest.New(42, &k.PublicKey)
	t.Cleanup(srv.Close)
	srv.AddRepo(githubtest.Repo{Owner: "octo", Name: "hello", Installed: true, Collaborators: []string{"alice"},
		Branches: func(b, base string) (bool, int) {
			switch b {
			case "main", "agent/edits-c1":
				return true, map[string]int{"main": 0, "agent/edits-c1": 2}[b]
			case "agent/empty":
				return true, 0
			}
			return false, 0
		}})
	srv.AddRepo(githubtest.Repo{Owner: "octo", Name: "other", Installed: true})
	srv.AddRepo(githubtest.Repo{Owner: "octo", Name: "private"}) // App not installed
	opt := github.Options{Backoff: time.Millisecond, Sleep: func(context.Context, time.Duration) error { return nil }}
	if enterprise {
		opt.BaseURL = srv.URL
	} else {
		opt.APIURL = srv.URL
	}
	c, err := github.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, pemKey
}

func TestAppTokenScopedToRepo(t *testing.T) {
	srv, c, pemKey := setup(t, false)
	ctx := context.Background()
	app, err := credentials.NewApp(42, "grove", pemKey, c)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := app.Credential(ctx, credentials.Request{Repo: hello})
	if err != nil {
		t.Fatal(err)
	}
	if !srv.Allows(cred.Token, "octo", "hello") || srv.Allows(cred.Token, "octo", "other") {
		t.Fatal("token not scoped to exactly the one repository")
	}
	// Not installed: a typed error, no token.
	_, err = app.Credential(ctx, credentials.Request{Repo: grove.RepoID{Host: "github.com", Owner: "octo", Name: "private"}})
	if !errors.Is(err, platform.ErrAppNotInstalled) || !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("not installed = %v", err)
	}
	// A JWT signed with another key is refused by the server.
	_, otherPEM := key(t)
	impostor, _ := credentials.NewApp(42, "grove", otherPEM, c)
	if _, err := impostor.Credential(ctx, credentials.Request{Repo: hello}); !errors.Is(err, grove.ErrAuthFailed) {
		t.Fatalf("wrong key = %v, want ErrAuthFailed", err)
	}
	if n := len(srv.MintedTokens()); n != 1 {
		t.Fatalf("%d tokens minted, want 1", n)
	}
}

func TestPullRequests(t *testing.T) {
	for _, enterprise := range []bool{false, true} {
		t.Run(map[bool]string{false: "github.com", true: "enterprise"}[enterprise], func(t *testing.T) {
			srv, c, _ := setup(t, enterprise)
			srv.Tokens["pat"] = true
			srv.Tokens["ro"] = true
			srv.ReadOnly["ro"] = true
			ctx := context.Background()
			repo := hello
			if enterprise {
				repo.Host = c.Host()
			}
			if !c.Serves(repo) || c.Serves(grove.RepoID{Host: "gitlab.com", Owner: "o", Name: "r"}) {
				t.Fatal("Serves is wrong")
			}
			if b, err := c.DefaultBranch(ctx, repo, "pat"); err != nil || b != "main" {
				t.Fatalf("default branch = %q, %v", b, err)
			}
			spec := platform.PullRequestSpec{Head: "agent/edits-c1", Base: "main", Title: "Add things", Body: "why", Reviewers: []string{"alice"}, Labels: []string{"agent"}, Draft: true}
			pr, err := c.CreatePullRequest(ctx, repo, "pat", spec)
			if err != nil || !pr.Created || pr.Number != 1 || pr.Head != spec.Head || !strings.Contains(pr.URL, "/pull/1") {
				t.Fatalf("create = %+v, %v", pr, err)
			}
			again, err := c.CreatePullRequest(ctx, repo, "pat", spec)
			if err != nil || again.Created || again.Number != 1 {
				t.Fatalf("second create = %+v, %v", again, err)
			}
			got := srv.PRs("octo", "hello")
			if len(got) != 1 || got[0].Reviewers[0] != "alice" || got[0].Labels[0] != "agent" || !got[0].Draft {
				t.Fatalf("server holds %+v", got)
			}
			cm, err := c.CommentPullRequest(ctx, repo, "pat", grove.CommentRequest{Number: 1, Body: "top"})
			if err != nil || cm.ID == 0 || !strings.Contains(cm.URL, "issuecomment") {
				t.Fatalf("comment = %+v, %v", cm, err)
			}
			cm, err = c.CommentPullRequest(ctx, repo, "pat", grove.CommentRequest{Number: 1, Body: "inline", Path: "a.txt", Line: 3})
			if err != nil || !strings.Contains(cm.URL, "discussion_r") {
				t.Fatalf("inline = %+v, %v", cm, err)
			}
			if cs := srv.PRs("octo", "hello")[0].Comments; len(cs) != 2 || cs[1].CommitID == "" || cs[1].Line != 3 {
				t.Fatalf("comments %+v", cs)
			}

			bad := []struct {
				name  string
				token string
				spec  platform.PullRequestSpec
				want  error
			}{
				{"unknown reviewer", "pat", platform.PullRequestSpec{Head: "agent/x", Base: "main", Title: "t", Reviewers: []string{"ghost"}}, platform.ErrUnknownReviewer},
				{"title too long", "pat", platform.PullRequestSpec{Head: "agent/edits-c1", Base: "dev", Title: strings.Repeat("é", 257)}, platform.ErrTitleTooLong},
				{"not pushed", "pat", platform.PullRequestSpec{Head: "agent/nope", Base: "main", Title: "t"}, platform.ErrBranchNotPushed},
				{"no base", "pat", platform.PullRequestSpec{Head: "agent/edits-c1", Base: "nope", Title: "t"}, platform.ErrBaseNotFound},
				{"no commits", "pat", platform.PullRequestSpec{Head: "agent/empty", Base: "main", Title: "t"}, platform.ErrNoCommits},
				{"read-only token", "ro", platform.PullRequestSpec{Head: "agent/edits-c1", Base: "other", Title: "t"}, platform.ErrPermission},
				{"bad token", "ghp_badtoken123", platform.PullRequestSpec{Head: "agent/edits-c1", Base: "main", Title: "t"}, grove.ErrAuthFailed},
			}
			for _, b := range bad {
				_, err := c.CreatePullRequest(ctx, repo, b.token, b.spec)
				if !errors.Is(err, b.want) {
					t.Errorf("%s: err = %v, want %v", b.name, err, b.want)
				}
				if err != nil && strings.Contains(err.Error(), b.token) && len(b.token) > 3 {
					t.Errorf("%s: error quotes the token", b.name)
				}
			}
			if n := len(srv.PRs("octo", "hello")); n != 1 {
				t.Fatalf("bad input created pull requests: %d", n)
			}
			for _, p := range srv.Paths() {
				if strings.HasPrefix(strings.Fields(p)[1], "/api/v3/") != enterprise {
					t.Fatalf("request %q not routed for enterprise=%v", p, enterprise)
				}
			}
		})
	}
}

func TestRetries(t *testing.T) {
	srv, c, _ := setup(t, false)
	srv.Tokens["pat"] = true
	ctx := context.Background()
	// Rate limits and a 502 are retried, then the call succeeds.
	srv.Fail(429, 403, 502)
	if b, err := c.DefaultBranch(ctx, hello, "pat"); err != nil || b != "main" {
		t.Fatalf("after retries = %q, %v", b, err)
	}
	// Failing every attempt surfaces as unavailable.
	srv.Fail(503, 503, 503, 503)
	before := len(srv.Paths())
	_, err := c.DefaultBranch(ctx, hello, "pat")
	if !errors.Is(err, grove.ErrUnavailable) {
		t.Fatalf("exhausted = %v", err)
	}
	if n := len(srv.Paths()) - before; n != 4 {
		t.Fatalf("%d attempts, want 4", n)
	}
	srv.Fail(429, 429, 429, 429)
	if _, err := c.DefaultBranch(ctx, hello, "pat"); !errors.Is(err, grove.ErrUnavailable) {
		t.Fatalf("rate limited = %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	for _, u := range []string{"ftp://x", "https://user:pw@ghe.example.com", "::"} {
		if _, err := github.New(github.Options{BaseURL: u}); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("%q: %v", u, err)
		}
	}
	c, err := github.New(github.Options{BaseURL: "https://ghe.example.com"})
	if err != nil || c.Host() != "ghe.example.com" {
		t.Fatal(err)
	}
}
