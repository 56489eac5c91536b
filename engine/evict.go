package engine

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/provider"
	"github.com/grove-dev/grove/provider/execpath"
)

// EvictionPolicy says what the evictor may reclaim, in the tiers of
// DESIGN.md §4: idle runtimes first, then clean workspaces past their mode's
// TTL (analysis, then task, then edit), then — only under disk pressure —
// dirty workspaces after their work is saved, then repo caches nobody uses.
// Pinned workspaces are never evicted. Zero durations take the defaults.
type EvictionPolicy struct {
	RuntimeIdle    time.Duration // stop a runtime with no command for this long (20m)
	RuntimeStopped time.Duration // destroy a runtime stopped for this long (6h)
	AnalysisTTL    time.Duration // destroy a clean analysis workspace unused this long (1h)
	TaskTTL        time.Duration // clean task workspace (24h)
	EditTTL        time.Duration // clean edit workspace (72h)
	CacheTTL       time.Duration // remove a cache without workspaces unused this long (7 days)
	// MinFreeBytes is the free space under Root below which the disk is
	// under pressure; 0 disables pressure eviction.
	MinFreeBytes uint64
	// Root is the filesystem whose free space counts.
	Root string
	// FreeBytes measures free space; nil uses statfs(Root). Tests inject it.
	FreeBytes func() (uint64, error)
}

func (p *EvictionPolicy) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&p.RuntimeIdle, 20*time.Minute)
	def(&p.RuntimeStopped, 6*time.Hour)
	def(&p.AnalysisTTL, time.Hour)
	def(&p.TaskTTL, 24*time.Hour)
	def(&p.EditTTL, 72*time.Hour)
	def(&p.CacheTTL, 7*24*time.Hour)
	if p.FreeBytes == nil {
		root := p.Root
		p.FreeBytes = func() (uint64, error) {
			var st syscall.Statfs_t
			if err := syscall.Statfs(root, &st); err != nil {
				return 0, err
			}
			return st.Bavail * uint64(st.Bsize), nil
		}
	}
}

// EvictionReport lists everything one pass reclaimed. Saved maps a dirty
// workspace that was destroyed to the cache ref holding its work.
type EvictionReport struct {
	StoppedRuntimes     []string          `json:"stopped_runtimes"`
	DestroyedRuntimes   []string          `json:"destroyed_runtimes"`
	DestroyedWorkspaces []string          `json:"destroyed_workspaces"`
	Saved               map[string]string `json:"saved"`
	RemovedCaches       []string          `json:"removed_caches"`
	RemovedTemp         []string          `json:"removed_temp"` // crash leftovers, see ReconcileReport
	Skipped             []string          `json:"skipped"`      // busy or failed; retried next pass
}

