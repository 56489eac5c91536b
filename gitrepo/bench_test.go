package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/grove-dev/grove"
)

// BenchmarkCreateWorkspace compares a Grove workspace (shared clone +
// checkout) with raw `git worktree add` on the same cache, in one run.
// GROVE_BENCH_REPO names a larger local repository to measure (DESIGN §9
// uses an ~11k-file tree); the default is the small test fixture.
func BenchmarkCreateWorkspace(b *testing.B) {
	src := os.Getenv("GROVE_BENCH_REPO")
	if src == "" {
		src, _ = sourceRepo(b)
	}
	c, _, bare := cacheFor(b, src)
	ctx := context.Background()
	b.Run("grove", func(b *testing.B) {
		root := b.TempDir()
		for i := 0; b.Loop(); i++ {
			if _, err := c.Git.CreateWorkspace(ctx, bare, filepath.Join(root, fmt.Sprint(i)), WorkspaceOptions{Branch: fmt.Sprintf("b%d", i), Base: "HEAD"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("git-worktree-add", func(b *testing.B) {
		root := b.TempDir()
		for i := 0; b.Loop(); i++ {
			cmd := exec.Command("git", "--git-dir="+bare, "worktree", "add", "-q", "-b", fmt.Sprintf("w%d", i), filepath.Join(root, fmt.Sprint(i)), "HEAD")
			cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}

func TestRunHonoursContext(t *testing.T) {
	requireGit(t)
	g := &Git{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.run(ctx, call{args: []string{"version"}, dir: t.TempDir()})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled ctx: err = %v, want context.Canceled", err)
	}
	g.Binary = "git-does-not-exist-here"
	if _, err := g.run(context.Background(), call{args: []string{"version"}}); !errors.Is(err, grove.ErrNotInstalled) {
		t.Errorf("missing binary: err = %v, want ErrNotInstalled", err)
	}
}
