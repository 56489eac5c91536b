package daytona

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// isControl reports a runtime that is not a workspace: one whose work
// directory is the workspace root itself (provider/remote's per-sandbox
// control runtime). It neither keeps a sandbox from stopping after its
// last workspace is destroyed nor cancels that stop.
func (d *Driver) isControl(rt *driver.Runtime) bool {
	return rt.Spec.WorkDir == d.cfg.WorkspaceRoot
}

// use prepares b for a request of rt: it marks the sandbox busy (no idle
// stop while a request runs), starts it if it is not running (stopped,
// archived, paused) and applies the configured network settings to an
// adopted sandbox. A sandbox that is gone (404, destroyed: deleted under
// Grove, or replaced by another sandbox with the same labels) is looked
// up again by its labels, or created, once: the pair's sandbox and every
// runtime of the pair move to it, and rt's work directory is made again
// (empty: the engine rebuilds a missing working tree on the next
// acquire). release must be called when the request is over.
func (d *Driver) use(ctx context.Context, rt *driver.Runtime, b *box) (*box, func(), error) {
	release := d.hold(b)
	err := d.ready(ctx, b)
	if err == nil {
		return b, release, nil
	}
	release()
	if !errors.Is(err, grove.ErrNotFound) {
		return nil, nil, err
	}
	key := boxKey(rt.Spec.User, rt.Spec.Project)
	nb, err := d.sandboxReplacing(ctx, rt.Spec.User, rt.Spec.Project, b)
	if err != nil {
		return nil, nil, err
	}
	release = d.hold(nb)
	if err := d.ready(ctx, nb); err != nil {
		release()
		return nil, nil, err
	}
	if rt.Spec.WorkDir != "" {
		resp, err := nb.tb.FileSystemAPI.CreateFolder(ctx).Path(rt.Spec.WorkDir).Mode("0755").Execute()
		if err := mapErr(ctx, "create folder", resp, err); err != nil {
			release()
			return nil, nil, err
		}
	}
	d.mu.Lock()
	for _, o := range d.rts {
		if boxKey(o.Spec.User, o.Spec.Project) == key {
			o.BackendID = nb.id
		}
	}
	d.mu.Unlock()
	return nb, release, nil
}

func (d *Driver) ready(ctx context.Context, b *box) error {
	if err := d.ensureStarted(ctx, b); err != nil {
		return err
	}
	return d.ensureNetwork(ctx, b)
}

// hold marks b busy until the returned function is called.
func (d *Driver) hold(b *box) func() {
	d.mu.Lock()
	b.busy++
	b.lastUse = time.Now()
	d.mu.Unlock()
	done := false
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !done {
			done = true
			b.busy--
			b.lastUse = time.Now()
		}
	}
}

// runtimeFor is runtime plus use: the runtime of workspaceID and its
// sandbox, ready for a request.
func (d *Driver) runtimeFor(ctx context.Context, workspaceID string) (*driver.Runtime, *box, func(), error) {
	rt, b, err := d.runtime(workspaceID)
	if err != nil {
		return nil, nil, nil, err
	}
	b, release, err := d.use(ctx, rt, b)
	if err != nil {
		return nil, nil, nil, err
	}
	return rt, b, release, nil
}

// idleStop stops the sandbox of key after its last workspace was
// destroyed, unless a workspace came back or a request ran within
// IdleStopDelay (then it waits again). It holds the sandbox's start lock
// while stopping, so a request arriving meanwhile starts it again after.
func (d *Driver) idleStop(key string, b *box) {
	b.startMu.Lock()
	defer b.startMu.Unlock()
	d.mu.Lock()
	if !b.idle || d.boxes[key] != b {
		d.mu.Unlock()
		return
	}
	if wait := d.cfg.IdleStopDelay - time.Since(b.lastUse); b.busy > 0 || wait > 0 {
		if wait <= 0 {
			wait = d.cfg.IdleStopDelay
		}
		b.idleTimer.Reset(wait)
		d.mu.Unlock()
		return
	}
	b.idle = false
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, resp, err := d.api.SandboxAPI.StopSandbox(ctx, b.id).Execute()
	if resp != nil && resp.StatusCode == http.StatusBadRequest {
		return // already stopped
	}
	_ = mapErr(ctx, "stop sandbox", resp, err) // Daytona's auto-stop remains
}
