package procexec

import (
	"sync"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// Registry is the runtime bookkeeping of a process driver: for each
// workspace its spec, its state and whatever the driver keeps beside them
// (E, e.g. a private HOME). Process drivers start a fresh process per
// command, so a runtime is nothing more than this record.
type Registry[E any] struct {
	kind string
	mu   sync.Mutex
	m    map[string]*record[E]
}

type record[E any] struct {
	spec  driver.Spec
	state driver.State
	extra E
}

// NewRegistry returns an empty registry for the driver named kind.
func NewRegistry[E any](kind string) *Registry[E] {
	return &Registry[E]{kind: kind, m: map[string]*record[E]{}}
}

func (r *Registry[E]) view(id string, rec *record[E]) *driver.Runtime {
	return &driver.Runtime{WorkspaceID: id, Kind: r.kind, State: rec.state, Spec: rec.spec}
}

func (r *Registry[E]) lookup(id string) (*record[E], error) {
	rec, ok := r.m[id]
	if !ok {
		return nil, grove.Errorf(grove.ErrNotFound, "%s: no runtime for workspace %q", r.kind, id)
	}
	return rec, nil
}

// Create records spec, idempotently: an existing runtime is returned as it
// is. newExtra runs only for a new runtime; its error aborts the creation.
func (r *Registry[E]) Create(spec driver.Spec, newExtra func() (E, error)) (*driver.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec, ok := r.m[spec.WorkspaceID]; ok {
		return r.view(spec.WorkspaceID, rec), nil
	}
	var extra E
	if newExtra != nil {
		var err error
		if extra, err = newExtra(); err != nil {
			return nil, err
		}
	}
	rec := &record[E]{spec: spec, state: driver.StateRunning, extra: extra}
	r.m[spec.WorkspaceID] = rec
	return r.view(spec.WorkspaceID, rec), nil
}

// Get returns the runtime of id, or grove.ErrNotFound.
func (r *Registry[E]) Get(id string) (*driver.Runtime, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, err := r.lookup(id)
	if err != nil {
		return nil, err
	}
	return r.view(id, rec), nil
}

// SetState records a state change (Start, Stop).
func (r *Registry[E]) SetState(id string, s driver.State) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, err := r.lookup(id)
	if err != nil {
		return err
	}
	rec.state = s
	return nil
}

// Resume marks id running — exec on a stopped runtime starts it — and
// returns what a command needs.
func (r *Registry[E]) Resume(id string) (driver.Spec, E, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, err := r.lookup(id)
	if err != nil {
		var zero E
		return driver.Spec{}, zero, err
	}
	rec.state = driver.StateRunning
	return rec.spec, rec.extra, nil
}

// Remove forgets id and returns what the driver kept for it, if anything.
func (r *Registry[E]) Remove(id string) (E, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.m[id]
	delete(r.m, id)
	if !ok {
		var zero E
		return zero, false
	}
	return rec.extra, true
}
