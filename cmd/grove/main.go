// Command grove is the CLI and server of Grove: durable, isolated git
// workspaces for AI coding agents. This package only parses flags, reads
// configuration and wires packages together.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/grove-dev/grove"
	"github.com/spf13/cobra"
)

// exitError carries a process exit code (a command's own, from grove exec).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := execute(ctx, newRoot())
	stop()
	var ee exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		os.Exit(ee.code)
	default:
		// One line that names the error kind, for people and for scripts.
		fmt.Fprintf(os.Stderr, "grove: %s: %v\n", grove.Code(err), err)
		os.Exit(1)
	}
}

// execute runs the command line. Errors before any command body ran —
// unknown flags, commands or arguments, missing required flags — are the
// caller's: they are ErrInvalid, not internal errors.
func execute(ctx context.Context, root *cobra.Command) error {
	started := false
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		switch {
		case cmd.RunE != nil:
			run := cmd.RunE
			cmd.RunE = func(cc *cobra.Command, args []string) error {
				started = true
				return run(cc, args)
			}
		case cmd.HasParent() && cmd.HasSubCommands():
			// A group like "grove repo" would otherwise print its help
			// and succeed when given an unknown subcommand.
			cmd.RunE = func(cc *cobra.Command, args []string) error {
				if len(args) > 0 {
					return grove.Errorf(grove.ErrInvalid, "unknown command %q for %q", args[0], cc.CommandPath())
				}
				return cc.Help()
			}
		}
	}
	walk(root)
	err := root.ExecuteContext(ctx)
	if err != nil && !started && grove.KindOf(err) == nil {
		return grove.Errorf(grove.ErrInvalid, "%v (see grove --help)", err)
	}
	return err
}

// cli carries what every command needs.
type cli struct {
	cfg    config
	stdout io.Writer
	stderr io.Writer
	stdin  io.Reader
	app    *app
	server string // --server / GROVE_SERVER: use the HTTP API instead of the engine
}

func newRoot() *cobra.Command {
	c := &cli{cfg: loadConfig(), stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin}
	root := &cobra.Command{
		Use:           "grove",
		Short:         "Durable, isolated git workspaces for AI coding agents",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&c.cfg.Root, "root", c.cfg.Root, "data root: store, repo caches, workspaces (GROVE_ROOT)")
	pf.StringVar(&c.cfg.Store, "store", c.cfg.Store, "store: sqlite (default, <root>/grove.db) or a postgres:// DSN (GROVE_STORE)")
	pf.StringVar(&c.cfg.Runtime, "runtime", c.cfg.Runtime, "runtime: bwrap, subprocess, docker or daytona; default bwrap where available (GROVE_RUNTIME)")
	pf.BoolVar(&c.cfg.AllowUnisolated, "allow-unisolated", c.cfg.AllowUnisolated, "allow writable workspaces on an unisolated runtime (GROVE_ALLOW_UNISOLATED)")
	pf.StringVar(&c.cfg.User, "user", c.cfg.User, "acting user (GROVE_USER)")
	c.server = os.Getenv("GROVE_SERVER")
	pf.StringVar(&c.server, "server", c.server, "Grove server URL; workspace commands use its HTTP API with GROVE_API_KEY (GROVE_SERVER)")
	pf.BoolVar(&c.cfg.JSON, "json", false, "print JSON")
	pf.BoolVarP(&c.cfg.Quiet, "quiet", "q", false, "no progress output")
	root.AddCommand(c.repoCmd(), c.wsCmd(), c.execCmd(), c.readCmd(), c.writeCmd(), c.lsCmd(), c.searchCmd(), c.gitCmd(), c.reconcileCmd(), c.evictCmd(), c.benchCmd(), c.imageCmd(), c.keysCmd(), c.serveCmd(), c.configCmd())
	root.AddCommand(c.mcpCmd(), c.tunnelCmd())
	return root
}

// open wires the engine once per process and reconciles quietly.
func (c *cli) open(ctx context.Context) (*app, error) {
	if c.app != nil {
		return c.app, nil
	}
	if c.server != "" {
		a, err := openRemote(c.server)
		if err == nil {
			c.app = a
		}
		return a, err
	}
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("GROVE_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	a, err := openEngine(ctx, c.cfg, logger)
	if err != nil {
		return nil, err
	}
	c.app = a
	return a, nil
}

func (c *cli) close() {
	if c.app != nil {
		c.app.close()
	}
}

// progress is where clone and fetch progress goes.
func (c *cli) progress() io.Writer {
	if c.cfg.Quiet || c.cfg.JSON {
		return nil
	}
	return c.stderr
}

func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// run wraps a command body with opening and closing the engine.
func (c *cli) run(fn func(ctx context.Context, a *app, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a, err := c.open(cmd.Context())
		if err != nil {
			return err
		}
		defer c.close()
		return fn(cmd.Context(), a, args)
	}
}

// token reads a per-call git token from GROVE_GIT_TOKEN or a file, never
// from argv, where other users could read it in /proc.
func tokenFrom(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", grove.Errorf(grove.ErrInvalid, "token file: %v", err)
		}
		return string(trimNewline(b)), nil
	}
	return os.Getenv("GROVE_GIT_TOKEN"), nil
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
