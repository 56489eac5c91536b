package docker

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

func validateSpec(s driver.Spec) error {
	switch {
	case s.WorkspaceID == "" || strings.ContainsAny(s.WorkspaceID, ",\x00"):
		return grove.Errorf(grove.ErrInvalid, "workspace id %q", s.WorkspaceID)
	case s.User == "" || s.Project == "":
		return grove.Errorf(grove.ErrInvalid, "user and project are required")
	case s.WorkDir == "":
		// Remote workspaces live inside their backend; this driver only
		// bind-mounts local ones.
		return grove.Errorf(grove.ErrNotSupported, "docker driver needs a local workspace directory")
	}
	for _, p := range append(append([]string{s.WorkDir}, s.ReadOnlyPaths...), s.ProtectedPaths...) {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return grove.Errorf(grove.ErrInvalid, "mount path %q must be absolute and clean", p)
		}
	}
	for _, p := range s.ProtectedPaths {
		if !strings.HasPrefix(p, s.WorkDir+string(filepath.Separator)) {
			return grove.Errorf(grove.ErrInvalid, "protected path %q is not inside the workspace", p)
		}
	}
	switch s.Network {
	case "", driver.NetworkNone, driver.NetworkLimited, driver.NetworkDefault:
	default:
		return grove.Errorf(grove.ErrInvalid, "network mode %q", s.Network)
	}
	return nil
}

// Create implements driver.Driver. A workspace joins its (user, project)
// container; when that changes the container's mounts, the container is
// recreated once running commands of the pair have finished.
func (d *Driver) Create(ctx context.Context, spec driver.Spec) (*driver.Runtime, error) {
	if spec.Network == "" {
		spec.Network = driver.NetworkNone
	}
	if err := validateSpec(spec); err != nil {
		return nil, err
	}
	// Analysis workspaces need the grant too: read access for the
	// command uid (their mount is read-only either way).
	if err := d.grantWorkspace(spec.WorkDir, spec.Writable && !d.ro); err != nil {
		return nil, err
	}
	name := ContainerName(spec.User, spec.Project, spec.Network)
	d.mu.Lock()
	if o := d.owners[spec.WorkspaceID]; o != nil && o.name != name {
		d.mu.Unlock()
		if o.user != spec.User || o.project != spec.Project {
			return nil, grove.Errorf(grove.ErrConflict, "workspace %s belongs to another user or project", spec.WorkspaceID)
		}
		// A new network mode: the workspace moves to that mode's container.
		if err := d.Destroy(ctx, spec.WorkspaceID); err != nil {
			return nil, err
		}
		d.mu.Lock()
	}
	b := d.boxes[name]
	if b == nil {
		b = newBox(spec.User, spec.Project, spec.Network)
		d.boxes[name] = b
	}
	d.mu.Unlock()

	b.gate.Lock()
	defer b.gate.Unlock()
	b.mu.Lock()
	old, exists := b.specs[spec.WorkspaceID]
	same := exists && reflect.DeepEqual(old, spec) && b.id != ""
	var conflict error
	for id, s := range b.specs {
		if id != spec.WorkspaceID && s.Image != spec.Image {
			conflict = grove.Errorf(grove.ErrConflict,
				"workspace %s wants image %q but its project's container runs %q", spec.WorkspaceID, spec.Image, s.Image)
		}
	}
	specs := maps.Clone(b.specs)
	b.mu.Unlock()
	if conflict != nil {
		return nil, conflict
	}
	if !same {
		specs[spec.WorkspaceID] = spec
		if err := d.recreate(ctx, b, specs); err != nil {
			return nil, err
		}
		b.mu.Lock()
		clear(b.stopped)
		b.mu.Unlock()
	}
	d.mu.Lock()
	d.owners[spec.WorkspaceID] = b
	d.mu.Unlock()
	return d.runtime(b, spec.WorkspaceID), nil
}

func (d *Driver) runtime(b *box, id string) *driver.Runtime {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := driver.StateRunning
	if !b.running || b.stopped[id] {
		st = driver.StateStopped
	}
	return &driver.Runtime{WorkspaceID: id, Kind: d.Kind(), BackendID: b.id, State: st, Spec: b.specs[id]}
}

// lookup finds the box hosting a workspace.
func (d *Driver) lookup(id string) (*box, error) {
	d.mu.Lock()
	b := d.owners[id]
	d.mu.Unlock()
	if b == nil {
		return nil, grove.Errorf(grove.ErrNotFound, "no docker runtime for workspace %s", id)
	}
	return b, nil
}

// Get implements driver.Driver.
func (d *Driver) Get(ctx context.Context, workspaceID string) (*driver.Runtime, error) {
	b, err := d.lookup(workspaceID)
	if err != nil {
		return nil, err
	}
	return d.runtime(b, workspaceID), nil
}

// Start implements driver.Driver.
func (d *Driver) Start(ctx context.Context, workspaceID string) error {
	b, err := d.lookup(workspaceID)
	if err != nil {
		return err
	}
	b.gate.RLock()
	defer b.gate.RUnlock()
	if err := d.start(ctx, b); err != nil {
		return err
	}
	b.mu.Lock()
	delete(b.stopped, workspaceID)
	b.mu.Unlock()
	return nil
}

// Stop implements driver.Driver. It hibernates one workspace; the shared
// container stops once every workspace it hosts is hibernated, after the
// commands still running in it finish.
func (d *Driver) Stop(ctx context.Context, workspaceID string) error {
	b, err := d.lookup(workspaceID)
	if err != nil {
		return err
	}
	// Spawned processes (debug sessions) do not survive hibernation.
	if err := d.removeDebugBox(ctx, workspaceID); err != nil {
		return err
	}
	b.gate.Lock()
	defer b.gate.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped[workspaceID] = true
	for id := range b.specs {
		if !b.stopped[id] {
			return nil
		}
	}
	if !b.running || b.id == "" {
		return nil
	}
	timeout := 2
	if err := d.cli.ContainerStop(ctx, b.id, container.StopOptions{Timeout: &timeout}); err != nil && !isNotFound(err) {
		return fmt.Errorf("stop container %s: %v: %w", b.name, err, grove.ErrUnavailable)
	}
	b.running = false
	return nil
}

// Destroy implements driver.Driver. The workspace leaves its container
// (which is recreated without its mounts, or removed with its last
// workspace); the workspace's files stay on the host.
func (d *Driver) Destroy(ctx context.Context, workspaceID string) error {
	if err := d.removeDebugBox(ctx, workspaceID); err != nil {
		return err
	}
	d.mu.Lock()
	b := d.owners[workspaceID]
	d.mu.Unlock()
	if b == nil {
		return nil
	}
	b.gate.Lock()
	defer b.gate.Unlock()
	b.mu.Lock()
	specs := maps.Clone(b.specs)
	b.mu.Unlock()
	delete(specs, workspaceID)
	if err := d.recreate(ctx, b, specs); err != nil {
		return err
	}
	d.mu.Lock()
	delete(d.owners, workspaceID)
	if len(specs) == 0 {
		delete(d.boxes, b.name)
	}
	d.mu.Unlock()
	b.mu.Lock()
	delete(b.stopped, workspaceID)
	b.mu.Unlock()
	return nil
}
