package grove

import (
	"fmt"
	"strings"
	"time"
)

// Mode says what a workspace is for; it fixes the workspace's scope, its
// branch and its capabilities (DESIGN.md §2).
type Mode string

const (
	ModeAnalysis Mode = "analysis" // detached at a base ref, read-only
	ModeEdit     Mode = "edit"     // one per conversation, branch agent/edits-<conversation>
	ModeTask     Mode = "task"     // one per task, branch agent/task-<task>
	// ModeLocal is a developer's own checkout served by `grove tunnel`
	// (docs/TUNNEL.md). It is listed, never acquired: ParseMode refuses it.
	ModeLocal Mode = "local"
)

// ParseMode validates a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAnalysis, ModeEdit, ModeTask:
		return m, nil
	}
	return "", Errorf(ErrInvalid, "mode %q: want analysis, edit or task", s)
}

// InferMode is the mode a request means when it names none: a
// conversation is edit mode, a task is task mode, neither is analysis (of
// the ref, or the default branch). Naming both is ErrInvalid: the request
// is ambiguous. The CLI and the HTTP API infer alike.
func InferMode(conversation, task string) (Mode, error) {
	switch {
	case conversation != "" && task != "":
		return "", Errorf(ErrInvalid, "both conversation and task are given: name one, or set mode")
	case conversation != "":
		return ModeEdit, nil
	case task != "":
		return ModeTask, nil
	}
	return ModeAnalysis, nil
}

// Capabilities are derived from the mode in exactly one place
// (CapabilitiesFor) and enforced on every write path.
type Capabilities struct {
	Writable   bool `json:"writable"`
	Persistent bool `json:"persistent"`
}

// CapabilitiesFor is the single source of truth for what a mode may do.
func CapabilitiesFor(m Mode) Capabilities {
	switch m {
	case ModeEdit, ModeTask, ModeLocal:
		return Capabilities{Writable: true, Persistent: true}
	default:
		return Capabilities{}
	}
}

// DefaultBranch is the branch a writable workspace gets when the caller
// names none.
func DefaultBranch(m Mode, scope string) string {
	switch m {
	case ModeEdit:
		return "agent/edits-" + scope
	case ModeTask:
		return "agent/task-" + scope
	}
	return ""
}

// WorkspaceState is a workspace's lifecycle state.
type WorkspaceState string

const (
	WorkspaceCreating WorkspaceState = "creating" // row reserved, files not yet in place
	WorkspaceReady    WorkspaceState = "ready"
	WorkspaceReleased WorkspaceState = "released" // runtime hibernated, files kept
	WorkspaceBroken   WorkspaceState = "broken"   // row without directory, found by reconcile
)

// WorkspaceKey identifies a workspace: user | project | host | owner/repo |
// mode | scope. Acquiring twice with the same key yields the same workspace.
type WorkspaceKey struct {
	User    string
	Project string
	Repo    RepoID
	Mode    Mode
	Scope   string // base ref (analysis), conversation id (edit), task id (task)
}

func (k WorkspaceKey) String() string {
	return strings.Join([]string{k.User, k.Project, k.Repo.Host, k.Repo.Path(), string(k.Mode), k.Scope}, "|")
}

// Workspace is the durable record of one working tree.
type Workspace struct {
	ID          string         `json:"id"`
	Key         string         `json:"key"`
	RepoCacheID string         `json:"repo_cache_id"`
	Repo        RepoID         `json:"repo"`
	User        string         `json:"user"`
	Project     string         `json:"project"`
	Mode        Mode           `json:"mode"`
	Scope       string         `json:"scope"`
	BaseRef     string         `json:"base_ref"`
	Branch      string         `json:"branch,omitempty"` // empty when detached (analysis)
	HeadSHA     string         `json:"head_sha,omitempty"`
	LocalPath   string         `json:"path,omitempty"` // empty for remote providers
	State       WorkspaceState `json:"state"`
	Dirty       bool           `json:"dirty"`
	Pinned      bool           `json:"pinned"`
	SizeBytes   int64          `json:"size_bytes"`
	RuntimeKind string         `json:"runtime,omitempty"`
	// ReadOnly is set on a local workspace whose agent registered it
	// read-only (grove tunnel --read-only): not writable whatever its mode.
	ReadOnly   bool      `json:"read_only,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	LastUsedAt time.Time `json:"last_used_at"`
}

// Capabilities of this workspace, derived from its mode.
func (w *Workspace) Capabilities() Capabilities {
	c := CapabilitiesFor(w.Mode)
	if w.ReadOnly {
		c.Writable = false
	}
	return c
}

// RequireWritable returns ErrReadOnly unless the workspace may be written.
func (w *Workspace) RequireWritable() error {
	if !w.Capabilities().Writable {
		return Errorf(ErrReadOnly, "workspace %s is %s mode and read-only", w.ID, w.Mode)
	}
	return nil
}

// RepoCacheState is a repo cache's lifecycle state.
type RepoCacheState string

const (
	CacheReady  RepoCacheState = "ready"
	CacheBroken RepoCacheState = "broken"
)

// RepoCache is the durable record of one bare mirror.
type RepoCache struct {
	ID            string         `json:"id"`
	Repo          RepoID         `json:"repo"`
	URL           string         `json:"url"` // credential-free
	LocalPath     string         `json:"path"`
	State         RepoCacheState `json:"state"`
	SizeBytes     int64          `json:"size_bytes"`
	LastFetchedAt time.Time      `json:"last_fetched_at"`
	LastUsedAt    time.Time      `json:"last_used_at"`
	CreatedAt     time.Time      `json:"created_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
}

// RuntimeRecord is one runtime attached to a workspace. Runtime rows may be
// deleted aggressively; workspace rows survive them.
type RuntimeRecord struct {
	ID            string    `json:"id"`
	WorkspaceID   string    `json:"workspace_id"`
	Kind          string    `json:"kind"`       // subprocess, bwrap, docker, ...
	BackendID     string    `json:"backend_id"` // e.g. container id
	Image         string    `json:"image,omitempty"`
	State         string    `json:"state"` // running, stopped
	LastStartedAt time.Time `json:"last_started_at"`
	LastUsedAt    time.Time `json:"last_used_at"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// RepoID is a normalised repository identity. The cache key is
// "host|owner/repo".
type RepoID struct {
	Host  string `json:"host"`  // "github.com", "gitlab.example.com:8443", or "local"
	Owner string `json:"owner"` // may contain slashes for nested groups
	Name  string `json:"name"`
}

// Path is "owner/name".
func (r RepoID) Path() string { return r.Owner + "/" + r.Name }

// Key is the cache key "host|owner/name".
func (r RepoID) Key() string { return r.Host + "|" + r.Path() }

func (r RepoID) String() string { return fmt.Sprintf("%s/%s", r.Host, r.Path()) }
