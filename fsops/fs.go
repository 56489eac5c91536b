package fsops

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/grove-dev/grove"
)

// Options tunes an FS.
type Options struct {
	// NoSync skips the fsync of the file and its directory in WriteFile.
	// The write stays atomic (a reader sees the old or the new content,
	// never a torn file) but a machine crash right after it may lose it.
	// fsync dominates the cost of small writes; set NoSync where the
	// workspace is scratch space anyway.
	NoSync bool
}

// FS is file access confined to one workspace directory. It holds the
// directory open (an os.Root), so keep one per workspace and Close it when
// the workspace goes away. It is safe for concurrent use.
type FS struct {
	root *os.Root
	dir  string // the root as the host sees it, symlinks resolved
	opts Options
}

// Open opens dir as a workspace root.
func Open(dir string, opts Options) (*FS, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, mapErr("open workspace", ".", err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, mapErr("open workspace", ".", err)
	}
	return &FS{root: root, dir: real, opts: opts}, nil
}

// Close releases the workspace directory.
func (f *FS) Close() error { return f.root.Close() }

// Dir is the workspace directory with symlinks resolved.
func (f *FS) Dir() string { return f.dir }

// ReadFile returns the content of the regular file rel. It refuses
// directories (ErrIsDirectory), FIFOs, sockets and devices (ErrInvalid: a
// FIFO would block forever) and files larger than max bytes
// (ErrTooLarge), reading at most max+1 bytes whatever the file does
// meanwhile.
func (f *FS) ReadFile(rel string, max int64) ([]byte, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK makes opening a FIFO return at once; it changes nothing
	// for regular files.
	file, err := f.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, mapErr("read", rel, err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, mapErr("read", rel, err)
	}
	if err := regular(rel, fi); err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, grove.Errorf(grove.ErrTooLarge, "%s: %d bytes exceeds the limit of %d", rel, fi.Size(), max)
	}
	// One spare byte detects a file that grew after the Stat.
	buf := make([]byte, fi.Size()+1)
	n, err := io.ReadFull(file, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
	case err != nil:
		return nil, mapErr("read", rel, err)
	default:
		rest, err := io.ReadAll(io.LimitReader(file, max-int64(n)+1))
		if err != nil {
			return nil, mapErr("read", rel, err)
		}
		buf = append(buf, rest...)
		n = len(buf)
		if int64(n) > max {
			return nil, grove.Errorf(grove.ErrTooLarge, "%s: exceeds the limit of %d bytes", rel, max)
		}
	}
	return buf[:n], nil
}

// WriteFile replaces the content of rel atomically: it writes a temporary
// file in the same directory, fsyncs it (unless Options.NoSync), renames it
// over rel and fsyncs the directory. Concurrent writers never produce a
// torn file; the last rename wins. Missing parent directories are created.
// An existing file keeps its permission bits; perm applies to new files.
// If rel is a symlink, the file it points to is written, provided it is
// inside the workspace and the link is relative (ErrPathOutside otherwise;
// os.Root treats every absolute symlink as leaving the root). rel may not be a
// directory (ErrIsDirectory).
func (f *FS) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	rel, err := CleanPath(rel)
	if err != nil {
		return err
	}
	if rel == "." {
		return grove.Errorf(grove.ErrIsDirectory, "cannot write the workspace root")
	}
	rel, err = f.resolveLink(rel)
	if err != nil {
		return err
	}
	exists := false
	switch fi, err := f.root.Lstat(rel); {
	case err == nil && fi.IsDir():
		return grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
	case err == nil && fi.Mode().IsRegular():
		perm, exists = fi.Mode().Perm(), true
	case err == nil:
		return grove.Errorf(grove.ErrInvalid, "%s is not a regular file", rel)
	case !errors.Is(err, fs.ErrNotExist):
		return mapErr("write", rel, err)
	}
	dir := path.Dir(rel)
	if !exists {
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return mapErr("write", dir, err)
		}
	}
	tmp, err := f.writeTemp(dir, data, perm)
	if err != nil {
		return err
	}
	if err := f.root.Rename(tmp, rel); err != nil {
		f.root.Remove(tmp)
		return mapErr("write", rel, err)
	}
	if !f.opts.NoSync {
		// The rename is durable only once the directory is.
		if d, err := f.root.Open(dir); err == nil {
			err = d.Sync()
			d.Close()
			if err != nil {
				return mapErr("sync", dir, err)
			}
		}
	}
	return nil
}

