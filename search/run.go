package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
)

// Runner runs ripgrep on this host.
type Runner struct {
	// Binary is the rg executable; "" looks up "rg" on PATH.
	Binary string
}

// Run searches dir with the rg on PATH; see Runner.Run.
func Run(ctx context.Context, dir string, req grove.SearchRequest) (*grove.SearchResult, error) {
	return Runner{}.Run(ctx, dir, req)
}

// maxStderr bounds what is kept of rg's error output.
const maxStderr = 4 << 10

// Run searches the workspace directory dir. rg runs with an empty
// environment (no RIPGREP_CONFIG_PATH, no colours) and stdin on
// /dev/null, and is killed as soon as the requested page is complete, so
// when Truncated, Total counts the matches seen so far (a lower bound).
//
// Errors: grove.ErrInvalid for a bad request or a pattern rg rejects
// (with rg's message), grove.ErrPathOutside / ErrNotFound for the path,
// grove.ErrNotInstalled when rg is missing. No match is an empty result.
func (rn Runner) Run(ctx context.Context, dir string, req grove.SearchRequest) (*grove.SearchResult, error) {
	args, err := Args(req)
	if err != nil {
		return nil, err
	}
	req, _ = normalise(req)
	if err := checkPath(dir, req.Path); err != nil {
		return nil, err
	}
	bin, err := rn.binary()
	if err != nil {
		return nil, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{}
	cmd.Stdin = nil // os/exec connects the null device
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, grove.Errorf(grove.ErrNotInstalled, "search: cannot start ripgrep (%v); install ripgrep (Debian: apt-get install ripgrep)", err)
	}
	p := newParser(req)
	readErr := p.readAll(stdout, p.pageDone)
	stopped := p.pageDone()
	if stopped {
		// The page is complete: rg's remaining work is wasted.
		cancel()
	}
	waitErr := cmd.Wait()
	if ctxErr := context.Cause(ctx); !stopped && ctxErr != nil {
		return nil, grove.Errorf(grove.ErrTimeout, "search: %v", ctxErr)
	}
	if readErr != nil && !stopped {
		return nil, fmt.Errorf("search: reading ripgrep output: %w", readErr)
	}
	var exit *exec.ExitError
	switch {
	case waitErr == nil, stopped:
	case errors.As(waitErr, &exit) && exit.ExitCode() == 1:
		// 1 means no match.
	case errors.As(waitErr, &exit) && exit.ExitCode() == 2 && p.seen == 0:
		// 2 with nothing found is a bad pattern (or an unreadable path,
		// which checkPath rules out beforehand).
		return nil, grove.Errorf(grove.ErrInvalid, "search: %s", strings.TrimSpace(stderr.String()))
	case errors.As(waitErr, &exit) && exit.ExitCode() == 2:
		// Some files could not be read; the matches found stand.
	default:
		return nil, fmt.Errorf("search: ripgrep: %w", waitErr)
	}
	return p.result(), nil
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
