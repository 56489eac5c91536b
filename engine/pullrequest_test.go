package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/credentials"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/platform/github"
	"github.com/grove-dev/grove/platform/github/githubtest"
	"github.com/grove-dev/grove/provider/local"
	"github.com/grove-dev/grove/store/memory"
	"github.com/grove-dev/grove/tools"
)

// TestPullRequestEndToEnd runs a GitHub Enterprise look-alike — git
// http-backend for git, the fake REST API under /api/v3, both accepting
// only tokens the fake minted for the repository — and drives git_push,
// create_pull_request and comment_pull_request through the tool catalog
// over a real engine whose only credential is a GitHub App.
func TestPullRequestEndToEnd(t *testing.T) {
	fake := githubtest.NewEnterprise(t, 42)
	served := fake.ServeRepo(t, "octo", "hello", sourceRepo(t), "alice")
	ghe := fake

	gh, err := github.New(github.Options{BaseURL: ghe.URL})
	if err != nil {
		t.Fatal(err)
	}
	app, err := credentials.NewApp(42, "grove-bot", fake.AppPEM, gh)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	logs := &lockedBuilder{}
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o700)
	git := &gitrepo.Git{Home: home}
	prov := local.New(&gitrepo.Caches{Git: git, Root: filepath.Join(root, "repos")}, fsops.Options{})
	os.MkdirAll(filepath.Join(root, "rt"), 0o700)
	name, email := credentials.BotIdentity("grove-bot", gh.Host())
	eng, err := engine.New(engine.Config{
		Store: memory.New(), Provider: prov, AllowUnisolatedWrites: true, BaseURL: ghe.URL,
		Driver:      subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: filepath.Join(root, "rt")}),
		Credentials: &credentials.Chain{Sources: []credentials.Source{app}, Hosts: []string{gh.Host()}},
		Platform:    gh, ProtectedBranches: []string{"release/*"},
		BotIdentity: gitrepo.Identity{Name: name, Email: email},
		Logger:      slogTo(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := tools.New(tools.Options{})
	defer ts.Close()
	ctx := tools.WithCaller(context.Background(), tools.Caller{User: "alice"})
	call := func(ws, tool string, in any) (*tools.Result, error) {
		b, _ := json.Marshal(in)
		return ts.Call(ctx, eng, ws, tool, b, nil)
	}
	open, err := call("", "workspace_open", map[string]any{"repo": "octo/hello", "mode": "edit", "conversation": "c1"})
	if err != nil {
		t.Fatal(err)
	}
	ws := open.Structured.(tools.WorkspaceOpenOutput).ID

	// No commits yet and not pushed: typed errors, nothing created.
	if _, err := call(ws, "create_pull_request", map[string]any{"title": "t"}); tools.Code(err) != "E_NOT_FOUND" {
		t.Fatalf("unpushed PR = %v", err)
	}
	if _, err := call(ws, "write_file", map[string]any{"path": "feature.txt", "content": "new\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(ws, "git_commit", map[string]any{"message": "Add feature"}); err != nil {
		t.Fatal(err)
	}
	res, err := call(ws, "git_push", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if pr := res.Structured.(grove.PushResult); !pr.CreatedBranch || pr.Credential != "app" {
		t.Fatalf("push = %+v", pr)
	}
	if got := run(t, served, "git", "log", "-1", "--format=%an <%ae>", "agent/edits-c1"); got != "grove-bot[bot] <grove-bot[bot]@users.noreply.127.0.0.1>" && !strings.HasPrefix(got, "grove-bot[bot] <grove-bot[bot]@users.noreply.") {
		t.Errorf("author = %q", got)
	}

	// The installation token expires mid-session: the push re-mints.
	fake.ExpireTokens()
	if _, err := call(ws, "write_file", map[string]any{"path": "feature.txt", "content": "newer\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(ws, "git_commit", map[string]any{"message": "More"}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(ws, "git_push", map[string]any{}); err != nil {
		t.Fatalf("push after expiry = %v", err)
	}

	// Bad input: nothing created.
	for _, tc := range []struct {
		in   map[string]any
		code string
	}{
		{map[string]any{"title": strings.Repeat("x", 300)}, "E_INVALID_ARGUMENT"},
		{map[string]any{"title": "t", "reviewers": []string{"ghost"}}, "E_INVALID_ARGUMENT"},
		{map[string]any{"title": "t", "base_branch": "nope"}, "E_NOT_FOUND"},
	} {
		if _, err := call(ws, "create_pull_request", tc.in); tools.Code(err) != tc.code {
			t.Errorf("%v = %v, want %s", tc.in, err, tc.code)
		}
	}
	if n := len(fake.PRs("octo", "hello")); n != 0 {
		t.Fatalf("bad input created %d pull requests", n)
	}

	in := map[string]any{"title": "Add feature", "body": "why", "reviewers": []string{"alice"}, "labels": []string{"agent"}}
	res, err = call(ws, "create_pull_request", in)
	if err != nil {
		t.Fatal(err)
	}
	out := res.Structured.(tools.CreatePullRequestOutput)
	if !out.Created || out.Number != 1 {
		t.Fatalf("create = %+v", out)
	}
	res, err = call(ws, "create_pull_request", in)
	if err != nil || res.Structured.(tools.CreatePullRequestOutput).Created {
		t.Fatalf("second create = %+v, %v", res, err)
	}
	if _, err := call(ws, "comment_pull_request", map[string]any{"pr_number": 1, "body": "inline", "path": "feature.txt", "line": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(ws, "comment_pull_request", map[string]any{"pr_number": 1, "body": "top"}); err != nil {
		t.Fatal(err)
	}
	prs := fake.PRs("octo", "hello")
	if len(prs) != 1 || prs[0].Base != "main" || prs[0].Head != "agent/edits-c1" || len(prs[0].Comments) != 2 || prs[0].Reviewers[0] != "alice" {
		t.Fatalf("server holds %+v", prs)
	}

	// Read-only workspaces are refused before any request.
	ana, err := call("", "workspace_open", map[string]any{"repo": "octo/hello", "mode": "analysis"})
	if err != nil {
		t.Fatal(err)
	}
	before := len(fake.Paths())
	anaID := ana.Structured.(tools.WorkspaceOpenOutput).ID
	if _, err := eng.CreatePullRequest(context.Background(), anaID, grove.CreatePullRequestRequest{Title: "t"}); !errors.Is(err, grove.ErrReadOnly) {
		t.Fatalf("analysis PR = %v", err)
	}
	if len(fake.Paths()) != before {
		t.Fatal("read-only refusal made a request")
	}
	// The default branch and protected patterns are refused.
	mainWS, _, err := eng.Acquire(context.Background(), grove.AcquireRequest{Repo: "octo/hello", User: "alice", Project: "p", Mode: grove.ModeTask, Task: "t1", Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Push(context.Background(), mainWS.ID, grove.PushRequest{}); !errors.Is(err, grove.ErrForbidden) {
		t.Fatalf("push to main = %v", err)
	}

	// No minted token is anywhere on disk or in the logs.
	minted := fake.MintedTokens()
	if len(minted) < 2 {
		t.Fatalf("minted %d tokens; expected a re-mint after expiry", len(minted))
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, tok := range minted {
			if strings.Contains(string(b), tok) {
				t.Errorf("token found in %s", p)
			}
		}
		return nil
	})
	for _, tok := range minted {
		if strings.Contains(logs.String(), tok) {
			t.Error("token in logs")
		}
	}
	if !strings.Contains(logs.String(), "credential=app") {
		t.Errorf("logs do not name the credential kind:\n%s", logs)
	}
}

type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func slogTo(w *lockedBuilder) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
