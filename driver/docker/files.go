package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/grove-dev/grove"
)

// Local workspaces are bind-mounted at their host path, so the engine reads
// and writes their files on the host directly. CopyTo and CopyFrom are the
// path that needs no shared filesystem: the Engine's archive API, as a
// remote engine would need. Neither runs anything inside the container.

// hostPath turns a workspace-relative path into the absolute path inside
// the container (the same as on the host), refusing escapes.
func (d *Driver) hostPath(workspaceID, rel string) (*box, string, error) {
	b, err := d.lookup(workspaceID)
	if err != nil {
		return nil, "", err
	}
	b.mu.Lock()
	root := b.specs[workspaceID].WorkDir
	b.mu.Unlock()
	clean := path.Clean(filepath.ToSlash(rel))
	if rel == "" || filepath.IsAbs(rel) || strings.IndexByte(rel, 0) >= 0 || clean == "." ||
		clean == ".." || strings.HasPrefix(clean, "../") {
		return nil, "", grove.Errorf(grove.ErrPathOutside, "path %q", rel)
	}
	dir, err := confine(root, path.Dir(clean))
	if err != nil {
		return nil, "", err
	}
	return b, filepath.Join(dir, path.Base(clean)), nil
}

// CopyTo writes data to a workspace-relative file through the archive API.
// The file belongs to the command user, as if a command had written it.
func (d *Driver) CopyTo(ctx context.Context, workspaceID, rel string, data []byte, mode int64) error {
	b, dst, err := d.hostPath(workspaceID, rel)
	if err != nil {
		return err
	}
	b.mu.Lock()
	writable := b.specs[workspaceID].Writable && !d.ro
	b.mu.Unlock()
	if !writable {
		return grove.Errorf(grove.ErrReadOnly, "workspace %s is read-only", workspaceID)
	}
	uid, gid := d.ids()
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{
			Name: filepath.Base(dst), Mode: mode & 0o777, Size: int64(len(data)),
			Uid: uid, Gid: gid, ModTime: time.Now(), Typeflag: tar.TypeReg,
		})
		if err == nil {
			_, err = tw.Write(data)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	if err := d.start(ctx, b); err != nil {
		pr.Close()
		return err
	}
	err = d.cli.CopyToContainer(ctx, b.id, filepath.Dir(dst), pr, container.CopyToContainerOptions{})
	pr.Close()
	if err != nil {
		if isNotFound(err) {
			return grove.Errorf(grove.ErrNotFound, "directory of %q", rel)
		}
		return fmt.Errorf("copy to workspace: %v: %w", err, grove.ErrUnavailable)
	}
	return nil
}

// CopyFrom reads a workspace-relative regular file through the archive API,
// up to max bytes (grove.ErrTooLarge beyond).
func (d *Driver) CopyFrom(ctx context.Context, workspaceID, rel string, max int64) ([]byte, error) {
	b, src, err := d.hostPath(workspaceID, rel)
	if err != nil {
		return nil, err
	}
	if err := d.start(ctx, b); err != nil {
		return nil, err
	}
	rc, _, err := d.cli.CopyFromContainer(ctx, b.id, src)
	if err != nil {
		if isNotFound(err) {
			return nil, grove.Errorf(grove.ErrNotFound, "file %q", rel)
		}
		return nil, fmt.Errorf("copy from workspace: %v: %w", err, grove.ErrUnavailable)
	}
	defer drain(rc)
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("copy from workspace: %v: %w", err, grove.ErrUnavailable)
	}
	switch h.Typeflag {
	case tar.TypeReg:
	case tar.TypeDir:
		return nil, grove.Errorf(grove.ErrIsDirectory, "%q", rel)
	default:
		// A symlink could point anywhere the container sees.
		return nil, grove.Errorf(grove.ErrInvalid, "%q is not a regular file", rel)
	}
	if h.Size > max {
		return nil, grove.Errorf(grove.ErrTooLarge, "%q is %d bytes, limit %d", rel, h.Size, max)
	}
	buf := make([]byte, h.Size)
	if _, err := io.ReadFull(tr, buf); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("copy from workspace: %v: %w", err, grove.ErrUnavailable)
	}
	return buf, nil
}

func (d *Driver) ids() (uid, gid int) {
	u, g, _ := strings.Cut(d.user, ":")
	uid, _ = strconv.Atoi(u)
	gid, _ = strconv.Atoi(g)
	return uid, gid
}
