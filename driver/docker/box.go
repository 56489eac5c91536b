package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-units"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// box is the container of one (user, project) pair and the workspaces it
// hosts.
type box struct {
	name, user, project string

	// gate lets commands run concurrently (read lock) while recreating or
	// stopping the container waits for them (write lock).
	gate sync.RWMutex

	mu      sync.Mutex // guards the fields below
	id      string     // container id; empty when none exists
	running bool
	specs   map[string]driver.Spec
	stopped map[string]bool // workspaces hibernated by Stop

	// debug marks a workspace's debug container (spawn.go): it hosts that
	// one workspace and allows the tracing system calls.
	debug bool
}

func newBox(user, project string, network driver.NetworkMode) *box {
	return &box{
		name: ContainerName(user, project, network), user: user, project: project,
		specs: map[string]driver.Spec{}, stopped: map[string]bool{},
	}
}

// The clean environment every command starts from (driver.go's contract).
var baseEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=/home/agent",
	"LANG=C.UTF-8",
	"TERM=dumb",
}

// limitedNetwork is the internal network of NetworkLimited.
const (
	limitedNetwork = "grove-limited"
	limitedBridge  = "grove-limited0"
)

func (d *Driver) containerSpec(b *box, specs map[string]driver.Spec) (*container.Config, *container.HostConfig, error) {
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range specs {
			if !yield(id) {
				return
			}
		}
	})
	list := make([]driver.Spec, 0, len(ids))
	for _, id := range ids {
		list = append(list, specs[id])
	}
	first := list[0]
	specJSON, err := json.Marshal(list)
	if err != nil {
		return nil, nil, err
	}
	img := first.Image
	if img == "" {
		img = d.image
	}
	cfg := &container.Config{
		Image:      img,
		User:       d.user,
		Env:        baseEnv,
		Entrypoint: []string{"/usr/bin/tini", "--"},
		Cmd:        []string{"sleep", "infinity"},
		WorkingDir: "/",
		Hostname:   "grove",
		Labels: map[string]string{
			LabelManagedBy:  managedBy,
			LabelUser:       b.user,
			LabelProject:    b.project,
			LabelWorkspaces: strings.Join(ids, ","),
			LabelSpecs:      string(specJSON),
		},
	}

	var mounts []mount.Mount
	seen := map[string]bool{}
	add := func(path string, ro bool) error {
		if seen[path] {
			return nil
		}
		if _, err := os.Stat(path); err != nil {
			return grove.Errorf(grove.ErrInvalid, "mount source %s: %v", filepath.Base(path), err)
		}
		seen[path] = true
		mounts = append(mounts, mount.Mount{
			Type: mount.TypeBind, Source: path, Target: path, ReadOnly: ro,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
		return nil
	}
	for _, s := range list {
		ro := !s.Writable || d.ro
		if err := add(s.WorkDir, ro); err != nil {
			return nil, nil, err
		}
		if !ro {
			// Every directory between the workspace and a protected path
			// is mounted over itself, so it is a mount point that a
			// command cannot rename away (mv .git .git.old would
			// otherwise carry the read-only config along and leave host
			// git a .git of the command's making).
			for _, p := range pinnedDirs(s.WorkDir, s.ProtectedPaths) {
				if err := add(p, false); err != nil {
					return nil, nil, err
				}
			}
		}
		for _, p := range s.ReadOnlyPaths {
			if err := add(p, true); err != nil {
				return nil, nil, err
			}
		}
		for _, p := range s.ProtectedPaths {
			if err := add(p, true); err != nil {
				return nil, nil, err
			}
		}
	}
	// Parents before children, so a protected path inside a workspace is
	// mounted over it and not under it.
	sort.SliceStable(mounts, func(i, j int) bool {
		return strings.Count(mounts[i].Target, "/") < strings.Count(mounts[j].Target, "/")
	})

	lim := first.Limits
	pids := int64(lim.Processes)
	if pids <= 0 {
		pids = DefaultPids
	}
	mem := lim.MemoryBytes
	if mem <= 0 {
		mem = DefaultMemory
	}
	cpus := lim.CPUs
	if cpus <= 0 {
		cpus = DefaultCPUs
	}
	var ulimits []*container.Ulimit
	if lim.FileSize > 0 {
		ulimits = append(ulimits, &units.Ulimit{Name: "fsize", Soft: lim.FileSize, Hard: lim.FileSize})
	}
	if lim.CPUTime > 0 {
		secs := int64(lim.CPUTime.Seconds() + 0.999)
		ulimits = append(ulimits, &units.Ulimit{Name: "cpu", Soft: secs, Hard: secs})
	}
	tmpfs := fmt.Sprintf("rw,nosuid,nodev,size=%d", DefaultTmpfsSize)
	uid, gid, _ := strings.Cut(d.user, ":")
	if gid == "" {
		gid = uid
	}
	// HOME belongs to the command user: a mode alone is not applied where
	// the image already has the directory.
	home := fmt.Sprintf("%s,uid=%s,gid=%s,mode=0700", tmpfs, uid, gid)
	profile, err := seccompProfile()
	if b.debug {
		// One workspace's debug container: tracing reaches only that
		// workspace's adapters and programs (spawn.go). No specs label,
		// so a restarted server does not adopt it as a workspace's
		// runtime, and Reconcile removes it.
		profile, err = tracingProfile()
		delete(cfg.Labels, LabelSpecs)
		delete(cfg.Labels, LabelWorkspaces)
		cfg.Labels[LabelDebug] = ids[0]
	}
	if err != nil {
		return nil, nil, err
	}
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(networkMode(first.Network)),
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true", "seccomp=" + profile},
		IpcMode:        container.IPCModePrivate,
		Tmpfs:          map[string]string{"/tmp": tmpfs + ",mode=1777", "/home/agent": home},
		Mounts:         mounts,
		Resources: container.Resources{
			Memory:     mem,
			MemorySwap: mem, // no swap: a memory hog meets the OOM killer, not the disk
			NanoCPUs:   int64(cpus * 1e9),
			PidsLimit:  &pids,
			Ulimits:    ulimits,
		},
	}
	return cfg, hc, nil
}

