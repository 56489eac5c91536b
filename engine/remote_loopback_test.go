package engine_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/subprocess"
	"github.com/grove-dev/grove/engine"
	"github.com/grove-dev/grove/provider/local"
	"github.com/grove-dev/grove/provider/remote"
)

// loopback is a "remote" runtime on this host: subprocess commands under
// a directory standing for the sandbox, and a files API over that
// directory. It lets provider/remote run through the engine without
// Docker; TestRemoteWorkspacesOnDaytona is the real thing.
type loopback struct {
	*subprocess.Driver
	uploads atomic.Int32

	mu      sync.Mutex
	owners  []driver.Owner // every pair a runtime was made for: "running"
	listErr error          // RunningSandboxes fails with it when set
}

var (
	_ driver.FileTransfer  = (*loopback)(nil)
	_ driver.SandboxLister = (*loopback)(nil)
)

func (l *loopback) Create(ctx context.Context, spec driver.Spec) (*driver.Runtime, error) {
	if err := os.MkdirAll(spec.WorkDir, 0o755); err != nil { // as the daytona driver's Create does
		return nil, err
	}
	l.mu.Lock()
	if o := (driver.Owner{User: spec.User, Project: spec.Project}); !slices.Contains(l.owners, o) {
		l.owners = append(l.owners, o)
	}
	l.mu.Unlock()
	return l.Driver.Create(ctx, spec)
}

func (l *loopback) RunningSandboxes(context.Context) ([]driver.Owner, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.owners), l.listErr
}

