// Package execpath is the only way Grove reaches a workspace's git state and
// its search: through a command in the workspace's own runtime. A
// workspace's files and its .git are written by agent code, so host git
// must never read them (DESIGN.md §3: nothing on the host executes, or
// reads with trust, anything a sandbox can write): a config's filters,
// fsmonitor or hooksPath, a commondir or gitfile redirect, an alternates
// or ref symlink would all act on the host. Inside the runtime they act
// only on the sandbox, which is where the agent's own commands run anyway.
//
// Git is asked for the machine formats gitfmt parses (porcelain v2, -z
// raw/numstat, a fixed log format) and ripgrep for --json, so the answers
// are the same whatever runtime runs them — local bwrap and Docker today,
// remote sandboxes with no host path tomorrow. Work leaves a workspace
// only as data: a git bundle streamed out of the runtime (Bundle), which
// the host fetches into a Grove-owned repository with every object
// checked.
package execpath

import (
	"context"
	"strconv"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo"
)

// Execer runs a command in a workspace's runtime; driver.Driver satisfies
// it. ExecStream is used for output Grove streams into a sink of its own
// (bundles, search) with StreamOnly set.
type Execer interface {
	Exec(ctx context.Context, workspaceID string, req grove.ExecRequest) (*grove.ExecResult, error)
	ExecStream(ctx context.Context, workspaceID string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error)
}

// maxOutput bounds what one query may return. A status or log bigger than
// this is refused with grove.ErrTooLarge rather than parsed half.
const maxOutput = 64 << 20

// forcedConfig outranks the repository's own configuration (environment
// config is git's command-line scope). Hooks and fsmonitor would run
// inside the sandbox — no boundary is crossed — but Grove's own commits
// and queries must mean the same thing whatever the agent configured, and
// must work on a repository owned by another uid (safe.directory: Docker's
// command user, bwrap's mapped uid).
var forcedConfig = [][2]string{
	{"core.hooksPath", "/dev/null"},
	{"core.fsmonitor", "false"},
	{"core.pager", "cat"},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"gc.auto", "0"},
	{"safe.directory", "*"},
	{"color.ui", "false"},
	{"diff.external", ""},
}

// gitEnv is the environment of every git command Grove runs in a runtime.
// Optional locks stay on: a status may refresh the index as the agent's own
// would (git skips the refresh when the index is locked), which keeps the
// next status from re-reading every racily clean file; Grove's reads and
// the agent's write commands do not overlap anyway (the workspace lock).
func gitEnv(extra ...string) map[string]string {
	env := map[string]string{
		"GIT_PAGER":              "cat",
		"GIT_TERMINAL_PROMPT":    "0",
		"GIT_LITERAL_PATHSPECS":  "1", // caller paths are names, never globs or :(magic)
		"GIT_NO_REPLACE_OBJECTS": "1",
		"GIT_CONFIG_COUNT":       strconv.Itoa(len(forcedConfig)),
	}
	for i, kv := range forcedConfig {
		n := strconv.Itoa(i)
		env["GIT_CONFIG_KEY_"+n] = kv[0]
		env["GIT_CONFIG_VALUE_"+n] = kv[1]
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// run executes argv (or a shell script when argv[0] is "sh" with "-c")
// in the workspace's runtime. Exit codes in okCodes are results, not
// errors.
func run(ctx context.Context, x Execer, id string, req grove.ExecRequest, okCodes ...int) (*grove.ExecResult, error) {
	if req.Env == nil {
		req.Env = gitEnv()
	}
	if req.Class == "" {
		req.Class = grove.ClassRead
	}
	if req.MaxOutput == 0 {
		req.MaxOutput = maxOutput
	}
	name := "git"
	if len(req.Argv) > 0 {
		name = req.Argv[0]
	}
	res, err := x.Exec(ctx, id, req)
	if err != nil {
		return nil, err
	}
	if err := check(name, res, req.MaxOutput, okCodes); err != nil {
		return nil, err
	}
	return res, nil
}

func check(name string, res *grove.ExecResult, max int, okCodes []int) error {
	switch {
	case res.TimedOut:
		return grove.Errorf(grove.ErrTimeout, "%s timed out", name)
	case res.ExitCode == 127:
		return grove.Errorf(grove.ErrNotInstalled, "%s is not installed in the runtime", name)
	case res.ExitCode != 0 && !contains(okCodes, res.ExitCode):
		msg := firstLine(res.Stderr)
		if kind := gitrepo.Classify(msg); kind != nil {
			return grove.Errorf(kind, "%s exited %d: %s", name, res.ExitCode, msg)
		}
		return grove.Errorf(grove.ErrInvalid, "%s exited %d: %s", name, res.ExitCode, msg)
	case res.StdoutOmitted > 0:
		return grove.Errorf(grove.ErrTooLarge, "%s output exceeds %d bytes", name, max)
	}
	return nil
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
