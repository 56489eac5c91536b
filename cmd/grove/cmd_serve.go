package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/auth"
	"github.com/grove-dev/grove/httpapi"
	"github.com/grove-dev/grove/store"
	"github.com/grove-dev/grove/tools"
	"github.com/grove-dev/grove/tunnel"
	"github.com/spf13/cobra"
)

func (c *cli) serveCmd() *cobra.Command {
	addr := envOr("GROVE_ADDR", "127.0.0.1:8787")
	var maxExec int
	var grace, evictEvery time.Duration
	var daytonaFake bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API and MCP (streamable HTTP) with bearer API keys",
		Args:  cobra.NoArgs,
		PreRun: func(*cobra.Command, []string) {
			if daytonaFake { // development only: see daytona_fake.go
				c.cfg.Runtime = "daytona"
				os.Setenv("GROVE_DAYTONA_FAKE", "1")
			}
		},
		RunE: c.run(func(ctx context.Context, a *app, _ []string) error {
			if a.engine == nil {
				return grove.Errorf(grove.ErrInvalid, "grove serve runs the engine in-process; drop --server")
			}
			ks, ok := a.store.(store.KeyStore)
			if !ok {
				return grove.Errorf(grove.ErrNotSupported, "the store keeps no API keys")
			}
			rep, err := a.engine.Reconcile(ctx)
			if err != nil {
				return fmt.Errorf("reconcile: %w", err)
			}
			if rep.Empty() {
				fmt.Fprintln(c.stderr, "reconcile: store and disk agree")
			} else {
				fmt.Fprintf(c.stderr, "reconcile: %d broken, %d unfinished workspaces; %d missing caches; %d orphan dirs (kept); %d stale locks removed; %d runtime records dropped; %d crash leftovers removed\n",
					len(rep.BrokenWorkspaces), len(rep.UnfinishedWorkspaces), len(rep.MissingCaches), len(rep.OrphanDirs), len(rep.RemovedLocks), len(rep.DroppedRuntimes), len(rep.RemovedTemp))
			}
			if evictEvery > 0 {
				ectx, stopEvict := context.WithCancel(ctx)
				defer stopEvict()
				go a.engine.RunEvictor(ectx, c.evictionPolicy(), evictEvery)
			}
			lim, err := limitsFromEnv()
			if err != nil {
				return err
			}
			ts := tools.New(tools.Options{})
			defer ts.Close()
			logger := slog.New(slog.NewJSONHandler(c.stderr, nil))
			tunnels := &tunnel.Registry{Log: logger}
			if url := tunnelRedisURL(); url != "" {
				cl, err := tunnel.NewCluster(ctx, url, tunnels)
				if err != nil {
					return err
				}
				defer cl.Close()
				fmt.Fprintf(c.stderr, "tunnels: shared with the other servers through Redis (server id %s)\n", cl.ID())
			}
			h := httpapi.New(httpapi.Options{Service: a.svc, Tools: ts, Auth: &auth.Keys{Store: ks}, Logger: logger, MaxExecPerUser: maxExec, Limits: lim, Tunnels: tunnels,
				Ready: func(ctx context.Context) error {
					if _, err := a.svc.ListRepos(ctx); err != nil {
						return err
					}
					return a.engine.Ready(ctx) // the disk has Grove's reserve
				}})
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return grove.Errorf(grove.ErrUnavailable, "listen on %s: %v", addr, err)
			}
			srv := h.HTTPServer()
			fmt.Fprintf(c.stdout, "grove serving on http://%s (OpenAPI at /v1/openapi.json)\n", ln.Addr())
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(h.Listener(ln)) }()
			select {
			case err := <-errc:
				return err
			case <-ctx.Done(): // SIGINT or SIGTERM (main's NotifyContext)
			}
			fmt.Fprintf(c.stderr, "shutting down: waiting up to %s for requests in flight\n", grace)
			sctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				// Past the deadline: closing the connections cancels the
				// requests' contexts, which kills their commands.
				srv.Close()
				return fmt.Errorf("shutdown: %w", err)
			}
			if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&addr, "addr", addr, "listen address (GROVE_ADDR)")
	cmd.Flags().IntVar(&maxExec, "max-exec-per-user", envInt("GROVE_EXEC_SLOTS_PER_USER", 8), "concurrent commands, tool calls, MCP calls, searches and large reads per user; more get 429 (GROVE_EXEC_SLOTS_PER_USER)")
	cmd.Flags().DurationVar(&evictEvery, "evict-every", 5*time.Minute, "how often the background evictor runs (0: never)")
	cmd.Flags().BoolVar(&daytonaFake, "daytona-fake", false, "DEVELOPMENT ONLY: --runtime daytona against the in-process fake Daytona (Docker containers); needs a build with -tags daytonafake (GROVE_DAYTONA_FAKE)")
	cmd.Flags().DurationVar(&grace, "shutdown-grace", 30*time.Second, "how long in-flight requests may finish on SIGINT/SIGTERM")
	return cmd
}

// tunnelRedisURL is the Redis through which several grove serve processes
// share their tunnels (docs/TUNNEL.md, "Several servers"):
// GROVE_TUNNEL_REDIS, else GROVE_LOCKS when that is a Redis URL (servers
// sharing Redis locks are one cluster), else none: tunnels stay in the
// process they connected to.
func tunnelRedisURL() string {
	if u := os.Getenv("GROVE_TUNNEL_REDIS"); u != "" {
		return u
	}
	if l := os.Getenv("GROVE_LOCKS"); strings.HasPrefix(l, "redis://") || strings.HasPrefix(l, "rediss://") {
		return l
	}
	return ""
}
