package tools

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/grove-dev/grove"
)

// Error is a tool error as the model sees it: "E_CODE: message. Hint: …".
// Err is the grove kind it wraps, so transports map it to a status with
// errors.Is like any other Grove error.
type Error struct {
	Code string
	Msg  string
	Hint string
	Err  error
}

func (e *Error) Error() string {
	s := e.Code + ": " + strings.TrimSuffix(e.Msg, ".")
	if e.Hint != "" {
		s += ". Hint: " + e.Hint
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ErrPlatformNotConfigured is returned by the pull-request tools until a git
// platform (GitHub, GitLab) is configured for the server.
var ErrPlatformNotConfigured = &Error{
	Code: "E_PLATFORM_NOT_CONFIGURED",
	Msg:  "no git hosting platform is configured on this Grove server, so pull requests cannot be created or commented on",
	Hint: "push the branch with git_push and tell the user the branch name so they can open the pull request",
	Err:  grove.ErrPlatformNotConfigured,
}

// Code returns err's tool error code.
func Code(err error) string {
	var te *Error
	if errors.As(err, &te) {
		return te.Code
	}
	return asError(err).(*Error).Code
}

// defaultHints tell the model what to do next for each kind. E_NOT_FOUND
// has none: what is missing (a path, the workspace, a ref, the remote)
// decides the hint, so the tools that know add it (notFound,
// workspaceNotFound, git_diff, git_push).
var defaultHints = map[string]string{
	"E_IS_DIRECTORY":              "use list_dir to see its entries",
	"E_BINARY_FILE":               "binary files cannot be shown as text; inspect them with run_command (for example `file` or `xxd | head`)",
	"E_TOO_LARGE":                 "narrow it: search_code for what you need, or run_command with `sed -n 'START,ENDp'`",
	"E_READ_ONLY_WORKSPACE":       "this workspace is for analysis; open an edit or task workspace with workspace_open to make changes",
	"E_PATH_OUTSIDE_WORKSPACE":    "use a path relative to the workspace root",
	"E_CONFLICT":                  "re-read the current state and retry",
	"E_UNAVAILABLE":               "the backend is unavailable; retry in a moment",
	"E_TIMEOUT":                   "raise timeout_s, narrow the work, or run it with background=true",
	"E_NOTHING_TO_COMMIT":         "there are no changes; git_status shows the working tree",
	"E_RESOURCE_LIMIT":            "wait for running work to finish or free resources, then retry",
	"E_NOT_INSTALLED":             "the tool is not installed in this workspace's runtime",
	"E_AUTH_FAILED":               "the credentials were rejected; ask the user to check access to the repository",
	"E_DEBUG_ADAPTER_UNAVAILABLE": "debug_adapter_unavailable: install lldb-dap / dlv / debugpy in the runtime, or see debug_context",
	"E_NOT_PAUSED":                "the program is running: call debug_continue with a breakpoint set, or debug_snapshot with a longer timeout",
}

// asError turns any error into an *Error. Context errors become E_TIMEOUT
// or E_CANCELLED.
func asError(err error) error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) && grove.KindOf(err) == nil:
		return &Error{Code: "E_TIMEOUT", Msg: "the call ran out of time", Hint: defaultHints["E_TIMEOUT"], Err: grove.ErrTimeout}
	case errors.Is(err, context.Canceled) && grove.KindOf(err) == nil:
		return &Error{Code: "E_CANCELLED", Msg: "the call was cancelled", Err: err}
	case errors.Is(err, syscall.ENAMETOOLONG) && grove.KindOf(err) == nil:
		// The caller's input, not an internal fault; the message leaves out
		// the (possibly huge) path.
		return &Error{Code: "E_INVALID_ARGUMENT", Msg: "a file name in the path is over 255 bytes, or the path is too long", Hint: "use shorter names", Err: grove.ErrInvalid}
	}
	code := grove.Code(err)
	kind := grove.KindOf(err)
	if kind == nil {
		kind = err
	}
	return &Error{Code: code, Msg: err.Error(), Hint: defaultHints[code], Err: kind}
}

func invalidf(format string, args ...any) error {
	return &Error{Code: "E_INVALID_ARGUMENT", Msg: fmt.Sprintf(format, args...), Hint: "fix the input and call again", Err: grove.ErrInvalid}
}

func withHint(err error, hint string) error {
	e := asError(err).(*Error)
	cp := *e
	cp.Hint = hint
	return &cp
}

// workspaceNotFound explains err when the missing thing is the workspace
// itself rather than something in it; otherwise it returns err unchanged.
func workspaceNotFound(ctx context.Context, svc grove.Service, id string, err error) error {
	if !errors.Is(err, grove.ErrNotFound) {
		return err
	}
	if _, gerr := svc.Get(ctx, id); !errors.Is(gerr, grove.ErrNotFound) {
		return err
	}
	return &Error{Code: "E_NOT_FOUND", Msg: fmt.Sprintf("workspace %q does not exist (or was destroyed)", clip(id, 64)),
		Hint: "open a workspace with workspace_open and use the workspace_id it returns", Err: grove.ErrNotFound}
}

// notFound enriches a missing-path error with the closest names in the
// nearest existing parent directory.
func (c *call) notFound(ctx context.Context, p string, err error) error {
	if !errors.Is(err, grove.ErrNotFound) {
		return err
	}
	dir, base := path.Split(strings.TrimSuffix(p, "/"))
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	entries, lerr := c.svc.ListDir(ctx, c.ws, dir, 1)
	if lerr != nil {
		return withHint(err, fmt.Sprintf("the directory %q does not exist either; use find_files to locate the file", dir))
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if s := closest(base, names, 3); len(s) > 0 {
		for i := range s {
			if dir != "." {
				s[i] = dir + "/" + s[i]
			}
		}
		return withHint(err, "did you mean "+quoteList(s)+"?")
	}
	return withHint(err, fmt.Sprintf("%q has no similar entry; use find_files to locate the file", dir))
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, " or ")
}

// closest returns up to n candidates similar to want, best first.
func closest(want string, candidates []string, n int) []string {
	type scored struct {
		s string
		d int
	}
	var all []scored
	lw := strings.ToLower(want)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := levenshtein(lw, lc)
		if strings.Contains(lc, lw) || strings.Contains(lw, lc) {
			d = min(d, 1)
		}
		if d <= max(2, len(want)/3) {
			all = append(all, scored{c, d})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].d < all[j].d })
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].s)
	}
	return out
}

// levenshtein is the edit distance of a and b, bounded in cost by clipping
// both to 200 bytes.
func levenshtein(a, b string) int {
	a, b = clip(a, 200), clip(b, 200)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
