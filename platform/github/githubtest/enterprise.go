package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Enterprise is a GitHub Enterprise look-alike on one test server: the fake
// REST API under /api/v3 and git smart HTTP (git http-backend) for the
// repositories it serves, both accepting only tokens the fake minted for
// that repository. Tests of push and pull requests run against it end to
// end with a GitHub App as the only credential.
type Enterprise struct {
	*Server        // the fake API (its own listener is unused)
	URL     string // base URL: git at /<owner>/<name>.git, API at /api/v3
	AppPEM  []byte // the App's private key, PKCS#1 PEM
	root    string // GIT_PROJECT_ROOT
	web     *httptest.Server
}

// NewEnterprise starts the look-alike with App appID; it is closed at the
// end of the test.
func NewEnterprise(t testing.TB, appID int64) *Enterprise {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is required: %v", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e := &Enterprise{
		Server: New(appID, &key.PublicKey),
		AppPEM: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		root:   t.TempDir(),
	}
	t.Cleanup(e.Server.Close)
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Env: []string{
		"GIT_PROJECT_ROOT=" + e.root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "REMOTE_USER=agent"}}
	mux := http.NewServeMux()
	mux.Handle("/api/v3/", e.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		owner, name := repoOfGitPath(r.URL.Path)
		_, pw, ok := r.BasicAuth()
		if !ok || !e.Allows(pw, owner, name) {
			w.Header().Set("WWW-Authenticate", `Basic realm="ghe"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})
	e.web = httptest.NewServer(mux)
	t.Cleanup(e.web.Close)
	e.URL = e.web.URL
	return e
}

// ServeRepo serves a bare clone of src as owner/name (pushes allowed), with
// the App installed, and returns the served repository's path.
func (e *Enterprise) ServeRepo(t testing.TB, owner, name, src string, collaborators ...string) string {
	t.Helper()
	served := filepath.Join(e.root, owner, name+".git")
	for _, args := range [][]string{
		{"clone", "-q", "--bare", src, served},
		{"--git-dir", served, "config", "http.receivepack", "true"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	e.AddRepo(Repo{Owner: owner, Name: name, Installed: true, Collaborators: collaborators,
		Branches: func(b, base string) (bool, int) {
			if exec.Command("git", "--git-dir", served, "rev-parse", "--verify", "-q", "refs/heads/"+b).Run() != nil {
				return false, 0
			}
			return true, 1
		}})
	return served
}

// repoOfGitPath reads owner and name from /<owner>/<name>.git/...
func repoOfGitPath(p string) (owner, name string) {
	segs := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	if len(segs) < 2 {
		return "", ""
	}
	return segs[0], strings.TrimSuffix(segs[1], ".git")
}
