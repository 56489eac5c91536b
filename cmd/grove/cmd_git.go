package main

import (
	"context"
	"fmt"

	"github.com/grove-dev/grove"
	"github.com/spf13/cobra"
)

func (c *cli) gitCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "git", Short: "Git operations on a workspace"}
	status := &cobra.Command{
		Use:   "status WS",
		Short: "Working-tree state",
		Args:  cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			st, err := a.svc.Status(ctx, args[0])
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(st)
			}
			branch := st.Branch
			if branch == "" {
				branch = "(detached)"
			}
			fmt.Fprintf(c.stdout, "branch %s at %s", branch, short(st.Head))
			switch {
			case st.UpstreamGone:
				fmt.Fprintf(c.stdout, " (upstream %s, not on the remote)", st.Upstream)
			case st.Upstream != "":
				fmt.Fprintf(c.stdout, " (upstream %s, +%d -%d)", st.Upstream, st.Ahead, st.Behind)
			}
			fmt.Fprintln(c.stdout)
			for _, f := range st.Staged {
				fmt.Fprintf(c.stdout, "staged    %s %s\n", f.Index, f.Path)
			}
			for _, f := range st.Unstaged {
				fmt.Fprintf(c.stdout, "unstaged  %s %s\n", f.WorkTree, f.Path)
			}
			for _, p := range st.Untracked {
				fmt.Fprintf(c.stdout, "untracked   %s\n", p)
			}
			for _, f := range st.Conflicted {
				fmt.Fprintf(c.stdout, "conflict  %s\n", f.Path)
			}
			if st.Clean {
				fmt.Fprintln(c.stdout, "clean")
			}
			return nil
		}),
	}
	var dreq grove.DiffRequest
	diff := &cobra.Command{
		Use:   "diff WS [PATH...]",
		Short: "Show changes",
		Args:  cobra.MinimumNArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			dreq.Paths = args[1:]
			d, err := a.svc.Diff(ctx, args[0], dreq)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(d)
			}
			if dreq.StatOnly {
				for _, f := range d.Files {
					fmt.Fprintf(c.stdout, "%s\t+%d\t-%d\t%s\n", f.Status, f.Additions, f.Deletions, f.Path)
				}
				return nil
			}
			fmt.Fprint(c.stdout, d.Patch)
			return nil
		}),
	}
	diff.Flags().StringVar(&dreq.BaseRef, "base", "", "diff against this ref")
	diff.Flags().BoolVar(&dreq.StagedOnly, "staged", false, "only staged changes")
	diff.Flags().BoolVar(&dreq.StatOnly, "stat", false, "only the per-file summary")
	var limit int
	var path string
	log := &cobra.Command{
		Use:   "log WS",
		Short: "History",
		Args:  cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			commits, err := a.svc.Log(ctx, args[0], limit, path)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(commits)
			}
			for _, cm := range commits {
				fmt.Fprintf(c.stdout, "%s %s %s %s\n", short(cm.SHA), cm.Date.Format("2006-01-02"), cm.Author, cm.Subject)
			}
			return nil
		}),
	}
	log.Flags().IntVarP(&limit, "limit", "n", 20, "commits to show")
	log.Flags().StringVar(&path, "path", "", "only commits touching this path")
	var creq grove.CommitRequest
	commit := &cobra.Command{
		Use:   "commit WS [PATH...]",
		Short: "Stage and commit (all changes, or the given paths); hooks never run",
		Args:  cobra.MinimumNArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			creq.Paths = args[1:]
			res, err := a.svc.Commit(ctx, args[0], creq)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(res)
			}
			fmt.Fprintf(c.stdout, "%s: %d file(s), +%d -%d\n", short(res.SHA), res.FilesChanged, res.Insertions, res.Deletions)
			return nil
		}),
	}
	commit.Flags().StringVarP(&creq.Message, "message", "m", "", "commit message")
	commit.Flags().StringVar(&creq.AuthorName, "author-name", "", "author name (default GROVE_AUTHOR_NAME)")
	commit.Flags().StringVar(&creq.AuthorEmail, "author-email", "", "author email (default GROVE_AUTHOR_EMAIL)")
	_ = commit.MarkFlagRequired("message")
	var preq grove.PushRequest
	var tokenFile string
	push := &cobra.Command{
		Use:   "push WS",
		Short: "Push the workspace's branch (only that branch)",
		Args:  cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			tok, err := tokenFrom(tokenFile)
			if err != nil {
				return err
			}
			preq.Token = tok
			res, err := a.svc.Push(ctx, args[0], preq)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(res)
			}
			fmt.Fprintf(c.stdout, "pushed %s at %s (created=%v up-to-date=%v)\n", res.Branch, short(res.RemoteSHA), res.CreatedBranch, res.UpToDate)
			return nil
		}),
	}
	push.Flags().BoolVar(&preq.ForceWithLease, "force-with-lease", false, "overwrite the remote branch if it is where we last saw it")
	push.Flags().StringVar(&tokenFile, "token-file", "", "read the git token from this file (default: GROVE_GIT_TOKEN)")
	cmd.AddCommand(status, diff, log, commit, push)
	return cmd
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func (c *cli) reconcileCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reconcile",
		Short: "Compare the store with the disk and report differences",
		Args:  cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, a *app, _ []string) error {
			if a.engine == nil {
				return grove.Errorf(grove.ErrNotSupported, "reconcile runs where the data lives; run it on the server")
			}
			rep, err := a.engine.Reconcile(ctx)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(rep)
			}
			if rep.Empty() {
				fmt.Fprintln(c.stdout, "store and disk agree")
				return nil
			}
			for _, l := range []struct {
				what  string
				items []string
			}{
				{"workspace without files (marked broken)", rep.BrokenWorkspaces},
				{"unfinished workspace (marked broken)", rep.UnfinishedWorkspaces},
				{"repo cache missing (marked broken)", rep.MissingCaches},
				{"orphan directory (left in place)", rep.OrphanDirs},
				{"stale git lock removed", rep.RemovedLocks},
				{"runtime record dropped", rep.DroppedRuntimes},
				{"crash leftover removed", rep.RemovedTemp},
			} {
				for _, it := range l.items {
					fmt.Fprintf(c.stdout, "%s: %s\n", l.what, it)
				}
			}
			return nil
		}),
	}
}
