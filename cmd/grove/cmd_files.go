package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grove-dev/grove"
	"github.com/spf13/cobra"
)

// maxStdinWrite bounds what `grove write` accepts from stdin.
const maxStdinWrite = 64 << 20

func (c *cli) execCmd() *cobra.Command {
	var timeout time.Duration
	var class, dir string
	var maxOut int
	var shell bool
	cmd := &cobra.Command{
		Use:   "exec WS -- CMD [ARGS...]",
		Short: "Run a command in a workspace's runtime; exits with the command's code",
		Args:  cobra.MinimumNArgs(2),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			req := grove.ExecRequest{Dir: dir, Timeout: timeout, MaxOutput: maxOut, Class: grove.CommandClass(class)}
			if shell {
				req.Shell = strings.Join(args[1:], " ")
			} else {
				req.Argv = args[1:]
			}
			res, err := a.svc.ExecStream(ctx, args[0], req, func(ch grove.Chunk) error {
				if c.cfg.JSON {
					return nil
				}
				w := c.stdout
				if ch.Stream == grove.Stderr {
					w = c.stderr
				}
				_, err := w.Write(ch.Data)
				return err
			})
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				if err := c.printJSON(execView(res)); err != nil {
					return err
				}
			} else if res.Truncated {
				fmt.Fprintf(c.stderr, "grove: output truncated (%d stdout and %d stderr bytes omitted)\n", res.StdoutOmitted, res.StderrOmitted)
			}
			if res.TimedOut && !c.cfg.JSON {
				fmt.Fprintf(c.stderr, "grove: command timed out after %s\n", res.Duration.Round(time.Millisecond))
			}
			if res.ExitCode != 0 {
				return exitError{code: res.ExitCode}
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.DurationVar(&timeout, "timeout", 0, "command timeout (default: the runtime's, 2m)")
	f.StringVar(&class, "class", "", "read, write, install or test (default write; read for analysis workspaces)")
	f.StringVar(&dir, "dir", "", "working directory, relative to the workspace")
	f.IntVar(&maxOut, "max-output", 0, "cap on each output stream in bytes")
	f.BoolVar(&shell, "shell", false, "join the arguments and run them with bash -c")
	return cmd
}

// execView is the JSON shape of a command result: output as text.
func execView(r *grove.ExecResult) map[string]any {
	return map[string]any{
		"exit_code": r.ExitCode, "stdout": string(r.Stdout), "stderr": string(r.Stderr),
		"timed_out": r.TimedOut, "truncated": r.Truncated, "stdout_omitted": r.StdoutOmitted,
		"stderr_omitted": r.StderrOmitted, "duration_ms": r.Duration.Milliseconds(),
	}
}

func (c *cli) readCmd() *cobra.Command {
	var max int64
	cmd := &cobra.Command{
		Use:   "read WS PATH",
		Short: "Write a workspace file to stdout",
		Args:  cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			data, err := a.svc.ReadFile(ctx, args[0], args[1], max)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(map[string]any{"path": args[1], "size": len(data), "content": string(data)})
			}
			_, err = c.stdout.Write(data)
			return err
		}),
	}
	cmd.Flags().Int64Var(&max, "max-bytes", 0, "refuse files larger than this (default 10 MiB)")
	return cmd
}

func (c *cli) writeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "write WS PATH",
		Short: "Replace a workspace file atomically with stdin",
		Args:  cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			data, err := io.ReadAll(io.LimitReader(c.stdin, maxStdinWrite+1))
			if err != nil {
				return err
			}
			if len(data) > maxStdinWrite {
				return grove.Errorf(grove.ErrTooLarge, "stdin is larger than %d bytes", maxStdinWrite)
			}
			if err := a.svc.WriteFile(ctx, args[0], args[1], data); err != nil {
				return err
			}
			return c.done(map[string]any{"path": args[1], "bytes": len(data)}, fmt.Sprintf("wrote %d bytes to %s", len(data), args[1]))
		}),
	}
}

func (c *cli) lsCmd() *cobra.Command {
	var depth int
	cmd := &cobra.Command{
		Use:   "ls WS [PATH]",
		Short: "List a workspace directory",
		Args:  cobra.RangeArgs(1, 2),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			p := ""
			if len(args) == 2 {
				p = args[1]
			}
			ents, err := a.svc.ListDir(ctx, args[0], p, depth)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(ents)
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			for _, e := range ents {
				name := e.Path
				if e.IsDir {
					name += "/"
				}
				fmt.Fprintf(tw, "%d\t%s\n", e.Size, name)
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().IntVar(&depth, "depth", 1, "levels to descend")
	return cmd
}

func (c *cli) searchCmd() *cobra.Command {
	var req grove.SearchRequest
	cmd := &cobra.Command{
		Use:   "search WS PATTERN",
		Short: "Search a workspace with ripgrep",
		Args:  cobra.ExactArgs(2),
		RunE: c.run(func(ctx context.Context, a *app, args []string) error {
			req.Pattern = args[1]
			res, err := a.svc.Search(ctx, args[0], req)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(res)
			}
			for _, m := range res.Matches {
				fmt.Fprintf(c.stdout, "%s:%d:%s\n", m.Path, m.Line, m.Text)
			}
			if res.Truncated {
				fmt.Fprintf(c.stderr, "grove: %d matches shown; more from --offset %d\n", len(res.Matches), res.NextOffset)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&req.Path, "path", "", "subtree to search")
	f.StringVar(&req.Glob, "glob", "", "only files matching this glob")
	f.BoolVarP(&req.FixedString, "fixed-strings", "F", false, "pattern is a literal string")
	f.BoolVarP(&req.CaseInsensitive, "ignore-case", "i", false, "case-insensitive")
	f.IntVarP(&req.Context, "context", "C", 0, "lines of context")
	f.IntVar(&req.MaxResults, "max", 0, "matches per page (default 100)")
	f.IntVar(&req.Offset, "offset", 0, "matches to skip")
	return cmd
}
