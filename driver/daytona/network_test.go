package daytona

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/drivertest"
)

func TestNetworkConfig(t *testing.T) {
	base := Config{APIURL: "http://x", APIKey: "k"}
	for _, c := range []struct {
		mode driver.NetworkMode
		list []string
		want driver.NetworkMode
		bad  bool
	}{
		{"", nil, driver.NetworkNone, false},
		{"", []string{"10.0.0.0/8"}, driver.NetworkLimited, false},
		{driver.NetworkDefault, nil, driver.NetworkDefault, false},
		{driver.NetworkLimited, nil, "", true},
		{driver.NetworkNone, []string{"10.0.0.0/8"}, "", true},
		{"", []string{"10.0.0.0/33"}, "", true},
		{"", []string{"a", "b", "c", "d", "e", "f"}, "", true},
		{"open", nil, "", true},
	} {
		cfg := base
		cfg.Network, cfg.NetworkAllowList = c.mode, c.list
		d, err := New(cfg)
		if c.bad {
			if !errors.Is(err, grove.ErrInvalid) {
				t.Errorf("%q %v: %v, want ErrInvalid", c.mode, c.list, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q %v: %v", c.mode, c.list, err)
		}
		if got := d.Capabilities().Network; !slices.Equal(got, []driver.NetworkMode{c.want}) {
			t.Errorf("%q %v: modes %v, want %s", c.mode, c.list, got, c.want)
		}
	}
	if l, err := ParseAllowList(" 10.0.0.0/8 ,192.168.1.0/24"); err != nil || !slices.Equal(l, []string{"10.0.0.0/8", "192.168.1.0/24"}) {
		t.Fatalf("parse: %v %v", l, err)
	}
}

// hostGateway is the address the fake's bridged containers reach the
// test process at (the default bridge's gateway).
func hostGateway(t *testing.T) string {
	t.Helper()
	cli, _ := engine(t)
	n, err := cli.NetworkInspect(context.Background(), "bridge", network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.IPAM.Config) > 0 && n.IPAM.Config[0].Gateway != "" {
		return n.IPAM.Config[0].Gateway
	}
	name := n.Options["com.docker.network.bridge.name"]
	if name == "" {
		name = "docker0"
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatal(err)
	}
	addrs, _ := ifc.Addrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Fatalf("bridge %s has no IPv4 address", name)
	return ""
}

// TestNetworkOnFake: block-all (the default) creates sandboxes with
// networkBlockAll and the fake runs them with no network, so a command
// cannot reach a listener on the host; an allow-list is sent, recorded
// and routed (the host is reachable only when listed, also after a
// restart); default sends neither and the same probe connects; a sandbox
// adopted with other settings is updated through network-settings.
func TestNetworkOnFake(t *testing.T) {
	fake, d := newFake(t)
	ctx := context.Background()
	host := hostGateway(t)
	port, connected := drivertest.Listen(t, host)
	probe := grove.ExecRequest{Argv: []string{"bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", host, port)}, Timeout: 10 * time.Second}
	with := func(mode driver.NetworkMode, list ...string) *Driver {
		nd, err := New(Config{APIURL: fake.URL, APIKey: "k1", WorkspaceRoot: root, AllowMutating: true, Network: mode, NetworkAllowList: list,
			RetryBackoff: 10 * time.Millisecond, PollInterval: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return nd
	}

	rt := create(t, d, "blocked", "nina")
	if blockAll, list, nets := fake.Network(rt.BackendID); !blockAll || list != "" || !slices.Equal(nets, []string{"none"}) {
		t.Fatalf("block-all sandbox: blockAll=%v list=%q docker networks %v", blockAll, list, nets)
	}
	if res := run(t, d, "blocked", probe); res.ExitCode == 0 || connected() {
		t.Fatalf("block-all: connected to the host (exit %d)", res.ExitCode)
	}
	if _, err := d.Create(ctx, driver.Spec{WorkspaceID: "x", User: "nina", Project: "p", Network: driver.NetworkDefault}); !errors.Is(err, grove.ErrNotSupported) {
		t.Fatalf("default network on a block-all driver: %v", err)
	}
	if _, err := d.Create(ctx, driver.Spec{WorkspaceID: "y", User: "nina", Project: "p", Network: driver.NetworkNone}); err != nil {
		t.Fatalf("network none on a block-all driver: %v", err)
	}

	limited := with("", "10.9.0.0/16", "192.0.2.1/32")
	rtl, err := limited.Create(ctx, driver.Spec{WorkspaceID: "lim", User: "olga", Project: "p", Network: driver.NetworkLimited})
	if err != nil {
		t.Fatal(err)
	}
	if blockAll, list, nets := fake.Network(rtl.BackendID); blockAll || list != "10.9.0.0/16,192.0.2.1/32" || !slices.Equal(nets, []string{"bridge"}) {
		t.Fatalf("allow-list sandbox: blockAll=%v list=%q docker networks %v", blockAll, list, nets)
	}
	if res := run(t, limited, "lim", probe); res.ExitCode == 0 || connected() {
		t.Fatalf("allow-list without the host: connected (exit %d)", res.ExitCode)
	}
	// The host listed: the fake routes to it.
	withHost := with(driver.NetworkLimited, "10.9.0.0/16", host+"/32")
	if _, err := withHost.Create(ctx, driver.Spec{WorkspaceID: "lim2", User: "olaf", Project: "p"}); err != nil {
		t.Fatal(err)
	}
	if res := run(t, withHost, "lim2", probe); res.ExitCode != 0 || !connected() {
		t.Fatalf("allow-list with the host: exit %d %s", res.ExitCode, res.Stderr)
	}
	// After a stop and start the routes are restricted again.
	if err := limited.Stop(ctx, "lim"); err != nil {
		t.Fatal(err)
	}
	if res := run(t, limited, "lim", probe); res.ExitCode == 0 || connected() {
		t.Fatalf("allow-list after a restart: connected (exit %d)", res.ExitCode)
	}

	open := with(driver.NetworkDefault)
	rto, err := open.Create(ctx, driver.Spec{WorkspaceID: "open", User: "pia", Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if blockAll, list, nets := fake.Network(rto.BackendID); blockAll || list != "" || !slices.Equal(nets, []string{"bridge"}) {
		t.Fatalf("default sandbox: blockAll=%v list=%q docker networks %v", blockAll, list, nets)
	}
	if res := run(t, open, "open", probe); res.ExitCode != 0 || !connected() {
		t.Fatalf("default network: the probe failed: exit %d %s", res.ExitCode, res.Stderr)
	}

	t.Run("AdoptedSandboxUpdated", func(t *testing.T) {
		// A block-all Grove adopts pia's open sandbox: it is closed before use.
		before := fake.Requests(http.MethodPost, "/sandbox/"+rto.BackendID+"/network-settings")
		nd := with("")
		if got := create(t, nd, "open", "pia"); got.BackendID != rto.BackendID {
			t.Fatalf("adopted %s, want %s", got.BackendID, rto.BackendID)
		}
		if blockAll, _, nets := fake.Network(rto.BackendID); !blockAll || !slices.Equal(nets, []string{"none"}) {
			t.Fatalf("after adoption: blockAll=%v docker networks %v", blockAll, nets)
		}
		if res := run(t, nd, "open", probe); res.ExitCode == 0 || connected() {
			t.Fatalf("adopted sandbox still connects (exit %d)", res.ExitCode)
		}
		// An allow-list Grove adopts it next and opens it to its list.
		al := with(driver.NetworkLimited, "10.1.0.0/16")
		create(t, al, "open", "pia")
		if blockAll, list, nets := fake.Network(rto.BackendID); blockAll || list != "10.1.0.0/16" || !slices.Equal(nets, []string{"bridge"}) {
			t.Fatalf("after allow-list adoption: blockAll=%v list=%q docker networks %v", blockAll, list, nets)
		}
		if res := run(t, al, "open", probe); res.ExitCode == 0 || connected() {
			t.Fatalf("adopted allow-list sandbox reaches the host (exit %d)", res.ExitCode)
		}
		if n := fake.Requests(http.MethodPost, "/sandbox/"+rto.BackendID+"/network-settings") - before; n != 2 {
			t.Fatalf("%d network-settings requests, want 2", n)
		}
		// A matching sandbox is left alone.
		create(t, with(driver.NetworkLimited, "10.1.0.0/16"), "open2", "pia")
		if n := fake.Requests(http.MethodPost, "/sandbox/"+rto.BackendID+"/network-settings") - before; n != 2 {
			t.Fatalf("%d network-settings requests after a matching adoption, want 2", n)
		}
	})
	t.Run("FakeRefusesBadAllowList", func(t *testing.T) {
		body := `{"labels":{"x":"y"},"networkAllowList":"1.0.0.0/8,2.0.0.0/8,3.0.0.0/8,4.0.0.0/8,5.0.0.0/8,6.0.0.0/8"}`
		req, _ := http.NewRequest(http.MethodPost, fake.URL+"/sandbox", bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer k1")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("6 CIDR blocks: HTTP %d", resp.StatusCode)
		}
	})
}

// TestLastWorkspaceStopsSandbox: destroying one of two workspaces leaves
// the sandbox started; destroying the other stops it (kept, not deleted);
// the pair's control runtime does not keep it up; a new Create starts it.
func TestLastWorkspaceStopsSandbox(t *testing.T) {
	fake, _ := newFake(t)
	ctx := context.Background()
	d, err := New(Config{APIURL: fake.URL, APIKey: "k1", WorkspaceRoot: root, AllowMutating: true,
		RetryBackoff: 10 * time.Millisecond, PollInterval: 100 * time.Millisecond, IdleStopDelay: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a := create(t, d, "a", "quinn")
	create(t, d, "b", "quinn")
	if _, err := d.Create(ctx, driver.Spec{WorkspaceID: "ctl", User: "quinn", Project: "p", WorkDir: root}); err != nil {
		t.Fatal(err)
	}
	id := a.BackendID
	if err := d.Destroy(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if st := fake.State(id); st != "started" {
		t.Fatalf("one workspace left, sandbox %s", st)
	}
	if err := d.Destroy(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	// A request through the control runtime (the engine removes the
	// working tree after Destroy) delays the stop, and still works.
	run(t, d, "ctl", sh("true"))
	deadline := time.Now().Add(15 * time.Second)
	for fake.State(id) != "stopped" {
		if time.Now().After(deadline) {
			t.Fatalf("last workspace destroyed, sandbox still %s", fake.State(id))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(fake.Sandboxes()); n != 1 {
		t.Fatalf("%d sandboxes, want the stopped one kept", n)
	}
	c := create(t, d, "c", "quinn")
	if c.BackendID != id || fake.State(id) != "started" {
		t.Fatalf("new workspace: sandbox %s in state %s, want %s started", c.BackendID, fake.State(id), id)
	}
	// The stop was cancelled by the new workspace: still started later.
	time.Sleep(1 * time.Second)
	if st := fake.State(id); st != "started" {
		t.Fatalf("after a new workspace, sandbox %s", st)
	}
}

// TestSandboxRecovery: a sandbox archived under Grove is started before
// use; one deleted under Grove is replaced (looked up by labels, then
// created) on the next command; one deleted and recreated by another
// Grove is found by its labels and used.
func TestSandboxRecovery(t *testing.T) {
	fake, d := newFake(t)
	ctx := context.Background()
	rt := create(t, d, "w", "rita")
	run(t, d, "w", sh("echo kept > f"))

	t.Run("Archived", func(t *testing.T) {
		fake.ArchiveBehind(rt.BackendID)
		if st := fake.State(rt.BackendID); st != "archived" {
			t.Fatalf("state %s", st)
		}
		if res := run(t, d, "w", sh("cat f")); string(res.Stdout) != "kept\n" {
			t.Fatalf("after archive: %q %q", res.Stdout, res.Stderr)
		}
		if st := fake.State(rt.BackendID); st != "started" {
			t.Fatalf("state after use %s", st)
		}
	})
	t.Run("DeletedUnderGrove", func(t *testing.T) {
		fake.DeleteBehind(rt.BackendID)
		res := run(t, d, "w", sh("pwd; ls -A | wc -l"))
		if string(res.Stdout) != root+"/w\n0\n" {
			t.Fatalf("after deletion: %q %q", res.Stdout, res.Stderr)
		}
		ids := fake.Sandboxes()
		got, err := d.Get(ctx, "w")
		if err != nil || len(ids) != 1 || got.BackendID != ids[0] || got.BackendID == rt.BackendID {
			t.Fatalf("runtime %+v (%v), sandboxes %v", got, err, ids)
		}
		if blockAll, _, nets := fake.Network(ids[0]); !blockAll || !slices.Equal(nets, []string{"none"}) {
			t.Fatalf("replacement sandbox network: %v %v", blockAll, nets)
		}
	})
	t.Run("RecreatedByAnother", func(t *testing.T) {
		old := fake.Sandboxes()[0]
		fake.DeleteBehind(old)
		other, err := New(Config{APIURL: fake.URL, APIKey: "k1", WorkspaceRoot: root, AllowMutating: true})
		if err != nil {
			t.Fatal(err)
		}
		nrt := create(t, other, "w2", "rita")
		run(t, other, "w2", sh("echo theirs > g"))
		if res := run(t, d, "w", sh("cat ../w2/g")); strings.TrimSpace(string(res.Stdout)) != "theirs" {
			t.Fatalf("after recreation: %q %q", res.Stdout, res.Stderr)
		}
		if got, _ := d.Get(ctx, "w"); got.BackendID != nrt.BackendID || len(fake.Sandboxes()) != 1 {
			t.Fatalf("runtime on %s, want %s; sandboxes %v", got.BackendID, nrt.BackendID, fake.Sandboxes())
		}
	})
	t.Run("RecoversOnce", func(t *testing.T) {
		// The replacement cannot be created: one attempt, an error, no
		// loop; the next command tries again and succeeds.
		fake.DeleteBehind(fake.Sandboxes()[0])
		fake.FailNext(http.MethodPost, "/sandbox", http.StatusBadRequest, 1)
		defer fake.ClearFaults()
		before := fake.Requests(http.MethodPost, "/sandbox")
		if _, err := d.Exec(ctx, "w", sh("true")); !errors.Is(err, grove.ErrInvalid) {
			t.Fatalf("exec with the create failing: %v", err)
		}
		if n := fake.Requests(http.MethodPost, "/sandbox") - before; n != 1 {
			t.Fatalf("%d POSTs for one failed recovery, want 1", n)
		}
		if res := run(t, d, "w", sh("echo back")); string(res.Stdout) != "back\n" {
			t.Fatalf("next exec: %q %q", res.Stdout, res.Stderr)
		}
	})
}
