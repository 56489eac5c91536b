// Package testenv decides whether a test that needs an external component
// (bubblewrap, Docker, ripgrep, Postgres, Redis) runs, skips or fails.
//
// Locally a missing component skips the test with a message. In CI,
// GROVE_TEST_REQUIRE names the components the machine must have
// (comma-separated, e.g. "bwrap,docker,rg,postgres,redis"); a test needing a
// required component that is missing fails instead, so a green CI means the
// test really ran.
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Required reports whether GROVE_TEST_REQUIRE names component.
func Required(component string) bool {
	for _, c := range strings.Split(os.Getenv("GROVE_TEST_REQUIRE"), ",") {
		if strings.TrimSpace(c) == component {
			return true
		}
	}
	return false
}

// Require skips or fails t when available is false. why says what is
// missing.
func Require(t testing.TB, component string, available bool, why string) {
	t.Helper()
	if available {
		return
	}
	if Required(component) {
		t.Fatalf("%s is required by GROVE_TEST_REQUIRE but unavailable: %s", component, why)
	}
	t.Skipf("%s unavailable (%s); set GROVE_TEST_REQUIRE=%s to make this a failure", component, why, component)
}

// RequireBinary requires an executable on PATH; component names it in
// GROVE_TEST_REQUIRE.
func RequireBinary(t testing.TB, component, binary string) string {
	t.Helper()
	p, err := exec.LookPath(binary)
	why := ""
	if err != nil {
		why = err.Error()
	}
	Require(t, component, err == nil, why)
	return p
}
