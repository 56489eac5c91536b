package bwrap

import (
	"errors"
	"slices"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

func TestPinnedDirs(t *testing.T) {
	tests := []struct {
		protected []string
		want      []string
	}{
		{nil, []string{}},
		{[]string{"/w/.git/config"}, []string{"/w/.git"}},
		{[]string{"/w/.git/config", "/w/.git/hooks", "/w/.git/objects/info/alternates"},
			[]string{"/w/.git", "/w/.git/objects", "/w/.git/objects/info"}},
		{[]string{"/w/top"}, []string{}},
		{[]string{"/elsewhere/x/y"}, []string{}},
	}
	for _, tt := range tests {
		if got := pinnedDirs("/w", tt.protected); !slices.Equal(got, tt.want) {
			t.Errorf("pinnedDirs(%q) = %q, want %q", tt.protected, got, tt.want)
		}
	}
}

func TestArgsOrderAndNetwork(t *testing.T) {
	d := &Driver{mounts: []string{"--ro-bind", "/usr", "/usr"}}
	spec := driver.Spec{
		WorkDir: "/w", Writable: true,
		ReadOnlyPaths:  []string{"/cache/objects"},
		ProtectedPaths: []string{"/w/.git/config"},
	}
	a := d.args(spec, "/w", []string{"A=1"}, []string{"true"})
	idx := func(s ...string) int {
		for i := 0; i+len(s) <= len(a); i++ {
			if slices.Equal(a[i:i+len(s)], s) {
				return i
			}
		}
		return -1
	}
	work, pin, prot := idx("--bind", "/w", "/w"), idx("--bind", "/w/.git", "/w/.git"), idx("--ro-bind", "/w/.git/config", "/w/.git/config")
	if work < 0 || pin < work || prot < pin {
		t.Fatalf("workspace, pinned parent and protected path out of order: %q", a)
	}
	if idx("--unshare-net") < 0 || idx("--clearenv") < 0 || idx("--setenv", "A", "1") < 0 || idx("--", "true") != len(a)-2 {
		t.Fatalf("missing isolation flags: %q", a)
	}
	spec.Network, spec.Writable = driver.NetworkDefault, false
	a = d.args(spec, "/w", nil, []string{"true"})
	if idx("--unshare-net") >= 0 || idx("--ro-bind", "/w", "/w") < 0 || idx("--bind", "/w/.git", "/w/.git") >= 0 {
		t.Fatalf("network default / read-only workspace: %q", a)
	}
}

func TestNewWithoutBwrap(t *testing.T) {
	if _, err := New(Options{Binary: "/nonexistent/bwrap"}); !errors.Is(err, grove.ErrNotInstalled) {
		t.Fatalf("New = %v, want ErrNotInstalled", err)
	}
}

func TestMapExecFailure(t *testing.T) {
	tests := []struct {
		code   int
		stderr string
		want   int
	}{
		{1, "bwrap: execvp nosuch: No such file or directory\n", 127},
		{1, "bwrap: execvp ./x: Permission denied\n", 126},
		{1, "some other failure\n", 1},
		{2, "bwrap: execvp nosuch: No such file or directory\n", 2},
	}
	for _, tt := range tests {
		res := &grove.ExecResult{ExitCode: tt.code, Stderr: []byte(tt.stderr)}
		if mapExecFailure(res); res.ExitCode != tt.want {
			t.Errorf("%d %q -> %d, want %d", tt.code, tt.stderr, res.ExitCode, tt.want)
		}
	}
}
