package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/fsops"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/internal/testenv"
	"github.com/grove-dev/grove/lock"
	"github.com/grove-dev/grove/lock/pglock"
	"github.com/grove-dev/grove/lock/redislock"
	"github.com/grove-dev/grove/provider/local"
	"github.com/grove-dev/grove/store/memory"
)

// TestTwoWorkersShareWorkspaceLocks runs two engines — two workers, each
// with its own provider, runtime and Postgres lock client — over one store
// and one data root, as several `grove serve` processes would. Mutating
// commands sent to the two workers for one workspace must never overlap.
func TestTwoWorkersShareWorkspaceLocks(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("GROVE_TEST_POSTGRES_DSN")
		testenv.Require(t, "postgres", dsn != "", "GROVE_TEST_POSTGRES_DSN is not set (eval \"$(scripts/services.sh start)\")")
		twoWorkers(t, func(ctx context.Context) (lock.Locker, error) {
			l, err := pglock.Open(ctx, dsn, pglock.Options{})
			if err == nil {
				t.Cleanup(l.Close)
			}
			return l, err
		})
	})
	t.Run("redis", func(t *testing.T) {
		addr := os.Getenv("GROVE_TEST_REDIS_ADDR")
		testenv.Require(t, "redis", addr != "", "GROVE_TEST_REDIS_ADDR is not set (eval \"$(scripts/services.sh start)\")")
		prefix := fmt.Sprintf("grovetest:%d:%d:", os.Getpid(), time.Now().UnixNano())
		twoWorkers(t, func(ctx context.Context) (lock.Locker, error) {
			l, err := redislock.Open(ctx, "redis://"+addr, redislock.Options{Prefix: prefix})
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return l, err
		})
	})
}

// twoWorkers builds two engines, each with its own Locker from openLocks
// (two processes), and checks that their mutating commands on one
// workspace never overlap.
func twoWorkers(t *testing.T, openLocks func(context.Context) (lock.Locker, error)) {
	root := t.TempDir()
	st := memory.New()
	workers := make([]*engine.Engine, 2)
	for i := range workers {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		locks, err := openLocks(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		home := filepath.Join(root, "home")
		for _, d := range []string{home, filepath.Join(root, "rt")} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		git := &gitrepo.Git{Home: home, Identity: gitrepo.Identity{Name: "Test Agent", Email: "agent@example.invalid"}}
		prov := local.New(&gitrepo.Caches{Git: git, Root: filepath.Join(root, "repos")}, fsops.Options{})
		drv := subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: filepath.Join(root, "rt")})
		workers[i], err = engine.New(engine.Config{Store: st, Provider: prov, Driver: drv, AllowUnisolatedWrites: true, Locks: locks})
		if err != nil {
			t.Fatal(err)
		}
	}
	src := sourceRepo(t)
	ws, _, err := workers[0].Acquire(bg, editReq(src, "c"))
	if err != nil {
		t.Fatal(err)
	}
	// The second worker finds the same workspace through the store.
	again, _, err := workers[1].Acquire(bg, editReq(src, "c"))
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != ws.ID {
		t.Fatalf("second worker acquired %s, want %s", again.ID, ws.ID)
	}

	script := `if [ -e running ]; then echo overlap; fi; touch running; sleep 0.3; rm running`
	var wg sync.WaitGroup
	var overlaps sync.Map
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := workers[i%2].Exec(bg, ws.ID, grove.ExecRequest{Shell: script, Class: grove.ClassWrite})
			if err != nil {
				t.Error(err)
				return
			}
			if res.ExitCode != 0 || len(res.Stdout) > 0 {
				overlaps.Store(i, string(res.Stdout)+string(res.Stderr))
			}
		}()
	}
	wg.Wait()
	overlaps.Range(func(k, v any) bool {
		t.Errorf("write command %v (worker %v) overlapped another or failed: %q", k, k.(int)%2, v)
		return true
	})
}