func (f *FS) writeTemp(dir string, data []byte, perm fs.FileMode) (string, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := path.Join(dir, ".grove-tmp-"+hex.EncodeToString(rnd[:]))
	file, err := f.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return "", mapErr("write", dir, err)
	}
	_, err = file.Write(data)
	if err == nil && !f.opts.NoSync {
		err = file.Sync()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		f.root.Remove(tmp)
		return "", mapErr("write", tmp, err)
	}
	return tmp, nil
}

// maxLinks bounds symlink chains, as the kernel does with ELOOP.
const maxLinks = 40

// resolveLink follows rel while it is a symlink, so that WriteFile
// replaces the target rather than turning the link into a file. Targets
// outside the workspace or inside .git are refused.
func (f *FS) resolveLink(rel string) (string, error) {
	for range maxLinks {
		fi, err := f.root.Lstat(rel)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return rel, nil
		}
		target, err := f.root.Readlink(rel)
		if err != nil {
			return "", mapErr("readlink", rel, err)
		}
		// Absolute targets are refused even when they point inside, as
		// os.Root refuses them on every other path: one rule for reads and
		// writes.
		if filepath.IsAbs(target) {
			return "", grove.Errorf(grove.ErrPathOutside, "symlink %s has an absolute target", rel)
		}
		next, err := CleanPath(path.Join(path.Dir(rel), filepath.ToSlash(target)))
		if err != nil {
			return "", grove.Errorf(grove.ErrPathOutside, "symlink %s points outside the workspace or into .git", rel)
		}
		rel = next
	}
	return "", grove.Errorf(grove.ErrInvalid, "%s: too many levels of symbolic links", rel)
}

// DeleteFile removes the file or symlink rel; directories are refused with
// ErrIsDirectory.
func (f *FS) DeleteFile(rel string) error {
	rel, err := CleanPath(rel)
	if err != nil {
		return err
	}
	fi, err := f.root.Lstat(rel)
	if err != nil {
		return mapErr("delete", rel, err)
	}
	if fi.IsDir() {
		return grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
	}
	return mapErr("delete", rel, f.root.Remove(rel))
}

// Stat describes rel, following symlinks that stay inside the workspace.
func (f *FS) Stat(rel string) (grove.DirEntry, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return grove.DirEntry{}, err
	}
	fi, err := f.root.Stat(rel)
	if err != nil {
		return grove.DirEntry{}, mapErr("stat", rel, err)
	}
	return entry(rel, fi), nil
}

func entry(rel string, fi fs.FileInfo) grove.DirEntry {
	e := grove.DirEntry{Path: rel, Name: path.Base(rel), IsDir: fi.IsDir(), ModTime: fi.ModTime()}
	if !e.IsDir {
		e.Size = fi.Size()
	}
	return e
}

func regular(rel string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
	case !fi.Mode().IsRegular():
		return grove.Errorf(grove.ErrInvalid, "%s is not a regular file (%s)", rel, fi.Mode().Type())
	}
	return nil
}

// escapeErr is the error os.Root reports for a path leaving the root. The
// os package does not export it, so it is learnt once from os.Root itself
// (a lexical check, no file is touched) rather than matched by its text.
var escapeErr = sync.OnceValue(func() error {
	r, err := os.OpenRoot("/")
	if err != nil {
		return nil
	}
	defer r.Close()
	_, err = r.Lstat("../probe")
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return nil
})

// mapErr turns an os error into a grove kind. Messages carry only the
// workspace-relative path, never the host directory.
func mapErr(op, rel string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	inner := err
	if errors.As(err, &pe) {
		inner = pe.Err
	}
	switch {
	case escapeErr() != nil && errors.Is(inner, escapeErr()):
		return grove.Errorf(grove.ErrPathOutside, "%s %s: path leads outside the workspace (through a symlink)", op, rel)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return grove.Errorf(grove.ErrNotFound, "%s %s: no such file or directory", op, rel)
	case errors.Is(err, syscall.EISDIR):
		return grove.Errorf(grove.ErrIsDirectory, "%s %s: is a directory", op, rel)
	case errors.Is(err, syscall.ELOOP):
		return grove.Errorf(grove.ErrInvalid, "%s %s: too many levels of symbolic links", op, rel)
	case errors.Is(err, fs.ErrPermission):
		return grove.Errorf(grove.ErrForbidden, "%s %s: permission denied", op, rel)
	}
	return fmt.Errorf("%s %s: %w", op, rel, inner)
}
