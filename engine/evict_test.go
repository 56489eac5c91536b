package engine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/gitrepo"
)

// clock is a settable time for eviction tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestEvictRuntimesThenWorkspacesByTier(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := newFixture(t, fixtureOpt{now: clk.now})
	src := sourceRepo(t)
	ana, _, _ := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "u", Project: "p", Mode: grove.ModeAnalysis})
	pinned, _, _ := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "u", Project: "p", Mode: grove.ModeAnalysis, Ref: "v1"})
	edit, _, err := f.eng.Acquire(bg, editReq(src, "dirty"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.eng.Pin(bg, pinned.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := f.eng.WriteFile(bg, edit.ID, "wip.txt", []byte("unsaved work")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ana.ID, pinned.ID, edit.ID} {
		if _, err := f.eng.Exec(bg, id, grove.ExecRequest{Argv: []string{"true"}, Class: grove.ClassRead}); err != nil {
			t.Fatal(err)
		}
	}
	pol := engine.EvictionPolicy{FreeBytes: func() (uint64, error) { return 1 << 40, nil }}

	// Nothing is idle yet.
	rep, err := f.eng.Evict(bg, pol)
	if err != nil || len(rep.StoppedRuntimes)+len(rep.DestroyedWorkspaces) != 0 {
		t.Fatalf("fresh pass reclaimed something: %v %+v", err, rep)
	}
	// 30 minutes: runtimes stop, every workspace stays.
	clk.advance(30 * time.Minute)
	rep, _ = f.eng.Evict(bg, pol)
	if len(rep.StoppedRuntimes) != 3 || len(rep.DestroyedWorkspaces) != 0 {
		t.Fatalf("after 30m: %+v", rep)
	}
	// 2 hours: the clean unpinned analysis workspace goes; the pinned one
	// and the dirty edit workspace stay.
	clk.advance(90 * time.Minute)
	rep, _ = f.eng.Evict(bg, pol)
	if !slices.Equal(rep.DestroyedWorkspaces, []string{ana.ID}) {
		t.Fatalf("after 2h destroyed %v, want only %s", rep.DestroyedWorkspaces, ana.ID)
	}
	// A week: stopped runtimes are destroyed; the dirty edit workspace is
	// still kept (no disk pressure), the pinned one too.
	clk.advance(7 * 24 * time.Hour)
	rep, _ = f.eng.Evict(bg, pol)
	if len(rep.DestroyedWorkspaces) != 0 || len(rep.DestroyedRuntimes) != 2 {
		t.Fatalf("after a week: %+v", rep)
	}
	got, err := f.eng.ReadFile(bg, edit.ID, "wip.txt", 0)
	if err != nil || string(got) != "unsaved work" {
		t.Fatalf("dirty workspace lost its work without pressure: %v %q", err, got)
	}
	// A destroyed runtime is recreated by the next command.
	res, err := f.eng.Exec(bg, edit.ID, grove.ExecRequest{Argv: []string{"cat", "wip.txt"}, Class: grove.ClassRead})
	if err != nil || string(res.Stdout) != "unsaved work" {
		t.Fatalf("exec after runtime eviction: %v %+v", err, res)
	}
}

func TestEvictUnderPressureSavesDirtyWorkFirst(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := newFixture(t, fixtureOpt{now: clk.now})
	src := sourceRepo(t)
	old, _, _ := f.eng.Acquire(bg, editReq(src, "old"))
	clk.advance(time.Minute)
	newer, _, _ := f.eng.Acquire(bg, editReq(src, "newer"))
	pinned, _, err := f.eng.Acquire(bg, editReq(src, "pinned"))
	if err != nil {
		t.Fatal(err)
	}
	f.eng.Pin(bg, pinned.ID, true)
	for _, ws := range []*grove.Workspace{old, newer, pinned} {
		if err := f.eng.WriteFile(bg, ws.ID, "wip.txt", []byte("work of "+ws.ID)); err != nil {
			t.Fatal(err)
		}
	}
	// Free space recovers once one workspace is gone.
	pol := engine.EvictionPolicy{MinFreeBytes: 100, FreeBytes: func() (uint64, error) {
		for _, ws := range []*grove.Workspace{old, newer} {
			if _, err := os.Stat(ws.LocalPath); err != nil {
				return 1000, nil
			}
		}
		return 10, nil
	}}
	f.eng.Exec(bg, newer.ID, grove.ExecRequest{Argv: []string{"true"}}) // newer is more recently used
	rep, err := f.eng.Evict(bg, pol)
	if err != nil || !slices.Equal(rep.DestroyedWorkspaces, []string{old.ID}) {
		t.Fatalf("pressure pass: %v %+v", err, rep)
	}
	ref := rep.Saved[old.ID]
	if ref == "" {
		t.Fatalf("dirty workspace destroyed without saving: %+v", rep)
	}
	cache, _ := f.eng.ListRepos(bg)
	// Saved in the owner's work repository, never in the shared cache.
	if out, err := exec.Command("git", "--git-dir="+cache[0].LocalPath, "rev-parse", "--verify", "-q", ref).Output(); err == nil {
		t.Fatalf("saved work landed in the shared cache: %s", out)
	}
	saved := run(t, "", "git", "--git-dir="+gitrepo.WorkRepoPath(cache[0].LocalPath, old.User), "show", ref+":wip.txt")
	if saved != "work of "+old.ID {
		t.Fatalf("saved work: %q", saved)
	}
	for _, ws := range []*grove.Workspace{newer, pinned} {
		if _, err := os.Stat(filepath.Join(ws.LocalPath, "wip.txt")); err != nil {
			t.Fatalf("workspace %s should have stayed: %v", ws.ID, err)
		}
	}

	// Issue 11 item 9: acquiring the evicted key again restores the saved
	// work as uncommitted changes, and only once.
	back, _, err := f.eng.Acquire(bg, editReq(src, "old"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(back.LocalPath, "wip.txt")); err != nil || string(b) != "work of "+old.ID {
		t.Fatalf("evicted work not restored: %v %q", err, b)
	}
	st, err := f.eng.Status(bg, back.ID)
	if err != nil || !slices.Contains(st.Untracked, "wip.txt") {
		t.Fatalf("restored work should be uncommitted: %v %+v", err, st)
	}
	if out, err := exec.Command("git", "--git-dir="+gitrepo.WorkRepoPath(cache[0].LocalPath, old.User), "rev-parse", "--verify", "-q", ref).Output(); err == nil {
		t.Fatalf("the snapshot was kept after it was restored: %s", out)
	}
}

func TestEvictSkipsBusyWorkspacesAndKeepsUsedCaches(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f := newFixture(t, fixtureOpt{now: clk.now})
	src := sourceRepo(t)
	busy, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "u", Project: "p", Mode: grove.ModeAnalysis})
	if err != nil {
		t.Fatal(err)
	}
	other := sourceRepo(t)
	if _, err := f.eng.EnsureRepo(bg, grove.EnsureRepoRequest{Repo: other}); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.eng.ExecStream(bg, busy.ID, grove.ExecRequest{Shell: "echo go; sleep 2", Class: grove.ClassRead}, func(grove.Chunk) error {
			select {
			case <-started:
			default:
				close(started)
			}
			return nil
		})
	}()
	<-started
	clk.advance(30 * 24 * time.Hour) // the command started long ago and still runs
	// A read command holds the workspace's lock shared: eviction must not
	// wait for it, nor destroy the workspace under it.
	t0 := time.Now()
	rep, err := f.eng.Evict(bg, engine.EvictionPolicy{FreeBytes: func() (uint64, error) { return 1 << 40, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(t0) > time.Second {
		t.Fatalf("eviction waited %s for a busy workspace", time.Since(t0))
	}
	if !slices.Contains(rep.Skipped, busy.ID) || slices.Contains(rep.DestroyedWorkspaces, busy.ID) {
		t.Fatalf("busy workspace: %+v", rep)
	}
	if len(rep.RemovedCaches) != 1 {
		t.Fatalf("want the unused cache removed and the used one kept: %+v", rep)
	}
	<-done
	if _, err := f.eng.Get(bg, busy.ID); err != nil {
		t.Fatalf("busy workspace gone: %v", err)
	}
}
