package drivertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// The privilege cases attack the sandbox's privileges from inside
// (DESIGN.md §3: no capabilities, no-new-privileges, a seccomp filter with
// no mount family, no new user namespaces, no keyctl/bpf/ptrace-out;
// read-only binds stay read-only because nothing inside can unmount or
// remount them) and check from the host that nothing changed.

// privLayout is a workspace with a protected .git/config and .git/hooks,
// and a read-only path outside it (the repo cache's objects).
type privLayout struct {
	w                *workspace
	config, hooks    string
	readOnly, marker string
}

func (s *suite) privWorkspace(t *testing.T) *privLayout {
	t.Helper()
	d := s.h.New(t)
	skipUnisolated(t, d)
	root := t.TempDir()
	dir := filepath.Join(root, "ws")
	ro := filepath.Join(root, "cache.git", "objects")
	for _, p := range []string{filepath.Join(dir, ".git", "hooks"), filepath.Join(ro, "ab")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(dir, ".git", "config"):            "[core]\n\tbare = false\n",
		filepath.Join(dir, ".git", "hooks", "README"):   "no hooks\n",
		filepath.Join(ro, "ab", "cdef0123456789abcdef"): "object\n",
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Commands may run as another uid than the test (a runtime's own
	// unprivileged user): they must be able to reach the mounts.
	for _, p := range []string{root, dir, filepath.Dir(ro), ro} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l := &privLayout{
		config: filepath.Join(dir, ".git", "config"), hooks: filepath.Join(dir, ".git", "hooks"),
		readOnly: ro, marker: fmt.Sprintf("grove-drivertest-priv-%d-%d", os.Getpid(), seq.Add(1)),
	}
	l.w = s.workspaceAt(t, d, dir, func(sp *driver.Spec) {
		sp.ReadOnlyPaths = []string{ro}
		sp.ProtectedPaths = []string{l.config, l.hooks}
	})
	return l
}

func (l *privLayout) req(script string) grove.ExecRequest {
	return grove.ExecRequest{Shell: script, Env: map[string]string{
		"CONFIG": l.config, "HOOKS": l.hooks, "RO": l.readOnly, "WS": l.w.dir, "MARKER": l.marker,
	}}
}

// snapshot is what the host sees of everything the attacks aim at.
func (l *privLayout) snapshot(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"the protected .git/config": readFile(t, l.config),
		"the protected .git/hooks":  treeDigest(t, l.hooks),
		"the read-only path":        treeDigest(t, l.readOnly),
	}
}

func (l *privLayout) unchanged(t *testing.T, before map[string]string) {
	t.Helper()
	for what, b := range l.snapshot(t) {
		if b != before[what] {
			t.Errorf("%s changed on the host", what)
		}
	}
	for _, dir := range []string{"/etc", "/usr", "/tmp", filepath.Dir(l.readOnly)} {
		if _, err := os.Lstat(filepath.Join(dir, l.marker)); err == nil {
			os.Remove(filepath.Join(dir, l.marker))
			t.Errorf("a sandboxed command created %s on the host", filepath.Join(dir, l.marker))
		}
	}
}

// privNoCapabilities: every capability set is empty, no-new-privileges is
// set and a seccomp filter is installed.
func (s *suite) privNoCapabilities(t *testing.T) {
	l := s.privWorkspace(t)
	res := l.w.ok(t, sh(`cat /proc/self/status`))
	status := map[string]string{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			status[k] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		v, err := strconv.ParseUint(status[k], 16, 64)
		if err != nil || v != 0 {
			t.Errorf("%s = %q inside the sandbox, want 0", k, status[k])
		}
	}
	if status["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs = %q inside the sandbox, want 1", status["NoNewPrivs"])
	}
	if status["Seccomp"] != "2" {
		t.Errorf("Seccomp = %q inside the sandbox, want 2 (a filter)", status["Seccomp"])
	}
}