// Evict runs one eviction pass. It never waits for a busy workspace: one
// running a command is skipped and retried on the next pass.
func (e *Engine) Evict(ctx context.Context, p EvictionPolicy) (*EvictionReport, error) {
	p.defaults()
	rep := &EvictionReport{Saved: map[string]string{}}
	now := e.now()
	wss, err := e.store.ListWorkspaces(ctx, storeFilter(grove.WorkspaceFilter{}, ""))
	if err != nil {
		return nil, err
	}

	// Tier 1: runtimes.
	for _, ws := range wss {
		rt, err := e.store.GetRuntime(ctx, ws.ID)
		if err != nil {
			continue // no runtime
		}
		idle := now.Sub(e.lastUsed(ws))
		switch {
		case rt.State == string(driver.StateRunning) && idle >= p.RuntimeIdle:
			e.tryHeld(ctx, ws.ID, rep, func(ws *grove.Workspace) error {
				e.closeDebug(ws.ID) // sessions die with the runtime
				if err := e.drv.Stop(ctx, ws.ID); err != nil && !errors.Is(err, grove.ErrNotFound) {
					return err
				}
				rt.State, rt.UpdatedAt = string(driver.StateStopped), now.UTC()
				rep.StoppedRuntimes = append(rep.StoppedRuntimes, ws.ID)
				return e.store.PutRuntime(ctx, rt)
			})
		case rt.State == string(driver.StateStopped) && now.Sub(rt.UpdatedAt) >= p.RuntimeStopped:
			e.tryHeld(ctx, ws.ID, rep, func(ws *grove.Workspace) error {
				e.closeDebug(ws.ID)
				if err := e.drv.Destroy(ctx, ws.ID); err != nil {
					return err
				}
				e.runtimes.Delete(ws.ID)
				rep.DestroyedRuntimes = append(rep.DestroyedRuntimes, ws.ID)
				return e.store.DeleteRuntime(ctx, ws.ID)
			})
		}
	}

	// Tier 2: clean workspaces past their TTL, analysis first.
	ttl := map[grove.Mode]time.Duration{grove.ModeAnalysis: p.AnalysisTTL, grove.ModeTask: p.TaskTTL, grove.ModeEdit: p.EditTTL}
	gone := map[string]bool{}
	for _, mode := range []grove.Mode{grove.ModeAnalysis, grove.ModeTask, grove.ModeEdit} {
		for _, ws := range wss {
			if ws.Mode != mode || ws.Pinned || now.Sub(e.lastUsed(ws)) < ttl[mode] {
				continue
			}
			e.tryHeld(ctx, ws.ID, rep, func(ws *grove.Workspace) error {
				if ok, _ := e.prov.Exists(ctx, ws); ok {
					info, err := execpath.Inspect(ctx, e.git(ws), ws.ID)
					if err != nil {
						return err
					}
					if info.Dirty {
						return nil // only under pressure, after saving
					}
				}
				if err := e.destroyHeld(ctx, ws); err != nil {
					return err
				}
				gone[ws.ID] = true
				rep.DestroyedWorkspaces = append(rep.DestroyedWorkspaces, ws.ID)
				return nil
			})
		}
	}

	// Tier 3: under disk pressure, dirty task and edit workspaces, each
	// saved into its user's work repository before it goes: first those
	// over their own quota (pinned or not: a pin does not shield the
	// consumer), largest first, then those of users over their share,
	// then the other unpinned ones, least recently used first.
	if p.MinFreeBytes > 0 {
		candidates := e.pressureOrder(ctx, wss, gone)
		for _, ws := range candidates {
			free, err := p.FreeBytes()
			if err != nil {
				return rep, err
			}
			if free >= p.MinFreeBytes {
				break
			}
			e.tryHeld(ctx, ws.ID, rep, func(ws *grove.Workspace) error {
				c, err := e.cacheOf(ctx, ws)
				if err != nil {
					return err
				}
				if ok, _ := e.prov.Exists(ctx, ws); ok {
					ref, err := e.snapshot(ctx, ws)
					if err != nil {
						return err // never delete what could not be saved
					}
					rep.Saved[ws.ID] = ref
					e.log.Warn("evicting a dirty workspace under disk pressure; its work is saved", "workspace", ws.ID, "ref", ref, "cache", c.LocalPath)
				}
				if err := e.destroyHeld(ctx, ws); err != nil {
					return err
				}
				gone[ws.ID] = true
				rep.DestroyedWorkspaces = append(rep.DestroyedWorkspaces, ws.ID)
				return nil
			})
		}
	}

	// Crash leftovers of this or another process sharing the root.
	// (Swept after the workspace tiers: a destroy may leave trash.)
	if sc, ok := e.prov.(provider.Scanner); ok {
		removed, err := sc.SweepTemp(ctx)
		if err != nil {
			e.log.Warn("sweep temporaries", "err", err)
		}
		rep.RemovedTemp = removed
	}

	// Tier 4: caches no workspace uses, past their TTL.
	caches, err := e.store.ListRepoCaches(ctx)
	if err != nil {
		return rep, err
	}
	for _, c := range caches {
		if now.Sub(c.LastUsedAt) < p.CacheTTL {
			continue
		}
		err := e.RemoveRepo(ctx, c.ID, false)
		switch {
		case err == nil:
			rep.RemovedCaches = append(rep.RemovedCaches, c.ID)
		case errors.Is(err, grove.ErrConflict):
			// still has workspaces
		default:
			rep.Skipped = append(rep.Skipped, c.ID)
			e.log.Warn("evict cache", "cache", c.ID, "err", err)
		}
	}
	return rep, nil
}

