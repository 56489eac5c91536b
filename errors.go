// Package grove holds Grove's domain nouns and error kinds. It imports only
// the standard library so that every other package — adapters, transports,
// the CLI — can share one vocabulary without import cycles.
package grove

import (
	"errors"
	"fmt"
)

// Error kinds. Every error Grove returns wraps exactly one of these so that
// callers and transports branch with errors.Is, never on message text.
// Messages must be safe to show to the caller: no tokens, no other users'
// paths.
var (
	ErrNotFound        = errors.New("not found")
	ErrConflict        = errors.New("conflict")
	ErrInvalid         = errors.New("invalid input")
	ErrUnauthorized    = errors.New("unauthorized")
	ErrForbidden       = errors.New("forbidden")
	ErrUnavailable     = errors.New("unavailable")
	ErrTimeout         = errors.New("timeout")
	ErrResourceLimit   = errors.New("resource limit")
	ErrRejected        = errors.New("command rejected")
	ErrNotSupported    = errors.New("not supported")
	ErrReadOnly        = errors.New("read-only workspace")
	ErrPathOutside     = errors.New("path outside workspace")
	ErrIsDirectory     = errors.New("is a directory")
	ErrBinaryFile      = errors.New("binary file")
	ErrTooLarge        = errors.New("too large")
	ErrNotInstalled    = errors.New("tool not installed")
	ErrAuthFailed      = errors.New("authentication failed")
	ErrNothingToCommit = errors.New("nothing to commit")
	// ErrPlatformNotConfigured: no git hosting platform (GitHub, GitLab)
	// is configured, so pull requests cannot be made. It is a kind of
	// ErrNotSupported for callers that only know the general kinds.
	ErrPlatformNotConfigured = fmt.Errorf("git platform not configured: %w", ErrNotSupported)
	// ErrDebugAdapterUnavailable: the debug adapter a session needs cannot
	// be launched here (not installed, or installed but failing its
	// probe). It wraps ErrNotInstalled. Its code's lower-case form,
	// debug_adapter_unavailable, is the name the hand-off gives it.
	ErrDebugAdapterUnavailable = fmt.Errorf("debug adapter unavailable: %w", ErrNotInstalled)
	// ErrNotPaused: a debug operation that needs a stopped program (a
	// snapshot, a step, an evaluation in a frame) found it running. It
	// wraps ErrConflict.
	ErrNotPaused = fmt.Errorf("program is running, not paused: %w", ErrConflict)
)

// kinds lists every kind with its stable code, in the order KindOf checks
// them. More specific kinds come before the general ones they imply.
var kinds = []struct {
	err  error
	code string
}{
	{ErrAuthFailed, "E_AUTH_FAILED"},
	{ErrReadOnly, "E_READ_ONLY_WORKSPACE"},
	{ErrPathOutside, "E_PATH_OUTSIDE_WORKSPACE"},
	{ErrIsDirectory, "E_IS_DIRECTORY"},
	{ErrBinaryFile, "E_BINARY_FILE"},
	{ErrTooLarge, "E_TOO_LARGE"},
	{ErrNothingToCommit, "E_NOTHING_TO_COMMIT"},
	{ErrPlatformNotConfigured, "E_PLATFORM_NOT_CONFIGURED"},
	{ErrDebugAdapterUnavailable, "E_DEBUG_ADAPTER_UNAVAILABLE"},
	{ErrNotPaused, "E_NOT_PAUSED"},
	{ErrNotInstalled, "E_NOT_INSTALLED"},
	{ErrNotFound, "E_NOT_FOUND"},
	{ErrConflict, "E_CONFLICT"},
	{ErrInvalid, "E_INVALID_ARGUMENT"},
	{ErrUnauthorized, "E_UNAUTHORIZED"},
	{ErrForbidden, "E_FORBIDDEN"},
	{ErrUnavailable, "E_UNAVAILABLE"},
	{ErrTimeout, "E_TIMEOUT"},
	{ErrResourceLimit, "E_RESOURCE_LIMIT"},
	{ErrRejected, "E_COMMAND_REJECTED"},
	{ErrNotSupported, "E_NOT_SUPPORTED"},
}

// Code returns the stable E_ code of err's kind, or "E_INTERNAL" when err
// wraps none of the kinds.
func Code(err error) string {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.code
		}
	}
	return "E_INTERNAL"
}

// KindOf returns the kind err wraps, or nil.
func KindOf(err error) error {
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.err
		}
	}
	return nil
}

// KindFromCode is the inverse of Code, for transports that carry codes over
// the wire and turn them back into kinds. Unknown codes give nil.
func KindFromCode(code string) error {
	for _, k := range kinds {
		if k.code == code {
			return k.err
		}
	}
	return nil
}

// Errorf wraps kind with a formatted, caller-safe message:
// Errorf(ErrInvalid, "ref %q: %s", ref, why).
func Errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }
