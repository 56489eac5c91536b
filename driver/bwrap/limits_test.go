package bwrap

import (
	"context"
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
	"github.com/grove-dev/grove/internal/testenv"
)

// rootDriver returns a driver with cgroups; it needs root and a writable
// cgroup file system with the pids, memory and cpu controllers.
func rootDriver(t *testing.T) *Driver {
	t.Helper()
	testenv.RequireBinary(t, "bwrap", "bwrap")
	if os.Geteuid() != 0 {
		t.Skip("cgroup limits apply to a root server")
	}
	d, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	testenv.Require(t, "bwrap", d.cgroups != nil && d.cgroups.complete(), "no writable cgroups with pids, memory and cpu")
	return d
}

// testUser is a user name of this test only.
func testUser(t *testing.T) string {
	return fmt.Sprintf("test-%s-%d", t.Name(), os.Getpid())
}

// workspace creates a writable runtime with limits l for user.
func workspace(t *testing.T, d *Driver, user string, l driver.Limits) string {
	t.Helper()
	dir := t.TempDir()
	id := fmt.Sprintf("ws%d", time.Now().UnixNano())
	if _, err := d.Create(context.Background(), driver.Spec{WorkspaceID: id, User: user, Project: "p", WorkDir: dir, Writable: true, Limits: l}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Destroy(context.Background(), id) })
	return id
}

