package engine

import (
	"context"
	"errors"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/provider"
)

// ReconcileReport is what start-up reconciliation found. Nothing is deleted
// silently: every row marked broken, runtime record dropped, lock file
// removed and orphan directory seen is listed here.
type ReconcileReport struct {
	// BrokenWorkspaces are records whose files are missing; they are marked
	// broken and rebuilt by the next Acquire of their key.
	BrokenWorkspaces []string `json:"broken_workspaces"`
	// UnfinishedWorkspaces were being created when the process stopped;
	// their records are marked broken the same way.
	UnfinishedWorkspaces []string `json:"unfinished_workspaces"`
	// MissingCaches are repo cache records whose bare repository is gone;
	// they are marked broken and re-cloned by the next EnsureRepo.
	MissingCaches []string `json:"missing_caches"`
	// OrphanDirs are workspace directories no record points to. They are
	// left in place: they may hold the only copy of someone's work.
	OrphanDirs []string `json:"orphan_dirs"`
	// RemovedLocks are stale git lock files that were removed.
	RemovedLocks []string `json:"removed_locks"`
	// DroppedRuntimes are runtime records of workspaces that no longer
	// exist.
	DroppedRuntimes []string `json:"dropped_runtimes"`
	// RemovedTemp are Grove's own temporaries (half-made clones and
	// workspaces, bundles, directories renamed aside for deletion) that a
	// crash left behind, removed.
	RemovedTemp []string `json:"removed_temp"`
}

// Empty reports whether reconciliation found nothing.
func (r *ReconcileReport) Empty() bool {
	return len(r.BrokenWorkspaces)+len(r.UnfinishedWorkspaces)+len(r.MissingCaches)+len(r.OrphanDirs)+len(r.RemovedLocks)+len(r.DroppedRuntimes)+len(r.RemovedTemp) == 0
}

// Reconcile compares the store with what the provider has and reports the
// differences. Run it at start-up, before serving requests.
func (e *Engine) Reconcile(ctx context.Context) (*ReconcileReport, error) {
	rep := &ReconcileReport{}
	caches, err := e.store.ListRepoCaches(ctx)
	if err != nil {
		return nil, err
	}
	wss, err := e.store.ListWorkspaces(ctx, storeFilter(grove.WorkspaceFilter{}, ""))
	if err != nil {
		return nil, err
	}
	// The provider's own scan first: besides its storage it may report
	// workspaces it found gone where the engine cannot probe them itself.
	var found provider.ScanReport
	sc, scanning := e.prov.(provider.Scanner)
	if scanning {
		if found, err = sc.Scan(ctx, caches, wss); err != nil {
			return nil, err
		}
	}
	gone := make(map[string]bool, len(found.MissingWorkspaces))
	for _, id := range found.MissingWorkspaces {
		gone[id] = true
	}
	known := make(map[string]bool, len(wss))
	for _, ws := range wss {
		known[ws.ID] = true
		ok := !gone[ws.ID]
		if ws.LocalPath != "" {
			// Workspaces with no host path are not probed here: that
			// would start every stopped sandbox and fail start-up whenever
			// one backend is unreachable. The provider's Scan looks into
			// running ones; a missing one elsewhere is rebuilt when next
			// acquired (reuse checks Exists).
			if ok, err = e.prov.Exists(ctx, ws); err != nil {
				return nil, err
			}
		}
		var list *[]string
		switch {
		case ws.State == grove.WorkspaceCreating:
			list = &rep.UnfinishedWorkspaces
		case !ok && ws.State != grove.WorkspaceBroken:
			list = &rep.BrokenWorkspaces
		default:
			continue
		}
		ws.State = grove.WorkspaceBroken
		ws.UpdatedAt = e.now().UTC()
		switch err := e.store.UpdateWorkspace(ctx, ws); {
		case errors.Is(err, grove.ErrNotFound):
			continue // destroyed meanwhile (by another process on the store)
		case err != nil:
			return nil, err
		}
		*list = append(*list, ws.ID)
	}
	if scanning {
		rep.OrphanDirs = found.OrphanDirs
		rep.RemovedLocks = found.RemovedLocks
		rep.RemovedTemp = found.RemovedTemp
		missing := make(map[string]bool, len(found.MissingCaches))
		for _, id := range found.MissingCaches {
			missing[id] = true
		}
		for _, c := range caches {
			if c.State == grove.CacheBroken || !missing[c.ID] {
				continue
			}
			rep.MissingCaches = append(rep.MissingCaches, c.ID)
			c.State = grove.CacheBroken
			c.LastFetchedAt = time.Time{}
			if err := e.store.UpdateRepoCache(ctx, c); err != nil {
				return nil, err
			}
		}
	}
	rts, err := e.store.ListRuntimes(ctx)
	if err != nil {
		return nil, err
	}
	for _, rt := range rts {
		if known[rt.WorkspaceID] {
			continue
		}
		if err := e.store.DeleteRuntime(ctx, rt.WorkspaceID); err != nil && !errors.Is(err, grove.ErrNotFound) {
			return nil, err
		}
		rep.DroppedRuntimes = append(rep.DroppedRuntimes, rt.WorkspaceID)
	}
	if !rep.Empty() {
		e.log.Warn("reconcile found differences",
			"broken", len(rep.BrokenWorkspaces), "unfinished", len(rep.UnfinishedWorkspaces),
			"missing_caches", len(rep.MissingCaches), "orphans", len(rep.OrphanDirs),
			"removed_locks", len(rep.RemovedLocks), "dropped_runtimes", len(rep.DroppedRuntimes))
	}
	return rep, nil
}
