package gitrepo

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove/internal/testenv"
)

// testGit runs git for test fixtures, isolated from the host's config the
// same way the code under test is.
func testGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Fixture", "GIT_AUTHOR_EMAIL=fixture@example.com",
		"GIT_COMMITTER_NAME=Fixture", "GIT_COMMITTER_EMAIL=fixture@example.com",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
}

// sourceRepo makes a non-bare repo with main (2 commits), branch feature
// (1 more), tag v1 on main's first commit. It returns the path and main's
// head.
func sourceRepo(t testing.TB) (dir, mainHead string) {
	t.Helper()
	requireGit(t)
	dir = filepath.Join(t.TempDir(), "src")
	testGit(t, "", "init", "-q", "-b", "main", dir)
	writeFile(t, filepath.Join(dir, "README.md"), "hello\n")
	testGit(t, dir, "add", "-A")
	testGit(t, dir, "commit", "-qm", "first")
	testGit(t, dir, "tag", "v1")
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	testGit(t, dir, "add", "-A")
	testGit(t, dir, "commit", "-qm", "second")
	mainHead = testGit(t, dir, "rev-parse", "HEAD")
	testGit(t, dir, "checkout", "-qb", "feature")
	writeFile(t, filepath.Join(dir, "f.txt"), "feature\n")
	testGit(t, dir, "add", "-A")
	testGit(t, dir, "commit", "-qm", "feature work")
	testGit(t, dir, "checkout", "-q", "main")
	return dir, mainHead
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newTestGit(t testing.TB) (*Git, *testenv.Buffer) {
	logs := &testenv.Buffer{}
	return &Git{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, logs
}

// gitCalls counts logged git invocations whose first argument is sub.
func gitCalls(logs *testenv.Buffer, sub string) int {
	return strings.Count(logs.String(), "args=\"["+sub+" ") + strings.Count(logs.String(), "args=["+sub+" ")
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// cacheFor ensures a cache of the local repo src under a fresh root.
func cacheFor(t testing.TB, src string) (*Caches, Remote, string) {
	t.Helper()
	g, _ := newTestGit(t)
	remote, err := ParseRepo(src, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &Caches{Git: g, Root: t.TempDir(), Freshness: time.Hour}
	res, err := c.Ensure(testCtx(t), remote, EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c, remote, res.Path
}

func testCtxBackground() context.Context { return context.Background() }

// testGitIn is testGit with stdin.
func testGitIn(t testing.TB, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Fixture", "GIT_AUTHOR_EMAIL=fixture@example.com",
		"GIT_COMMITTER_NAME=Fixture", "GIT_COMMITTER_EMAIL=fixture@example.com",
	)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v in %s: %v", args, dir, err)
	}
	return strings.TrimSpace(string(out))
}
