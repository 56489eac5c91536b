package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/bwrap"
	"github.com/grove-dev/grove/gitrepo/gitfmt"
	"github.com/grove-dev/grove/internal/bench"
	"github.com/spf13/cobra"
)

// benchOpts are the knobs of `grove bench`.
type benchOpts struct {
	src     string // tree to commit into the benchmark repo
	work    string // where the benchmark repo is kept between runs
	n       int    // iterations per measured operation
	agents  int
	execs   int
	pattern string
}

func (c *cli) benchCmd() *cobra.Command {
	o := benchOpts{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Grove against the raw tools (git, the runtime launch, rg, os) in one run",
		Long: `Builds a repository from a source tree (default: Go's own src, ~11k files),
then times acquire, re-acquire, exec, search, file read/write and concurrent
agents through Grove and the same work done with the raw tool, side by side,
and prints min/p50/p95/p99 and the p50 ratio. Uses a fresh root under --work;
--root is not touched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.runBench(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.src, "src", filepath.Join(goRoot(), "src"), "source tree to commit into the benchmark repo")
	f.StringVar(&o.work, "work", filepath.Join(os.TempDir(), "grove-bench"), "working directory (the repo is reused between runs)")
	f.IntVar(&o.n, "n", 20, "iterations per operation")
	f.IntVar(&o.agents, "agents", 32, "concurrent agents, each on its own branch")
	f.IntVar(&o.execs, "execs", 20, "commands per agent")
	f.StringVar(&o.pattern, "pattern", "func New", "search pattern")
	cmd.AddCommand(c.benchHTTPCmd())
	return cmd
}

func goRoot() string {
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil && len(out) > 1 {
		return string(trimNewline(out))
	}
	return "/usr/local/go"
}

func (c *cli) runBench(ctx context.Context, o benchOpts) error {
	repo, err := benchRepo(ctx, o, c.stderr)
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp(o.work, "root-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	cfg := c.cfg
	cfg.Root = root
	cfg.WorkspacesPer = -1 // the benchmark acquires as many as it is told to
	a, err := openEngine(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer a.close()
	eng := a.engine
	rc, err := eng.EnsureRepo(ctx, grove.EnsureRepoRequest{Repo: repo})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "bench: runtime %s, repo %s, %d iterations\n", eng.Driver().Kind(), repo, o.n)
	var rows []bench.Row
	user := "bench"
	acq := func(scope string) grove.AcquireRequest {
		return grove.AcquireRequest{Repo: repo, User: user, Project: "bench", Mode: grove.ModeEdit, Conversation: scope}
	}

	// Acquire on a warm cache vs raw `git worktree add`, interleaved so both
	// see the same disk state.
	var g, raw bench.Sample
	for i := range o.n {
		t0 := time.Now()
		if _, _, err := eng.Acquire(ctx, acq(fmt.Sprintf("acq-%d", i))); err != nil {
			return err
		}
		g = append(g, time.Since(t0))
		dir := filepath.Join(root, "raw-worktrees", fmt.Sprint(i))
		t0 = time.Now()
		if out, err := exec.CommandContext(ctx, "git", "--git-dir="+rc.LocalPath, "worktree", "add", "-q", "-b", fmt.Sprintf("raw-%d", i), dir, "HEAD").CombinedOutput(); err != nil {
			return fmt.Errorf("git worktree add: %v: %s", err, out)
		}
		raw = append(raw, time.Since(t0))
	}
	rows = append(rows, bench.Row{Name: "acquire (new, warm cache)", Grove: g, Raw: raw, Note: "raw: git worktree add"})

	ws, _, err := eng.Acquire(ctx, acq("acq-0"))
	if err != nil {
		return err
	}
	g, err = bench.Time(o.n*10, func() error { _, _, err := eng.Acquire(ctx, acq("acq-0")); return err })
	if err != nil {
		return err
	}
	rows = append(rows, bench.Row{Name: "re-acquire", Grove: g, Note: "no git process"})

	execTrue := grove.ExecRequest{Argv: []string{"true"}, Class: grove.ClassRead}
	if _, err := eng.Exec(ctx, ws.ID, execTrue); err != nil { // create the runtime
		return err
	}
	rawTrue, rawNote := rawLaunch(eng.Driver(), ws.ID)
	g, raw, err = pair(o.n*5,
		func() error { _, err := eng.Exec(ctx, ws.ID, execTrue); return err },
		rawTrue)
	if err != nil {
		return err
	}
	rows = append(rows, bench.Row{Name: "exec true (" + eng.Driver().Kind() + ")", Grove: g, Raw: raw, Note: "raw: " + rawNote})

	// Grove sorts by path so that pages are stable between calls, which
	// makes rg walk the tree on one thread; compare with both.
	sreq := grove.SearchRequest{Pattern: o.pattern, MaxResults: 1000}
	for _, raw := range [][]string{{"rg", "--json", "--", o.pattern}, {"rg", "--json", "--sort=path", "--", o.pattern}} {
		g, r, err := pair(o.n,
			func() error { _, err := eng.Search(ctx, ws.ID, sreq); return err },
			func() error {
				cmd := exec.CommandContext(ctx, raw[0], raw[1:]...)
				cmd.Dir = ws.LocalPath
				cmd.Stdout = io.Discard
				err := cmd.Run()
				var ee *exec.ExitError
				if errors.As(err, &ee) && ee.ExitCode() == 1 {
					return nil
				}
				return err
			})
		if err != nil {
			return err
		}
		rows = append(rows, bench.Row{Name: "search", Grove: g, Raw: r, Note: "raw: " + strings.Join(raw[:len(raw)-2], " ")})
	}

	// Workspace git runs inside the runtime (the trust boundary); compare
	// with host git reading the same tree directly.
	// (The workspace belongs to the sandbox's uid; the benchmark's own
	// repository is no agent's, so host git may read it here.)
	statusArgv := append([]string{"git", "-c", "safe.directory=*", "-C", ws.LocalPath}, gitfmt.StatusArgs()...)
	g, raw, err = pair(o.n,
		func() error { _, err := eng.Status(ctx, ws.ID); return err },
		func() error { return exec.CommandContext(ctx, statusArgv[0], statusArgv[1:]...).Run() })
	if err != nil {
		return err
	}
	rows = append(rows, bench.Row{Name: "git status (" + eng.Driver().Kind() + ")", Grove: g, Raw: raw, Note: "raw: host git status"})

	data := make([]byte, 4096)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	rawFile := filepath.Join(ws.LocalPath, "bench-raw.txt")
	g, raw, err = pair(o.n*20,
		func() error { return eng.WriteFile(ctx, ws.ID, "bench.txt", data) },
		func() error { return os.WriteFile(rawFile, data, 0o644) })
	if err != nil {
		return err
	}
	rows = append(rows, bench.Row{Name: "write 4 KiB", Grove: g, Raw: raw, Note: "atomic rename vs os.WriteFile"})
	g, raw, err = pair(o.n*20,
		func() error { _, err := eng.ReadFile(ctx, ws.ID, "bench.txt", 0); return err },
		func() error { _, err := os.ReadFile(rawFile); return err })
	if err != nil {
		return err
	}
	rows = append(rows, bench.Row{Name: "read 4 KiB", Grove: g, Raw: raw, Note: "raw: os.ReadFile"})

	conc, seq, err := agents(ctx, c, eng, repo, o)
	if err != nil {
		return err
	}
	rows = append(rows, bench.Row{Name: fmt.Sprintf("%d agents x (acquire + %d execs)", o.agents, o.execs), Grove: bench.Sample{conc}, Raw: bench.Sample{seq}, Note: "raw: same work sequentially"})
	return bench.Print(c.stdout, rows)
}

// pair times two functions n times each, alternating, so drift in the
// machine's load hits both.
func pair(n int, grove, raw func() error) (g, r bench.Sample, err error) {
	for range n {
		s, err := bench.Time(1, grove)
		if err != nil {
			return nil, nil, err
		}
		g = append(g, s...)
		s, err = bench.Time(1, raw)
		if err != nil {
			return nil, nil, err
		}
		r = append(r, s...)
	}
	return g, r, nil
}

// rawLaunch is the launch a runtime performs, done by hand: for bwrap the
// very command line the driver runs (same sandbox, seccomp filter and
// identity) without Grove around it; for others a plain fork/exec.
func rawLaunch(d driver.Driver, id string) (func() error, string) {
	if b, ok := d.(*bwrap.Driver); ok {
		return func() error {
			cmd, done, err := b.RawCommand(id, []string{"true"})
			if err != nil {
				return err
			}
			defer done()
			return cmd.Run()
		}, "the same bwrap command line"
	}
	return func() error { return exec.Command("true").Run() }, "fork/exec true"
}

// agents runs o.agents agents at once, each acquiring its own branch and
// running o.execs commands, then the same work one agent after another.
func agents(ctx context.Context, c *cli, eng interface {
	Acquire(context.Context, grove.AcquireRequest) (*grove.Workspace, bool, error)
	Exec(context.Context, string, grove.ExecRequest) (*grove.ExecResult, error)
}, repo string, o benchOpts) (conc, seq time.Duration, err error) {
	work := func(prefix string, i int) error {
		ws, _, err := eng.Acquire(ctx, grove.AcquireRequest{Repo: repo, User: "bench", Project: "bench", Mode: grove.ModeTask, Task: fmt.Sprintf("%s-%d", prefix, i)})
		if err != nil {
			return err
		}
		for range o.execs {
			res, err := eng.Exec(ctx, ws.ID, grove.ExecRequest{Argv: []string{"true"}, Class: grove.ClassWrite})
			if err != nil {
				return err
			}
			if res.ExitCode != 0 {
				return fmt.Errorf("agent %d: exit %d", i, res.ExitCode)
			}
		}
		return nil
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, o.agents)
	for i := range o.agents {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- work("conc", i) }()
	}
	wg.Wait()
	close(errs)
	failures := 0
	for err := range errs {
		if err != nil {
			failures++
			fmt.Fprintln(c.stderr, "bench: agent failed:", err)
		}
	}
	if failures > 0 {
		return 0, 0, fmt.Errorf("%d of %d concurrent agents failed", failures, o.agents)
	}
	conc = time.Since(t0)
	t0 = time.Now()
	for i := range o.agents {
		if err := work("seq", i); err != nil {
			return 0, 0, err
		}
	}
	return conc, time.Since(t0), nil
}

// benchRepo returns a repository holding o.src in one commit, building it
// under o.work the first time.
func benchRepo(ctx context.Context, o benchOpts, progress io.Writer) (string, error) {
	dir := filepath.Join(o.work, "repo")
	if exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--verify", "--quiet", "main").Run() == nil {
		return dir, nil
	}
	fmt.Fprintf(progress, "bench: building the benchmark repo from %s (once)\n", o.src)
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return "", err
	}
	steps := [][]string{
		{"cp", "-a", o.src, tmp},
		{"git", "-C", tmp, "init", "-q", "-b", "main"},
		{"git", "-C", tmp, "add", "-A"},
		{"git", "-C", tmp, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", "benchmark tree"},
	}
	for _, s := range steps {
		cmd := exec.CommandContext(ctx, s[0], s[1:]...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%v: %v: %s", s, err, out)
		}
	}
	return dir, os.Rename(tmp, dir)
}
