package docker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/driver/docker"
	"github.com/grove-dev/grove/driver/drivertest"
	agentsandbox "github.com/grove-dev/grove/images/agent-sandbox"
	"github.com/grove-dev/grove/internal/testenv"
)

// engine returns a client of a pingable engine, with the agent image built
// (once per machine: later runs find it by tag), or skips/fails the test
// through testenv.
var engineOnce struct {
	sync.Once
	cli *client.Client
	err string
}

func engine(t testing.TB) *client.Client {
	t.Helper()
	engineOnce.Do(func() {
		cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			engineOnce.err = err.Error()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := cli.Ping(ctx); err != nil {
			engineOnce.err = "docker engine not reachable: " + err.Error()
			return
		}
		// Building takes about a minute on a cold cache and nothing when
		// the tag exists.
		bctx, bcancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer bcancel()
		if _, err := docker.EnsureImage(bctx, cli, agentsandbox.Full, os.Stderr); err != nil {
			engineOnce.err = "agent image: " + err.Error()
			return
		}
		engineOnce.cli = cli
	})
	testenv.Require(t, "docker", engineOnce.cli != nil, engineOnce.err)
	return engineOnce.cli
}

func newDriver(t testing.TB, opts docker.Options) *docker.Driver {
	t.Helper()
	opts.Client = engine(t)
	d, err := docker.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// ownForAgent hands a test workspace tree to uid 1000, which commands run
// as when the test runs as root; a non-root server's workspaces already
// belong to the uid its commands run as.
func ownForAgent(t testing.TB, dir string) {
	t.Helper()
	if os.Getuid() != 0 {
		return
	}
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, 1000, 1000)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// project gives each test its own (user, project) pair, so a test's
// containers are its own even when cases run in parallel, and the pid keeps
// them apart from another test process's on the same engine.
func project(t testing.TB) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", os.Getpid(), t.Name())))
	return "proj-" + hex.EncodeToString(sum[:6])
}

func TestConformance(t *testing.T) {
	engine(t)
	drivertest.Run(t, drivertest.Harness{
		New: func(t *testing.T) driver.Driver { return newDriver(t, docker.Options{}) },
		Spec: func(t *testing.T, dir string) driver.Spec {
			ownForAgent(t, dir)
			return driver.Spec{User: "conformance", Project: project(t)}
		},
		Restricted:  func(t *testing.T) driver.Driver { return newDriver(t, docker.Options{ReadOnly: true}) },
		HostAddress: bridgeGateway,
	})
}

// bridgeGateway is the host's address on Docker's default bridge: what a
// container with network "default" reaches the host at.
func bridgeGateway(t *testing.T) string {
	t.Helper()
	n, err := engine(t).NetworkInspect(context.Background(), "bridge", network.InspectOptions{})
	if err != nil {
		t.Fatalf("inspect bridge network: %v", err)
	}
	if len(n.IPAM.Config) > 0 && n.IPAM.Config[0].Gateway != "" {
		return n.IPAM.Config[0].Gateway
	}
	// The engine leaves the default bridge's gateway out of IPAM; the
	// host's address on it is the bridge interface's.
	name := n.Options["com.docker.network.bridge.name"]
	if name == "" {
		name = "docker0"
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatalf("bridge interface %s: %v", name, err)
	}
	addrs, _ := ifc.Addrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Fatalf("bridge interface %s has no IPv4 address", name)
	return ""
}
