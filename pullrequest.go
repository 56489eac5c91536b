package grove

import "context"

// PullRequester is the optional interface of a Service that can open and
// comment on pull requests on the repository's git platform. It is
// discovered by type assertion (as database/sql/driver does), so Services
// that predate it — or run without a platform — stay valid.
//
// Both methods act on the workspace's own branch and repository. They
// return ErrReadOnly for analysis workspaces before any network call,
// ErrPlatformNotConfigured when no platform serves the repository, and
// otherwise the kinds the platform's failures map to: ErrNotFound (branch
// not pushed, base not found), ErrConflict (no commits between base and
// head), ErrForbidden (the credential may not do this), ErrInvalid (title
// too long, unknown reviewers), ErrUnavailable (rate limit, 5xx).
type PullRequester interface {
	// CreatePullRequest opens a pull request from the workspace's branch.
	// It is idempotent: an open pull request for the same head and base
	// is returned with Created=false.
	CreatePullRequest(ctx context.Context, id string, req CreatePullRequestRequest) (*PullRequest, error)
	// CommentPullRequest comments on pull request req.Number: top-level,
	// or inline when Path and Line are both given.
	CommentPullRequest(ctx context.Context, id string, req CommentRequest) (*Comment, error)
}

// CreatePullRequestRequest describes a pull request. Base "" means the
// repository's default branch. Token is a per-call credential, never
// stored.
type CreatePullRequestRequest struct {
	Title     string   `json:"title"`
	Body      string   `json:"body,omitempty"`
	Base      string   `json:"base,omitempty"`
	Draft     bool     `json:"draft,omitempty"`
	Reviewers []string `json:"reviewers,omitempty"`
	Labels    []string `json:"labels,omitempty"`
	Token     string   `json:"-"`
}

// PullRequest is an opened (or found) pull request.
type PullRequest struct {
	Number  int    `json:"number"`
	URL     string `json:"url"`
	State   string `json:"state"`
	Head    string `json:"head"`
	Base    string `json:"base"`
	Draft   bool   `json:"draft,omitempty"`
	Created bool   `json:"created"`
	// Credential is the kind of credential used: call, app, oauth, env.
	Credential string `json:"credential,omitempty"`
}

// CommentRequest is a comment on pull request Number. Path and Line go
// together (an inline comment on the pull request's diff) or not at all;
// CommitID "" means the pull request's head.
type CommentRequest struct {
	Number   int    `json:"number"`
	Body     string `json:"body"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
	CommitID string `json:"commit_id,omitempty"`
	Token    string `json:"-"`
}

// Comment is a created comment.
type Comment struct {
	ID  int64  `json:"id"`
	URL string `json:"url"`
}