// privMounts: remounting a system directory, the read-only path or a
// protected path writable, and unmounting a protected path, all fail; the
// writes tried after each attempt do not reach the host.
func (s *suite) privMounts(t *testing.T) {
	l := s.privWorkspace(t)
	before := l.snapshot(t)
	if res := l.w.exec(t, l.req(`echo x > "$WS/work" && cat "$RO/ab/"* "$CONFIG" >/dev/null`)); res.ExitCode != 0 {
		t.Fatalf("the workspace must be writable and the read-only paths readable: exit %d %s", res.ExitCode, res.Stderr)
	}
	attacks := []struct{ name, attempt, write string }{
		{"remount /etc", `mount -o remount,bind,rw /etc`, `touch "/etc/$MARKER"`},
		{"remount /usr", `mount -o remount,bind,rw /usr`, `touch "/usr/$MARKER"`},
		{"remount the read-only path", `mount -o remount,bind,rw "$RO"`, `touch "$RO/$MARKER"; echo pwned > "$RO/ab/cdef0123456789abcdef"`},
		{"remount the protected hooks", `mount -o remount,bind,rw "$HOOKS"`, `printf '#!/bin/sh\ntouch /tmp/pwned\n' > "$HOOKS/pre-commit"`},
		{"remount the protected config", `mount -o remount,bind,rw "$CONFIG"`, `echo "[core] fsmonitor = touch /tmp/$MARKER" >> "$CONFIG"`},
		{"unmount the protected config", `umount "$CONFIG"`, `echo "[core] hooksPath = /tmp" >> "$CONFIG"`},
		{"lazily unmount the protected config", `umount -l "$CONFIG"`, `echo "[core] hooksPath = /tmp" >> "$CONFIG"`},
		{"unmount the protected hooks", `umount -l "$HOOKS"`, `echo x > "$HOOKS/post-checkout"`},
		{"unmount the read-only path", `umount -l "$RO"`, `echo x > "$RO/$MARKER"`},
		{"mount a tmpfs over the hooks", `mount -t tmpfs none "$HOOKS"`, `echo x > "$HOOKS/pre-commit"`},
		{"a new user namespace, then remount", `unshare -U -r -m sh -c 'mount -o remount,bind,rw /etc'`, `unshare -U -r -m sh -c 'touch "/etc/$MARKER"'`},
		{"a new user namespace, then unmount", `unshare -U -r -m sh -c 'umount -l "$CONFIG"'`, `unshare -U -r -m sh -c 'echo x >> "$CONFIG"'`},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			if res := l.w.exec(t, l.req(a.attempt)); res.ExitCode == 0 {
				t.Errorf("%q succeeded inside the sandbox", a.attempt)
			}
			l.w.exec(t, l.req(a.attempt+"; "+a.write))
		})
	}
	l.unchanged(t, before)
}

// privProbe makes the system calls directly, so that no tool's own checks
// (mount(8) refusing options to non-root users, say) stand in for the
// kernel's or the filter's answer. Each line is "name result errno"; every
// probe must fail. "fork" is the control: ordinary process creation works.
const privProbe = `
import ctypes, os, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
x86 = platform.machine() == "x86_64"
if not x86 and platform.machine() != "aarch64":
    print("skip", platform.machine()); sys.exit(0)
NR = dict(mount=165, umount2=166, unshare=272, clone=56, clone3=435, open_tree=428, fsopen=430,
          keyctl=250, add_key=248, request_key=249, bpf=321, perf_event_open=298, ptrace=101, setns=308) if x86 else \
     dict(mount=40, umount2=39, unshare=97, clone=220, clone3=435, open_tree=428, fsopen=430,
          keyctl=219, add_key=217, request_key=218, bpf=280, perf_event_open=241, ptrace=117, setns=268)
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(L(NR[nr]), *args)
    e = ctypes.get_errno()
    if r == 0 and nr in ("clone", "clone3"):
        os._exit(0)  # the child of a clone that should not have happened
    if r > 0 and nr in ("clone", "clone3"):
        os.waitpid(r, 0)
    if r >= 0 and name == "ptrace_attach_pid1":
        os.waitpid(1, 0x40000000)  # __WALL
        libc.syscall(L(NR["ptrace"]), L(17), L(1), None, None)  # PTRACE_DETACH
    print(name, r, e)
env = os.environ
MS_REMOUNT, MS_BIND, MNT_DETACH = 32, 4096, 2
call("mount_remount_etc", "mount", b"none", b"/etc", None, L(MS_REMOUNT | MS_BIND), None)
call("mount_remount_readonly_path", "mount", b"none", env["RO"].encode(), None, L(MS_REMOUNT | MS_BIND), None)
call("mount_remount_protected", "mount", b"none", env["HOOKS"].encode(), None, L(MS_REMOUNT | MS_BIND), None)
call("mount_tmpfs", "mount", b"none", env["HOOKS"].encode(), b"tmpfs", L(0), None)
call("umount_protected", "umount2", env["CONFIG"].encode(), L(MNT_DETACH))
call("umount_readonly_path", "umount2", env["RO"].encode(), L(MNT_DETACH))
call("open_tree_clone", "open_tree", L(-100), env["RO"].encode(), L(1))
call("fsopen_tmpfs", "fsopen", b"tmpfs", L(0))
call("unshare_user", "unshare", L(0x10000000))
call("unshare_mount", "unshare", L(0x00020000))
call("clone_newuser", "clone", L(0x10000000 | 17), None, None, None, None)
args = ctypes.create_string_buffer(64)
args[0:8] = (0x10000000).to_bytes(8, "little"); args[32:40] = (17).to_bytes(8, "little")
call("clone3_newuser", "clone3", args, L(64))
fd = os.open("/proc/self/ns/user", os.O_RDONLY)
call("setns_user", "setns", L(fd), L(0))
call("keyctl_join_session", "keyctl", L(1), None)
call("add_key", "add_key", b"user", b"grove", b"x", L(1), L(-2))
call("request_key", "request_key", b"user", b"grove", None, L(0))
call("bpf_map_create", "bpf", L(0), ctypes.create_string_buffer(128), L(72))
pa = ctypes.create_string_buffer(128)
pa[0:4] = (1).to_bytes(4, "little"); pa[4:8] = (64).to_bytes(4, "little")
pa[40:48] = (1 | 1 << 5 | 1 << 6).to_bytes(8, "little")  # disabled, exclude_kernel, exclude_hv
call("perf_event_open_self", "perf_event_open", pa, L(0), L(-1), L(-1), L(0))
call("ptrace_attach_pid1", "ptrace", L(16), L(1), None, None)
pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork", 0 if os.waitpid(pid, 0)[1] >> 8 == 7 else -1, 0)
`

