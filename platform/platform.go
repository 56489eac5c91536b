// Package platform is the git platform port: what Grove asks of the
// service hosting a repository (GitHub, GitHub Enterprise, later GitLab)
// beyond git itself — the default branch, and pull requests.
//
// # Contract
//
//   - Every call names one repository and carries the token for that call
//     (resolved by package credentials); adapters never store it, log it,
//     put it in a URL or quote it in an error.
//   - Calls are synchronous, take ctx first and stop when it ends.
//   - Transient failures (rate limits, 5xx, connection errors) are retried
//     with backoff inside the adapter and then surface as
//     grove.ErrUnavailable.
//   - Errors wrap a grove kind, and for the failures a caller acts on a
//     Reason as well (errors.Is(err, platform.ErrBranchNotPushed)):
//     ErrBranchNotPushed and ErrBaseNotFound (grove.ErrNotFound),
//     ErrNoCommits (grove.ErrConflict), ErrPermission (grove.ErrForbidden),
//     ErrAppNotInstalled (grove.ErrNotFound), ErrUnknownReviewer and
//     ErrTitleTooLong (grove.ErrInvalid). A rejected token is
//     grove.ErrAuthFailed.
//   - Adapters are safe for concurrent use.
package platform

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/grove-dev/grove"
)

// Platform is a git hosting service.
type Platform interface {
	// Name is the platform's kind, e.g. "github".
	Name() string
	// Serves reports whether repo is hosted here (its host is this
	// platform's git host); the engine consults no other platform method
	// for repositories it does not serve.
	Serves(repo grove.RepoID) bool
	// DefaultBranch returns the repository's default branch.
	DefaultBranch(ctx context.Context, repo grove.RepoID, token string) (string, error)
	// CreatePullRequest opens a pull request from spec.Head into
	// spec.Base, or returns the open one for the same head and base with
	// Created=false. Reviewers are checked before anything is created, so
	// an unknown reviewer leaves no pull request behind.
	CreatePullRequest(ctx context.Context, repo grove.RepoID, token string, spec PullRequestSpec) (*grove.PullRequest, error)
	// CommentPullRequest adds a top-level comment, or an inline one on
	// Path at Line (of CommitID, default the pull request's head).
	CommentPullRequest(ctx context.Context, repo grove.RepoID, token string, req grove.CommentRequest) (*grove.Comment, error)
}

// PullRequestSpec is a pull request to open. Base is required here: the
// engine fills in the default branch.
type PullRequestSpec struct {
	Head      string
	Base      string
	Title     string
	Body      string
	Draft     bool
	Reviewers []string
	Labels    []string
}

// MaxTitle is the longest pull request title, in characters, that Grove
// sends (GitHub's limit is 256).
const MaxTitle = 256

// MaxBody bounds a pull request or comment body, in bytes (GitHub: 65536
// characters).
const MaxBody = 65536

// Reasons: failures a caller reacts to differently, each also a grove kind.
var (
	ErrBranchNotPushed = errors.New("branch not pushed")
	ErrBaseNotFound    = errors.New("base branch not found")
	ErrNoCommits       = errors.New("no commits between base and head")
	ErrPermission      = errors.New("permission denied")
	ErrAppNotInstalled = errors.New("GitHub App not installed")
	ErrUnknownReviewer = errors.New("unknown reviewer")
	ErrTitleTooLong    = errors.New("title too long")
)

// Fail returns an error that is both reason and kind, with a caller-safe
// message.
func Fail(reason, kind error, format string, args ...any) error {
	return &reasonError{reason: reason, kind: kind, msg: fmt.Sprintf(format, args...)}
}

type reasonError struct {
	reason, kind error
	msg          string
}

func (e *reasonError) Error() string   { return e.msg }
func (e *reasonError) Unwrap() []error { return []error{e.reason, e.kind} }

// Reason returns the Reason err carries, or nil.
func Reason(err error) error {
	for _, r := range []error{ErrBranchNotPushed, ErrBaseNotFound, ErrNoCommits, ErrPermission, ErrAppNotInstalled, ErrUnknownReviewer, ErrTitleTooLong} {
		if errors.Is(err, r) {
			return r
		}
	}
	return nil
}

// Validate checks a spec before any network call.
func (s PullRequestSpec) Validate() error {
	switch {
	case s.Head == "" || s.Base == "":
		return grove.Errorf(grove.ErrInvalid, "pull request needs a head and a base branch")
	case s.Head == s.Base:
		return Fail(ErrNoCommits, grove.ErrConflict, "head and base are both %q", s.Base)
	case len([]rune(s.Title)) > MaxTitle:
		return Fail(ErrTitleTooLong, grove.ErrInvalid, "pull request title is %d characters; the limit is %d", len([]rune(s.Title)), MaxTitle)
	case len(s.Body) > MaxBody:
		return grove.Errorf(grove.ErrInvalid, "pull request body is %d bytes; the limit is %d", len(s.Body), MaxBody)
	}
	if err := ValidateText("pull request title", s.Title, true); err != nil {
		return err
	}
	for _, lists := range [][]string{s.Reviewers, s.Labels} {
		if len(lists) > 50 {
			return grove.Errorf(grove.ErrInvalid, "at most 50 reviewers and 50 labels")
		}
		for _, v := range lists {
			if err := ValidateText("reviewer or label", v, true); err != nil {
				return err
			}
			if len(v) > 100 {
				return grove.Errorf(grove.ErrInvalid, "reviewer or label longer than 100 bytes")
			}
		}
	}
	return nil
}

// ValidateText refuses empty (when required) and multi-line or
// control-character values for one-line fields.
func ValidateText(what, s string, required bool) error {
	if required && s == "" {
		return grove.Errorf(grove.ErrInvalid, "%s is empty", what)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return grove.Errorf(grove.ErrInvalid, "%s contains a control character", what)
		}
	}
	return nil
}

// ValidateComment checks a comment before any network call.
func ValidateComment(req grove.CommentRequest) error {
	switch {
	case req.Number <= 0:
		return grove.Errorf(grove.ErrInvalid, "pull request number must be positive")
	case strings.TrimSpace(req.Body) == "":
		return grove.Errorf(grove.ErrInvalid, "comment body is empty")
	case len(req.Body) > MaxBody:
		return grove.Errorf(grove.ErrInvalid, "comment body is %d bytes; the limit is %d", len(req.Body), MaxBody)
	case (req.Path == "") != (req.Line == 0):
		return grove.Errorf(grove.ErrInvalid, "an inline comment needs both path and line; a top-level one neither")
	case req.Line < 0:
		return grove.Errorf(grove.ErrInvalid, "line must be positive")
	}
	if req.CommitID != "" && (len(req.CommitID) < 7 || len(req.CommitID) > 64 || strings.Trim(req.CommitID, "0123456789abcdef") != "") {
		return grove.Errorf(grove.ErrInvalid, "commit_id must be a hex commit sha")
	}
	return ValidateText("path", req.Path, false)
}
