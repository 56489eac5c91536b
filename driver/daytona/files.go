package daytona

import (
	"context"

	toolbox "github.com/daytonaio/daytona/libs/toolbox-api-client-go"

	"github.com/grove-dev/grove"
)

func newCreateSession(id string) *toolbox.CreateSessionRequest {
	return toolbox.NewCreateSessionRequest(id)
}

func newSessionExec(cmd string) *toolbox.SessionExecuteRequest {
	r := toolbox.NewSessionExecuteRequest(cmd)
	r.SetRunAsync(true)
	return r
}

// Files moves files between Grove and a workspace's sandbox through the
// toolbox files API, never through commands. Paths are relative to the
// workspace's directory.
type Files struct {
	d           *Driver
	workspaceID string
}

// Files returns the file helper of a workspace's runtime.
func (d *Driver) Files(workspaceID string) *Files { return &Files{d: d, workspaceID: workspaceID} }

// WriteFile uploads data to rel inside the workspace; parents are created.
func (f *Files) WriteFile(ctx context.Context, rel string, data []byte) error {
	rt, b, err := f.d.runtime(f.workspaceID)
	if err != nil {
		return err
	}
	p, err := confineDir(rt.Spec.WorkDir, rel)
	if err != nil {
		return err
	}
	if p == rt.Spec.WorkDir {
		return errorf(grove.ErrIsDirectory, "%q", rel)
	}
	b, release, err := f.d.use(ctx, rt, b)
	if err != nil {
		return err
	}
	defer release()
	return f.d.upload(ctx, b, p, data)
}

// ReadFile downloads rel from inside the workspace, refusing files over
// max bytes with grove.ErrTooLarge (max <= 0: no limit).
func (f *Files) ReadFile(ctx context.Context, rel string, max int64) ([]byte, error) {
	rt, b, err := f.d.runtime(f.workspaceID)
	if err != nil {
		return nil, err
	}
	p, err := confineDir(rt.Spec.WorkDir, rel)
	if err != nil {
		return nil, err
	}
	b, release, err := f.d.use(ctx, rt, b)
	if err != nil {
		return nil, err
	}
	defer release()
	if max > 0 {
		info, resp, err := b.tb.FileSystemAPI.GetFileInfo(ctx).Path(p).Execute()
		if err := mapErr(ctx, "file info", resp, err); err != nil {
			return nil, err
		}
		if info.IsDir {
			return nil, errorf(grove.ErrIsDirectory, "%q", rel)
		}
		if int64(info.Size) > max {
			return nil, errorf(grove.ErrTooLarge, "%q is %d bytes", rel, int64(info.Size))
		}
	}
	// The generated client saves the body in a temporary file.
	return f.d.download(ctx, b, p)
}

func newExecute(cmd string, timeoutSeconds int32) *toolbox.ExecuteRequest {
	r := toolbox.NewExecuteRequest(cmd)
	if timeoutSeconds > 0 {
		r.SetTimeout(timeoutSeconds)
	}
	return r
}
