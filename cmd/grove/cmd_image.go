package main

import (
	"github.com/docker/docker/client"
	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver/docker"
	agentsandbox "github.com/grove-dev/grove/images/agent-sandbox"
	"github.com/spf13/cobra"
)

func (c *cli) imageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "The agent image for container runtimes"}
	var lean bool
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the agent image from Debian packages (no registry needed); reused when up to date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
			if err != nil {
				return grove.Errorf(grove.ErrUnavailable, "docker client: %v", err)
			}
			defer cli.Close()
			v := agentsandbox.Full
			if lean {
				v = agentsandbox.Lean
			}
			tag, err := docker.EnsureImage(cmd.Context(), cli, v, c.progress())
			if err != nil {
				return err
			}
			return c.done(map[string]any{"image": tag, "variant": string(v)}, tag)
		},
	}
	build.Flags().BoolVar(&lean, "lean", false, "only git, ripgrep, tini and CA certificates")
	cmd.AddCommand(build)
	return cmd
}
