package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/engine"
	"github.com/spf13/cobra"
)

func (c *cli) repoCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "repo", Short: "Manage repo caches"}
	var ref, tokenFile string
	var refresh, force bool
	ensure := &cobra.Command{
		Use:   "ensure REPO",
		Short: "Clone a repo cache, or fetch it when stale",
		Args:  cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			tok, err := tokenFrom(tokenFile)
			if err != nil {
				return err
			}
			rc, err := a.svc.EnsureRepo(engine.WithProgress(ctx, c.progress()), grove.EnsureRepoRequest{Repo: args[0], User: c.cfg.User, Ref: ref, Token: tok, Refresh: refresh})
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(rc)
			}
			fmt.Fprintf(c.stdout, "%s\t%s\t%s\n", rc.ID, rc.Repo, rc.LocalPath)
			return nil
		}),
	}
	ensure.Flags().StringVar(&ref, "ref", "", "make sure this ref is present")
	ensure.Flags().BoolVar(&refresh, "refresh", false, "fetch even if the cache is fresh")
	ensure.Flags().StringVar(&tokenFile, "token-file", "", "read the git token from this file (default: GROVE_GIT_TOKEN)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List repo caches",
		Args:  cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, a *app, _ []string) error {
			rcs, err := a.svc.ListRepos(ctx)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(rcs)
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tREPO\tLAST FETCH\tPATH")
			for _, r := range rcs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Repo, r.LastFetchedAt.Format("2006-01-02 15:04"), r.LocalPath)
			}
			return tw.Flush()
		}),
	}
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: "Remove a repo cache (refused while workspaces use it, unless --force)",
		Args:  cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			if err := a.svc.RemoveRepo(ctx, args[0], force); err != nil {
				return err
			}
			return c.done(map[string]any{"id": args[0], "removed": true}, "removed "+args[0])
		}),
	}
	rm.Flags().BoolVar(&force, "force", false, "destroy the cache's workspaces first")
	cmd.AddCommand(ensure, list, rm)
	return cmd
}

// done prints a small confirmation, as JSON or as a line.
func (c *cli) done(v any, human string) error {
	if c.cfg.JSON {
		return c.printJSON(v)
	}
	fmt.Fprintln(c.stdout, human)
	return nil
}
