package drivertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

func (s *suite) createIdempotent(t *testing.T) {
	w := s.runtime(t, nil)
	ctx := context.Background()
	again, err := w.d.Create(ctx, w.spec)
	if err != nil {
		t.Fatalf("second Create: %v", err)
	}
	if again.WorkspaceID != w.id || again.Kind != w.d.Kind() {
		t.Fatalf("second Create = %+v, want workspace %q kind %q", again, w.id, w.d.Kind())
	}
	got, err := w.d.Get(ctx, w.id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.WorkspaceID != w.id || got.Spec.WorkDir != w.dir {
		t.Fatalf("Get = %+v, want workspace %q at %s", got, w.id, w.dir)
	}
	if err := w.d.Start(ctx, w.id); err != nil {
		t.Fatalf("Start on a running runtime: %v", err)
	}
}

func (s *suite) getUnknown(t *testing.T) {
	d := s.h.New(t)
	ctx := context.Background()
	if _, err := d.Get(ctx, "drivertest-no-such-workspace"); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("Get(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := d.Exec(ctx, "drivertest-no-such-workspace", argv("true")); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("Exec(unknown) = %v, want ErrNotFound", err)
	}
	if err := d.Destroy(ctx, "drivertest-no-such-workspace"); err != nil {
		t.Fatalf("Destroy(unknown) = %v, want nil", err)
	}
}

func (s *suite) stopThenExec(t *testing.T) {
	w := s.runtime(t, nil)
	ctx := context.Background()
	w.ok(t, sh("echo before > state.txt"))
	if err := w.d.Stop(ctx, w.id); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	rt, err := w.d.Get(ctx, w.id)
	if err != nil {
		t.Fatalf("Get after Stop: %v", err)
	}
	if rt.State != driver.StateStopped {
		t.Fatalf("state after Stop = %q, want %q", rt.State, driver.StateStopped)
	}
	res := w.ok(t, argv("cat", "state.txt"))
	if string(res.Stdout) != "before\n" {
		t.Fatalf("after resume cat = %q, want the file written before Stop", res.Stdout)
	}
	if rt, _ := w.d.Get(ctx, w.id); rt == nil || rt.State != driver.StateRunning {
		t.Fatalf("state after exec on a stopped runtime = %+v, want running", rt)
	}
}

func (s *suite) destroyKeepsFiles(t *testing.T) {
	w := s.runtime(t, nil)
	ctx := context.Background()
	w.ok(t, gitReq("git init -q -b drivertest/keep . && echo precious > keep.txt && git add keep.txt && git commit -qm kept"))
	if err := w.d.Destroy(ctx, w.id); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(w.dir, "keep.txt"))
	if err != nil || string(b) != "precious\n" {
		t.Fatalf("workspace file after Destroy: %q, %v", b, err)
	}
	if got := hostGit(t, w.dir, "log", "-1", "--format=%D %s"); got != "HEAD -> drivertest/keep kept" {
		t.Fatalf("the repository after Destroy: %q, want branch drivertest/keep at commit \"kept\"", got)
	}
	if _, err := w.d.Get(ctx, w.id); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("Get after Destroy = %v, want ErrNotFound", err)
	}
	if err := w.d.Destroy(ctx, w.id); err != nil {
		t.Fatalf("second Destroy = %v, want nil", err)
	}
	if _, err := w.d.Create(ctx, w.spec); err != nil {
		t.Fatalf("Create after Destroy: %v", err)
	}
	if res := w.ok(t, gitReq("cat keep.txt && git log --format=%s")); string(res.Stdout) != "precious\nkept\n" {
		t.Fatalf("recreated runtime sees %q", res.Stdout)
	}
}

// hibernateKeepsBranch: a repository on a branch, with a commit, a
// modified tracked file and an untracked one, survives Stop and the resume
// of the next exec exactly, inside and as host git sees it.
func (s *suite) hibernateKeepsBranch(t *testing.T) {
	w := s.runtime(t, nil)
	ctx := context.Background()
	w.ok(t, gitReq("git init -q -b drivertest/feature . && echo one > tracked.txt && git add tracked.txt && git commit -qm first"+
		" && echo more >> tracked.txt && echo dirty > untracked.txt"))
	if err := w.d.Stop(ctx, w.id); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if rt, err := w.d.Get(ctx, w.id); err != nil || rt.State != driver.StateStopped {
		t.Fatalf("after Stop: %+v, %v; want state %q", rt, err, driver.StateStopped)
	}
	res := w.ok(t, gitReq("git rev-parse --abbrev-ref HEAD; git log --format=%s; git status --porcelain; cat tracked.txt untracked.txt"))
	const want = "drivertest/feature\nfirst\n M tracked.txt\n?? untracked.txt\none\nmore\ndirty\n"
	if string(res.Stdout) != want {
		t.Fatalf("after resume:\n%s\nwant:\n%s", res.Stdout, want)
	}
	if rt, _ := w.d.Get(ctx, w.id); rt == nil || rt.State != driver.StateRunning {
		t.Fatalf("state after exec on a stopped runtime = %+v, want running", rt)
	}
	// The resumed runtime keeps working on the branch, and host git sees it.
	w.ok(t, gitReq("git commit -qam second"))
	if got := hostGit(t, w.dir, "log", "--format=%D|%s"); got != "HEAD -> drivertest/feature|second\n|first" {
		t.Fatalf("host git sees %q", got)
	}
}
