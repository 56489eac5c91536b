package execpath_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/bwrap"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/gitrepo/gitfmt"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/provider/execpath"
	"github.com/grove-dev/grove/search"
)

// runtimes are the drivers the runtime path is exercised on: host
// processes everywhere, bubblewrap where it is installed (or required by
// GROVE_TEST_REQUIRE=bwrap).
var runtimes = map[string]func(t *testing.T) driver.Driver{
	"subprocess": func(t *testing.T) driver.Driver {
		return subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: t.TempDir()})
	},
	"bwrap": func(t *testing.T) driver.Driver {
		testenv.RequireBinary(t, "bwrap", "bwrap")
		d, err := bwrap.New(bwrap.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	},
}

// cacheAndWorkspace builds a cache of a two-file repository and a Grove
// workspace of it on branch agent/x, with no changes yet.
func cacheAndWorkspace(t *testing.T) (bare, ws string) {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	git(t, "", "init", "-q", "-b", "main", src)
	write(t, filepath.Join(src, "a.go"), "package a\n\nfunc Alpha() {}\n")
	write(t, filepath.Join(src, "b.txt"), "beta\n")
	write(t, filepath.Join(src, ".gitignore"), "*.log\n")
	git(t, src, "add", "-A")
	git(t, src, "commit", "-qm", "first")
	bare = filepath.Join(root, "cache", ".bare")
	git(t, "", "clone", "-q", "--bare", src, bare)
	ws = filepath.Join(root, "cache", "worktrees", "w")
	if _, err := (&gitrepo.Git{}).CreateWorkspace(context.Background(), bare, ws, gitrepo.WorkspaceOptions{Branch: "agent/x"}); err != nil {
		t.Fatal(err)
	}
	return bare, ws
}

// workspace builds a cache and a workspace with every kind of change: a
// commit of its own, a staged, an unstaged and an untracked file.
func workspace(t *testing.T) (bare, ws string) {
	t.Helper()
	bare, ws = cacheAndWorkspace(t)
	write(t, filepath.Join(ws, "c.go"), "package a\n\nfunc Gamma() { Alpha() }\n")
	git(t, ws, "add", "-A")
	git(t, ws, "commit", "-qm", "gamma")
	write(t, filepath.Join(ws, "a.go"), "package a\n\nfunc Alpha() { println(1) }\n") // unstaged
	write(t, filepath.Join(ws, "b.txt"), "beta 2\n")
	git(t, ws, "add", "b.txt")                                       // staged
	write(t, filepath.Join(ws, "new file.txt"), "Alpha untracked\n") // untracked
	return bare, ws
}

// start creates the runtime of workspace ws as the engine would: writable
// workspace, the cache's objects read-only, the workspace's git config,
// hooks and alternates protected.
func start(t *testing.T, d driver.Driver, kind, bare, ws string) string {
	t.Helper()
	const id = "ws_test"
	spec := driver.Spec{
		WorkspaceID: id, WorkDir: ws, Writable: true, User: "u", Project: "p",
		ReadOnlyPaths:  []string{gitrepo.CacheObjects(bare)},
		ProtectedPaths: gitrepo.Protected(ws),
	}
	if kind == "subprocess" {
		spec.Network = driver.NetworkDefault
	}
	if _, err := d.Create(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Destroy(context.Background(), id) })
	return id
}

