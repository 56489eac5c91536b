package daytona

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/daytona/daytonatest"
	"github.com/grove-dev/grove/driver/drivertest"
)

// TestConformance runs driver/drivertest against the driver on the fake,
// in its default network mode, block-all (Capabilities/NetworkNone runs).
// The suite writes and inspects each workspace from the host, so the fake
// bind-mounts a host directory (this test's TMPDIR) at the same path in
// its sandboxes and Spec.WorkDir names that path. Real Daytona shares
// nothing with the Grove host: this test proves the exec and lifecycle
// contract, not the remote file layout (TestExecContract and
// TestLifecycleAndFaults cover the driver without any host path).
func TestConformance(t *testing.T) {
	cli, img := engine(t)
	shared, err := os.MkdirTemp("", "daytona-conformance-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", shared)
	fake := daytonatest.New(t, cli, daytonatest.Options{Image: img, APIKey: "k", HostMounts: []string{shared}})
	newDriver := func(t *testing.T, mutating bool) driver.Driver {
		d, err := New(Config{APIURL: fake.URL, APIKey: "k", WorkspaceRoot: "/home/agent/grove", AllowMutating: mutating,
			RetryBackoff: 10 * time.Millisecond, PollInterval: 100 * time.Millisecond,
			// The cases share one sandbox: no case's Destroy may stop it
			// under another's commands.
			IdleStopDelay: -1})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) driver.Driver { return newDriver(t, true) },
		Spec: func(t *testing.T, dir string) driver.Spec {
			// The sandbox user (uid 1000) must reach and own the tree.
			for p := filepath.Dir(dir); strings.HasPrefix(p, shared+"/"); p = filepath.Dir(p) {
				if err := os.Chmod(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
				if err == nil {
					err = os.Lchown(p, 1000, 1000)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return driver.Spec{User: "conformance", Project: "p"}
		},
		Restricted: func(t *testing.T) driver.Driver { return newDriver(t, false) },
		// The host as a bridged container would reach it, so that the
		// block-all case proves the sandbox has no network (a container's
		// own 127.0.0.1 would refuse the probe anyway).
		HostAddress: hostGateway,
	})
}