// privSyscalls: the mount family, new namespaces, keyrings, bpf,
// perf_event_open and ptrace of the namespace's pid 1 all fail, made as
// raw system calls; the protected and read-only paths are unchanged on
// the host afterwards.
func (s *suite) privSyscalls(t *testing.T) {
	l := s.privWorkspace(t)
	if res := l.w.exec(t, sh(`command -v python3`)); res.ExitCode != 0 {
		t.Skip("no python3 inside the sandbox to make raw system calls with")
	}
	before := l.snapshot(t)
	req := l.req("")
	req.Shell, req.Argv = "", []string{"python3", "-c", privProbe}
	res := l.w.exec(t, req)
	if res.ExitCode != 0 {
		t.Fatalf("probe: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "skip" {
			t.Skipf("no system call numbers for %s", f[1])
		}
		if len(f) != 3 {
			t.Fatalf("probe output %q", line)
		}
		seen++
		r, _ := strconv.Atoi(f[1])
		switch {
		case f[0] == "fork":
			if r != 0 {
				t.Error("fork does not work inside the sandbox: the probes prove nothing")
			}
		case f[0] == "ptrace_attach_pid1" && r >= 0:
			// bwrap allows ptrace for debuggers; its pid 1 is the sandbox's
			// own init, under the same filter. Privileges/PtraceAnotherCommand
			// is the ptrace-out check.
			t.Logf("ptrace attached to the namespace's pid 1")
		case r >= 0:
			t.Errorf("%s succeeded inside the sandbox (result %d)", f[0], r)
		default:
			t.Logf("%s: errno %s", f[0], f[2])
		}
	}
	if seen < 20 {
		t.Fatalf("the probe stopped early:\n%s%s", res.Stdout, res.Stderr)
	}
	l.unchanged(t, before)
}

// ptraceOthers looks for processes whose command line holds the marker
// and tries to attach to each; it prints how many it saw and attached to.
// The marker comes reversed in $REKRAM, so the command's own launcher
// (bwrap's pid 1 carries the environment on its command line) does not
// match.
const ptraceOthers = `
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
PTRACE = 101 if platform.machine() == "x86_64" else 117
marker = os.environ["REKRAM"][::-1].encode()
seen = attached = 0
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == os.getpid():
        continue
    try:
        cmdline = open("/proc/%s/cmdline" % p, "rb").read()
    except OSError:
        continue
    if marker not in cmdline:
        continue
    seen += 1
    pid = int(p)
    if libc.syscall(ctypes.c_long(PTRACE), ctypes.c_long(16), ctypes.c_long(pid), None, None) == 0:
        attached += 1
        os.waitpid(pid, 0x40000000)
        libc.syscall(ctypes.c_long(PTRACE), ctypes.c_long(17), ctypes.c_long(pid), None, None)
print(seen, attached)
`

// privPtraceOut: a command cannot trace another command of the same
// driver (another workspace's, running at the same time), whether or not
// the runtime lets it see it. On Docker both workspaces belong to one user
// and share a container, where the other command is visible.
func (s *suite) privPtraceOut(t *testing.T) {
	d := s.h.New(t)
	skipUnisolated(t, d)
	victim := s.workspace(t, d, nil)
	attacker := s.workspace(t, d, nil)
	if res := attacker.exec(t, sh(`command -v python3`)); res.ExitCode != 0 {
		t.Skip("no python3 inside the sandbox to call ptrace with")
	}
	marker := fmt.Sprintf("drivertest-ptrace-%d-%d", os.Getpid(), seq.Add(1))
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := d.Exec(ctx, victim.id, grove.ExecRequest{Argv: []string{"sh", "-c", "sleep 20", marker}})
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the victim command: %v", err)
		}
	}()
	defer wg.Wait()
	defer stop()
	deadline := time.Now().Add(5 * time.Second)
	for !hostSees(marker) {
		if time.Now().After(deadline) {
			t.Fatal("the victim command never showed up in the host's /proc")
		}
		time.Sleep(50 * time.Millisecond)
	}
	res := attacker.exec(t, grove.ExecRequest{Argv: []string{"python3", "-c", ptraceOthers}, Env: map[string]string{"REKRAM": reverse(marker)}})
	var seen, attached int
	if _, err := fmt.Sscan(string(res.Stdout), &seen, &attached); err != nil || res.ExitCode != 0 {
		t.Fatalf("probe: exit %d %q %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	t.Logf("the other command's processes visible from inside: %d", seen)
	if attached > 0 {
		t.Errorf("a command attached with ptrace to %d process(es) of another workspace's command", attached)
	}
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
