package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
)

// Runner runs ripgrep on this host.
type Runner struct {
	// Binary is the rg executable; "" looks up "rg" on PATH.
	Binary string
	// GatherLimit bounds the parallel path (see DefaultGatherLimit); 0
	// means the default, a negative value always walks sorted.
	GatherLimit int
}

// Run searches dir with the rg on PATH; see Runner.Run.
func Run(ctx context.Context, dir string, req grove.SearchRequest) (*grove.SearchResult, error) {
	return Runner{}.Run(ctx, dir, req)
}

// maxStderr bounds what is kept of rg's error output.
const maxStderr = 4 << 10

// Run searches the workspace directory dir. rg runs with an empty
// environment (no RIPGREP_CONFIG_PATH, no colours) and stdin on
// /dev/null. Pages are in rg's --sort=path order whichever way rg walks:
// normally on every core, with the page put in order here and Total exact;
// past GatherLimit matches, sorted on one thread and killed as soon as the
// page is complete, when Total is the matches seen so far (a lower bound).
//
// Errors: grove.ErrInvalid for a bad request or a pattern rg rejects
// (with rg's message), grove.ErrPathOutside / ErrNotFound for the path,
// grove.ErrNotInstalled when rg is missing. No match is an empty result.
func (rn Runner) Run(ctx context.Context, dir string, req grove.SearchRequest) (*grove.SearchResult, error) {
	req, err := normalise(req)
	if err != nil {
		return nil, err
	}
	if err := checkPath(dir, req.Path); err != nil {
		return nil, err
	}
	bin, err := rn.binary()
	if err != nil {
		return nil, err
	}
	// First rg walks the tree on every core, unsorted, and the page is
	// put in path order here; only when the pattern matches so often that
	// gathering would cost more than it saves does rg walk sorted on one
	// thread and stop as soon as the page is complete.
	limit := rn.GatherLimit
	if limit == 0 {
		limit = DefaultGatherLimit
	}
	return searchPaged(ctx, hostLauncher(bin, dir), req, limit)
}

// searchPaged is Run's strategy over any launcher.
func searchPaged(ctx context.Context, launch launcher, req grove.SearchRequest, limit int) (*grove.SearchResult, error) {
	res, err := search(ctx, launch, args(req, false), newGatherer(req, max(limit, 0)))
	if errors.Is(err, errTooMany) {
		res, err = search(ctx, launch, args(req, true), newParser(req))
	}
	return res, err
}

// sink consumes rg's JSON output.
type sink interface {
	// consume reads records until r ends or the sink has what it needs.
	consume(r io.Reader) error
	// complete reports that the sink stopped reading because it has what
	// it needs, so rg's remaining work may be killed.
	complete() bool
	// matches is how many matches the sink has seen.
	matches() int
	result() *grove.SearchResult
}

// launcher runs rg with args, writing its output to stdout and stderr, and
// returns its exit code. ctx ending kills it.
type launcher func(ctx context.Context, args []string, stdout, stderr io.Writer) (exit int, err error)

// hostLauncher runs the host's rg in dir with an empty environment.
func hostLauncher(bin, dir string) launcher {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = dir
		cmd.Env = []string{}
		cmd.Stdin = nil // os/exec connects the null device
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Start(); err != nil {
			return 0, grove.Errorf(grove.ErrNotInstalled, "search: cannot start ripgrep (%v); install ripgrep (Debian: apt-get install ripgrep)", err)
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() >= 0 {
			return exit.ExitCode(), nil
		}
		return 0, err
	}
}

// errStopped tells a launcher's writer that the reader has what it needs.
var errStopped = errors.New("search: page complete")

// search runs one rg and feeds its output to out as it arrives.
func search(ctx context.Context, launch launcher, args []string, out sink) (*grove.SearchResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	var stderr limitedBuffer
	type ended struct {
		exit int
		err  error
	}
	done := make(chan ended, 1)
	go func() {
		exit, err := launch(ctx, args, pw, &stderr)
		pw.Close()
		done <- ended{exit, err}
	}()
	readErr := out.consume(pr)
	stopped := out.complete() || errors.Is(readErr, errTooMany)
	if stopped {
		// rg's remaining work is wasted.
		cancel()
	}
	pr.CloseWithError(errStopped) // a writer still going fails instead of blocking
	end := <-done
	if errors.Is(readErr, errTooMany) {
		return nil, readErr
	}
	if ctxErr := context.Cause(ctx); !stopped && ctxErr != nil {
		return nil, grove.Errorf(grove.ErrTimeout, "search: %v", ctxErr)
	}
	if readErr != nil && !stopped {
		return nil, fmt.Errorf("search: reading ripgrep output: %w", readErr)
	}
	switch {
	case stopped:
	case end.err != nil:
		return nil, end.err
	case end.exit == 0, end.exit == 1:
		// 1 means no match.
	case end.exit == 2 && out.matches() == 0:
		// 2 with nothing found is a bad pattern or a missing path.
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "No such file or directory") {
			return nil, grove.Errorf(grove.ErrNotFound, "search: path not found")
		}
		return nil, grove.Errorf(grove.ErrInvalid, "search: %s", msg)
	case end.exit == 2:
		// Some files could not be read; the matches found stand.
	case end.exit == 127:
		return nil, grove.Errorf(grove.ErrNotInstalled, "search needs ripgrep (rg) in the runtime, which does not have it")
	default:
		return nil, fmt.Errorf("search: ripgrep exited %d: %s", end.exit, strings.TrimSpace(stderr.String()))
	}
	return out.result(), nil
}

func (rn Runner) binary() (string, error) {
	name := rn.Binary
	if name == "" {
		name = "rg"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", grove.Errorf(grove.ErrNotInstalled, "search needs ripgrep (rg), which is not installed; install ripgrep (Debian: apt-get install ripgrep)")
	}
	return bin, nil
}

// checkPath refuses a search path that leaves the workspace through a
// symlink: rg follows symlinks given on its command line, so the path is
// resolved through os.Root (fsops) first.
func checkPath(dir, rel string) error {
	fsys, err := fsops.Open(dir, fsops.Options{})
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	defer fsys.Close()
	if _, err := fsys.Stat(rel); err != nil {
		return fmt.Errorf("search: %w", err)
	}
	return nil
}

// limitedBuffer keeps the first maxStderr bytes written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxStderr - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
