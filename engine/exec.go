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
	if err := e.requirePresent(ctx, ws); err != nil {
		return nil, err
	}
	if err := e.ensureRuntime(ctx, ws); err != nil {
		return nil, err
	}
	e.lastExec.Store(ws.ID, e.now())
	var res *grove.ExecResult
	run := func(ctx context.Context) error {
		var err error
		if emit != nil {
			res, err = e.drv.ExecStream(ctx, ws.ID, req, emit)
		} else {
			res, err = e.drv.Exec(ctx, ws.ID, req)
		}
		return err
	}
	if req.Class.Mutating() {
		// Commands are not refused up front — one that deletes files is
		// how an agent gets back under its quota — but the watchdog stops
		// any that runs while the disk is low or the workspace over quota.
		err = e.watchdog(ctx, ws, run)
	} else {
		err = run(ctx)
	}
	e.afterExec(ctx, ws, req, res, err)
	return res, err
}

// afterExec records what a command did to the workspace's state: a
// mutating command that exited 0 may have changed files (the seeds' rule;
// status tells the exact truth, this keeps eviction conservative), and a
// command ran, so a released workspace is in use again.
func (e *Engine) afterExec(ctx context.Context, ws *grove.Workspace, req grove.ExecRequest, res *grove.ExecResult, err error) {
	changed := false
	if err == nil && req.Class.Mutating() && res.ExitCode == 0 && !ws.Dirty {
		ws.Dirty, changed = true, true
	}
	if ws.State == grove.WorkspaceReleased {
		ws.State, changed = grove.WorkspaceReady, true
	}
	if changed {
		ws.UpdatedAt = e.now().UTC()
		if err := e.store.UpdateWorkspace(ctx, ws); err != nil {
			e.log.Warn("record workspace state after a command", "workspace", ws.ID, "err", err)
		}
	}
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
