package engine_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/engine"
)

// One workspace writing without end is stopped at its quota with a typed
// error, on every isolated runtime, while another user's workspace keeps
// working (write, command, commit).
func TestDiskQuotaStopsAWorkspaceWritingWithoutEnd(t *testing.T) {
	for rtName, newDrv := range trustRuntimes(t) {
		t.Run(rtName, func(t *testing.T) {
			f := newFixture(t, fixtureOpt{drv: newDrv(t), disk: engine.DiskPolicy{
				WorkspaceQuota: 20 << 20, Interval: 20 * time.Millisecond, FreeBytes: func() (uint64, error) { return 100 << 30, nil },
			}})
			src := sourceRepo(t)
			project := fmt.Sprintf("disk-%s-%d", rtName, os.Getpid())
			hog, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "hog", Project: project, Mode: grove.ModeEdit, Conversation: "fill"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.eng.Destroy(bg, hog.ID) })
			other, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "innocent", Project: project, Mode: grove.ModeEdit, Conversation: "work"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.eng.Destroy(bg, other.ID) })

			start := time.Now()
			_, err = f.eng.Exec(bg, hog.ID, grove.ExecRequest{Shell: `i=0; while :; do head -c 1048576 /dev/zero > big.$i; i=$((i+1)); done`, Timeout: time.Minute})
			if !errors.Is(err, grove.ErrResourceLimit) {
				t.Fatalf("a command filling the disk: %v", err)
			}
			if took := time.Since(start); took > 30*time.Second {
				t.Fatalf("stopped only after %v", took)
			}
			size := dirSize(t, hog.LocalPath)
			if size > 200<<20 {
				t.Fatalf("the workspace grew to %d bytes before it was stopped", size)
			}
			// Further writes are refused until the agent frees space...
			if err := f.eng.WriteFile(bg, hog.ID, "more.txt", make([]byte, 70<<20)); !errors.Is(err, grove.ErrResourceLimit) {
				t.Fatalf("a write over quota: %v", err)
			}
			// ...which a command that deletes is allowed to do.
			if res, err := f.eng.Exec(bg, hog.ID, grove.ExecRequest{Shell: "rm -f big.*"}); err != nil || res.ExitCode != 0 {
				t.Fatalf("deleting to get under quota: %v %+v", err, res)
			}
			if err := f.eng.WriteFile(bg, hog.ID, "small.txt", []byte("ok")); err != nil {
				t.Fatalf("a small write after freeing space: %v", err)
			}

			// The other tenant never noticed.
			if err := f.eng.WriteFile(bg, other.ID, "mine.txt", []byte("mine\n")); err != nil {
				t.Fatal(err)
			}
			if res, err := f.eng.Exec(bg, other.ID, grove.ExecRequest{Shell: "echo more >> mine.txt"}); err != nil || res.ExitCode != 0 {
				t.Fatalf("other workspace's command: %v %+v", err, res)
			}
			if _, err := f.eng.Commit(bg, other.ID, grove.CommitRequest{Message: "mine"}); err != nil {
				t.Fatalf("other workspace's commit: %v", err)
			}
		})
	}
}

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// Below the reserve, writes and new workspaces are refused with a typed
// error, mutating commands are stopped, and readiness says so; reads work.
func TestDiskReserveKeepsGroveWritable(t *testing.T) {
	var free atomic.Uint64
	free.Store(100 << 30)
	f := newFixture(t, fixtureOpt{disk: engine.DiskPolicy{Reserve: 1 << 30, Interval: 10 * time.Millisecond,
		FreeBytes: func() (uint64, error) { return free.Load(), nil }}})
	src := sourceRepo(t)
	ws, _, err := f.eng.Acquire(bg, editReq(src, "r"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.eng.Ready(bg); err != nil {
		t.Fatalf("ready with room: %v", err)
	}
	free.Store(10 << 20)
	if err := f.eng.Ready(bg); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("readiness below the reserve: %v", err)
	}
	if err := f.eng.WriteFile(bg, ws.ID, "x.txt", []byte("x")); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("write below the reserve: %v", err)
	}
	if _, _, err := f.eng.Acquire(bg, editReq(src, "new")); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("new workspace below the reserve: %v", err)
	}
	if _, err := f.eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: "sleep 5"}); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("mutating command below the reserve: %v", err)
	}
	if _, err := f.eng.ReadFile(bg, ws.ID, "README.md", 0); err != nil {
		t.Fatalf("reads must keep working: %v", err)
	}
	free.Store(100 << 30)
	if err := f.eng.WriteFile(bg, ws.ID, "x.txt", []byte("x")); err != nil {
		t.Fatalf("write after space came back: %v", err)
	}
}

