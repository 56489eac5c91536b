package drivertest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// noPrivileges: agent code holds no privileges (DESIGN.md §3). From inside
// the sandbox each attack that needs one is tried; from the host the suite
// checks that nothing outside changed. It runs for every isolated driver —
// bwrap as root and as an unprivileged user, Docker.
func (s *suite) noPrivileges(t *testing.T) {
	d := s.h.New(t)
	skipUnisolated(t, d)
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	ro := filepath.Join(root, "ro")
	for _, dir := range []string{filepath.Join(ws, ".git", "hooks"), ro} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(ws, ".git", "config")
	if err := os.WriteFile(config, []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "object"), []byte("blob\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The sandbox must be able to traverse down to the mounts.
	for _, dir := range []string{root, ws, ro} {
		os.Chmod(dir, 0o755)
	}
	w := s.workspaceAt(t, d, ws, func(sp *driver.Spec) {
		sp.ReadOnlyPaths = []string{ro}
		sp.ProtectedPaths = []string{config, filepath.Join(ws, ".git", "hooks")}
	})
	beforeConfig, beforeRO := readFile(t, config), treeDigest(t, ro)
	env := map[string]string{"WS": ws, "RO": ro, "CONFIG": config}

	// Capabilities and no_new_privs, as the kernel reports them.
	status := w.ok(t, grove.ExecRequest{Argv: []string{"cat", "/proc/self/status"}})
	fields := procStatus(status.Stdout)
	for _, capSet := range []string{"CapEff", "CapPrm", "CapAmb"} {
		if v, err := strconv.ParseUint(fields[capSet], 16, 64); err != nil || v != 0 {
			t.Errorf("%s inside the sandbox = %q, want 0", capSet, fields[capSet])
		}
	}
	if fields["NoNewPrivs"] != "1" {
		t.Errorf("NoNewPrivs inside the sandbox = %q, want 1", fields["NoNewPrivs"])
	}

	attacks := []struct{ name, script string }{
		{"remount a system directory writable", `mount -o remount,bind,rw /usr 2>/dev/null; mount -o remount,rw / 2>/dev/null; touch /usr/grove-privilege-test`},
		{"unmount a protected bind and rewrite it", `umount "$CONFIG" 2>/dev/null; umount -l "$CONFIG" 2>/dev/null; printf '[core]\n\tfsmonitor = evil\n' > "$CONFIG"`},
		{"remount a read-only path writable", `mount -o remount,bind,rw "$RO" 2>/dev/null; echo poison > "$RO/object"`},
		{"bind over a read-only path", `mkdir -p /tmp/p && echo poison > /tmp/p/object; mount --bind /tmp/p "$RO" 2>/dev/null; echo poison > "$RO/object"`},
		{"a new user namespace, then mount", `unshare -Urm sh -c 'mount --bind /tmp "$RO" && echo poison > "$RO/object"'`},
		{"a new mount namespace", `unshare -m true`},
	}
	for _, a := range attacks {
		res := w.exec(t, grove.ExecRequest{Shell: a.script, Env: env})
		if res.ExitCode == 0 {
			t.Errorf("%s: the attack's last step succeeded (exit 0)\n%s%s", a.name, res.Stdout, res.Stderr)
		}
	}
	if _, err := os.Stat("/usr/grove-privilege-test"); err == nil {
		os.Remove("/usr/grove-privilege-test")
		t.Error("a command created a file in the host's /usr")
	}
	if got := readFile(t, config); got != beforeConfig {
		t.Errorf("the protected config changed on the host: %q", got)
	}
	if got := treeDigest(t, ro); got != beforeRO {
		t.Error("the read-only path changed on the host")
	}

	// The kernel keyring and other denied system calls.
	if _, err := exec.LookPath("python3"); err == nil || d.Kind() == "docker" {
		nr, ok := keyctlNumber[runtime.GOARCH]
		if ok {
			// keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1)
			script := `import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(` + strconv.Itoa(nr) + `, 0, -3, 1)
sys.exit(0 if r >= 0 else 3)`
			res := w.exec(t, grove.ExecRequest{Argv: []string{"python3", "-c", script}})
			switch res.ExitCode {
			case 3:
			case 0:
				t.Error("keyctl succeeded inside the sandbox")
			default:
				t.Errorf("keyctl probe: exit %d\n%s", res.ExitCode, res.Stderr)
			}
		}
	}

	// A process outside the sandbox cannot be seen, signalled or traced.
	outside := exec.Command("sleep", "60")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outside.Process.Kill(); outside.Wait() }()
	pid := strconv.Itoa(outside.Process.Pid)
	res := w.exec(t, grove.ExecRequest{Shell: `kill -STOP ` + pid + ` 2>/dev/null && exit 0; test -e /proc/` + pid + `/status && grep -q sleep /proc/` + pid + `/comm && exit 0; exit 5`})
	if res.ExitCode != 5 {
		t.Errorf("a host process was visible or signalled from the sandbox (exit %d)", res.ExitCode)
	}
	if st := readProcState(outside.Process.Pid); st == "T" || st == "t" {
		t.Error("the host process was stopped from inside the sandbox")
	}
	if err := outside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the host process died: %v", err)
	}
}

// keyctlNumber is keyctl's system call number by GOARCH.
var keyctlNumber = map[string]int{"amd64": 250, "arm64": 219}

func procStatus(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

func readProcState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// pid (comm) state ...
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return string(b[i+2])
	}
	return ""
}
