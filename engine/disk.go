package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/store"
)

// DiskPolicy bounds what workspaces may take of the server's disk, so one
// agent writing without end cannot break every other tenant (docs/SECURITY.md,
// "Limits"). The runtime cannot enforce a byte quota on a bind-mounted
// directory without filesystem project quotas, so Grove enforces it with a
// watchdog: every mutating command runs under one that stops it when the
// disk's free space falls below the reserve or its workspace grows past its
// quota, and writes are refused while either holds.
type DiskPolicy struct {
	// WorkspaceQuota is the bytes one workspace's own files may take
	// (objects borrowed from the cache do not count). 0 means 10 GiB;
	// negative disables the quota.
	WorkspaceQuota int64
	// UserQuota is the bytes all of one user's workspaces may take
	// together; a new workspace is refused past it. 0 means 50 GiB;
	// negative disables it.
	UserQuota int64
	// Reserve is the free space kept for Grove's own store, caches and
	// work repositories: below it mutating commands are stopped and
	// writes refused, and readiness fails. 0 means 1 GiB.
	Reserve uint64
	// PinsPerUser bounds how many workspaces one user may pin (pinned
	// ones are never evicted). 0 means 10.
	PinsPerUser int
	// MaxCaches bounds how many repo caches the server keeps (each a
	// clone of up to the clone size limit); a new one past it is refused.
	// 0 means 200; negative disables it.
	MaxCaches int
	// WorkspacesPerUser bounds how many workspaces one user may hold
	// (each costs a checkout and, once used, open descriptors). 0 means
	// 100; negative disables it.
	WorkspacesPerUser int
	// Root is the filesystem whose free space counts.
	Root string
	// FreeBytes measures free space; nil uses statfs(Root). Tests inject it.
	FreeBytes func() (uint64, error)
	// ReserveInodes is the free inodes kept for Grove, like Reserve for
	// bytes (a tree of empty files exhausts inodes long before blocks).
	// 0 means 100,000.
	ReserveInodes uint64
	// FreeInodes measures free inodes; nil uses statfs(Root).
	FreeInodes func() (uint64, error)
	// Interval is how often the watchdog checks free space while a
	// mutating command runs (0: 250ms); the workspace's size is measured
	// every eighth check.
	Interval time.Duration
}

func (p *DiskPolicy) defaults() {
	if p.WorkspaceQuota == 0 {
		p.WorkspaceQuota = 10 << 30
	}
	if p.UserQuota == 0 {
		p.UserQuota = 50 << 30
	}
	if p.Reserve == 0 {
		p.Reserve = 1 << 30
	}
	if p.PinsPerUser == 0 {
		p.PinsPerUser = 10
	}
	if p.WorkspacesPerUser == 0 {
		p.WorkspacesPerUser = 100
	}
	if p.MaxCaches == 0 {
		p.MaxCaches = 200
	}
	if p.Interval <= 0 {
		p.Interval = 250 * time.Millisecond
	}
	if p.ReserveInodes == 0 {
		p.ReserveInodes = 100_000
	}
	if p.FreeInodes == nil {
		root := p.Root
		p.FreeInodes = func() (uint64, error) {
			if root == "" {
				return ^uint64(0), nil
			}
			var st syscall.Statfs_t
			if err := syscall.Statfs(root, &st); err != nil {
				return 0, err
			}
			if st.Files == 0 {
				return ^uint64(0), nil // a filesystem without an inode table (btrfs): no such limit
			}
			return st.Ffree, nil
		}
	}
	if p.FreeBytes == nil {
		root := p.Root
		if root == "" {
			p.FreeBytes = func() (uint64, error) { return ^uint64(0), nil }
			return
		}
		p.FreeBytes = func() (uint64, error) {
			var st syscall.Statfs_t
			if err := syscall.Statfs(root, &st); err != nil {
				return 0, err
			}
			return st.Bavail * uint64(st.Bsize), nil
		}
	}
}

// diskLow reports a grove.ErrResourceLimit error when the disk's free
// space is below the reserve.
func (e *Engine) diskLow() error {
	free, err := e.disk.FreeBytes()
	if err != nil {
		return nil // not measurable here: the write itself will tell
	}
	if free < e.disk.Reserve {
		return grove.Errorf(grove.ErrResourceLimit, "the server's disk has %s free, under the %s kept for Grove itself; writes are paused until space is freed (delete files or destroy workspaces)", bytesText(free), bytesText(e.disk.Reserve))
	}
	if inodes, err := e.disk.FreeInodes(); err == nil && inodes < e.disk.ReserveInodes {
		return grove.Errorf(grove.ErrResourceLimit, "the server's disk has %d free inodes, under the %d kept for Grove itself; writes are paused until files are deleted", inodes, e.disk.ReserveInodes)
	}
	return nil
}

