package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/engine"
	"github.com/spf13/cobra"
)

// evictionPolicy reads the eviction knobs from the environment; unset ones
// take the engine's defaults (DESIGN.md §4).
func (c *cli) evictionPolicy() engine.EvictionPolicy {
	dur := func(name string) time.Duration {
		d, _ := time.ParseDuration(os.Getenv(name))
		return d
	}
	var minFree uint64
	fmt.Sscan(os.Getenv("GROVE_EVICT_MIN_FREE_BYTES"), &minFree)
	return engine.EvictionPolicy{
		RuntimeIdle:    dur("GROVE_EVICT_RUNTIME_IDLE"),
		RuntimeStopped: dur("GROVE_EVICT_RUNTIME_STOPPED"),
		AnalysisTTL:    dur("GROVE_EVICT_ANALYSIS_TTL"),
		TaskTTL:        dur("GROVE_EVICT_TASK_TTL"),
		EditTTL:        dur("GROVE_EVICT_EDIT_TTL"),
		CacheTTL:       dur("GROVE_EVICT_CACHE_TTL"),
		MinFreeBytes:   minFree,
		Root:           c.cfg.Root,
	}
}

func (c *cli) evictCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "evict",
		Short: "Run one eviction pass: idle runtimes, stale clean workspaces, dirty ones only under disk pressure (saved first), unused caches",
		Args:  cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, a *app, _ []string) error {
			if a.engine == nil {
				return grove.Errorf(grove.ErrNotSupported, "eviction runs where the data lives; run it on the server")
			}
			rep, err := a.engine.Evict(ctx, c.evictionPolicy())
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(rep)
			}
			fmt.Fprintf(c.stdout, "stopped %d runtime(s), destroyed %d runtime(s), destroyed %d workspace(s), removed %d cache(s)\n",
				len(rep.StoppedRuntimes), len(rep.DestroyedRuntimes), len(rep.DestroyedWorkspaces), len(rep.RemovedCaches))
			for id, ref := range rep.Saved {
				fmt.Fprintf(c.stdout, "saved the work of %s in its cache as %s\n", id, ref)
			}
			for _, id := range rep.Skipped {
				fmt.Fprintf(c.stdout, "skipped %s (busy or failed; retried next pass)\n", id)
			}
			return nil
		}),
	}
}
