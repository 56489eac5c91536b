package engine

import (
	"context"
	"errors"
	"maps"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// Exec implements grove.Service: the command runs in the workspace's
// runtime under the workspace's lock — shared for read commands, exclusive
// for write, install and test.
func (e *Engine) Exec(ctx context.Context, id string, req grove.ExecRequest) (*grove.ExecResult, error) {
	return e.exec(ctx, id, req, nil)
}

// ExecStream implements grove.Service.
func (e *Engine) ExecStream(ctx context.Context, id string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	if emit == nil {
		return nil, grove.Errorf(grove.ErrInvalid, "ExecStream needs an emit function")
	}
	return e.exec(ctx, id, req, emit)
}

func (e *Engine) exec(ctx context.Context, id string, req grove.ExecRequest, emit func(grove.Chunk) error) (*grove.ExecResult, error) {
	if len(req.Argv) == 0 && req.Shell == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "empty command")
	}
	if len(req.Argv) > 0 && req.Shell != "" {
		return nil, grove.Errorf(grove.ErrInvalid, "give argv or shell, not both")
	}
	ws, err := e.workspace(ctx, id)
	if err != nil {
		return nil, err
	}
	if req.Class == "" {
		// Commands say nothing about themselves; assume the worst where the
		// workspace may be written, and read where it may not (its runtime
		// mounts the files read-only anyway).
		req.Class = grove.ClassWrite
		if !ws.Capabilities().Writable {
			req.Class = grove.ClassRead
		}
	}
	switch req.Class {
	case grove.ClassRead, grove.ClassWrite, grove.ClassInstall, grove.ClassTest:
	default:
		return nil, grove.Errorf(grove.ErrInvalid, "command class %q: want read, write, install or test", req.Class)
	}
	if _, set := req.Env["PATH"]; e.cfg.SandboxPath != "" && !set {
		req.Env = maps.Clone(req.Env)
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env["PATH"] = e.cfg.SandboxPath
	}
	lock := e.locks.RLock
	if req.Class.Mutating() {
		if err := ws.RequireWritable(); err != nil {
			return nil, err
		}
		lock = e.locks.Lock
	}
	unlock, err := lock(ctx, "ws:"+ws.ID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := e.ensureRuntime(ctx, ws); err != nil {
		return nil, err
	}
	e.lastExec.Store(ws.ID, e.now())
	if emit != nil {
		return e.drv.ExecStream(ctx, ws.ID, req, emit)
	}
	res, err := e.drv.Exec(ctx, ws.ID, req)
	if err == nil && req.Class.Mutating() && !ws.Dirty {
		// A mutating command may have changed files; status will tell the
		// truth, this only keeps eviction conservative.
		ws.Dirty = true
		_ = e.store.UpdateWorkspace(ctx, ws)
	}
	return res, err
}

// ensureRuntime creates the workspace's runtime the first time it is needed.
func (e *Engine) ensureRuntime(ctx context.Context, ws *grove.Workspace) error {
	if _, ok := e.runtimes.Load(ws.ID); ok {
		return nil
	}
	c, err := e.cacheOf(ctx, ws)
	if err != nil {
		return err
	}
	spec := e.prov.Sandbox(c, ws)
	spec.WorkspaceID = ws.ID
	spec.User, spec.Project = ws.User, ws.Project
	spec.Writable = ws.Capabilities().Writable
	spec.Network = e.cfg.Network
	spec.Limits = e.cfg.Limits
	spec.Image = e.cfg.Image
	rt, err := e.drv.Create(ctx, spec)
	if err != nil {
		return err
	}
	now := e.now().UTC()
	rec, err := e.store.GetRuntime(ctx, ws.ID)
	if errors.Is(err, grove.ErrNotFound) {
		rec = &grove.RuntimeRecord{ID: newID("rt_"), WorkspaceID: ws.ID, CreatedAt: now}
	} else if err != nil {
		return err
	}
	rec.Kind, rec.BackendID, rec.Image = rt.Kind, rt.BackendID, spec.Image
	rec.State = string(driver.StateRunning)
	rec.LastStartedAt, rec.LastUsedAt, rec.UpdatedAt = now, now, now
	if err := e.store.PutRuntime(ctx, rec); err != nil {
		return err
	}
	e.runtimes.Store(ws.ID, struct{}{})
	return nil
}
