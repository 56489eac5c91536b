package docker

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// ReconcileReport says what Reconcile found and did.
type ReconcileReport struct {
	Kept      []string // workspaces whose runtime stays
	Forgotten []string // workspaces the caller no longer knows; their mounts are gone
	Removed   []string // containers removed (names)
	Foreign   []string // containers labelled managed-by=grove that this driver cannot read; removed too
}

// Reconcile removes the runtimes of workspaces known reports false for: a
// container keeps only known workspaces (and is recreated without the
// others' mounts) or goes when none is left. Run it after New on start-up,
// with the store as known.
func (d *Driver) Reconcile(ctx context.Context, known func(workspaceID string) bool) (ReconcileReport, error) {
	var rep ReconcileReport
	d.mu.Lock()
	boxes := slices.Collect(maps.Values(d.boxes))
	d.mu.Unlock()
	for _, b := range boxes {
		b.gate.Lock()
		b.mu.Lock()
		keep := map[string]driver.Spec{}
		var gone []string
		for id, s := range b.specs {
			if known(id) {
				keep[id] = s
			} else {
				gone = append(gone, id)
			}
		}
		b.mu.Unlock()
		if len(gone) > 0 {
			if err := d.recreate(ctx, b, keep); err != nil {
				b.gate.Unlock()
				return rep, err
			}
			if len(keep) == 0 {
				rep.Removed = append(rep.Removed, b.name)
			}
			d.mu.Lock()
			for _, id := range gone {
				delete(d.owners, id)
			}
			if len(keep) == 0 {
				delete(d.boxes, b.name)
			}
			d.mu.Unlock()
		}
		b.gate.Unlock()
		for _, id := range gone {
			if err := d.removeDebugBox(ctx, id); err != nil {
				return rep, err
			}
		}
		rep.Forgotten = append(rep.Forgotten, gone...)
		rep.Kept = append(rep.Kept, slices.Collect(maps.Keys(keep))...)
	}

	// Containers with our label that adopt could not read (no or corrupt
	// specs) belong to nobody.
	list, err := d.cli.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelManagedBy+"="+managedBy)),
	})
	if err != nil {
		return rep, fmt.Errorf("list containers: %v: %w", err, grove.ErrUnavailable)
	}
	d.mu.Lock()
	ours := map[string]bool{}
	for _, b := range d.boxes {
		b.mu.Lock()
		ours[b.id] = true
		b.mu.Unlock()
	}
	for _, b := range d.debug {
		b.mu.Lock()
		ours[b.id] = true
		b.mu.Unlock()
	}
	d.mu.Unlock()
	for _, c := range list {
		if ours[c.ID] {
			continue
		}
		if err := d.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !isNotFound(err) {
			return rep, fmt.Errorf("remove container: %v: %w", err, grove.ErrUnavailable)
		}
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = c.Names[0]
		}
		rep.Foreign = append(rep.Foreign, name)
	}
	slices.Sort(rep.Kept)
	slices.Sort(rep.Forgotten)
	return rep, nil
}
