package execpath_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/bwrap"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/provider/execpath"
	"github.com/grove-dev/grove/search"
)

// workspace builds a cache and a workspace with every kind of change.
func workspace(t *testing.T) (bare, ws string) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	git(t, "", "init", "-q", "-b", "main", src)
	write(t, filepath.Join(src, "a.go"), "package a\n\nfunc Alpha() {}\n")
	write(t, filepath.Join(src, "b.txt"), "beta\n")
	git(t, src, "add", "-A")
	git(t, src, "commit", "-qm", "first")
	bare = filepath.Join(root, "cache", ".bare")
	git(t, "", "clone", "-q", "--bare", src, bare)
	ws = filepath.Join(root, "cache", "worktrees", "w")
	g := &gitrepo.Git{}
	if _, err := g.CreateWorkspace(ctx, bare, ws, gitrepo.WorkspaceOptions{Branch: "agent/x"}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws, "c.go"), "package a\n\nfunc Gamma() { Alpha() }\n")
	if _, err := g.Commit(ctx, ws, grove.CommitRequest{Message: "gamma"}, gitrepo.Identity{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws, "a.go"), "package a\n\nfunc Alpha() { println(1) }\n") // unstaged
	write(t, filepath.Join(ws, "b.txt"), "beta 2\n")
	git(t, ws, "add", "b.txt")                                       // staged
	write(t, filepath.Join(ws, "new file.txt"), "Alpha untracked\n") // untracked
	return bare, ws
}

func TestExecPathAnswersLikeTheLocalPath(t *testing.T) {
	drivers := map[string]func(t *testing.T) driver.Driver{
		"subprocess": func(t *testing.T) driver.Driver {
			return subprocess.New(subprocess.Options{HomeRoot: t.TempDir()})
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
	for name, mk := range drivers {
		t.Run(name, func(t *testing.T) {
			testenv.RequireBinary(t, "rg", "rg")
			ctx := context.Background()
			bare, ws := workspace(t)
			d := mk(t)
			spec := driver.Spec{WorkspaceID: "ws_test", WorkDir: ws, ReadOnlyPaths: []string{gitrepo.CacheObjects(bare)}, ProtectedPaths: gitrepo.Protected(ws)}
			if name == "subprocess" {
				spec.Network = driver.NetworkDefault
			}
			if _, err := d.Create(ctx, spec); err != nil {
				t.Fatal(err)
			}
			g := &gitrepo.Git{}

			want, err := g.Status(ctx, ws)
			if err != nil {
				t.Fatal(err)
			}
			got, err := execpath.Status(ctx, d, "ws_test")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("status through the runtime:\n%+v\nlocal:\n%+v", got, want)
			}
			if len(got.Staged) != 1 || len(got.Unstaged) != 1 || len(got.Untracked) != 1 {
				t.Fatalf("fixture lost its changes: %+v", got)
			}

			wantLog, err := g.Log(ctx, ws, 10, "")
			if err != nil {
				t.Fatal(err)
			}
			gotLog, err := execpath.Log(ctx, d, "ws_test", 10, "")
			if err != nil || !reflect.DeepEqual(gotLog, wantLog) || len(gotLog) != 2 {
				t.Fatalf("log through the runtime: %v\n%+v\nlocal:\n%+v", err, gotLog, wantLog)
			}

			req := grove.SearchRequest{Pattern: "Alpha", Context: 1}
			wantS, err := search.Run(ctx, ws, req)
			if err != nil {
				t.Fatal(err)
			}
			gotS, err := execpath.Search(ctx, d, "ws_test", req)
			if err != nil || !reflect.DeepEqual(gotS, wantS) || len(gotS.Matches) != 3 {
				t.Fatalf("search through the runtime: %v\n%+v\nlocal:\n%+v", err, gotS, wantS)
			}
			none, err := execpath.Search(ctx, d, "ws_test", grove.SearchRequest{Pattern: "NoSuchThing"})
			if err != nil || len(none.Matches) != 0 {
				t.Fatalf("no match: %v %+v", err, none)
			}
			if _, err := execpath.Search(ctx, d, "ws_test", grove.SearchRequest{Pattern: "("}); !errors.Is(err, grove.ErrInvalid) {
				t.Fatalf("bad regex: want ErrInvalid, got %v", err)
			}
		})
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
