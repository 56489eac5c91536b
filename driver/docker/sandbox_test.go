package docker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/docker"
	"github.com/grove-dev/grove/driver/drivertest"
)

// ws creates a workspace runtime over a fresh directory owned by the
// command user and destroys it at cleanup.
func ws(t *testing.T, d *docker.Driver, user, project string, mod func(*driver.Spec)) (driver.Spec, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ownForAgent(t, dir)
	spec := driver.Spec{
		WorkspaceID: fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid(), seq()),
		User:        user, Project: project, WorkDir: dir, Writable: true,
	}
	if mod != nil {
		mod(&spec)
	}
	if _, err := d.Create(context.Background(), spec); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = d.Destroy(context.Background(), spec.WorkspaceID) })
	return spec, dir
}

var seqMu sync.Mutex
var seqN int

func seq() int {
	seqMu.Lock()
	defer seqMu.Unlock()
	seqN++
	return seqN
}

func run(t *testing.T, d *docker.Driver, id string, req grove.ExecRequest) *grove.ExecResult {
	t.Helper()
	res, err := d.Exec(context.Background(), id, req)
	if err != nil {
		t.Fatalf("Exec %q%q: %v", req.Argv, req.Shell, err)
	}
	return res
}

func ok(t *testing.T, d *docker.Driver, id string, req grove.ExecRequest) *grove.ExecResult {
	t.Helper()
	res := run(t, d, id, req)
	if res.ExitCode != 0 {
		t.Fatalf("Exec %q%q: exit %d, stderr %q", req.Argv, req.Shell, res.ExitCode, res.Stderr)
	}
	return res
}

func TestImageTools(t *testing.T) {
	d := newDriver(t, docker.Options{})
	spec, _ := ws(t, d, "u", project(t), nil)
	for _, tool := range []string{"git", "git-lfs", "rg", "fd", "jq", "python3", "node", "curl", "tini"} {
		t.Run(tool, func(t *testing.T) {
			res := ok(t, d, spec.WorkspaceID, grove.ExecRequest{Argv: []string{tool, "--version"}})
			if len(bytes.TrimSpace(res.Stdout)) == 0 {
				t.Fatalf("%s --version printed nothing", tool)
			}
		})
	}
	res := ok(t, d, spec.WorkspaceID, grove.ExecRequest{Shell: "id -u; git config --system user.name; touch /usr/x 2>&1 || echo rootfs-ro"})
	if got := string(res.Stdout); !strings.Contains(got, "Grove Agent") || !strings.Contains(got, "rootfs-ro") || strings.HasPrefix(got, "0\\n") {
		t.Fatalf("identity, read-only root or non-root user missing: %q", got)
	}
}

func TestHardening(t *testing.T) {
	d := newDriver(t, docker.Options{})
	spec, _ := ws(t, d, "u", project(t), nil)
	res := ok(t, d, spec.WorkspaceID, grove.ExecRequest{Shell: `
		id -u
		grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status
		ls /var/run/docker.sock /run/docker.sock 2>/dev/null || echo no-socket
		touch /etc/x 2>/dev/null || echo rootfs-ro`})
	out := string(res.Stdout)
	for _, want := range []string{"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "no-socket", "rootfs-ro"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in %q", want, out)
		}
	}
	if strings.HasPrefix(out, "0\n") {
		t.Error("commands run as root")
	}
}

func probe(host string, port int) grove.ExecRequest {
	return grove.ExecRequest{Argv: []string{"timeout", "2", "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", host, port)}}
}

// TestNetworkModes: none reaches nothing; default reaches the host (the
// positive control of every probe here).
func TestNetworkModes(t *testing.T) {
	d := newDriver(t, docker.Options{})
	gw := bridgeGateway(t)
	port, connected := drivertest.Listen(t, "0.0.0.0")
	p := project(t)
	none, _ := ws(t, d, "u", p, func(s *driver.Spec) { s.Network = driver.NetworkNone })
	def, _ := ws(t, d, "u", p, func(s *driver.Spec) { s.Network = driver.NetworkDefault })
	if res := run(t, d, def.WorkspaceID, probe(gw, port)); res.ExitCode != 0 || !connected() {
		t.Fatalf("default: connect to the host at %s failed (exit %d %s): the probe is broken", gw, res.ExitCode, res.Stderr)
	}
	if res := run(t, d, none.WorkspaceID, probe(gw, port)); res.ExitCode == 0 || connected() {
		t.Fatal("none: reached the host")
	}
}

