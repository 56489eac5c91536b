package docker

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/moby/profiles/seccomp"
)

// TestSeccompProfile: the profile is Docker's default without the tracing
// calls, except where a capability (which containers lack) grants them.
func TestSeccompProfile(t *testing.T) {
	s, err := seccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	var p seccomp.Seccomp
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != seccomp.DefaultProfile().DefaultAction {
		t.Fatalf("default action %q", p.DefaultAction)
	}
	var allowed []string
	for _, sc := range p.Syscalls {
		if sc.Includes != nil && len(sc.Includes.Caps) > 0 {
			continue
		}
		allowed = append(allowed, sc.Names...)
	}
	for _, n := range tracing {
		if slices.Contains(allowed, n) {
			t.Errorf("%s is allowed without a capability", n)
		}
	}
	for _, n := range []string{"read", "clone", "execve", "openat"} {
		if !slices.Contains(allowed, n) {
			t.Errorf("%s is no longer allowed", n)
		}
	}
}
