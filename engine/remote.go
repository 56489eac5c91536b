package engine

import (
	"context"
	"io"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/provider/execpath"
)

// Workspaces with no host path (provider/remote) live inside a runtime
// that may speak text only (a Daytona sandbox's toolbox): a binary
// bundle cannot cross a command's stdout there. When the workspace has no
// host path and the driver has a files API, the bundle is written to a
// file inside the runtime and downloaded through that API instead; either
// way ReceiveWork checks every object.

// bundleOut writes a bundle of ref in ws (minus exclude's history) to w.
func (e *Engine) bundleOut(ctx context.Context, x inRuntime, ws *grove.Workspace, ref string, exclude []string, w io.Writer) error {
	ft, ok := e.drv.(driver.FileTransfer)
	if ws.LocalPath != "" || !ok {
		return execpath.Bundle(ctx, x, ws.ID, ref, exclude, w)
	}
	return execpath.BundleFile(ctx, x, ws.ID, ref, exclude, func(path string) error {
		return ft.Download(ctx, ws.ID, path, w)
	})
}
