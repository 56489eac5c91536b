package drivertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

func (s *suite) rejectMutating(t *testing.T) {
	d := s.h.New(t)
	if d.Capabilities().AllowMutating {
		if s.h.Restricted == nil {
			// The driver claims to allow writes: prove it does.
			w := s.workspace(t, d, nil)
			w.ok(t, grove.ExecRequest{Shell: "echo x > written", Class: grove.ClassWrite})
			return
		}
		d = s.h.Restricted(t)
		if d.Capabilities().AllowMutating {
			t.Fatal("Harness.Restricted returned a driver that allows mutating commands")
		}
	}
	w := s.workspace(t, d, nil)
	for _, class := range []grove.CommandClass{"", grove.ClassWrite, grove.ClassInstall, grove.ClassTest} {
		_, err := d.Exec(context.Background(), w.id, grove.ExecRequest{Shell: "echo x > written", Class: class})
		if !errors.Is(err, grove.ErrRejected) {
			t.Errorf("class %q: Exec = %v, want ErrRejected", class, err)
		}
		_, err = d.ExecStream(context.Background(), w.id, grove.ExecRequest{Shell: "echo x > written", Class: class}, func(grove.Chunk) error { return nil })
		if !errors.Is(err, grove.ErrRejected) {
			t.Errorf("class %q: ExecStream = %v, want ErrRejected", class, err)
		}
	}
	if _, err := os.Stat(filepath.Join(w.dir, "written")); err == nil {
		t.Fatal("a rejected command ran")
	}
	w.ok(t, grove.ExecRequest{Argv: []string{"true"}, Class: grove.ClassRead})
}

func (s *suite) isolated(t *testing.T) {
	d := s.h.New(t)
	if !d.Capabilities().Isolated {
		t.Skip("driver does not claim isolation")
	}
	w := s.workspace(t, d, nil)
	w.ok(t, sh("touch inside && touch /tmp/private-tmp-ok"))
	if _, err := os.Stat(filepath.Join(w.dir, "inside")); err != nil {
		t.Fatalf("the workspace must be writable: %v", err)
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "/root"
	}
	name := fmt.Sprintf("grove-drivertest-escape-%d", seq.Add(1))
	targets := []string{
		filepath.Join(filepath.Dir(w.dir), name), // the workspace's parent
		filepath.Join(home, name),                // the host user's HOME
		filepath.Join("/usr/local", name),        // a system directory
		filepath.Join("/var/tmp", name),          // a shared writable directory on the host
	}
	for _, p := range targets {
		res := w.exec(t, grove.ExecRequest{Argv: []string{"sh", "-c", `echo pwned > "$1"`, "sh", p}})
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("a sandboxed command wrote %s on the host", p)
		} else if res.ExitCode == 0 {
			// Writes that "succeed" into a private overlay are fine, but
			// then the host file must not exist, which was checked above.
			t.Logf("write to %s succeeded inside the sandbox but did not reach the host", p)
		}
	}
	if _, err := os.Stat("/tmp/private-tmp-ok"); err == nil {
		t.Error("/tmp inside the sandbox is the host's /tmp, not a private one")
	}

	ro := s.workspace(t, d, func(sp *driver.Spec) { sp.Writable = false })
	if res := ro.exec(t, sh("echo x > written")); res.ExitCode == 0 {
		t.Error("writing into a read-only workspace succeeded")
	}
	if _, err := os.Stat(filepath.Join(ro.dir, "written")); err == nil {
		t.Error("a command wrote into a read-only workspace")
	}
	ro.ok(t, sh("echo scratch > /tmp/scratch && cat /tmp/scratch"))
}

// Listen opens a TCP listener on addr on the host and reports whether
// anything connected to it: the probe of the network cases, exported for
// adapters' own network tests.
func Listen(t *testing.T, addr string) (port int, connected func() bool) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case got <- struct{}{}:
			default:
			}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, func() bool {
		select {
		case <-got:
			return true
		case <-time.After(200 * time.Millisecond):
			return false
		}
	}
}