// TestLimitedNetwork: a limited container reaches none of the host's
// wildcard listeners (the driver's INPUT rule), the host's loopback, a
// container on the ordinary bridge, or another limited container — while
// each of those is reachable from where it should be.
func TestLimitedNetwork(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the limited network's host firewall rule needs root (TestLimitedFirewallRefusal covers the refusal)")
	}
	d := newDriver(t, docker.Options{})
	p := project(t)
	def, _ := ws(t, d, "u", p, func(s *driver.Spec) { s.Network = driver.NetworkDefault })
	lim, _ := ws(t, d, "u", p, func(s *driver.Spec) { s.Network = driver.NetworkLimited })
	lim2, _ := ws(t, d, "u2", p, func(s *driver.Spec) { s.Network = driver.NetworkLimited })
	if n := limitedRules(t); n != 1 {
		t.Fatalf("%d copies of the INPUT rule after creating two limited runtimes, want 1", n)
	}

	limNet, err := d.Client().NetworkInspect(context.Background(), "grove-limited", network.InspectOptions{})
	if err != nil || len(limNet.IPAM.Config) == 0 {
		t.Fatalf("inspect grove-limited: %v", err)
	}
	limGW := limNet.IPAM.Config[0].Gateway
	// A wildcard listener on the host: reachable from default through the
	// bridge gateway, and not from limited through its own gateway (the
	// path the INPUT rule closes; without it the connect succeeds).
	port, connected := drivertest.Listen(t, "0.0.0.0")
	if res := run(t, d, def.WorkspaceID, probe(bridgeGateway(t), port)); res.ExitCode != 0 || !connected() {
		t.Fatalf("default: the host's wildcard listener is unreachable (exit %d %s): the probe is broken", res.ExitCode, res.Stderr)
	}
	for _, host := range []string{limGW, bridgeGateway(t)} {
		if res := run(t, d, lim.WorkspaceID, probe(host, port)); res.ExitCode == 0 || connected() {
			t.Errorf("limited: reached the host's wildcard listener at %s", host)
		}
	}
	loPort, loConnected := drivertest.Listen(t, "127.0.0.1")
	if res := run(t, d, lim.WorkspaceID, probe(limGW, loPort)); res.ExitCode == 0 || loConnected() {
		t.Error("limited: reached a listener on the host's loopback")
	}
	// IPv6 is off inside containers of a network without IPv6, so the
	// host's link-local address on the bridge is no way around the rule.
	if res := ok(t, d, lim.WorkspaceID, grove.ExecRequest{Argv: []string{"cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6"}}); string(res.Stdout) != "1\n" {
		t.Errorf("limited: IPv6 is enabled inside (disable_ipv6=%q)", res.Stdout)
	}

	// Listeners in a default-bridge container and in another limited
	// container, each reachable from its own container (the control) and
	// not from lim.
	serve := func(id string) {
		go d.Exec(context.Background(), id, grove.ExecRequest{Argv: []string{"python3", "-m", "http.server", "8765"}, Timeout: 6 * time.Second})
	}
	serve(def.WorkspaceID)
	serve(lim2.WorkspaceID)
	time.Sleep(1500 * time.Millisecond)
	for _, tc := range []struct {
		name, owner, net string
	}{{"default bridge", def.WorkspaceID, "bridge"}, {"limited peer", lim2.WorkspaceID, "grove-limited"}} {
		ip := containerIP(t, d, tc.owner, tc.net)
		if res := run(t, d, tc.owner, probe(ip, 8765)); res.ExitCode != 0 {
			t.Fatalf("%s: its own listener at %s is unreachable: %s", tc.name, ip, res.Stderr)
		}
		if res := run(t, d, lim.WorkspaceID, probe(ip, 8765)); res.ExitCode == 0 {
			t.Errorf("limited: reached a listener in a container on the %s at %s", tc.name, ip)
		}
	}
}

// limitedRules counts the driver's INPUT rule in the host firewall.
func limitedRules(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("/usr/sbin/iptables", "-w", "5", "-S", "INPUT").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -S INPUT: %v %s", err, out)
	}
	return strings.Count(string(out), "-A INPUT -i grove-limited0 -j DROP")
}

