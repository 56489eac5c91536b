// Package docker is the runtime driver over the Docker Engine API.
//
// One long-lived container runs per (user, project) and network mode; every workspace of that
// pair is bind-mounted into it at its host path, so agents on several
// branches of a project share one container and never wait for each other.
// Another user's or project's workspaces are never mounted. Because bind
// mounts are fixed when a container is created, adding or removing a
// workspace recreates the pair's container; the recreation waits for
// in-flight commands of the pair instead of killing them. All state that
// matters lives in the workspaces on the host, so a recreated or restarted
// container loses only /tmp and $HOME (both tmpfs).
//
// Containers are labelled (managed-by=grove, user, project, workspace ids and
// their specs), which is how a restarted server adopts them (New) and clears
// out the ones it no longer knows (Reconcile).
package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/docker/docker/client"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	agentsandbox "github.com/grove-dev/grove/images/agent-sandbox"
)

// Labels put on every container and network the driver creates.
const (
	LabelManagedBy  = "dev.grove.managed-by"
	LabelUser       = "dev.grove.user"
	LabelProject    = "dev.grove.project"
	LabelWorkspaces = "dev.grove.workspaces" // comma-separated workspace ids
	LabelSpecs      = "dev.grove.specs"      // JSON of the workspaces' specs, for adoption
	LabelDebug      = "dev.grove.debug"      // a workspace's debug container: the workspace id
	managedBy       = "grove"
)

// Defaults for Spec.Limits left zero.
const (
	DefaultPids      = 1024
	DefaultMemory    = 2 << 30
	DefaultCPUs      = 2.0
	DefaultTmpfsSize = 512 << 20
)

// Options configure a Driver.
type Options struct {
	// Client talks to the engine; nil means one from the environment
	// (DOCKER_HOST, ...), with API version negotiation.
	Client *client.Client
	// Image is the agent image used when a Spec names none; empty means
	// the full agent image built by EnsureImage.
	Image string
	// User is the uid:gid commands run as. Empty means the server's own
	// uid:gid, so files written inside belong to the same user as the
	// workspace on the host; when the server runs as root, 1000:1000 (the
	// image's agent user), because root never runs inside.
	User string
	// ReadOnly makes the driver refuse mutating commands and say so in
	// Capabilities. The sandbox is isolated, so by default it allows them.
	ReadOnly bool
	// Firewall says who installs the host firewall rule NetworkLimited
	// depends on (see FirewallMode); by default the driver does.
	Firewall FirewallMode
	// IPTables and IP6Tables are the firewall tools; empty means
	// iptables and ip6tables from PATH, /usr/sbin or /sbin.
	IPTables, IP6Tables string
}

// Driver runs workspaces' commands in Docker containers.
type Driver struct {
	cli   *client.Client
	image string
	user  string
	ro    bool

	firewall            FirewallMode
	iptables, ip6tables string

	mu     sync.Mutex
	boxes  map[string]*box // by container name
	owners map[string]*box // by workspace id
	debug  map[string]*box // debug containers, by workspace id (spawn.go)
}

var _ driver.Driver = (*Driver)(nil)

// New connects to the engine and adopts the containers it already runs for
// Grove, so a restarted server does not create duplicates.
func New(ctx context.Context, opts Options) (*Driver, error) {
	cli := opts.Client
	if cli == nil {
		var err error
		cli, err = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			return nil, grove.Errorf(grove.ErrUnavailable, "docker client: %v", err)
		}
	}
	if _, err := cli.Ping(ctx); err != nil {
		return nil, fmt.Errorf("docker engine: %v: %w", err, grove.ErrUnavailable)
	}
	d := &Driver{
		cli:   cli,
		image: opts.Image,
		user:  opts.User,
		ro:    opts.ReadOnly,

		firewall:  opts.Firewall,
		iptables:  opts.IPTables,
		ip6tables: opts.IP6Tables,
		boxes:     map[string]*box{},
		owners:    map[string]*box{},
		debug:     map[string]*box{},
	}
	if d.image == "" {
		d.image = agentsandbox.Full.Tag()
	}
	if d.iptables == "" {
		d.iptables = findTool("iptables")
	}
	if d.ip6tables == "" {
		d.ip6tables = findTool("ip6tables")
	}
	if d.user == "" {
		d.user = defaultUser()
	}
	if err := d.adopt(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

func defaultUser() string {
	if uid := os.Getuid(); uid != 0 {
		return fmt.Sprintf("%d:%d", uid, os.Getgid())
	}
	return "1000:1000"
}

// Client is the engine client the driver uses (for tests and tools).
func (d *Driver) Client() *client.Client { return d.cli }

// User is the uid:gid commands run as.
func (d *Driver) User() string { return d.user }

// Kind implements driver.Driver.
func (d *Driver) Kind() string { return "docker" }

// Capabilities implements driver.Driver. Persistent is false: a stopped
// container's /tmp and $HOME are tmpfs and do not survive, only the
// workspace does.
func (d *Driver) Capabilities() driver.Capabilities {
	return driver.Capabilities{
		Isolated:      true,
		AllowMutating: !d.ro,
		Network:       []driver.NetworkMode{driver.NetworkNone, driver.NetworkLimited, driver.NetworkDefault},
		Persistent:    false,
		Limits:        true,
		Streaming:     true,
	}
}

// ContainerName is the name of the container of a (user, project) pair and
// network mode. The network is part of the key because Docker fixes it per
// container: a project's analysis workspaces (network none) and its edit
// workspaces (network default) get a container each. The hash keeps user
// and project names out of `docker ps` and needs no escaping.
func ContainerName(user, project string, network driver.NetworkMode) string {
	if network == "" {
		network = driver.NetworkNone
	}
	sum := sha256.Sum256([]byte(user + "\x00" + project))
	return "grove-" + hex.EncodeToString(sum[:8]) + "-" + string(network)
}

// drain reads r to the end so HTTP connections are reused.
func drain(r io.ReadCloser) {
	_, _ = io.Copy(io.Discard, r)
	_ = r.Close()
}