func (s *suite) networkNone(t *testing.T) {
	d := s.h.New(t)
	caps := d.Capabilities()
	if !hasMode(caps.Network, driver.NetworkNone) {
		t.Skip("driver does not offer network none")
	}
	host := "127.0.0.1"
	if s.h.HostAddress != nil {
		host = s.h.HostAddress(t)
	}
	port, connected := Listen(t, host)
	connect := grove.ExecRequest{
		Argv:    []string{"bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", host, port)},
		Timeout: 10 * time.Second,
	}
	none := s.workspace(t, d, func(sp *driver.Spec) { sp.Network = driver.NetworkNone })
	if res := none.exec(t, connect); res.ExitCode == 0 || connected() {
		t.Fatalf("network none: a TCP connect to the host's loopback succeeded (exit %d)", res.ExitCode)
	}
	if hasMode(caps.Network, driver.NetworkDefault) {
		// The positive control: the same probe works where networking is
		// granted, so the failure above is the sandbox, not the probe.
		open := s.workspace(t, d, func(sp *driver.Spec) { sp.Network = driver.NetworkDefault })
		if res := open.exec(t, connect); res.ExitCode != 0 || !connected() {
			t.Fatalf("network default: connect failed: exit %d %s", res.ExitCode, res.Stderr)
		}
	}
}

func (s *suite) processLimit(t *testing.T) {
	d := s.h.New(t)
	if !d.Capabilities().Limits {
		t.Skip("driver does not enforce limits")
	}
	const limit = 32
	w := s.workspace(t, d, func(sp *driver.Spec) { sp.Limits.Processes = limit })
	// A bounded probe first: if the limit were not enforced it starts 200
	// short sleeps and stops, instead of taking the machine down.
	probe := w.exec(t, grove.ExecRequest{
		Argv:    []string{"sh", "-c", `i=0; while [ $i -lt 200 ]; do sleep 5 & i=$((i+1)); done; echo started $i`},
		Timeout: 4 * time.Second,
	})
	if strings.Contains(string(probe.Stdout), "started 200") {
		t.Fatalf("200 processes started under a limit of %d", limit)
	}
	// The real thing; it must end (limit plus timeout) and leave the test
	// process alive and able to run commands.
	start := time.Now()
	res := w.exec(t, grove.ExecRequest{Argv: []string{"bash", "-c", `b(){ b | b & }; b; sleep 2`}, Timeout: 3 * time.Second})
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("fork bomb ran for %v", took)
	}
	t.Logf("fork bomb: exit %d timed_out %v", res.ExitCode, res.TimedOut)
	w.ok(t, argv("true"))
}

func (s *suite) fileSizeLimit(t *testing.T) {
	d := s.h.New(t)
	if !d.Capabilities().Limits {
		t.Skip("driver does not enforce limits")
	}
	const limit = 1 << 20
	w := s.workspace(t, d, func(sp *driver.Spec) { sp.Limits.FileSize = limit })
	res := w.exec(t, sh("head -c 3000000 /dev/zero > big"))
	if res.ExitCode == 0 {
		t.Fatal("writing 3 MB under a 1 MiB file size limit succeeded")
	}
	st, err := os.Stat(filepath.Join(w.dir, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > limit {
		t.Fatalf("file grew to %d bytes under a limit of %d", st.Size(), limit)
	}
}

func (s *suite) cpuLimit(t *testing.T) {
	t.Parallel()
	d := s.h.New(t)
	if !d.Capabilities().Limits {
		t.Skip("driver does not enforce limits")
	}
	w := s.workspace(t, d, func(sp *driver.Spec) { sp.Limits.CPUTime = time.Second })
	start := time.Now()
	res := w.exec(t, grove.ExecRequest{Shell: "while :; do :; done", Timeout: 20 * time.Second})
	if res.TimedOut || res.ExitCode == 0 {
		t.Fatalf("a busy loop under a 1 s CPU limit ran until the timeout (exit %d, %v)", res.ExitCode, time.Since(start))
	}
}