// TestLimitedFirewallRefusal: when the rule cannot be installed (a server
// that is not root: iptables says so), a limited runtime is refused with
// ErrUnavailable and a message saying what to do, instead of starting with
// the host open; FirewallExternal leaves the rule to the operator.
func TestLimitedFirewallRefusal(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "iptables")
	script := "#!/bin/sh\necho 'iptables v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied (you must be root)' >&2\nexit 4\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, docker.Options{IPTables: fake, IP6Tables: fake})
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := driver.Spec{WorkspaceID: fmt.Sprintf("refusal-%d", os.Getpid()), User: "u", Project: project(t),
		WorkDir: dir, Writable: true, Network: driver.NetworkLimited}
	_, err := d.Create(context.Background(), spec)
	if !errors.Is(err, grove.ErrUnavailable) || !strings.Contains(err.Error(), "iptables -I INPUT -i grove-limited0 -j DROP") ||
		!strings.Contains(err.Error(), "you must be root") {
		t.Fatalf("Create(limited) without the firewall = %v, want ErrUnavailable naming the rule and the cause", err)
	}
	if _, err := d.Get(context.Background(), spec.WorkspaceID); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("a refused limited runtime exists: %v", err)
	}
	if _, err := d.Client().ContainerInspect(context.Background(), docker.ContainerName("u", spec.Project, driver.NetworkLimited)); err == nil {
		t.Fatal("a container was created for the refused limited runtime")
	}

	ext := newDriver(t, docker.Options{IPTables: fake, IP6Tables: fake, Firewall: docker.FirewallExternal})
	if err := ext.EnsureLimitedFirewall(context.Background()); err != nil {
		t.Fatalf("FirewallExternal: %v", err)
	}
}

func containerIP(t *testing.T, d *docker.Driver, id, net string) string {
	t.Helper()
	rt, err := d.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := d.Client().ContainerInspect(context.Background(), rt.BackendID)
	if err != nil {
		t.Fatal(err)
	}
	ep := ins.NetworkSettings.Networks[net]
	if ep == nil || ep.IPAddress == "" {
		t.Fatalf("container has no address on %s", net)
	}
	return ep.IPAddress
}

// TestForkBombAndMemoryHogStayInTheirContainer: a fork bomb and a memory
// hog in one container end at its limits while another container keeps
// running commands.
func TestForkBombAndMemoryHogStayInTheirContainer(t *testing.T) {
	d := newDriver(t, docker.Options{})
	bad, _ := ws(t, d, "mallory", project(t), func(s *driver.Spec) {
		s.Limits = driver.Limits{Processes: 64, MemoryBytes: 128 << 20}
	})
	good, _ := ws(t, d, "alice", project(t), nil)

	var wg sync.WaitGroup
	wg.Add(1)
	var bomb *grove.ExecResult
	go func() {
		defer wg.Done()
		bomb, _ = d.Exec(context.Background(), bad.WorkspaceID, grove.ExecRequest{
			Argv: []string{"bash", "-c", `b(){ b | b & }; b; sleep 3`}, Timeout: 4 * time.Second})
	}()
	time.Sleep(500 * time.Millisecond)
	for i := 0; i < 5; i++ {
		ok(t, d, good.WorkspaceID, grove.ExecRequest{Argv: []string{"true"}})
	}
	wg.Wait()
	if bomb == nil || bomb.Duration > 12*time.Second {
		t.Fatal("the fork bomb was not contained by the pids limit and the timeout")
	}
	t.Logf("fork bomb: exit %d timed_out %v after %v", bomb.ExitCode, bomb.TimedOut, bomb.Duration)
	ok(t, d, bad.WorkspaceID, grove.ExecRequest{Argv: []string{"true"}})

	hog := run(t, d, bad.WorkspaceID, grove.ExecRequest{
		Argv: []string{"python3", "-c", "a = bytearray(1 << 30); print('survived')"}, Timeout: 30 * time.Second})
	if hog.ExitCode == 0 || strings.Contains(string(hog.Stdout), "survived") {
		t.Fatalf("a 1 GiB allocation under 128 MiB succeeded: exit %d", hog.ExitCode)
	}
	t.Logf("memory hog: exit %d (137 = OOM-killed)", hog.ExitCode)
	ok(t, d, good.WorkspaceID, grove.ExecRequest{Argv: []string{"true"}})
	ok(t, d, bad.WorkspaceID, grove.ExecRequest{Argv: []string{"true"}})
}

// TestOneContainerPerPair: the docker side of the conformance suite's
// Isolation/UsersSeparated — two users of one project get a container each,
// while one user's workspaces of a project share one and see each other
// (by design: the same user owns both).
func TestOneContainerPerPair(t *testing.T) {
	d := newDriver(t, docker.Options{})
	p := project(t)
	a, adir := ws(t, d, "alice", p, nil)
	b, _ := ws(t, d, "bob", p, nil)
	a2, a2dir := ws(t, d, "alice", p, nil)
	ra, _ := d.Get(context.Background(), a.WorkspaceID)
	rb, _ := d.Get(context.Background(), b.WorkspaceID)
	ra2, _ := d.Get(context.Background(), a2.WorkspaceID)
	if ra.BackendID == rb.BackendID {
		t.Fatal("alice and bob share a container")
	}
	if ra.BackendID != ra2.BackendID {
		t.Fatal("alice's two workspaces of one project are in different containers")
	}
	ok(t, d, a.WorkspaceID, grove.ExecRequest{Argv: []string{"test", "-d", a2dir}})
	ok(t, d, a2.WorkspaceID, grove.ExecRequest{Argv: []string{"test", "-d", adir}})
}

