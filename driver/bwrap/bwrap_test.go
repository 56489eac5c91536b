package bwrap_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/bwrap"
	"github.com/grove-dev/grove/driver/drivertest"
	"github.com/grove-dev/grove/internal/testenv"
)

// newDriver skips (or, in CI, fails) without bwrap.
func newDriver(t testing.TB) *bwrap.Driver {
	t.Helper()
	testenv.RequireBinary(t, "bwrap", "bwrap")
	d, err := bwrap.New(bwrap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	err = d.Check(context.Background())
	why := ""
	if err != nil {
		why = err.Error()
	}
	testenv.Require(t, "bwrap", err == nil, why)
	return d
}

func TestConformance(t *testing.T) {
	newDriver(t)
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) driver.Driver { return newDriver(t) },
		Spec: func(t *testing.T, dir string) driver.Spec {
			return driver.Spec{User: "u", Project: "p"}
		},
	})
}

// TestConformanceAsNonRoot runs the suite again in a child process with an
// unprivileged uid — how a non-root server runs bwrap (a user namespace of
// its own per sandbox) — when the tests themselves run as root, as in CI.
func TestConformanceAsNonRoot(t *testing.T) {
	if os.Getenv("GROVE_BWRAP_CHILD") != "" || os.Geteuid() != 0 {
		t.Skip("the parent test process runs this; TestConformance covers a non-root run directly")
	}
	newDriver(t)
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(tmp); p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755|os.ModeSticky); err != nil && p != os.TempDir() {
			t.Fatal(err)
		}
		if p == os.TempDir() {
			break
		}
	}
	// The test binary lives under the build cache, which the uid cannot
	// reach: run a copy.
	bin := filepath.Join(tmp, "bwrap.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestConformance$", "-test.count=1")
	cmd.Dir = tmp
	work, home := filepath.Join(tmp, "work"), filepath.Join(tmp, "home")
	for _, d := range []string{work, home} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
	}
	cmd.Env = append(os.Environ(), "GROVE_BWRAP_CHILD=1", "TMPDIR="+work, "HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the conformance suite as uid 65534: %v\n%s", err, out)
	}
}
