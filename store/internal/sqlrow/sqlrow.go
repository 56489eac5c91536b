// Package sqlrow is the row codec the SQL store adapters (sqlite,
// postgres) share: one column order per record, the scan that reads it, the
// arguments that write it, and the time encoding — unix nanoseconds, NULL
// for the zero time — that makes a record read back exactly as written
// (timestamptz would keep microseconds only). Only SQL text differs between
// the adapters: placeholders, conflict clauses, dialect.
package sqlrow

import (
	"fmt"
	"time"

	"github.com/grove-dev/grove"
)

// Scanner is a single row: *sql.Row, *sql.Rows, pgx.Row or pgx.Rows.
type Scanner interface{ Scan(dest ...any) error }

// Nanos encodes t as unix nanoseconds, and the zero time as NULL (the zero
// time.Time has no unix nanosecond value).
func Nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// Time scans a Nanos column back into *t as a UTC time.
func Time(t *time.Time) TimeCol { return TimeCol{t: t} }

// TimeCol is the scan destination Time returns. It implements sql.Scanner,
// which pgx honours too.
type TimeCol struct{ t *time.Time }

// Scan implements sql.Scanner.
func (c TimeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.t = time.Time{}
	case int64:
		*c.t = time.Unix(0, v).UTC()
	default:
		return fmt.Errorf("time column holds %T, want integer nanoseconds", src)
	}
	return nil
}

// WorkspaceColumns is the column order of ScanWorkspace and WorkspaceArgs.
const WorkspaceColumns = `id, ws_key, repo_cache_id, host, owner, name, user_id, project_id, mode, scope,
	base_ref, branch, head_sha, local_path, state, dirty, pinned, size_bytes, runtime_kind,
	created_at, updated_at, last_used_at`

// ScanWorkspace reads a row selected with WorkspaceColumns.
func ScanWorkspace(row Scanner) (*grove.Workspace, error) {
	var w grove.Workspace
	err := row.Scan(&w.ID, &w.Key, &w.RepoCacheID, &w.Repo.Host, &w.Repo.Owner, &w.Repo.Name,
		&w.User, &w.Project, &w.Mode, &w.Scope, &w.BaseRef, &w.Branch, &w.HeadSHA, &w.LocalPath,
		&w.State, &w.Dirty, &w.Pinned, &w.SizeBytes, &w.RuntimeKind,
		Time(&w.CreatedAt), Time(&w.UpdatedAt), Time(&w.LastUsedAt))
	if err != nil {
		return nil, err
	}
	return &w, nil
}

// WorkspaceArgs are w's values in WorkspaceColumns order.
func WorkspaceArgs(w *grove.Workspace) []any {
	return []any{w.ID, w.Key, w.RepoCacheID, w.Repo.Host, w.Repo.Owner, w.Repo.Name,
		w.User, w.Project, string(w.Mode), w.Scope, w.BaseRef, w.Branch, w.HeadSHA, w.LocalPath,
		string(w.State), w.Dirty, w.Pinned, w.SizeBytes, w.RuntimeKind,
		Nanos(w.CreatedAt), Nanos(w.UpdatedAt), Nanos(w.LastUsedAt)}
}

// CacheColumns is the column order of ScanCache and CacheArgs.
const CacheColumns = `id, host, owner, name, url, local_path, state, size_bytes,
	last_fetched_at, last_used_at, created_at, updated_at`

// ScanCache reads a row selected with CacheColumns.
func ScanCache(row Scanner) (*grove.RepoCache, error) {
	var c grove.RepoCache
	err := row.Scan(&c.ID, &c.Repo.Host, &c.Repo.Owner, &c.Repo.Name, &c.URL, &c.LocalPath, &c.State, &c.SizeBytes,
		Time(&c.LastFetchedAt), Time(&c.LastUsedAt), Time(&c.CreatedAt), Time(&c.UpdatedAt))
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// CacheArgs are c's values in CacheColumns order.
func CacheArgs(c *grove.RepoCache) []any {
	return []any{c.ID, c.Repo.Host, c.Repo.Owner, c.Repo.Name, c.URL, c.LocalPath, string(c.State), c.SizeBytes,
		Nanos(c.LastFetchedAt), Nanos(c.LastUsedAt), Nanos(c.CreatedAt), Nanos(c.UpdatedAt)}
}

// RuntimeColumns is the column order of ScanRuntime and RuntimeArgs.
const RuntimeColumns = `workspace_id, id, kind, backend_id, image, state,
	last_started_at, last_used_at, created_at, updated_at`

// ScanRuntime reads a row selected with RuntimeColumns.
func ScanRuntime(row Scanner) (*grove.RuntimeRecord, error) {
	var r grove.RuntimeRecord
	err := row.Scan(&r.WorkspaceID, &r.ID, &r.Kind, &r.BackendID, &r.Image, &r.State,
		Time(&r.LastStartedAt), Time(&r.LastUsedAt), Time(&r.CreatedAt), Time(&r.UpdatedAt))
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// RuntimeArgs are r's values in RuntimeColumns order.
func RuntimeArgs(r *grove.RuntimeRecord) []any {
	return []any{r.WorkspaceID, r.ID, r.Kind, r.BackendID, r.Image, r.State,
		Nanos(r.LastStartedAt), Nanos(r.LastUsedAt), Nanos(r.CreatedAt), Nanos(r.UpdatedAt)}
}

// KindError is a database error classified into one of grove's kinds. Its
// message names the operation and the kind only: the database's own text
// (SQL, constraint and column names) never reaches a user, while the
// driver's error stays in the chain for errors.As and for logs.
type KindError struct {
	What  string
	Kind  error
	Cause error
}

func (e *KindError) Error() string   { return e.What + ": " + e.Kind.Error() }
func (e *KindError) Unwrap() []error { return []error{e.Kind, e.Cause} }
