package gitrepo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

// TestCheckAccess: ls-remote against a token-checking smart-HTTP server
// passes with the right token only, reports a missing repository as
// ErrNotFound, and never puts the token on argv or in the logs. A
// repository in the working directory is never consulted.
func TestCheckAccess(t *testing.T) {
	src, _ := sourceRepo(t)
	projectRoot := t.TempDir()
	testGit(t, "", "clone", "-q", "--bare", src, filepath.Join(projectRoot, "octo", "hello.git"))
	const token = "ghs_access_check_0123456789"
	srv := smartHTTP(t, projectRoot, token)
	g, logs := newTestGit(t)
	g.Home = t.TempDir()
	ctx := testCtx(t)
	url := srv.URL + "/octo/hello.git"

	// A hostile repository as the process's working directory: its config
	// would rewrite the URL to one that always works.
	cwd := t.TempDir()
	testGit(t, "", "init", "-q", cwd)
	testGit(t, cwd, "config", "url."+src+".insteadOf", url)
	old, _ := os.Getwd()
	if err := os.Chdir(cwd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir(old) })

	if err := g.CheckAccess(ctx, url, token, nil); err != nil {
		t.Fatalf("right token: %v", err)
	}
	for _, tok := range []string{"", "ghs_wrong", token + "x"} {
		if err := g.CheckAccess(ctx, url, tok, nil); !errors.Is(err, grove.ErrAuthFailed) {
			t.Errorf("token %q: %v, want ErrAuthFailed", tok, err)
		}
	}
	if err := g.CheckAccess(ctx, srv.URL+"/octo/missing.git", token, nil); err == nil {
		t.Error("missing repository: no error")
	}
	if err := g.CheckAccess(ctx, filepath.Join(t.TempDir(), "nothing"), "", nil); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("missing local path: %v, want ErrNotFound", err)
	}
	if strings.Contains(logs.String(), token) {
		t.Fatal("token in the logs")
	}
}
