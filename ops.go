package grove

import "time"

// This file holds the request and result types of workspace operations.
// They are shared by the engine (in-process), the HTTP API, the Go client of
// that API and the agent tool catalog, so each transport speaks the same
// nouns.

// CommandClass says what a command may do to a workspace. Read commands on
// one workspace run concurrently; write, install and test are exclusive.
type CommandClass string

const (
	ClassRead    CommandClass = "read"
	ClassWrite   CommandClass = "write"
	ClassInstall CommandClass = "install"
	ClassTest    CommandClass = "test"
)

// Mutating reports whether commands of this class may change the
// workspace. The empty class means write, as in ExecRequest.
func (c CommandClass) Mutating() bool { return c != ClassRead }

// ExecRequest is one command to run in a workspace's runtime. Exactly one of
// Argv and Shell is set: Argv runs a program directly, Shell runs a string
// with bash -c (or sh -c where bash is absent).
type ExecRequest struct {
	Argv      []string          `json:"argv,omitempty"`
	Shell     string            `json:"shell,omitempty"`
	Dir       string            `json:"dir,omitempty"` // workspace-relative
	Env       map[string]string `json:"env,omitempty"` // added to the clean environment
	Stdin     []byte            `json:"stdin,omitempty"`
	Timeout   time.Duration     `json:"timeout,omitempty"`    // 0: the runtime's default
	MaxOutput int               `json:"max_output,omitempty"` // per stream, bytes; 0: default
	Class     CommandClass      `json:"class,omitempty"`      // "" means write
	// StreamOnly, for streamed execs, sends output only to the emit
	// function: the result's Stdout and Stderr stay empty (the cap and the
	// omitted counts still apply). Grove's own consumers that stream into
	// a sink of their own (a bundle file, a search parser) set it so the
	// output is not also held in memory. Never set from the wire.
	StreamOnly bool `json:"-"`
}

// ExecResult is the outcome of a command. A non-zero exit is a normal
// result, not an error.
type ExecResult struct {
	ExitCode      int           `json:"exit_code"`
	Stdout        []byte        `json:"stdout"`
	Stderr        []byte        `json:"stderr"`
	TimedOut      bool          `json:"timed_out"`
	Truncated     bool          `json:"truncated"`
	StdoutOmitted int64         `json:"stdout_omitted,omitempty"` // bytes dropped by the cap
	StderrOmitted int64         `json:"stderr_omitted,omitempty"`
	Duration      time.Duration `json:"duration"`
	// CappedTimeout is set when the requested timeout was over the
	// server's maximum: the command ran under this timeout instead.
	CappedTimeout time.Duration `json:"capped_timeout,omitempty"`
	// OOMKilled is set when the runtime's memory limit was hit while the
	// command ran and the out-of-memory killer killed one of its processes.
	OOMKilled bool `json:"oom_killed,omitempty"`
}

// Stream names an output stream of a command.
type Stream string

const (
	Stdout Stream = "stdout"
	Stderr Stream = "stderr"
)

// Chunk is a piece of streamed command output.
type Chunk struct {
	Stream Stream
	Data   []byte
}

// DirEntry is one entry of a directory listing.
type DirEntry struct {
	Path    string    `json:"path"` // workspace-relative, slash-separated
	Name    string    `json:"name"`
	IsDir   bool      `json:"is_dir"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
}

// SearchRequest is a ripgrep search over a workspace.
type SearchRequest struct {
	Pattern         string `json:"pattern"`
	Path            string `json:"path,omitempty"` // workspace-relative subtree
	Glob            string `json:"glob,omitempty"`
	FixedString     bool   `json:"fixed_string,omitempty"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty"`
	Context         int    `json:"context,omitempty"`     // lines before and after
	MaxResults      int    `json:"max_results,omitempty"` // 0: default 100
	Offset          int    `json:"offset,omitempty"`      // matches to skip, for pagination
}