// pinnedDirs lists every directory strictly between root and a protected
// path.
func pinnedDirs(root string, protected []string) []string {
	seen := map[string]bool{}
	var dirs []string
	for _, p := range protected {
		for d := filepath.Dir(p); d != root && strings.HasPrefix(d, root+"/"); d = filepath.Dir(d) {
			if !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	sort.Strings(dirs)
	return dirs
}

func networkMode(m driver.NetworkMode) string {
	switch m {
	case driver.NetworkDefault:
		return "bridge"
	case driver.NetworkLimited:
		return limitedNetwork
	default:
		return "none"
	}
}

// ensureNetwork creates the internal network NetworkLimited uses: no route
// out of the host (Internal), no traffic between containers (icc off), and,
// through the host firewall, nothing into the host itself. The firewall
// rule is checked every time a limited container is about to start (a
// check is two short iptables runs), so a rule removed by hand comes back.
func (d *Driver) ensureNetwork(ctx context.Context, mode driver.NetworkMode) error {
	if mode != driver.NetworkLimited {
		return nil
	}
	if err := d.EnsureLimitedFirewall(ctx); err != nil {
		return err
	}
	if _, err := d.cli.NetworkInspect(ctx, limitedNetwork, network.InspectOptions{}); err == nil {
		return nil
	}
	_, err := d.cli.NetworkCreate(ctx, limitedNetwork, network.CreateOptions{
		Driver:   "bridge",
		Internal: true,
		Options: map[string]string{
			"com.docker.network.bridge.enable_icc": "false",
			// A fixed interface name, so the host firewall rule
			// (EnsureLimitedFirewall) can name it.
			"com.docker.network.bridge.name": limitedBridge,
		},
		Labels: map[string]string{LabelManagedBy: managedBy},
	})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("create network %s: %v: %w", limitedNetwork, err, grove.ErrUnavailable)
	}
	return nil
}

// recreate replaces b's container with one hosting specs, and starts it.
// The caller holds b.gate for writing. With no specs the container goes.
func (d *Driver) recreate(ctx context.Context, b *box, specs map[string]driver.Spec) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	// The network (and the firewall rule it depends on) first: when it
	// cannot be had, the old container stays.
	for _, s := range specs {
		if err := d.ensureNetwork(ctx, s.Network); err != nil {
			return err
		}
		break
	}
	if b.id != "" {
		err := d.cli.ContainerRemove(ctx, b.id, container.RemoveOptions{Force: true})
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("remove container %s: %v: %w", b.name, err, grove.ErrUnavailable)
		}
		b.id, b.running = "", false
	}
	if len(specs) == 0 {
		b.specs = specs
		return nil
	}
	cfg, hc, err := d.containerSpec(b, specs)
	if err != nil {
		return err
	}
	resp, err := d.cli.ContainerCreate(ctx, cfg, hc, nil, nil, b.name)
	if err != nil {
		if isNotFound(err) {
			return grove.Errorf(grove.ErrUnavailable, "image %s is missing: build it with EnsureImage (grove image build)", cfg.Image)
		}
		return fmt.Errorf("create container %s: %v: %w", b.name, err, grove.ErrUnavailable)
	}
	b.id = resp.ID
	b.specs = specs
	if err := d.cli.ContainerStart(ctx, b.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %v: %w", b.name, err, grove.ErrUnavailable)
	}
	b.running = true
	return nil
}

// start starts b's container if it is not running.
func (d *Driver) start(ctx context.Context, b *box) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running {
		return nil
	}
	if b.id == "" {
		return grove.Errorf(grove.ErrNotFound, "container %s is gone", b.name)
	}
	if err := d.cli.ContainerStart(ctx, b.id, container.StartOptions{}); err != nil {
		if isNotFound(err) {
			return grove.Errorf(grove.ErrNotFound, "container %s is gone", b.name)
		}
		return fmt.Errorf("start container %s: %v: %w", b.name, err, grove.ErrUnavailable)
	}
	b.running = true
	return nil
}

// adopt takes over the containers a previous server left, keyed by label.
func (d *Driver) adopt(ctx context.Context) error {
	list, err := d.cli.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelManagedBy+"="+managedBy)),
	})
	if err != nil {
		return fmt.Errorf("list containers: %v: %w", err, grove.ErrUnavailable)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range list {
		var specs []driver.Spec
		if err := json.Unmarshal([]byte(c.Labels[LabelSpecs]), &specs); err != nil {
			continue // not ours to understand; Reconcile reports it
		}
		if len(specs) == 0 {
			continue
		}
		b := newBox(c.Labels[LabelUser], c.Labels[LabelProject], specs[0].Network)
		b.id = c.ID
		b.running = c.State == "running"
		for _, s := range specs {
			b.specs[s.WorkspaceID] = s
			b.stopped[s.WorkspaceID] = !b.running
			d.owners[s.WorkspaceID] = b
		}
		d.boxes[b.name] = b
	}
	return nil
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }
