package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/provider/local"
	"github.com/grove-dev/grove/store/memory"
	"github.com/grove-dev/grove/tools"
)

type fixture struct {
	srv        *httptest.Server
	alice, bob string // API keys
	admin      string // an operator's key
	revoked    string
	repo       string // upstream repo path
}

func newFixture(t *testing.T, opt httpapi.Options) *fixture {
	t.Helper()
	return newFixtureWith(t, opt, nil)
}

// newFixtureWith is newFixture with a hook that adjusts the engine's
// configuration (a git platform, credentials) before it is built.
func newFixtureWith(t *testing.T, opt httpapi.Options, tune func(*engine.Config)) *fixture {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o700)
	os.MkdirAll(filepath.Join(root, "rt"), 0o700)
	git := &gitrepo.Git{Home: home, Identity: gitrepo.Identity{Name: "Test Agent", Email: "agent@example.invalid"}}
	prov := local.New(&gitrepo.Caches{Git: git, Root: filepath.Join(root, "repos")}, fsops.Options{})
	drv := subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: filepath.Join(root, "rt")})
	st := memory.New()
	f := &fixture{repo: sourceRepo(t)}
	// Callers here come over HTTP: the upstream's directory is an allowed
	// local repository root, as an operator would list it.
	cfg := engine.Config{Store: st, Provider: prov, Driver: drv, AllowUnisolatedWrites: true,
		DataRoot: root, LocalRepoRoots: []string{filepath.Dir(f.repo)}}
	if tune != nil {
		tune(&cfg)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	keys := &auth.Keys{Store: st}
	ctx := context.Background()
	_, f.alice, _ = keys.Create(ctx, "alice", false)
	_, f.bob, _ = keys.Create(ctx, "bob", false)
	_, f.admin, _ = keys.Create(ctx, "ops", true)
	rec, rev, _ := keys.Create(ctx, "carol", false)
	keys.Revoke(ctx, rec.ID)
	f.revoked = rev
	ts := tools.New(tools.Options{})
	t.Cleanup(ts.Close)
	opt.Service, opt.Tools, opt.Auth = eng, ts, keys
	f.srv = httptest.NewServer(httpapi.New(opt))
	t.Cleanup(f.srv.Close)
	return f
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) errCode(t *testing.T) string {
	t.Helper()
	var e httpapi.ErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("status %d body %q is not the error shape: %v", r.status, r.body, err)
	}
	return e.Error.Code
}

func (f *fixture) do(t *testing.T, key, method, path string, body any, hdr ...string) resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, b}
}

// acquire makes an edit workspace for key and returns its id.
func (f *fixture) acquire(t *testing.T, key, conv string) string {
	t.Helper()
	r := f.do(t, key, "POST", "/v1/workspaces", map[string]any{"repo": f.repo, "project": "p", "mode": "edit", "conversation": conv})
	if r.status != 201 && r.status != 200 {
		t.Fatalf("acquire: %d %s", r.status, r.body)
	}
	var ws struct{ ID string }
	json.Unmarshal(r.body, &ws)
	return ws.ID
}

func sourceRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "upstream")
	run := func(dir string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("", "init", "-q", "-b", "main", dir)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\nworld\n"), 0o644)
	run(dir, "add", "-A")
	run(dir, "commit", "-qm", "first")
	return dir
}