// SearchMatch is one matching line.
type SearchMatch struct {
	Path   string   `json:"path"`
	Line   int      `json:"line"`
	Text   string   `json:"text"`
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// SearchResult is one page of matches.
type SearchResult struct {
	Matches    []SearchMatch `json:"matches"`
	Total      int           `json:"total"` // matches seen (may be a lower bound when Truncated)
	Truncated  bool          `json:"truncated"`
	NextOffset int           `json:"next_offset,omitempty"`
}

// FileStatus is one changed path in a git status.
type FileStatus struct {
	Path     string `json:"path"`
	OrigPath string `json:"orig_path,omitempty"` // for renames and copies
	Index    string `json:"index"`               // porcelain v2 XY, X side: M A D R C U .
	WorkTree string `json:"worktree"`            // Y side
}

// Status is a parsed `git status --porcelain=v2 --branch`.
type Status struct {
	Branch   string `json:"branch"` // empty when detached
	Head     string `json:"head"`
	Upstream string `json:"upstream,omitempty"`
	// UpstreamGone: an upstream is configured but its branch is not on
	// the remote (never pushed, or deleted there); Ahead and Behind are
	// then unknown and zero.
	UpstreamGone bool         `json:"upstream_gone,omitempty"`
	Ahead        int          `json:"ahead"`
	Behind       int          `json:"behind"`
	Staged       []FileStatus `json:"staged"`
	Unstaged     []FileStatus `json:"unstaged"`
	Untracked    []string     `json:"untracked"`
	Conflicted   []FileStatus `json:"conflicted"`
	Clean        bool         `json:"clean"`
}

// Commit is one entry of a git log.
type Commit struct {
	SHA     string    `json:"sha"`
	Author  string    `json:"author"`
	Email   string    `json:"email"`
	Date    time.Time `json:"date"`
	Subject string    `json:"subject"`
}

// DiffRequest selects what to diff.
type DiffRequest struct {
	BaseRef    string   `json:"base_ref,omitempty"`
	Paths      []string `json:"paths,omitempty"`
	StagedOnly bool     `json:"staged_only,omitempty"`
	StatOnly   bool     `json:"stat_only,omitempty"`
	MaxBytes   int      `json:"max_bytes,omitempty"`
}

// DiffFile is one file of a diff with its line counts.
type DiffFile struct {
	Path      string `json:"path"`
	OrigPath  string `json:"orig_path,omitempty"` // for renames and copies
	Status    string `json:"status"`              // A M D R C T U
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary,omitempty"` // git counts no lines for binary files
}

// Diff is a diff and its per-file summary.
type Diff struct {
	Files     []DiffFile `json:"files"`
	Patch     string     `json:"diff"`
	Truncated bool       `json:"truncated"`
}

// CommitRequest stages and commits.
type CommitRequest struct {
	Message     string   `json:"message"`
	Paths       []string `json:"paths,omitempty"` // empty: all changes
	AuthorName  string   `json:"author_name,omitempty"`
	AuthorEmail string   `json:"author_email,omitempty"`
}

// CommitResult describes a new commit.
type CommitResult struct {
	SHA          string `json:"sha"`
	FilesChanged int    `json:"files_changed"`
	Insertions   int    `json:"insertions"`
	Deletions    int    `json:"deletions"`
}

// PushRequest pushes the workspace branch. Token is used for this call only
// and never stored.
type PushRequest struct {
	Token          string `json:"-"`
	ForceWithLease bool   `json:"force_with_lease,omitempty"`
	SetUpstream    bool   `json:"set_upstream,omitempty"`
}

// PushResult describes a push.
type PushResult struct {
	Branch        string `json:"branch"`
	RemoteSHA     string `json:"remote_sha"`
	CreatedBranch bool   `json:"created_branch"`
	UpToDate      bool   `json:"up_to_date"`
	// Credential is the kind of credential the push used (call, app,
	// oauth, env or none) — never the credential itself.
	Credential string `json:"credential,omitempty"`
}
