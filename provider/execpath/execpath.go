// Package execpath reaches a workspace's git state and its search through
// the workspace's runtime instead of the host's filesystem. It is the path
// for providers whose workspaces have no local path (git runs inside a
// remote sandbox): the only way in is a command. It asks git and ripgrep for
// the same machine formats the local fast path reads (gitfmt, rg --json) and
// parses them with the same parsers, so both paths give the same answers —
// execpath_test.go checks exactly that.
package execpath

import (
	"bytes"
	"context"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo/gitfmt"
	"github.com/grove-dev/grove/search"
)

// Execer runs a command in a workspace's runtime; driver.Driver and
// grove.Service both satisfy it.
type Execer interface {
	Exec(ctx context.Context, workspaceID string, req grove.ExecRequest) (*grove.ExecResult, error)
}

// maxOutput bounds what one query may return. A status or log bigger than
// this is refused with grove.ErrTooLarge rather than parsed half.
const maxOutput = 64 << 20

// gitEnv keeps git from taking optional locks (a status must not contend
// with an agent's own git commands) and from paging.
var gitEnv = map[string]string{"GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat"}

func run(ctx context.Context, x Execer, id string, argv []string, okCodes ...int) (*grove.ExecResult, error) {
	res, err := x.Exec(ctx, id, grove.ExecRequest{Argv: argv, Env: gitEnv, Class: grove.ClassRead, MaxOutput: maxOutput})
	if err != nil {
		return nil, err
	}
	if res.Truncated {
		return nil, grove.Errorf(grove.ErrTooLarge, "%s output exceeds %d bytes", argv[0], maxOutput)
	}
	if res.TimedOut {
		return nil, grove.Errorf(grove.ErrTimeout, "%s timed out", argv[0])
	}
	if res.ExitCode == 127 {
		return nil, grove.Errorf(grove.ErrNotInstalled, "%s is not installed in the runtime", argv[0])
	}
	if res.ExitCode != 0 && !contains(okCodes, res.ExitCode) {
		return nil, grove.Errorf(grove.ErrInvalid, "%s exited %d: %s", argv[0], res.ExitCode, firstLine(res.Stderr))
	}
	return res, nil
}

// Status is git status of the workspace, parsed.
func Status(ctx context.Context, x Execer, id string) (*grove.Status, error) {
	res, err := run(ctx, x, id, append([]string{"git"}, gitfmt.StatusArgs()...))
	if err != nil {
		return nil, err
	}
	return gitfmt.ParseStatusV2(res.Stdout)
}

// Log is the workspace's history, newest first. path must already be a
// validated workspace path; it is placed after "--".
func Log(ctx context.Context, x Execer, id string, limit int, path string) ([]grove.Commit, error) {
	res, err := run(ctx, x, id, append([]string{"git"}, gitfmt.LogArgs(limit, path)...))
	if err != nil {
		return nil, err
	}
	return gitfmt.ParseLog(res.Stdout)
}

// Search runs ripgrep in the workspace's runtime. No match is an empty
// result (rg's exit 1); a pattern rg rejects is grove.ErrInvalid.
func Search(ctx context.Context, x Execer, id string, req grove.SearchRequest) (*grove.SearchResult, error) {
	args, err := search.Args(req)
	if err != nil {
		return nil, err
	}
	res, err := run(ctx, x, id, append([]string{"rg"}, args...), 1)
	if err != nil {
		return nil, err
	}
	return search.Parse(bytes.NewReader(res.Stdout), req)
}

func contains(codes []int, c int) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}
