package grove

import "context"

// AcquireRequest names a workspace. The user is the caller's identity and
// is filled in by the transport (from an API key, or the CLI's flags), never
// taken from an untrusted request body.
type AcquireRequest struct {
	Repo         string `json:"repo"` // owner/repo, URL, scp-style or local path
	User         string `json:"-"`
	Project      string `json:"project"`
	Mode         Mode   `json:"mode"`
	Conversation string `json:"conversation,omitempty"` // edit mode scope
	Task         string `json:"task,omitempty"`         // task mode scope
	Ref          string `json:"ref,omitempty"`          // base ref; analysis scope
	Branch       string `json:"branch,omitempty"`       // overrides the default branch name
	Token        string `json:"-"`                      // per call, never stored
	Refresh      bool   `json:"refresh,omitempty"`      // fetch even when fresh
}

// EnsureRepoRequest makes sure a repo cache exists and is fresh.
type EnsureRepoRequest struct {
	Repo    string `json:"repo"`
	User    string `json:"-"` // whose credentials must read the repository (set by auth.Scope)
	Ref     string `json:"ref,omitempty"`
	Token   string `json:"-"`
	Refresh bool   `json:"refresh,omitempty"`
}

// WorkspaceFilter selects workspaces in List; empty fields match all.
type WorkspaceFilter struct {
	User    string `json:"user,omitempty"`
	Project string `json:"project,omitempty"`
	Repo    string `json:"repo,omitempty"` // anything ParseRepo accepts
}

// Service is everything a caller can do with Grove. The engine implements
// it in-process and the HTTP client implements it remotely, so the tool
// catalog and the CLI work the same against either.
//
// Methods taking a workspace id return ErrNotFound for unknown ids, and
// write paths return ErrReadOnly for analysis workspaces.
type Service interface {
	EnsureRepo(ctx context.Context, req EnsureRepoRequest) (*RepoCache, error)
	ListRepos(ctx context.Context) ([]*RepoCache, error)
	// RemoveRepo deletes a repo cache; ErrConflict while workspaces use it
	// unless force, in which case those workspaces are destroyed first.
	RemoveRepo(ctx context.Context, id string, force bool) error

	// Acquire returns the workspace for req's key, creating it if needed;
	// created reports which.
	Acquire(ctx context.Context, req AcquireRequest) (ws *Workspace, created bool, err error)
	Get(ctx context.Context, id string) (*Workspace, error)
	List(ctx context.Context, f WorkspaceFilter) ([]*Workspace, error)
	Release(ctx context.Context, id string) error
	Destroy(ctx context.Context, id string) error
	Pin(ctx context.Context, id string, pinned bool) error

	Exec(ctx context.Context, id string, req ExecRequest) (*ExecResult, error)
	ExecStream(ctx context.Context, id string, req ExecRequest, emit func(Chunk) error) (*ExecResult, error)

	// ReadFile returns at most maxBytes bytes (0: a default cap) and
	// ErrTooLarge when the file is bigger.
	ReadFile(ctx context.Context, id, path string, maxBytes int64) ([]byte, error)
	// WriteFile replaces path atomically, creating parent directories.
	WriteFile(ctx context.Context, id, path string, data []byte) error
	DeleteFile(ctx context.Context, id, path string) error
	ListDir(ctx context.Context, id, path string, depth int) ([]DirEntry, error)
	Search(ctx context.Context, id string, req SearchRequest) (*SearchResult, error)

	Status(ctx context.Context, id string) (*Status, error)
	Diff(ctx context.Context, id string, req DiffRequest) (*Diff, error)
	Log(ctx context.Context, id string, limit int, path string) ([]Commit, error)
	Commit(ctx context.Context, id string, req CommitRequest) (*CommitResult, error)
	Push(ctx context.Context, id string, req PushRequest) (*PushResult, error)
}