func (l *loopback) Upload(_ context.Context, _, p string, r io.Reader) error {
	l.uploads.Add(1)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

func (l *loopback) Download(_ context.Context, _, p string, w io.Writer) error {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return grove.Errorf(grove.ErrNotFound, "%s", p)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// TestRemoteProviderLoopback runs provider/remote through the engine on
// the loopback runtime: no host path on the workspace, the working tree
// built from a bundle, files by the confinement rule, work out through a
// bundle file, push from the work repository, thin bundles, destroy and
// eviction.
func TestRemoteProviderLoopback(t *testing.T) {
	sandbox := filepath.Join(t.TempDir(), "sandbox")
	lb := &loopback{Driver: subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: t.TempDir()})}
	f := newFixture(t, fixtureOpt{drv: lb, allowUnisolated: true, tune: func(c *engine.Config) {
		rp, err := remote.New(remote.Options{Local: c.Provider.(*local.Provider), Driver: lb, Root: sandbox})
		if err != nil {
			t.Fatal(err)
		}
		c.Provider = rp
	}})
	eng := f.eng
	src := sourceRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	run(t, "", "git", "clone", "-q", "--bare", src, bare)
	req := func(user, conv string) grove.AcquireRequest {
		return grove.AcquireRequest{Repo: bare, User: user, Project: "p", Mode: grove.ModeEdit, Conversation: conv}
	}

	ws, created, err := eng.Acquire(bg, req("alice", "c1"))
	if err != nil || !created || ws.LocalPath != "" {
		t.Fatalf("acquire: %v created=%v path=%q", err, created, ws.LocalPath)
	}
	if lb.uploads.Load() != 1 {
		t.Fatalf("%d bundles uploaded for the first working tree, want 1", lb.uploads.Load())
	}
	if err := eng.WriteFile(bg, ws.ID, "a/b.txt", []byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	res, err := eng.Exec(bg, ws.ID, grove.ExecRequest{Shell: "ln -s " + t.TempDir() + " out && ln -s README.md alias && ln -s .git gd && ln -s a dir && ln -s ../../../../ up"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v %+v", err, res)
	}
	if got, err := eng.ReadFile(bg, ws.ID, "alias", 0); err != nil || string(got) != "hello\nworld\n" {
		t.Fatalf("read through an inside symlink: %v %q", err, got)
	}
	if got, err := eng.ReadFile(bg, ws.ID, "dir/b.txt", 0); err != nil || string(got) != "hi\n" {
		t.Fatalf("read through an inside directory symlink: %v %q", err, got)
	}
	for _, p := range []string{"out/x", "out", "gd/config", "gd", "up/x", "../x", "/etc/passwd", ".git/config", "a/../../x"} {
		if _, err := eng.ReadFile(bg, ws.ID, p, 0); !errors.Is(err, grove.ErrPathOutside) {
			t.Errorf("read %q: %v, want E_PATH_OUTSIDE_WORKSPACE", p, err)
		}
		if err := eng.WriteFile(bg, ws.ID, p, []byte("x")); !errors.Is(err, grove.ErrPathOutside) {
			t.Errorf("write %q: %v, want E_PATH_OUTSIDE_WORKSPACE", p, err)
		}
	}
	if _, err := eng.ReadFile(bg, ws.ID, "a", 0); !errors.Is(err, grove.ErrIsDirectory) {
		t.Errorf("read a directory: %v", err)
	}
	if _, err := eng.ReadFile(bg, ws.ID, "missing", 0); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("read a missing file: %v", err)
	}
	if _, err := eng.ReadFile(bg, ws.ID, "README.md", 3); !errors.Is(err, grove.ErrTooLarge) {
		t.Errorf("read past max: %v", err)
	}
	for _, p := range []string{"out", "alias", "gd", "dir", "up"} {
		if err := eng.DeleteFile(bg, ws.ID, p); err != nil {
			t.Fatalf("delete link %q: %v", p, err)
		}
	}
	ents, err := eng.ListDir(bg, ws.ID, "a", 1)
	if err != nil || len(ents) != 1 || ents[0].Path != "a/b.txt" || ents[0].Size != 3 {
		t.Fatalf("list a: %v %+v", err, ents)
	}

	cr, err := eng.Commit(bg, ws.ID, grove.CommitRequest{Message: "loopback"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Push(bg, ws.ID, grove.PushRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := run(t, "", "git", "--git-dir", bare, "rev-parse", "refs/heads/"+ws.Branch); got != cr.SHA {
		t.Fatalf("remote at %s, want %s", got, cr.SHA)
	}

	// A second branch from the same base: no bundle.
	before := lb.uploads.Load()
	if _, _, err := eng.Acquire(bg, req("alice", "c2")); err != nil {
		t.Fatal(err)
	}
	if n := lb.uploads.Load() - before; n != 0 {
		t.Fatalf("%d bundles uploaded for a second branch at a commit the sandbox holds, want 0", n)
	}

	// Destroy, then acquire: the branch comes back at its commit, through a
	// thin bundle (the base is in the sandbox already).
	if err := eng.Destroy(bg, ws.ID); err != nil {
		t.Fatal(err)
	}
	back, _, err := eng.Acquire(bg, req("alice", "c1"))
	if err != nil || back.HeadSHA != cr.SHA {
		t.Fatalf("acquire after destroy: %v head %s want %s", err, back.HeadSHA, cr.SHA)
	}
	if got, err := eng.ReadFile(bg, back.ID, "a/b.txt", 0); err != nil || string(got) != "hi\n" {
		t.Fatalf("work after destroy: %v %q", err, got)
	}

	// An analysis workspace: detached at a tag, read-only.
	an, _, err := eng.Acquire(bg, grove.AcquireRequest{Repo: bare, User: "alice", Project: "p", Mode: grove.ModeAnalysis, Ref: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := eng.Status(bg, an.ID); err != nil || st.Branch != "" || st.Head != run(t, "", "git", "--git-dir", bare, "rev-parse", "v1^{commit}") {
		t.Fatalf("analysis status: %v %+v", err, st)
	}
	if err := eng.WriteFile(bg, an.ID, "x.txt", []byte("x")); err == nil {
		t.Fatal("an analysis workspace accepted a write")
	}
	if err := eng.Destroy(bg, an.ID); err != nil {
		t.Fatal(err)
	}

	// Eviction saves uncommitted work out of the runtime; acquire restores it.
	if err := eng.WriteFile(bg, back.ID, "wip.txt", []byte("wip\n")); err != nil {
		t.Fatal(err)
	}
	rep, err := eng.Evict(bg, engine.EvictionPolicy{MinFreeBytes: 100, FreeBytes: func() (uint64, error) { return 0, nil }})
	if err != nil || rep.Saved[back.ID] == "" {
		t.Fatalf("evict: %v %+v", err, rep)
	}
	again, _, err := eng.Acquire(bg, req("alice", "c1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := eng.ReadFile(bg, again.ID, "wip.txt", 0); err != nil || string(got) != "wip\n" {
		t.Fatalf("work after eviction: %v %q", err, got)
	}
	st, err := eng.Status(bg, again.ID)
	if err != nil || !strings.Contains(strings.Join(st.Untracked, ","), "wip.txt") {
		t.Fatalf("status after eviction: %v %+v", err, st)
	}
}

// TestRemoteReconcileAndSweep: reconcile on a server of remote
// workspaces sees the server's side (crash leftovers, a cache gone), and
// a process's first use of a sandbox removes what a crashed server left
// there — and nothing else: a working tree whose branch name looks like a
// leftover, a recent leftover another server may be building, and an
// agent's file of the same shape inside a working tree all stay.
func TestRemoteReconcileAndSweep(t *testing.T) {
	sandbox := filepath.Join(t.TempDir(), "sandbox")
	lb := &loopback{Driver: subprocess.New(subprocess.Options{AllowMutating: true, HomeRoot: t.TempDir()})}
	var lp *local.Provider
	f := newFixture(t, fixtureOpt{drv: lb, allowUnisolated: true, tune: func(c *engine.Config) {
		lp = c.Provider.(*local.Provider)
		rp, err := remote.New(remote.Options{Local: lp, Driver: lb, Root: sandbox})
		if err != nil {
			t.Fatal(err)
		}
		c.Provider = rp
	}})
	bare := filepath.Join(t.TempDir(), "remote.git")
	run(t, "", "git", "clone", "-q", "--bare", sourceRepo(t), bare)
	ws, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: bare, User: "alice", Project: "p", Mode: grove.ModeEdit, Conversation: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	lookalike, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: bare, User: "alice", Project: "p", Mode: grove.ModeEdit, Conversation: "c2", Branch: "x.tmp-ws_0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}

	old := time.Now().Add(-2 * remote.SandboxTempMinAge)
	rp2, err := remote.New(remote.Options{Local: lp, Driver: lb, Root: sandbox})
	if err != nil {
		t.Fatal(err)
	}
	dir := rp2.Dir(ws)
	wt := filepath.Dir(dir)
	incoming := filepath.Join(filepath.Dir(wt), ".grove-incoming")
	mk := func(p string, isDir bool, mtime time.Time) string {
		t.Helper()
		if isDir {
			write(t, filepath.Join(p, "half", "f"), "x")
		} else {
			write(t, p, "x")
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{
		mk(dir+".tmp-ws_00000000000000aa", true, old),
		mk(dir+".removing-ws_00000000000000bb", true, old),
		mk(filepath.Join(incoming, "ws_00000000000000cc.bundle"), false, old),
		mk(filepath.Join(os.TempDir(), "grove-bundle-sweeptest"+strconv.Itoa(os.Getpid())), false, old),
		// A name with a newline must not split into the path of a
		// working tree (the look-alike's, kept below) on its way to rm.
		mk(filepath.Join(wt, filepath.Base(rp2.Dir(lookalike))+"\nz-0123456789abcdef.tmp-ws_00000000000000ff"), true, old),
	}
	kept := []string{
		mk(dir+".tmp-ws_00000000000000dd", true, time.Now()),
		mk(filepath.Join(dir, "worktrees", "y-0123456789abcdef.tmp-ws_0123456789abcdef"), true, old),
		mk(filepath.Join(dir, ".grove-incoming", "ws_00000000000000ee.bundle"), false, old),
		rp2.Dir(lookalike),
	}
	if err := os.Chtimes(rp2.Dir(lookalike), old, old); err != nil {
		t.Fatal(err)
	}

	// A new process's first use of the sandbox sweeps it.
	if ok, err := rp2.Exists(bg, ws); err != nil || !ok {
		t.Fatalf("exists: %v %v", ok, err)
	}
	for _, p := range gone {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived the sweep: %v", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if got, err := f.eng.ReadFile(bg, lookalike.ID, "README.md", 0); err != nil || string(got) != "hello\nworld\n" {
		t.Fatalf("the look-alike workspace after the sweep: %v %q", err, got)
	}

	// Reconcile looks into running sandboxes: a working tree gone behind
	// Grove marks its workspace broken (the next acquire rebuilds it), a
	// tree no record points to is reported and left alone, and a backend
	// that cannot list its sandboxes does not fail reconciliation.
	orphan := filepath.Join(wt, "alice_gone_x-0123456789abcdef")
	write(t, filepath.Join(orphan, "keep.txt"), "someone's work\n")
	if err := os.RemoveAll(rp2.Dir(lookalike)); err != nil {
		t.Fatal(err)
	}
	rep, err := f.eng.Reconcile(bg)
	if err != nil {
		t.Fatal(err)
	}
	wantOrphan := orphan + " (in the sandbox of alice/p)"
	if !slices.Equal(rep.BrokenWorkspaces, []string{lookalike.ID}) || !slices.Equal(rep.OrphanDirs, []string{wantOrphan}) {
		t.Fatalf("reconcile of the sandbox: broken %v (want %s), orphans %v (want %s)", rep.BrokenWorkspaces, lookalike.ID, rep.OrphanDirs, wantOrphan)
	}
	if _, err := os.Stat(filepath.Join(orphan, "keep.txt")); err != nil {
		t.Fatalf("the orphan was touched: %v", err)
	}
	rebuilt, _, err := f.eng.Acquire(bg, grove.AcquireRequest{Repo: bare, User: "alice", Project: "p", Mode: grove.ModeEdit, Conversation: "c2", Branch: "x.tmp-ws_0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.eng.ReadFile(bg, rebuilt.ID, "README.md", 0); err != nil || string(got) != "hello\nworld\n" {
		t.Fatalf("the broken workspace after acquire: %v %q", err, got)
	}
	if err := os.RemoveAll(orphan); err != nil {
		t.Fatal(err)
	}
	lb.mu.Lock()
	lb.listErr = grove.Errorf(grove.ErrUnavailable, "the control plane is down")
	lb.mu.Unlock()
	if rep, err = f.eng.Reconcile(bg); err != nil || len(rep.BrokenWorkspaces) != 0 {
		t.Fatalf("reconcile with the backend down: %v %+v", err, rep)
	}
	lb.mu.Lock()
	lb.listErr = nil
	lb.mu.Unlock()

	// Reconcile: the server's leftovers go, a cache whose repository is
	// gone is marked for re-cloning.
	leftover := filepath.Join(f.root, "repos", ".bare-tmp-crashed")
	mk(leftover, true, old)
	rep, err = f.eng.Reconcile(bg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.RemovedTemp, leftover) {
		t.Fatalf("reconcile removed %v, want %s among them", rep.RemovedTemp, leftover)
	}
	if len(rep.BrokenWorkspaces)+len(rep.OrphanDirs)+len(rep.MissingCaches) != 0 {
		t.Fatalf("reconcile of a healthy remote server: %+v", rep)
	}
	caches, err := f.store.ListRepoCaches(bg)
	if err != nil || len(caches) != 1 {
		t.Fatalf("caches: %v %d", err, len(caches))
	}
	if err := os.RemoveAll(caches[0].LocalPath); err != nil {
		t.Fatal(err)
	}
	if rep, err = f.eng.Reconcile(bg); err != nil || !slices.Equal(rep.MissingCaches, []string{caches[0].ID}) {
		t.Fatalf("reconcile after the cache went: %v %+v", err, rep)
	}
}
