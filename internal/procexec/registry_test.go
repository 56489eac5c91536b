package procexec

import (
	"errors"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

func TestRegistryLifecycle(t *testing.T) {
	r := NewRegistry[string]("test")
	made := 0
	mk := func() (string, error) { made++; return "home", nil }
	spec := driver.Spec{WorkspaceID: "ws1", WorkDir: "/w"}
	if _, err := r.Create(spec, mk); err != nil {
		t.Fatal(err)
	}
	rt, err := r.Create(driver.Spec{WorkspaceID: "ws1", WorkDir: "/other"}, mk)
	if err != nil || made != 1 || rt.Spec.WorkDir != "/w" || rt.Kind != "test" {
		t.Fatalf("create is not idempotent: made=%d %+v %v", made, rt, err)
	}
	if err := r.SetState("ws1", driver.StateStopped); err != nil {
		t.Fatal(err)
	}
	if rt, _ := r.Get("ws1"); rt.State != driver.StateStopped {
		t.Fatalf("state %s", rt.State)
	}
	spec2, home, err := r.Resume("ws1")
	if err != nil || home != "home" || spec2.WorkDir != "/w" {
		t.Fatalf("resume: %v %q %+v", err, home, spec2)
	}
	if rt, _ := r.Get("ws1"); rt.State != driver.StateRunning {
		t.Fatalf("resume did not start the runtime: %s", rt.State)
	}
	if home, ok := r.Remove("ws1"); !ok || home != "home" {
		t.Fatalf("remove: %q %v", home, ok)
	}
	for _, err := range []error{r.SetState("ws1", driver.StateRunning), func() error { _, err := r.Get("ws1"); return err }(), func() error { _, _, err := r.Resume("ws1"); return err }()} {
		if !errors.Is(err, grove.ErrNotFound) {
			t.Fatalf("after remove: want ErrNotFound, got %v", err)
		}
	}
	if _, ok := r.Remove("ws1"); ok {
		t.Fatal("second remove reported a runtime")
	}
	boom := errors.New("boom")
	if _, err := r.Create(driver.Spec{WorkspaceID: "ws2"}, func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("failed extra: %v", err)
	}
	if _, err := r.Get("ws2"); !errors.Is(err, grove.ErrNotFound) {
		t.Fatal("a failed create left a runtime behind")
	}
}
