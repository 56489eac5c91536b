package daytona

import (
	"context"
	"io"
	"os"
	"path"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

var _ driver.FileTransfer = (*Driver)(nil)

// Upload implements driver.FileTransfer through the toolbox files API
// (multipart upload; the toolbox creates missing parents). p is an
// absolute path inside the workspace's sandbox, chosen by Grove. The
// generated client uploads an *os.File, so r is spooled to a temporary
// file on the Grove host first.
func (d *Driver) Upload(ctx context.Context, workspaceID, p string, r io.Reader) error {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return errorf(grove.ErrInvalid, "upload path %q must be clean and absolute", p)
	}
	_, b, release, err := d.runtimeFor(ctx, workspaceID)
	if err != nil {
		return err
	}
	defer release()
	f, err := os.CreateTemp("", "grove-daytona-upload-*")
	if err != nil {
		return grove.Errorf(grove.ErrUnavailable, "daytona: upload: %v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, resp, err := b.tb.FileSystemAPI.UploadFile(ctx).Path(p).File(f).Execute()
	return mapErr(ctx, "upload", resp, err)
}

// Download implements driver.FileTransfer through the toolbox files API.
func (d *Driver) Download(ctx context.Context, workspaceID, p string, w io.Writer) error {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return errorf(grove.ErrInvalid, "download path %q must be clean and absolute", p)
	}
	_, b, release, err := d.runtimeFor(ctx, workspaceID)
	if err != nil {
		return err
	}
	defer release()
	// The generated client saves the body in a temporary file.
	file, resp, err := b.tb.FileSystemAPI.DownloadFile(ctx).Path(p).Execute()
	if err := mapErr(ctx, "download", resp, err); err != nil {
		return err
	}
	defer os.Remove(file.Name())
	defer file.Close()
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(w, file)
	return err
}

// WorkspaceRoot is the directory inside every sandbox under which
// workspaces live (Config.WorkspaceRoot after defaults).
func (d *Driver) WorkspaceRoot() string { return d.cfg.WorkspaceRoot }
