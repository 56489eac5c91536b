package debug

import (
	"errors"
	"strings"
	"testing"
	"time"

	grove "github.com/grove-dev/grove"
)

// TestLaunchFailures: an adapter refusing the launch is the adapter's
// message under ErrInvalid, and leaves no session behind.
func TestLaunchFailures(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir)
	writeFile(t, dir, "go.mod", "module example.com/broken\n\ngo 1.21\n")
	writeFile(t, dir, "main.go", "package main\n\nfunc main() { undefined() }\n")
	ctx := ctxT(t)
	cases := []struct {
		a    *adapter
		req  grove.DebugStartRequest
		want string
	}{
		{lldbDAP, grove.DebugStartRequest{Language: "c", Program: "no-such-binary"}, "no-such-binary"},
		{delve, grove.DebugStartRequest{Language: "go", Program: ".", Timeout: 2 * time.Minute}, "undefined"},
	}
	for _, c := range cases {
		t.Run(c.a.name, func(t *testing.T) {
			requireAdapter(t, m, c.a)
			_, err := m.Start(ctx, c.req)
			if !errors.Is(err, grove.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrInvalid mentioning %q", err, c.want)
			}
			t.Logf("%v", err)
			if list := m.Sessions(ctx); len(list) != 0 {
				t.Fatalf("sessions left: %+v", list)
			}
		})
	}
}
