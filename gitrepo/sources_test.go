package gitrepo

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

func gitInit(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
}

// TestParseRepoRestrictedLocal: a network caller names the server's disk
// only under an allowed root, and every refusal is one answer.
func TestParseRepoRestrictedLocal(t *testing.T) {
	tmp, _ := filepath.EvalSymlinks(t.TempDir())
	allowed := filepath.Join(tmp, "allowed")
	outside := filepath.Join(tmp, "outside")
	groveRoot := filepath.Join(allowed, "grove")
	gitInit(t, filepath.Join(allowed, "repo"))
	gitInit(t, filepath.Join(outside, "repo"))
	gitInit(t, filepath.Join(groveRoot, "repos", "cache"))
	os.MkdirAll(filepath.Join(allowed, "plain"), 0o755)
	os.Symlink(filepath.Join(outside, "repo"), filepath.Join(allowed, "link-out"))
	os.Symlink(allowed, filepath.Join(tmp, "allowed-link"))
	// A working tree whose .git is a gitfile pointing outside.
	os.MkdirAll(filepath.Join(allowed, "gitfile"), 0o755)
	os.WriteFile(filepath.Join(allowed, "gitfile", ".git"), []byte("gitdir: "+filepath.Join(outside, "repo", ".git")+"\n"), 0o644)

	pol := &SourcePolicy{LocalRoots: []string{filepath.Join(tmp, "allowed-link")}, DenyRoots: []string{groveRoot}}
	opt := ParseOptions{Sources: pol}
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(allowed) // relative spellings would resolve into the allowed root

	for _, in := range []string{
		filepath.Join(outside, "repo"),
		"file://" + filepath.Join(outside, "repo"),
		"file://localhost" + filepath.Join(outside, "repo"),
		"file://otherhost" + filepath.Join(allowed, "repo"),
		filepath.Join(allowed, "missing"),
		filepath.Join(allowed, "plain"),
		filepath.Join(allowed, "link-out"),
		filepath.Join(allowed, "gitfile"),
		filepath.Join(groveRoot, "repos", "cache"),
		allowed + "/../outside/repo",
		allowed + "/repo/../repo",
		allowed + "/./repo",
		"repo", "./repo", "~/src/repo", "repo/.git/x", "~",
		"/etc", "/proc/self/root/etc",
	} {
		_, err := ParseRepo(in, opt)
		if !errors.Is(err, grove.ErrNotFound) || err.Error() != NotAccessibleMessage {
			t.Errorf("ParseRepo(%q) = %v, want exactly %q", in, err, NotAccessibleMessage)
		}
	}
	for _, in := range []string{filepath.Join(allowed, "repo"), "file://" + filepath.Join(allowed, "repo"), filepath.Join(tmp, "allowed-link", "repo")} {
		r, err := ParseRepo(in, opt)
		if err != nil || !r.Local || r.URL != filepath.Join(allowed, "repo") {
			t.Errorf("ParseRepo(%q) = %+v, %v; want the allowed repository", in, r, err)
		}
	}
	// Shapes that are not paths at all (owner/repo shorthand) are refused
	// on their syntax alone, never by looking at the disk.
	for _, in := range []string{"~/repo", "../repo"} {
		if _, err := ParseRepo(in, opt); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("ParseRepo(%q) = %v, want ErrInvalid", in, err)
		}
	}
	// No roots: nothing local, even what exists.
	if _, err := ParseRepo(filepath.Join(allowed, "repo"), ParseOptions{Sources: &SourcePolicy{}}); err == nil || err.Error() != NotAccessibleMessage {
		t.Errorf("no roots: %v", err)
	}
	// The CLI (no policy) keeps local paths.
	if r, err := ParseRepo(filepath.Join(outside, "repo"), ParseOptions{}); err != nil || !r.Local {
		t.Errorf("CLI local path: %v", err)
	}
}

func stubLookup(answers map[string][]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, a := range answers[host] {
			out = append(out, netip.MustParseAddr(a))
		}
		if out == nil {
			return nil, errors.New("no such host")
		}
		return out, nil
	}
}

