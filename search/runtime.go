package search

import (
	"context"
	"io"

	"github.com/grove-dev/grove"
)

// StreamExecer runs a command in a workspace's runtime and streams its
// output; driver.Driver satisfies it.
type StreamExecer interface {
	ExecStream(ctx context.Context, workspaceID string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error)
}

// maxRuntimeOutput bounds the rg output one search reads from a runtime;
// the parsers stop far earlier for any page.
const maxRuntimeOutput = 1 << 30

// InRuntime searches workspace id with the rg inside its runtime, where
// the sandbox's view of the tree is the only one: a path swapped for a
// symlink while rg walks can lead only where the sandbox itself can see,
// never to the host's files. Pages, totals and errors are those of Run.
func InRuntime(ctx context.Context, x StreamExecer, id string, req grove.SearchRequest) (*grove.SearchResult, error) {
	req, err := normalise(req)
	if err != nil {
		return nil, err
	}
	launch := func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
		res, err := x.ExecStream(ctx, id, grove.ExecRequest{
			Argv: append([]string{"rg"}, args...), Class: grove.ClassRead,
			MaxOutput: maxRuntimeOutput, StreamOnly: true,
		}, func(c grove.Chunk) error {
			w := stdout
			if c.Stream == grove.Stderr {
				w = stderr
			}
			_, err := w.Write(c.Data)
			return err
		})
		if err != nil {
			return 0, err
		}
		if res.TimedOut {
			return 0, grove.Errorf(grove.ErrTimeout, "search timed out")
		}
		return res.ExitCode, nil
	}
	return searchPaged(ctx, launch, req, DefaultGatherLimit)
}