// Pins are bounded per user, and under pressure the consumer over its
// quota goes first even when pinned, while an innocent pinned workspace
// stays.
func TestPressureTakesFromTheConsumerFirst(t *testing.T) {
	f := newFixture(t, fixtureOpt{disk: engine.DiskPolicy{WorkspaceQuota: 1 << 20, PinsPerUser: 1}})
	src := sourceRepo(t)
	hog, _, _ := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "hog", Project: "p", Mode: grove.ModeEdit, Conversation: "h"})
	extra, _, _ := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "hog", Project: "p", Mode: grove.ModeEdit, Conversation: "h2"})
	good, _, _ := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "good", Project: "p", Mode: grove.ModeEdit, Conversation: "g"})
	if err := f.eng.Pin(bg, hog.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := f.eng.Pin(bg, extra.ID, true); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("a pin past the per-user bound: %v", err)
	}
	if err := f.eng.Pin(bg, good.ID, true); err != nil {
		t.Fatal(err)
	}
	f.eng.WriteFile(bg, hog.ID, "big.bin", make([]byte, 3<<20))
	f.eng.WriteFile(bg, good.ID, "small.txt", []byte("innocent work"))
	pol := engine.EvictionPolicy{MinFreeBytes: 100, FreeBytes: func() (uint64, error) {
		if _, err := os.Stat(hog.LocalPath); err != nil {
			return 1000, nil
		}
		return 10, nil
	}}
	rep, err := f.eng.Evict(bg, pol)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.DestroyedWorkspaces) != 1 || rep.DestroyedWorkspaces[0] != hog.ID {
		t.Fatalf("pressure took %v, want only the pinned consumer %s", rep.DestroyedWorkspaces, hog.ID)
	}
	if rep.Saved[hog.ID] == "" {
		t.Fatalf("the consumer's work was not saved first: %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(good.LocalPath, "small.txt")); err != nil {
		t.Fatalf("innocent pinned work was touched: %v", err)
	}
}

// Workspaces per user are bounded; another user is not affected.
func TestWorkspacesPerUserBounded(t *testing.T) {
	f := newFixture(t, fixtureOpt{disk: engine.DiskPolicy{WorkspacesPerUser: 2}})
	src := sourceRepo(t)
	for i := 0; i < 2; i++ {
		if _, _, err := f.eng.Acquire(bg, editReq(src, fmt.Sprint("c", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.eng.Acquire(bg, editReq(src, "c2")); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("a workspace past the per-user bound: %v", err)
	}
	if _, _, err := f.eng.Acquire(bg, editReq(src, "c0")); err != nil {
		t.Fatalf("re-acquiring one's own workspace at the bound: %v", err)
	}
	if _, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: src, User: "bob", Project: "p1", Mode: grove.ModeEdit, Conversation: "c2"}); err != nil {
		t.Fatalf("another user at alice's bound: %v", err)
	}
}

// The number of repository caches is bounded; existing ones keep working.
func TestCacheCountBounded(t *testing.T) {
	f := newFixture(t, fixtureOpt{disk: engine.DiskPolicy{MaxCaches: 1}})
	a, b := sourceRepo(t), sourceRepo(t)
	if _, _, err := f.eng.Acquire(bg, editReq(a, "c")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.eng.Acquire(bg, editReq(b, "c")); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("a cache past the bound: %v", err)
	}
	if _, _, err := f.eng.Acquire(bg, editReq(a, "c2")); err != nil {
		t.Fatalf("a new workspace on the existing cache: %v", err)
	}
}

// Free inodes have a reserve too: a tree of empty files exhausts them long
// before the blocks.
func TestDiskInodeReserve(t *testing.T) {
	var inodes atomic.Uint64
	inodes.Store(1 << 20)
	f := newFixture(t, fixtureOpt{disk: engine.DiskPolicy{ReserveInodes: 1000,
		FreeBytes:  func() (uint64, error) { return 100 << 30, nil },
		FreeInodes: func() (uint64, error) { return inodes.Load(), nil }}})
	ws, _, err := f.eng.Acquire(bg, editReq(sourceRepo(t), "i"))
	if err != nil {
		t.Fatal(err)
	}
	inodes.Store(10)
	if err := f.eng.WriteFile(bg, ws.ID, "x.txt", []byte("x")); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("write with no inodes to spare: %v", err)
	}
	if err := f.eng.Ready(bg); !errors.Is(err, grove.ErrResourceLimit) {
		t.Fatalf("readiness with no inodes to spare: %v", err)
	}
}