// TestExecPathAnswersLikeTheLocalPath holds the runtime's answers against
// host git's on the same (test-made, trusted) workspace, on every driver,
// and commits through each runtime.
func TestExecPathAnswersLikeTheLocalPath(t *testing.T) {
	for name, mk := range runtimes {
		t.Run(name, func(t *testing.T) {
			testenv.RequireBinary(t, "rg", "rg")
			ctx := context.Background()
			bare, ws := workspace(t)
			d := mk(t)
			id := start(t, d, name, bare, ws)

			want, err := gitfmt.ParseStatusV2(gitOut(t, ws, gitfmt.StatusArgs()...))
			if err != nil {
				t.Fatal(err)
			}
			got, err := execpath.Status(ctx, d, id)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("status through the runtime:\n%+v\nlocal:\n%+v", got, want)
			}
			if len(got.Staged) != 1 || len(got.Unstaged) != 1 || len(got.Untracked) != 1 || got.Branch != "agent/x" {
				t.Fatalf("fixture lost its changes: %+v", got)
			}

			wantLog, err := gitfmt.ParseLog(gitOut(t, ws, gitfmt.LogArgs(10, "")...))
			if err != nil {
				t.Fatal(err)
			}
			gotLog, err := execpath.Log(ctx, d, id, 10, "")
			if err != nil || !reflect.DeepEqual(gotLog, wantLog) || len(gotLog) != 2 {
				t.Fatalf("log through the runtime: %v\n%+v\nlocal:\n%+v", err, gotLog, wantLog)
			}

			req := grove.SearchRequest{Pattern: "Alpha", Context: 1}
			wantS, err := search.Run(ctx, ws, req)
			if err != nil {
				t.Fatal(err)
			}
			gotS, err := search.InRuntime(ctx, d, id, req)
			if err != nil || !reflect.DeepEqual(gotS, wantS) || len(gotS.Matches) != 3 {
				t.Fatalf("search through the runtime: %v\n%+v\nlocal:\n%+v", err, gotS, wantS)
			}
			none, err := search.InRuntime(ctx, d, id, grove.SearchRequest{Pattern: "NoSuchThing"})
			if err != nil || len(none.Matches) != 0 {
				t.Fatalf("no match: %v %+v", err, none)
			}
			if _, err := search.InRuntime(ctx, d, id, grove.SearchRequest{Pattern: "("}); !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("bad regex: want ErrInvalid, got %v", err)
			}

			// A commit made in the runtime is what host git then sees.
			res, err := execpath.Commit(ctx, d, id, grove.CommitRequest{Message: "all of it"}, gitrepo.Identity{Name: "Runtime Bot", Email: "bot@example.com"})
			if err != nil {
				t.Fatal(err)
			}
			if res.FilesChanged != 3 || gitOutS(t, ws, "rev-parse", "HEAD") != res.SHA {
				t.Fatalf("commit = %+v; host HEAD %s", res, gitOutS(t, ws, "rev-parse", "HEAD"))
			}
			if who := gitOutS(t, ws, "log", "-1", "--format=%an|%cn <%ce>"); who != "Runtime Bot|Runtime Bot <bot@example.com>" {
				t.Errorf("author|committer = %q", who)
			}
			if st, err := execpath.Status(ctx, d, id); err != nil || !st.Clean || st.Head != res.SHA {
				t.Errorf("status after commit = %+v, %v", st, err)
			}
			if log, err := execpath.Log(ctx, d, id, 10, ""); err != nil || len(log) != 3 || log[0].SHA != res.SHA {
				t.Errorf("log after commit = %+v, %v", log, err)
			}
		})
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	gitOut(t, dir, args...)
}

// gitOut runs host git on a test fixture (never on anything an agent
// wrote) and returns its stdout.
func gitOut(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	// A root test's workspaces belong to the sandbox's uid once bwrap has
	// them; the test's own git reads them anyway.
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	defer func() {
		// What the fixture's root git wrote belongs to the tree's owner
		// (the sandbox's uid once bwrap has the workspace), as if the
		// sandbox had written it.
		if st, err := os.Stat(dir); err == nil && os.Geteuid() == 0 {
			if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 0 {
				filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
					if err == nil {
						os.Lchown(p, int(sys.Uid), int(sys.Gid))
					}
					return nil
				})
			}
		}
	}()
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.invalid")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

func gitOutS(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(string(gitOut(t, dir, args...)))
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