// overQuota reports a grove.ErrResourceLimit error when ws's files take
// more than its quota (measured now).
func (e *Engine) overQuota(ctx context.Context, ws *grove.Workspace) error {
	if e.disk.WorkspaceQuota < 0 || ws.LocalPath == "" {
		return nil
	}
	size := e.prov.SizeBytes(ctx, ws)
	ws.SizeBytes = size
	if size > e.disk.WorkspaceQuota {
		return grove.Errorf(grove.ErrResourceLimit, "workspace %s holds %s, over its %s disk quota; delete files (build outputs, caches) to go on", ws.ID, bytesText(uint64(size)), bytesText(uint64(e.disk.WorkspaceQuota)))
	}
	return nil
}

// remeasureEvery is how many bytes of file writes through Grove go by
// before a workspace's size is measured again: the most a quota can be
// overshot through the file API.
const remeasureEvery = 64 << 20

// checkWrite is the gate of a file write of n bytes: the reserve (a
// statfs), then ws's quota, measured again whenever remeasureEvery bytes
// were written since the last measurement.
func (e *Engine) checkWrite(ctx context.Context, ws *grove.Workspace, n int64) error {
	if err := e.diskLow(); err != nil {
		return err
	}
	if e.disk.WorkspaceQuota < 0 {
		return nil
	}
	v, _ := e.written.LoadOrStore(ws.ID, new(atomic.Int64))
	if v.(*atomic.Int64).Add(n) < remeasureEvery && ws.SizeBytes <= e.disk.WorkspaceQuota {
		return nil
	}
	v.(*atomic.Int64).Store(0)
	return e.overQuota(ctx, ws)
}

// checkUserQuota refuses a new workspace for a user who already holds as
// many as allowed, or whose workspaces already take their disk share.
func (e *Engine) checkUserQuota(ctx context.Context, user string) error {
	wss, err := e.store.ListWorkspaces(ctx, store.WorkspaceFilter{User: user})
	if err != nil {
		return err
	}
	if n := e.disk.WorkspacesPerUser; n >= 0 && len(wss) >= n {
		return grove.Errorf(grove.ErrResourceLimit, "you hold %d workspaces, the most allowed; destroy some before acquiring more", len(wss))
	}
	if e.disk.UserQuota < 0 {
		return nil
	}
	var total int64
	for _, ws := range wss {
		total += ws.SizeBytes
	}
	if total > e.disk.UserQuota {
		return grove.Errorf(grove.ErrResourceLimit, "your workspaces hold %s, over the %s per user; destroy some before acquiring more", bytesText(uint64(total)), bytesText(uint64(e.disk.UserQuota)))
	}
	return nil
}

// watchdog runs fn under a context that is cancelled when the disk falls
// below the reserve or ws grows past its quota, and turns that into a
// grove.ErrResourceLimit error naming the cause.
func (e *Engine) watchdog(ctx context.Context, ws *grove.Workspace, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(e.disk.Interval)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if err := e.diskLow(); err != nil {
				cancel(err)
				return
			}
			if n%8 == 0 {
				if err := e.overQuota(ctx, ws); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	err := fn(ctx)
	close(done)
	<-stopped
	// The watchdog's causes are the only resource-limit errors a command's
	// context can end with.
	if cause := context.Cause(ctx); errors.Is(cause, grove.ErrResourceLimit) {
		e.log.Warn("command stopped by the disk watchdog", "workspace", ws.ID, "cause", cause)
		return fmt.Errorf("command stopped: %w", cause)
	}
	return err
}

// checkNewCache refuses a new repo cache past MaxCaches or below the
// reserve.
func (e *Engine) checkNewCache(ctx context.Context) error {
	if err := e.diskLow(); err != nil {
		return err
	}
	if e.disk.MaxCaches < 0 {
		return nil
	}
	caches, err := e.store.ListRepoCaches(ctx)
	if err != nil {
		return err
	}
	if len(caches) >= e.disk.MaxCaches {
		return grove.Errorf(grove.ErrResourceLimit, "this server keeps %d repository caches, the most allowed; ask an operator to remove unused ones", len(caches))
	}
	return nil
}

// Ready reports whether this engine can take work: the disk has its
// reserve. /readyz serves it.
func (e *Engine) Ready(context.Context) error { return e.diskLow() }

func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d KiB", n>>10)
	}
}
