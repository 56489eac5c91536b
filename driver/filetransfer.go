package driver

import (
	"context"
	"io"
)

// FileTransfer is implemented by drivers whose runtimes have a files API
// of their own (a remote sandbox's toolbox), so that file contents — and
// git bundles, which are binary — never travel through a command's output.
//
// Paths are absolute paths inside the runtime; the caller (a provider,
// which is Grove's trusted side) chooses them and confines them to the
// workspace. The runtime is addressed by its workspace id and must exist
// (Create).
type FileTransfer interface {
	// Upload writes r to path, creating missing parent directories.
	Upload(ctx context.Context, workspaceID, path string, r io.Reader) error
	// Download copies the file at path to w; grove.ErrNotFound when absent.
	Download(ctx context.Context, workspaceID, path string, w io.Writer) error
}
