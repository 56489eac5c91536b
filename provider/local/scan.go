package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/provider"
)

// Scan implements provider.Scanner.
func (p *Provider) Scan(ctx context.Context, caches []*grove.RepoCache, workspaces []*grove.Workspace) (provider.ScanReport, error) {
	var rep provider.ScanReport
	known := make(map[string]bool, len(workspaces))
	for _, ws := range workspaces {
		known[filepath.Clean(ws.LocalPath)] = true
	}
	var dirs []string // every Grove-owned git directory whose locks we check
	for _, c := range caches {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if _, err := os.Stat(c.LocalPath); errors.Is(err, fs.ErrNotExist) {
			rep.MissingCaches = append(rep.MissingCaches, c.ID)
			continue
		}
		dirs = append(dirs, c.LocalPath)
		if work, err := filepath.Glob(filepath.Join(gitrepo.WorkReposDir(filepath.Dir(c.LocalPath)), "*.git")); err == nil {
			dirs = append(dirs, work...)
		}
		wsRoot := gitrepo.WorkspacesDir(filepath.Dir(c.LocalPath))
		entries, err := os.ReadDir(wsRoot)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, err
		}
		for _, e := range entries {
			d := filepath.Join(wsRoot, e.Name())
			if !e.IsDir() || isTemp(e.Name()) {
				continue
			}
			if known[d] {
				// A workspace's .git belongs to its agent: host code never
				// walks or edits it (a stale lock there is the agent's to
				// clear, from inside its runtime).
				continue
			}
			rep.OrphanDirs = append(rep.OrphanDirs, d)
		}
	}
	for _, d := range dirs {
		for _, l := range gitrepo.StaleLocks(d) {
			if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return rep, err
			}
			rep.RemovedLocks = append(rep.RemovedLocks, l)
		}
	}
	removed, err := p.SweepTemp(ctx)
	rep.RemovedTemp = removed
	return rep, err
}
