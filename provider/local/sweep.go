package local

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/internal/rmtree"
)

// tempPrefixes name the directories and files Grove creates beside what it
// is building or deleting (a clone, a workspace, a work repository, a
// bundle being received, something renamed aside to delete). A crash leaves
// them behind; none ever holds anyone's only copy of work.
var tempPrefixes = []string{".bare-tmp-", ".ws-tmp-", ".work-tmp-", ".bundle-tmp-", ".trash-"}

// TempMinAge is how old a temporary must be before a sweep removes it: a
// process sharing the root (a CLI beside a server) may be building one
// right now.
const TempMinAge = 15 * time.Minute

func isTemp(name string) bool {
	for _, p := range tempPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// SweepTemp removes Grove's own temporaries under the root older than
// TempMinAge and returns what it removed. It never descends into a bare
// repository or a workspace, and never follows a symlink.
func (p *Provider) SweepTemp(ctx context.Context) ([]string, error) {
	cutoff := time.Now().Add(-TempMinAge)
	var removed []string
	err := filepath.WalkDir(p.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == p.root && os.IsNotExist(err) {
				return fs.SkipAll
			}
			return nil // vanished or unreadable: nothing of ours to sweep
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		name := d.Name()
		switch {
		case path == p.root:
			return nil
		case isTemp(name):
			if info, err := d.Info(); err == nil && info.ModTime().Before(cutoff) {
				if err := rmtree.RemoveAll(path); err == nil {
					removed = append(removed, path)
				}
			}
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case !d.IsDir():
			return nil
		case name == ".bare" || strings.HasSuffix(name, ".git") || filepath.Base(filepath.Dir(path)) == "worktrees":
			return fs.SkipDir // a repository or a workspace: not ours to walk
		}
		return nil
	})
	if err != nil {
		return removed, err
	}
	// Interrupted file writes leave their temporaries in fsops' directory.
	files, err := fsops.SweepTemp(p.fsOpts.TempDir, TempMinAge)
	return append(removed, files...), err
}
