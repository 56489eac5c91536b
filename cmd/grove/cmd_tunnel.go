package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/tunnel"
)

// tunnelCmd is local mode's agent: it serves one directory of this
// machine to the server's calls (docs/TUNNEL.md).
func (c *cli) tunnelCmd() *cobra.Command {
	var dir, name, tmuxSocket string
	var readOnly, noTerminal bool
	cmd := &cobra.Command{
		Use:   "tunnel --server URL --dir PATH",
		Short: "Serve a local checkout to a Grove server (local mode): commands and files in --dir only",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.server == "" {
				return grove.Errorf(grove.ErrInvalid, "grove tunnel needs --server (or GROVE_SERVER)")
			}
			key := os.Getenv("GROVE_API_KEY")
			if key == "" {
				return grove.Errorf(grove.ErrUnauthorized, "grove tunnel needs GROVE_API_KEY")
			}
			if dir == "" {
				return grove.Errorf(grove.ErrInvalid, "--dir is required")
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			if name == "" {
				name = filepath.Base(abs)
			}
			if !tunnel.ValidName(name) {
				return grove.Errorf(grove.ErrInvalid, "--name %q: 1 to 64 letters, digits, '.', '_' or '-'", name)
			}
			level := slog.LevelInfo
			if os.Getenv("GROVE_LOG") != "" {
				level = slog.LevelDebug
			}
			// Every line names the workspace, the reconnect loop's too.
			log := tunnel.WorkspaceLogger(slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level})), name)
			if v := os.Getenv("GROVE_TUNNEL_NO_TERMINAL"); v != "" && v != "0" && v != "false" {
				noTerminal = true
			}
			local, err := tunnel.OpenLocalWith(abs, tunnel.LocalOptions{
				ReadOnly: readOnly, Workspace: name, Log: log,
				Terminal: tunnel.TerminalOptions{Disabled: noTerminal, TmuxSocket: tmuxSocket},
			})
			if err != nil {
				return grove.Errorf(grove.ErrInvalid, "--dir: %v", err)
			}
			defer local.Close()
			d := &tunnel.Dispatcher{Workspace: name, Log: log}
			local.Routes(d)
			if !c.cfg.Quiet {
				mode := "read-write"
				if readOnly {
					mode = "read-only"
				}
				fmt.Fprintf(c.stderr, "grove tunnel: serving %s as %q (%s) to %s\n", local.Dir(), name, mode, c.server)
			}
			// Where the developer watches the commands: always said, even
			// with --quiet, since it is how they see what runs as them.
			if where := local.TerminalWhere(); where != "" {
				fmt.Fprintf(c.stderr, "grove tunnel: the commands run here are shown in: %s\n", where)
			} else if !readOnly {
				fmt.Fprintf(c.stderr, "grove tunnel: commands are not shown (--no-terminal)\n")
			}
			return tunnel.Run(cmd.Context(), c.server, key, &tunnel.Agent{
				Workspace: name, DirLabel: filepath.Base(local.Dir()), ReadOnly: readOnly, D: d, Log: log,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "the directory to serve; nothing outside it is reachable")
	f.StringVar(&name, "name", "", "workspace name on the server (default: the directory's name)")
	f.BoolVar(&readOnly, "read-only", false, "refuse writes, commands and commits: only reads, search and git status/diff/log")
	f.BoolVar(&noTerminal, "no-terminal", false, "do not show the commands in a tmux session grove-<name> or a log file (also GROVE_TUNNEL_NO_TERMINAL=1)")
	f.StringVar(&tmuxSocket, "tmux-socket", tunnel.DefaultTmuxSocket, "tmux socket name (tmux -L) of the grove-<name> session")
	return cmd
}