// lastUsed is the later of the workspace's recorded use and its last
// command in this process.
func (e *Engine) lastUsed(ws *grove.Workspace) time.Time {
	t := ws.LastUsedAt
	if v, ok := e.lastExec.Load(ws.ID); ok && v.(time.Time).After(t) {
		t = v.(time.Time)
	}
	return t
}

// tryHeld runs fn on workspace id under its exclusive lock if the lock is
// free right now; a busy or failing workspace is listed as skipped.
func (e *Engine) tryHeld(ctx context.Context, id string, rep *EvictionReport, fn func(*grove.Workspace) error) {
	// An expired context makes the lock a try-lock: a lock.Locker takes a
	// free key before it looks at ctx.
	try, cancel := context.WithTimeout(ctx, 0)
	unlock, err := e.locks.Lock(try, "ws:"+id)
	cancel()
	if err != nil {
		rep.Skipped = append(rep.Skipped, id)
		return
	}
	defer unlock()
	ws, err := e.store.GetWorkspace(ctx, id)
	if err != nil {
		return // destroyed meanwhile
	}
	if err := fn(ws); err != nil {
		rep.Skipped = append(rep.Skipped, id)
		e.log.Warn("evict", "workspace", id, "err", err)
	}
}

// RunEvictor runs Evict every interval until ctx ends, logging what each
// pass reclaimed. Eviction never runs inside a request.
func (e *Engine) RunEvictor(ctx context.Context, p EvictionPolicy, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rep, err := e.Evict(ctx, p)
		if err != nil {
			e.log.Error("eviction pass", "err", err)
			continue
		}
		if n := len(rep.StoppedRuntimes) + len(rep.DestroyedRuntimes) + len(rep.DestroyedWorkspaces) + len(rep.RemovedCaches); n > 0 {
			e.log.Info("eviction pass", "stopped_runtimes", len(rep.StoppedRuntimes), "destroyed_runtimes", len(rep.DestroyedRuntimes),
				"destroyed_workspaces", len(rep.DestroyedWorkspaces), "saved", len(rep.Saved), "removed_caches", len(rep.RemovedCaches))
		}
	}
}

// pressureOrder lists the workspaces disk pressure may evict, in the order
// it should: whoever is over their share first.
func (e *Engine) pressureOrder(ctx context.Context, wss []*grove.Workspace, gone map[string]bool) []*grove.Workspace {
	type cand struct {
		ws    *grove.Workspace
		group int // 0 over its quota, 1 its user over their share, 2 the rest
		size  int64
	}
	perUser := map[string]int64{}
	var all []cand
	for _, ws := range wss {
		if gone[ws.ID] || ws.Mode == grove.ModeAnalysis {
			continue
		}
		size := e.prov.SizeBytes(ctx, ws)
		perUser[ws.User] += size
		all = append(all, cand{ws: ws, size: size})
	}
	var out []cand
	for _, c := range all {
		switch {
		case e.disk.WorkspaceQuota >= 0 && c.size > e.disk.WorkspaceQuota:
			c.group = 0
		case c.ws.Pinned:
			continue
		case e.disk.UserQuota >= 0 && perUser[c.ws.User] > e.disk.UserQuota:
			c.group = 1
		default:
			c.group = 2
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b cand) int {
		if a.group != b.group {
			return a.group - b.group
		}
		if a.group < 2 && a.size != b.size {
			if a.size > b.size {
				return -1
			}
			return 1
		}
		return e.lastUsed(a.ws).Compare(e.lastUsed(b.ws))
	})
	res := make([]*grove.Workspace, len(out))
	for i, c := range out {
		res[i] = c.ws
	}
	return res
}
