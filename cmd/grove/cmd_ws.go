package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/engine"
	"github.com/spf13/cobra"
)

// wsView is the JSON shape of a workspace on the CLI: the record plus what
// scripts ask for most.
type wsView struct {
	*grove.Workspace
	Writable bool `json:"writable"`
	Created  bool `json:"created"`
}

func (c *cli) wsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "ws", Short: "Manage workspaces"}
	var req grove.AcquireRequest
	var mode, tokenFile string
	acquire := &cobra.Command{
		Use:   "acquire",
		Short: "Create or re-attach a workspace",
		Args:  cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, a *app, _ []string) error {
			req.User = c.cfg.User
			req.Mode = grove.Mode(mode)
			if req.Mode == "" {
				m, err := grove.InferMode(req.Conversation, req.Task)
				if err != nil {
					return err
				}
				req.Mode = m
			}
			tok, err := tokenFrom(tokenFile)
			if err != nil {
				return err
			}
			req.Token = tok
			ws, created, err := a.svc.Acquire(engine.WithProgress(ctx, c.progress()), req)
			if err != nil {
				return err
			}
			return c.showWorkspace(ws, created)
		}),
	}
	f := acquire.Flags()
	f.StringVar(&req.Repo, "repo", "", "owner/repo, URL or local path")
	f.StringVar(&req.Project, "project", "default", "project id")
	f.StringVar(&mode, "mode", "", "analysis, edit or task (default: from --conversation/--task, else analysis)")
	f.StringVar(&req.Conversation, "conversation", "", "conversation id (edit mode)")
	f.StringVar(&req.Task, "task", "", "task id (task mode)")
	f.StringVar(&req.Ref, "ref", "", "base ref")
	f.StringVar(&req.Branch, "branch", "", "branch name (default agent/edits-<conversation> or agent/task-<task>)")
	f.BoolVar(&req.Refresh, "refresh", false, "fetch even if the cache is fresh")
	f.StringVar(&tokenFile, "token-file", "", "read the git token from this file (default: GROVE_GIT_TOKEN)")
	_ = acquire.MarkFlagRequired("repo")

	var filter grove.WorkspaceFilter
	var all bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List workspaces",
		Args:  cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, a *app, _ []string) error {
			if !all && filter.User == "" {
				filter.User = c.cfg.User
			}
			wss, err := a.svc.List(ctx, filter)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				out := make([]wsView, len(wss))
				for i, ws := range wss {
					out[i] = wsView{Workspace: ws, Writable: ws.Capabilities().Writable}
				}
				return c.printJSON(out)
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tREPO\tMODE\tBRANCH\tSTATE\tDIRTY\tPINNED\tPATH")
			for _, ws := range wss {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%v\t%s\n", ws.ID, ws.Repo, ws.Mode, branchOrDetached(ws), ws.State, ws.Dirty, ws.Pinned, ws.LocalPath)
			}
			return tw.Flush()
		}),
	}
	list.Flags().StringVar(&filter.Project, "project", "", "only this project")
	list.Flags().StringVar(&filter.Repo, "repo", "", "only this repo")
	list.Flags().StringVar(&filter.User, "for-user", "", "only this user (default: the acting user)")
	list.Flags().BoolVar(&all, "all", false, "every user's workspaces")

	show := &cobra.Command{
		Use:   "show WS",
		Short: "Show a workspace",
		Args:  cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			ws, err := a.svc.Get(ctx, args[0])
			if err != nil {
				return err
			}
			return c.showWorkspace(ws, false)
		}),
	}
	release := &cobra.Command{
		Use:   "release WS",
		Short: "Hibernate a workspace's runtime; the files stay",
		Args:  cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			if err := a.svc.Release(ctx, args[0]); err != nil {
				return err
			}
			return c.done(map[string]any{"id": args[0], "released": true}, "released "+args[0])
		}),
	}
	rm := &cobra.Command{
		Use:   "rm WS",
		Short: "Destroy a workspace (its runtime and files; committed work stays in the cache)",
		Args:  cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			if err := a.svc.Destroy(ctx, args[0]); err != nil {
				return err
			}
			return c.done(map[string]any{"id": args[0], "destroyed": true}, "destroyed "+args[0])
		}),
	}
	var unpin bool
	pin := &cobra.Command{
		Use:   "pin WS",
		Short: "Pin a workspace so eviction never touches it (--unpin to clear)",
		Args:  cobra.ExactArgs(1),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			if err := a.svc.Pin(ctx, args[0], !unpin); err != nil {
				return err
			}
			return c.done(map[string]any{"id": args[0], "pinned": !unpin}, fmt.Sprintf("pinned=%v %s", !unpin, args[0]))
		}),
	}
	pin.Flags().BoolVar(&unpin, "unpin", false, "clear the pin")
	cmd.AddCommand(acquire, list, show, release, rm, pin)
	return cmd
}

func branchOrDetached(ws *grove.Workspace) string {
	if ws.Branch == "" {
		return "(detached)"
	}
	return ws.Branch
}

func (c *cli) showWorkspace(ws *grove.Workspace, created bool) error {
	if c.cfg.JSON {
		return c.printJSON(wsView{Workspace: ws, Writable: ws.Capabilities().Writable, Created: created})
	}
	verb := "existing"
	if created {
		verb = "created"
	}
	fmt.Fprintf(c.stdout, "%s (%s)\n  repo:     %s\n  mode:     %s\n  branch:   %s\n  head:     %s\n  path:     %s\n  writable: %v\n  state:    %s\n",
		ws.ID, verb, ws.Repo, ws.Mode, branchOrDetached(ws), ws.HeadSHA, ws.LocalPath, ws.Capabilities().Writable, ws.State)
	return nil
}
