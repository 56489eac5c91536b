package engine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
)

func TestReconcileReportsAndNeverDeletesSilently(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	gone, _, err := f.eng.Acquire(bg, editReq(src, "gone"))
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := f.eng.Acquire(bg, editReq(src, "live"))
	if err != nil {
		t.Fatal(err)
	}
	// A crash leaves: a row without files, an orphan directory holding
	// someone's work, and a stale lock in the cache. A lock file in a
	// workspace's .git is the agent's: host code never touches it.
	if err := os.RemoveAll(gone.LocalPath); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(filepath.Dir(live.LocalPath), "bob_conv_orphan")
	write(t, filepath.Join(orphan, "only-copy.txt"), "work")
	caches, _ := f.eng.ListRepos(bg)
	lock := filepath.Join(caches[0].LocalPath, "packed-refs.lock")
	write(t, lock, "")
	agentLock := filepath.Join(live.LocalPath, ".git", "index.lock")
	write(t, agentLock, "")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(lock, old, old)
	os.Chtimes(agentLock, old, old)

	rep, err := f.eng.Reconcile(bg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.BrokenWorkspaces, gone.ID) {
		t.Errorf("row without directory not reported: %+v", rep)
	}
	if !slices.Contains(rep.OrphanDirs, orphan) {
		t.Errorf("orphan directory not reported: %+v", rep)
	}
	if !slices.Contains(rep.RemovedLocks, lock) {
		t.Errorf("stale lock not reported: %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(orphan, "only-copy.txt")); err != nil {
		t.Fatalf("orphan directory was deleted: %v", err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("stale lock still present: %v", err)
	}
	if _, err := os.Stat(agentLock); err != nil {
		t.Fatalf("host code removed a file in a workspace's .git: %v", err)
	}
	rec, err := f.eng.Get(bg, gone.ID)
	if err != nil || rec.State != grove.WorkspaceBroken {
		t.Fatalf("broken workspace record: %v %+v", err, rec)
	}
	// The next acquire of that key rebuilds it in place.
	again, _, err := f.eng.Acquire(bg, editReq(src, "gone"))
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != gone.ID || again.State != grove.WorkspaceReady {
		t.Fatalf("rebuild: %+v", again)
	}
	if _, err := os.Stat(filepath.Join(gone.LocalPath, "README.md")); err != nil {
		t.Fatalf("rebuilt workspace has no files: %v", err)
	}
	// A second pass finds nothing new but the orphan, which stays reported.
	rep, err = f.eng.Reconcile(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.BrokenWorkspaces)+len(rep.RemovedLocks) != 0 || len(rep.OrphanDirs) != 1 {
		t.Fatalf("second reconcile: %+v", rep)
	}
}

// Issue 11 item 1: a crash during a clone, an acquire or a delete leaves
// Grove's own temporaries; reconcile removes and reports those old enough
// that no live process can be building them, and keeps fresh ones.
func TestReconcileSweepsCrashLeftovers(t *testing.T) {
	f := newFixture(t)
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "sweep"))
	if err != nil {
		t.Fatal(err)
	}
	caches, _ := f.eng.ListRepos(bg)
	cacheDir := filepath.Dir(caches[0].LocalPath)
	old := time.Now().Add(-time.Hour)
	stale := []string{
		filepath.Join(filepath.Dir(ws.LocalPath), ".ws-tmp-123", "README.md"),
		filepath.Join(filepath.Dir(ws.LocalPath), ".trash-gone-abc", "f"),
		filepath.Join(f.root, "repos", "example.com", "o", "never-cloned", ".bare-tmp-9", "HEAD"),
		filepath.Join(cacheDir, "work", ".bundle-tmp-5"),
		filepath.Join(f.root, "repos", ".grove-tmp", ".grove-tmp-0123"), // an interrupted file write
	}
	for _, p := range stale {
		write(t, p, "x")
		top := p
		for !strings.HasPrefix(filepath.Base(top), ".") || filepath.Base(top) == ".git" {
			top = filepath.Dir(top)
		}
		os.Chtimes(top, old, old)
	}
	fresh := filepath.Join(filepath.Dir(ws.LocalPath), ".ws-tmp-live")
	write(t, filepath.Join(fresh, "f"), "being built")

	rep, err := f.eng.Reconcile(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.RemovedTemp) != len(stale) {
		t.Fatalf("removed %v, want the %d stale leftovers", rep.RemovedTemp, len(stale))
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a temporary another process may be building was removed: %v", err)
	}
	if slices.Contains(rep.OrphanDirs, fresh) {
		t.Fatalf("a temporary reported as an orphan workspace: %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(ws.LocalPath, "README.md")); err != nil {
		t.Fatalf("the live workspace was touched: %v", err)
	}
}
