package main

import (
	"context"
	"fmt"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/mcpserver"
	"github.com/grove-dev/grove/tools"
	"github.com/grove-dev/grove/wire"
	"github.com/spf13/cobra"
)

// mcpCmd serves the agent tool catalog over MCP on stdin/stdout, bound to
// one workspace: an existing one (--workspace) or one acquired on start
// from the same flags as `grove ws acquire`. Stdout belongs to the
// protocol, so everything for people (acquire progress, the workspace it
// bound to) goes to stderr.
func (c *cli) mcpCmd() *cobra.Command {
	var wsID, mode, tokenFile string
	var req grove.AcquireRequest
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the agent tools over MCP on stdio, bound to one workspace",
		Long: "Serve the agent tools over the Model Context Protocol on stdin/stdout.\n\n" +
			"Bind to an existing workspace with --workspace ID, or acquire one on start with\n" +
			"--repo R and --conversation C, --task T or --mode analysis (plus --ref, --branch, --project).",
		Args: cobra.NoArgs,
		RunE: c.run(func(ctx context.Context, a *app, _ []string) error {
			tok, err := tokenFrom(tokenFile)
			if err != nil {
				return err
			}
			id, err := c.mcpWorkspace(ctx, a, wsID, mode, tok, req)
			if err != nil {
				return err
			}
			ts := tools.New(tools.Options{})
			defer ts.Close()
			svc := a.svc
			if a.engine != nil {
				// A server's client already speaks escaped names.
				svc = wire.EscapeNames(svc)
			}
			err = mcpserver.ServeStdio(ctx, svc, mcpserver.Options{
				Tools: ts, WorkspaceID: id,
				Caller: tools.Caller{User: c.cfg.User, Token: tok},
			})
			if ctx.Err() != nil {
				return nil // SIGINT/SIGTERM: a normal way to stop a stdio server
			}
			return err
		}),
	}
	f := cmd.Flags()
	f.StringVar(&wsID, "workspace", "", "bind to this existing workspace")
	f.StringVar(&req.Repo, "repo", "", "acquire a workspace of this repo on start (owner/repo, URL or local path)")
	f.StringVar(&req.Project, "project", "default", "project id (with --repo)")
	f.StringVar(&mode, "mode", "", "analysis, edit or task (default: from --conversation/--task)")
	f.StringVar(&req.Conversation, "conversation", "", "conversation id (edit mode)")
	f.StringVar(&req.Task, "task", "", "task id (task mode)")
	f.StringVar(&req.Ref, "ref", "", "base ref")
	f.StringVar(&req.Branch, "branch", "", "branch name")
	f.StringVar(&tokenFile, "token-file", "", "read the git token from this file (default: GROVE_GIT_TOKEN)")
	cmd.MarkFlagsMutuallyExclusive("workspace", "repo")
	cmd.MarkFlagsOneRequired("workspace", "repo")
	return cmd
}

// mcpWorkspace returns the id to bind to: --workspace after checking it
// exists (a typo should fail here, not on the agent's first call), or a
// workspace acquired from the flags.
func (c *cli) mcpWorkspace(ctx context.Context, a *app, wsID, mode, tok string, req grove.AcquireRequest) (string, error) {
	if wsID != "" {
		ws, err := a.svc.Get(ctx, wsID)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(c.stderr, "grove mcp: serving workspace %s (%s, writable=%v)\n", ws.ID, branchOrDetached(ws), ws.Capabilities().Writable)
		return ws.ID, nil
	}
	req.User, req.Token, req.Mode = c.cfg.User, tok, grove.Mode(mode)
	if req.Mode == "" {
		switch {
		case req.Task != "":
			req.Mode = grove.ModeTask
		case req.Conversation != "":
			req.Mode = grove.ModeEdit
		default:
			// An agent given a repo and nothing else should not write by
			// accident: name the mode to get one that writes.
			return "", grove.Errorf(grove.ErrInvalid, "with --repo, give --conversation, --task or --mode analysis")
		}
	}
	ws, created, err := a.svc.Acquire(engine.WithProgress(ctx, c.progress()), req)
	if err != nil {
		return "", err
	}
	verb := "existing"
	if created {
		verb = "created"
	}
	fmt.Fprintf(c.stderr, "grove mcp: serving workspace %s (%s, %s, writable=%v)\n", ws.ID, verb, branchOrDetached(ws), ws.Capabilities().Writable)
	return ws.ID, nil
}
