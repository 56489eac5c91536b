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
	w.ok(t, sh("echo precious > keep.txt"))
	if err := w.d.Destroy(ctx, w.id); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(w.dir, "keep.txt"))
	if err != nil || string(b) != "precious\n" {
		t.Fatalf("workspace file after Destroy: %q, %v", b, err)
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
	if res := w.ok(t, argv("cat", "keep.txt")); string(res.Stdout) != "precious\n" {
		t.Fatalf("recreated runtime sees %q", res.Stdout)
	}
}