// TestStopStopsTheContainer: the conformance suite checks that files and
// branch survive Stop; this checks Stop really stops the container.
func TestStopStopsTheContainer(t *testing.T) {
	d := newDriver(t, docker.Options{})
	spec, _ := ws(t, d, "u", project(t), nil)
	if err := d.Stop(context.Background(), spec.WorkspaceID); err != nil {
		t.Fatal(err)
	}
	rt, _ := d.Get(context.Background(), spec.WorkspaceID)
	ins, err := d.Client().ContainerInspect(context.Background(), rt.BackendID)
	if err != nil || ins.State.Running {
		t.Fatalf("container still running after Stop: %v", err)
	}
	ok(t, d, spec.WorkspaceID, grove.ExecRequest{Argv: []string{"true"}})
	if ins, err := d.Client().ContainerInspect(context.Background(), rt.BackendID); err != nil || !ins.State.Running {
		t.Fatalf("container not running after an exec resumed it: %v", err)
	}
}

// TestAdoptAndReconcile: a second driver (a restarted server) adopts the
// first one's container, and Reconcile removes what is no longer known.
func TestAdoptAndReconcile(t *testing.T) {
	d1 := newDriver(t, docker.Options{})
	p := project(t)
	keep, _ := ws(t, d1, "u", p, nil)
	drop, _ := ws(t, d1, "u", p, nil)
	lone, _ := ws(t, d1, "v", p, nil)
	r1, _ := d1.Get(context.Background(), keep.WorkspaceID)

	d2 := newDriver(t, docker.Options{})
	r2, err := d2.Get(context.Background(), keep.WorkspaceID)
	if err != nil || r2.BackendID != r1.BackendID {
		t.Fatalf("restarted driver did not adopt the container: %v", err)
	}
	if _, err := d2.Create(context.Background(), keep); err != nil {
		t.Fatal(err)
	}
	if r3, _ := d2.Get(context.Background(), keep.WorkspaceID); r3.BackendID != r1.BackendID {
		t.Fatal("Create after adoption made a duplicate container")
	}
	// Only this test's workspaces are forgotten: d2 adopted every grove
	// container on the engine, including other test processes'.
	mine := map[string]bool{keep.WorkspaceID: true, drop.WorkspaceID: true, lone.WorkspaceID: true}
	rep, err := d2.Reconcile(context.Background(), func(id string) bool { return id == keep.WorkspaceID || !mine[id] })
	if err != nil {
		t.Fatal(err)
	}
	if !contains(rep.Kept, keep.WorkspaceID) || !contains(rep.Forgotten, drop.WorkspaceID) || !contains(rep.Forgotten, lone.WorkspaceID) ||
		!contains(rep.Removed, docker.ContainerName("v", p, driver.NetworkNone)) {
		t.Fatalf("report %+v", rep)
	}
	if _, err := d2.Get(context.Background(), drop.WorkspaceID); !errors.Is(err, grove.ErrNotFound) {
		t.Fatalf("forgotten workspace still has a runtime: %v", err)
	}
	if _, err := d2.Client().ContainerInspect(context.Background(), docker.ContainerName("v", p, driver.NetworkNone)); err == nil {
		t.Fatal("the container of a forgotten pair still exists")
	}
	ok(t, d2, keep.WorkspaceID, grove.ExecRequest{Argv: []string{"true"}})
	// The test's own cleanup goes through d2, which now owns everything.
	_ = d2.Destroy(context.Background(), keep.WorkspaceID)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestCopyToAndFrom(t *testing.T) {
	d := newDriver(t, docker.Options{})
	spec, dir := ws(t, d, "u", project(t), nil)
	if err := d.CopyTo(context.Background(), spec.WorkspaceID, "sub/../a.txt", []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	if err != nil || string(b) != "hello" {
		t.Fatalf("host sees %q %v", b, err)
	}
	got, err := d.CopyFrom(context.Background(), spec.WorkspaceID, "a.txt", 1<<20)
	if err != nil || string(got) != "hello" {
		t.Fatalf("CopyFrom = %q %v", got, err)
	}
	for _, bad := range []string{"../x", "/etc/passwd", "", "a/../../x"} {
		if err := d.CopyTo(context.Background(), spec.WorkspaceID, bad, nil, 0o644); !errors.Is(err, grove.ErrPathOutside) {
			t.Errorf("CopyTo(%q) = %v, want ErrPathOutside", bad, err)
		}
	}
	if _, err := d.CopyFrom(context.Background(), spec.WorkspaceID, "a.txt", 2); !errors.Is(err, grove.ErrTooLarge) {
		t.Errorf("CopyFrom over max = %v", err)
	}
}

// TestRootOwnedWorkspace: a root server's workspace, made by host git as
// root, is writable by the commands (uid 1000) without changing its owner,
// and host git as root, with no safe.directory, commits what they wrote.
func TestRootOwnedWorkspace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only a root server's workspaces belong to another uid than its commands")
	}
	d := newDriver(t, docker.Options{})
	root := t.TempDir()
	dir := filepath.Join(root, "ws")
	hostGit := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=host", "GIT_AUTHOR_EMAIL=host@example.com", "GIT_COMMITTER_NAME=host", "GIT_COMMITTER_EMAIL=host@example.com"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("host git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "src", "main.txt"), []byte("v1\n"), 0o644)
	hostGit("init", "-q", "-b", "main")
	hostGit("add", ".")
	hostGit("commit", "-qm", "seed")

	spec := driver.Spec{WorkspaceID: fmt.Sprintf("rootowned-%d", os.Getpid()), User: "u", Project: project(t), WorkDir: dir, Writable: true}
	if _, err := d.Create(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Destroy(context.Background(), spec.WorkspaceID) })
	ok(t, d, spec.WorkspaceID, grove.ExecRequest{Shell: "id -u; echo v2 >> src/main.txt && mkdir -p new && echo agent > new/file.txt"})

	// Host git as root: no dubious-ownership refusal, and it sees the work.
	hostGit("add", "-A")
	hostGit("commit", "-qm", "from the agent")
	if got := hostGit("show", "--format=%s", "--name-only", "HEAD"); got != "from the agent\n\nnew/file.txt\nsrc/main.txt" {
		t.Fatalf("host commit: %q", got)
	}
	st, _ := os.Stat(dir)
	if st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatal("the workspace root changed owner")
	}
	// What host git creates later (a checkout of another branch) is
	// writable inside too, and the runtime's git works on it.
	hostGit("checkout", "-q", "-b", "next")
	os.MkdirAll(filepath.Join(dir, "later"), 0o755)
	os.WriteFile(filepath.Join(dir, "later", "seed.txt"), []byte("s\n"), 0o644)
	hostGit("add", "-A")
	hostGit("commit", "-qm", "later")
	hostGit("checkout", "-q", "main")
	hostGit("checkout", "-q", "next") // git recreates later/ and its file
	ok(t, d, spec.WorkspaceID, grove.ExecRequest{Shell: "echo more > later/x && echo t >> later/seed.txt && git add -A && git commit -qm inside",
		Env: map[string]string{"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"}})
	if got := hostGit("log", "-1", "--format=%s"); got != "inside" {
		t.Fatalf("host sees %q after the agent's commit", got)
	}
}

// A root server's analysis workspace (read-only, drwx------ root) is
// readable by the command user, and still not writable.
func TestRootOwnedAnalysisWorkspaceIsReadable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only a root server's workspaces belong to another uid than its commands")
	}
	d := newDriver(t, docker.Options{})
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "x.sh"), []byte("#!/bin/sh\necho run\n"), 0o700)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	spec := driver.Spec{WorkspaceID: fmt.Sprintf("rootowned-ro-%d", os.Getpid()), User: "u", Project: project(t), WorkDir: dir, Writable: false}
	if _, err := d.Create(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Destroy(context.Background(), spec.WorkspaceID) })
	res := ok(t, d, spec.WorkspaceID, grove.ExecRequest{Shell: "cat README.md; ls sub; sub/x.sh", Class: grove.ClassRead})
	if string(res.Stdout) != "hello\nx.sh\nrun\n" {
		t.Fatalf("read inside: %q %q", res.Stdout, res.Stderr)
	}
	if res := run(t, d, spec.WorkspaceID, grove.ExecRequest{Shell: "echo x > new.txt", Class: grove.ClassRead}); res.ExitCode == 0 {
		t.Fatal("an analysis workspace was writable")
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Fatal("new.txt was created")
	}
}