func TestSourcePolicyHosts(t *testing.T) {
	pol := &SourcePolicy{
		AllowedHosts: []string{"git.internal:8443", "mirror.example", "127.0.0.1:9999"},
		LookupHost: stubLookup(map[string][]string{
			"github.com":     {"140.82.112.3"},
			"mirror.example": {"10.0.0.5"},
		}),
	}
	rebound := &SourcePolicy{LookupHost: stubLookup(map[string][]string{"github.com": {"140.82.112.3", "127.0.0.1"}})}
	metadata := &SourcePolicy{LookupHost: stubLookup(map[string][]string{"github.com": {"169.254.169.254"}})}
	v6 := &SourcePolicy{LookupHost: stubLookup(map[string][]string{"github.com": {"::ffff:127.0.0.1"}})}
	explicitPlatform := &SourcePolicy{PlatformHost: "ghe.corp", PlatformExplicit: true}
	ctx := context.Background()
	for _, tc := range []struct {
		pol     *SourcePolicy
		repo    string
		kind    error // nil: allowed
		resolve string
	}{
		{pol, "owner/repo", nil, "github.com:443:140.82.112.3"},
		{pol, "https://github.com/o/r", nil, "github.com:443:140.82.112.3"},
		// ssh would run as the server's own identity: refused for API
		// callers even to the platform host.
		{pol, "git@github.com:o/r", grove.ErrForbidden, ""},
		{pol, "ssh://git@github.com/o/r", grove.ErrForbidden, ""},
		{pol, "https://mirror.example/o/r", nil, ""},              // listed: any address
		{pol, "https://mirror.example:444/o/r", nil, ""},          // listed without port: any port
		{pol, "https://git.internal:8443/o/r", nil, ""},           // listed with its port
		{pol, "https://git.internal/o/r", grove.ErrForbidden, ""}, // another port
		{pol, "http://127.0.0.1:9999/o/r", nil, ""},
		{pol, "http://127.0.0.1:9998/o/r", grove.ErrForbidden, ""},
		{pol, "https://evil.example/o/r", grove.ErrForbidden, ""},
		{pol, "git@evil.example:o/r", grove.ErrForbidden, ""},
		{pol, "git://evil.example/o/r", grove.ErrForbidden, ""},
		{pol, "http://localhost/o/r", grove.ErrForbidden, ""},
		{pol, "http://2130706433/o/r", grove.ErrForbidden, ""},
		{pol, "http://0x7f.1/o/r", grove.ErrForbidden, ""},
		{pol, "http://0177.0.0.1/o/r", grove.ErrForbidden, ""},
		{pol, "http://169.254.169.254/o/r", grove.ErrForbidden, ""},
		{rebound, "owner/repo", grove.ErrForbidden, ""},
		{metadata, "owner/repo", grove.ErrForbidden, ""},
		{v6, "owner/repo", grove.ErrForbidden, ""},
		{explicitPlatform, "https://ghe.corp/o/r", nil, ""},
		{explicitPlatform, "https://github.com/o/r", grove.ErrForbidden, ""},
	} {
		r, err := ParseRepo(tc.repo, ParseOptions{Sources: tc.pol})
		if err != nil {
			t.Errorf("ParseRepo(%q): %v", tc.repo, err)
			continue
		}
		cfg, err := tc.pol.FetchConfig(ctx, r)
		if tc.kind != nil {
			if !errors.Is(err, tc.kind) {
				t.Errorf("%s: err = %v, want %v", tc.repo, err, tc.kind)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.repo, err)
			continue
		}
		if r.URL[:4] == "http" && !slices.Contains(cfg, [2]string{"http.followRedirects", "false"}) {
			t.Errorf("%s: config %v does not refuse redirects", tc.repo, cfg)
		}
		pinned := ""
		for _, kv := range cfg {
			if kv[0] == "http.curloptResolve" {
				pinned = kv[1]
			}
		}
		if pinned != tc.resolve {
			t.Errorf("%s: pinned %q, want %q", tc.repo, pinned, tc.resolve)
		}
	}
	// Userinfo never gets as far as a policy.
	// So does git's "::" (and with it [::1]).
	for _, in := range []string{"https://user:pw@github.com/o/r", "https://tok@github.com/o/r", "ssh://u:pw@github.com/o/r", "http://[::1]/o/r", "http://[::ffff:127.0.0.1]/o/r", "http://[0:0:0:0:0:0:0:1]/o/r", "http://[fe80:0:0:0:0:0:0:1]/o/r"} {
		if _, err := ParseRepo(in, ParseOptions{Sources: pol}); !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("ParseRepo(%q) = %v, want ErrInvalid", in, err)
		}
	}
}

func TestNumericSpelling(t *testing.T) {
	for h, want := range map[string]bool{"2130706433": true, "0x7f.1": true, "127.1": true, "0177.0.0.1": true, "github.com": false, "a1.example": false, "1.example": false} {
		if got := numericSpelling(h); got != want {
			t.Errorf("numericSpelling(%q) = %v, want %v", h, got, want)
		}
	}
}

// TestFetchConfigPinsGit: git connects to the address FetchConfig checked,
// not to whatever the name resolves to when git looks it up. The name here
// resolves nowhere; only the pin lets the clone reach the server.
func TestFetchConfigPinsGit(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src.git")
	for _, args := range [][]string{{"init", "-q", "--bare", src}, {"-C", src, "update-server-info"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// A dumb-HTTP server over a repository with one commit.
	work := filepath.Join(t.TempDir(), "w")
	env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null")
	for _, args := range [][]string{{"init", "-q", "-b", "main", work}, {"-C", work, "commit", "-q", "--allow-empty", "-m", "one"}, {"-C", work, "push", "-q", src, "main"}, {"-C", src, "update-server-info"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(src))))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	pol := &SourcePolicy{PlatformHost: "git.invalid", LookupHost: stubLookup(map[string][]string{"git.invalid": {"140.82.112.3"}})}
	r := Remote{ID: grove.RepoID{Host: "git.invalid:" + port, Owner: "o", Name: "src"}, URL: "http://git.invalid:" + port + "/src.git"}
	cfg, err := pol.FetchConfig(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg, [2]string{"http.curloptResolve", "git.invalid:" + port + ":140.82.112.3"}) {
		t.Fatalf("config %v", cfg)
	}
	// Pin to the test server instead of the (unreachable) checked address,
	// to show git obeys the pin at all.
	cfg = [][2]string{{"http.followRedirects", "false"}, {"http.curloptResolve", "git.invalid:" + port + ":127.0.0.1"}}
	caches := &Caches{Git: &Git{Home: t.TempDir()}, Root: t.TempDir()}
	if _, err := caches.Ensure(context.Background(), r, EnsureOptions{GitConfig: cfg}); err != nil {
		t.Fatalf("pinned clone: %v", err)
	}
	r.ID.Name = "src2"
	if _, err := caches.Ensure(context.Background(), r, EnsureOptions{}); err == nil {
		t.Fatal("unpinned clone of a name that resolves nowhere succeeded")
	}
}