// cgroupDir is a workspace's (or with id "", a user's) cgroup in ctl.
func (d *Driver) cgroupDir(ctl, user, id string) string {
	dir := filepath.Join(d.cgroups.base[ctl], userDir(user))
	if id != "" {
		dir = filepath.Join(dir, workspaceDir(id))
	}
	return dir
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sh(t *testing.T, d *Driver, id, script string) *grove.ExecResult {
	t.Helper()
	res, err := d.Exec(context.Background(), id, grove.ExecRequest{Shell: script, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// sleeps starts up to 50 sleeps for 3 s; python, since bash retries a
// failed fork for many seconds.
const sleeps = `python3 -c '
import subprocess, time
ps = []
for i in range(50):
    try:
        ps.append(subprocess.Popen(["sleep", "30"]))
    except OSError:
        break
print(len(ps))
time.sleep(3)
for p in ps:
    p.kill()
'`

func TestMemoryLimitOOMKilled(t *testing.T) {
	d := rootDriver(t)
	testenv.RequireBinary(t, "bwrap", "python3")
	id := workspace(t, d, testUser(t), driver.Limits{MemoryBytes: 64 << 20})
	if got := readInt(t, filepath.Join(d.cgroupDir("memory", testUser(t), id), "memory.limit_in_bytes")); !d.cgroups.v2 && got != 64<<20 {
		t.Fatalf("memory.limit_in_bytes = %d", got)
	}
	res := sh(t, d, id, `python3 -c "b=bytearray(200<<20); print(len(b))"`)
	if !res.OOMKilled || res.ExitCode == 0 {
		t.Fatalf("exit %d, oom_killed %v, stdout %q stderr %q", res.ExitCode, res.OOMKilled, res.Stdout, res.Stderr)
	}
	t.Logf("killed: exit %d, stderr %q", res.ExitCode, res.Stderr)
	// Under the limit: no OOM.
	res = sh(t, d, id, `python3 -c "b=bytearray(8<<20)"`)
	if res.OOMKilled || res.ExitCode != 0 {
		t.Fatalf("small allocation: exit %d, oom_killed %v, stderr %q", res.ExitCode, res.OOMKilled, res.Stderr)
	}
}

func TestWorkspacePidsShared(t *testing.T) {
	d := rootDriver(t)
	testenv.RequireBinary(t, "bwrap", "python3")
	user := testUser(t)
	id := workspace(t, d, user, driver.Limits{Processes: 60})
	dir := d.cgroupDir("pids", user, id)
	// Each command starts up to 50 sleeps and keeps them 3 s; the host
	// watches pids.current meanwhile.
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh(t, d, id, sleeps)
		}()
	}
	var peak int64
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n := readInt(t, filepath.Join(dir, "pids.current")); n > peak {
			peak = n
		}
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	if peak > 60 || peak < 50 {
		t.Fatalf("peak processes in the workspace %d, want 50..60", peak)
	}
}

func TestUserPidsShared(t *testing.T) {
	d := rootDriver(t)
	testenv.RequireBinary(t, "bwrap", "python3")
	user := testUser(t)
	l := driver.Limits{Processes: 100, UserProcesses: 60}
	a, b := workspace(t, d, user, l), workspace(t, d, user, l)
	udir := d.cgroupDir("pids", user, "")
	if got := readInt(t, filepath.Join(udir, "pids.max")); got != 60 {
		t.Fatalf("user pids.max = %d", got)
	}
	var wg sync.WaitGroup
	for _, id := range []string{a, b} {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			sh(t, d, id, sleeps)
		}(id)
	}
	var peak int64
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n := readInt(t, filepath.Join(udir, "pids.current")); n > peak {
			peak = n
		}
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	if peak > 60 || peak < 50 {
		t.Fatalf("peak processes of the user %d, want 50..60", peak)
	}
}

func TestTmpSize(t *testing.T) {
	d := rootDriver(t)
	if !d.tmpSize {
		t.Skip("bwrap without --size")
	}
	id := workspace(t, d, testUser(t), driver.Limits{TmpBytes: 8 << 20})
	res := sh(t, d, id, `head -c 16M /dev/zero > /tmp/big; echo "rc=$?"; df -k /tmp | tail -1`)
	if !strings.Contains(string(res.Stderr), "No space left on device") || !strings.Contains(string(res.Stdout), "rc=1") {
		t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

func TestCPUQuota(t *testing.T) {
	d := rootDriver(t)
	user := testUser(t)
	id := workspace(t, d, user, driver.Limits{CPUs: 0.5})
	dir := d.cgroupDir("cpu", user, id)
	if d.cgroups.v2 {
		b, _ := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if strings.TrimSpace(string(b)) != "50000 100000" {
			t.Fatalf("cpu.max = %q", b)
		}
		return
	}
	if q, p := readInt(t, filepath.Join(dir, "cpu.cfs_quota_us")), readInt(t, filepath.Join(dir, "cpu.cfs_period_us")); q != 50000 || p != 100000 {
		t.Fatalf("quota %d period %d", q, p)
	}
	// A busy loop over 1 s is throttled.
	sh(t, d, id, `end=$(( $(date +%s) + 2 )); while [ $(date +%s) -lt $end ]; do :; done`)
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		t.Fatal(err)
	}
	if parseKeyed(string(b), "nr_throttled") <= 0 {
		t.Fatalf("a busy loop under a 0.5 CPU quota was never throttled:\n%s", b)
	}
}

func TestCgroupCleanup(t *testing.T) {
	d := rootDriver(t)
	user := testUser(t)
	id := workspace(t, d, user, driver.Limits{})
	sh(t, d, id, "true")
	ws := d.cgroupDir("pids", user, id)
	if !fileExists(ws) {
		t.Fatal("no workspace cgroup after a command")
	}
	if err := d.Destroy(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	for _, ctl := range controllers {
		if dir := d.cgroupDir(ctl, user, id); fileExists(dir) {
			t.Fatalf("%s stays after Destroy", dir)
		}
	}

	// Leftovers of a stopped server: empty cgroups go at New. A live
	// workspace's cgroup that New removed (it was empty: another server's
	// leftover cleanup) is made again by its next command.
	live := workspace(t, d, user, driver.Limits{Processes: 77})
	left := d.cgroupDir("memory", user, "leftover")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	d2, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	d2.Close()
	if fileExists(left) || fileExists(filepath.Dir(left)) {
		t.Fatalf("%s left behind after New", left)
	}
	if res := sh(t, d, live, "true"); res.ExitCode != 0 {
		t.Fatalf("after cleanup: exit %d %q", res.ExitCode, res.Stderr)
	}
	if got := readInt(t, filepath.Join(d.cgroupDir("pids", user, live), "pids.max")); got != 77 {
		t.Fatalf("remade workspace cgroup: pids.max %d", got)
	}
}

func TestCgroupFilesV2(t *testing.T) {
	l := limitsOf(driver.Limits{})
	names := func(v2 bool, ctl string) string {
		var out []string
		for _, f := range cgroupFiles(v2, ctl, l) {
			who := "ws"
			if f.user {
				who = "user"
			}
			out = append(out, who+":"+f.name+"="+f.value)
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		v2        bool
		ctl, want string
	}{
		{true, "pids", "user:pids.max=2048 ws:pids.max=512"},
		{true, "memory", "ws:memory.max=4294967296 ws:memory.swap.max=0"},
		{true, "cpu", "ws:cpu.max=200000 100000"},
		{false, "pids", "user:pids.max=2048 ws:pids.max=512"},
		{false, "memory", "ws:memory.limit_in_bytes=4294967296 ws:memory.memsw.limit_in_bytes=4294967296"},
		{false, "cpu", "ws:cpu.cfs_period_us=100000 ws:cpu.cfs_quota_us=200000"},
	} {
		if got := names(c.v2, c.ctl); got != c.want {
			t.Errorf("v2=%v %s: %s, want %s", c.v2, c.ctl, got, c.want)
		}
	}
	if got := parseKeyed("low 0\nhigh 0\nmax 3\noom 2\noom_kill 1\n", "oom_kill"); got != 1 {
		t.Errorf("memory.events oom_kill = %d", got)
	}
	if got := parseKeyed("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n", "oom_kill"); got != 4 {
		t.Errorf("memory.oom_control oom_kill = %d", got)
	}
}

// TestFindCgroupsV2 builds a fake unified hierarchy in a temporary
// directory and checks what the driver writes into it.
func TestFindCgroupsV2(t *testing.T) {
	mount := t.TempDir()
	if err := os.WriteFile(filepath.Join(mount, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cg := findCgroups(mount)
	if cg == nil || !cg.v2 || !cg.complete() {
		t.Fatalf("findCgroups = %+v", cg)
	}
	w, err := cg.workspace("alice", "ws1", limitsOf(driver.Limits{MemoryBytes: 1 << 20}))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mount, "grove", userDir("alice"), "w-ws1")
	for _, ctl := range controllers {
		if w.dirs[ctl] != dir {
			t.Fatalf("%s dir %s, want %s", ctl, w.dirs[ctl], dir)
		}
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(filepath.Join(mount, "grove", "cgroup.subtree_control")); got != "+cpu" {
		// A plain file keeps only the last write; the kernel's accumulates.
		t.Fatalf("grove subtree_control %q", got)
	}
	for name, want := range map[string]string{
		"pids.max": "512", "memory.max": "1048576", "cpu.max": "200000 100000",
	} {
		if got := read(filepath.Join(dir, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if got := read(filepath.Join(filepath.Dir(dir), "pids.max")); got != "2048" {
		t.Errorf("user pids.max = %q", got)
	}
	if err := cg.enter(w, 42); err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(dir, "cgroup.procs")); got != "42" {
		t.Errorf("cgroup.procs = %q", got)
	}
}
