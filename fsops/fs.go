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
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

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
	// TempDir holds WriteFile's temporary files, which are renamed into
	// the workspace once complete. It must be outside the workspace, so
	// that neither the agent's tree nor a commit ever sees a temporary
	// file (not even one a crash left behind), and on the same filesystem,
	// for the rename. Open creates it (mode 0700) and refuses one on
	// another filesystem. Empty: the FS is read-only and WriteFile fails.
	// Sweep it with SweepTemp.
	TempDir string
}

// FS is file access confined to one workspace directory, never reaching
// its .git (see resolve.go). It holds the directory open, so keep one per
// workspace and Close it when the workspace goes away. It is safe for
// concurrent use.
type FS struct {
	rootFd int
	dir    string // the root as the host sees it, symlinks resolved
	opts   Options
	tmpFd  int // Options.TempDir, or -1
	git    atomic.Pointer[[]fileID]
}

// Open opens dir as a workspace root.
func Open(dir string, opts Options) (*FS, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, mapErr("open workspace", ".", err)
	}
	fd, err := unix.Open(real, dirFlags, 0)
	if err != nil {
		return nil, mapErr("open workspace", ".", err)
	}
	f := &FS{rootFd: fd, dir: real, opts: opts, tmpFd: -1}
	if ids := probeGit(fd); len(ids) > 0 {
		f.git.Store(&ids)
	}
	if opts.TempDir != "" {
		if f.tmpFd, err = openTempDir(real, fd, opts.TempDir); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return f, nil
}

// openTempDir opens (creating) the temporary directory of the workspace
// root and checks it can serve: outside the root, same filesystem.
func openTempDir(root string, rootFd int, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return -1, fmt.Errorf("fsops: temporary directory: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return -1, fmt.Errorf("fsops: temporary directory: %w", err)
	}
	if r, err := filepath.Rel(root, real); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
		return -1, fmt.Errorf("fsops: temporary directory %s is inside the workspace %s; it must be outside", real, root)
	}
	fd, err := unix.Open(real, dirFlags, 0)
	if err != nil {
		return -1, fmt.Errorf("fsops: temporary directory: %w", &fs.PathError{Op: "open", Path: real, Err: err})
	}
	var a, b unix.Stat_t
	if err = unix.Fstat(fd, &a); err == nil {
		err = unix.Fstat(rootFd, &b)
	}
	if err != nil || a.Dev != b.Dev {
		unix.Close(fd)
		if err == nil {
			err = fmt.Errorf("fsops: temporary directory %s is not on the same filesystem as the workspace %s, so files cannot be renamed from one to the other", real, root)
		}
		return -1, err
	}
	return fd, nil
}

// Close releases the workspace directory.
func (f *FS) Close() error {
	if f.tmpFd >= 0 {
		unix.Close(f.tmpFd)
	}
	return unix.Close(f.rootFd)
}

// Dir is the workspace directory with symlinks resolved.
func (f *FS) Dir() string { return f.dir }

// ReadFile returns the content of the regular file rel. It refuses
// directories (ErrIsDirectory), FIFOs, sockets and devices (ErrInvalid: a
// FIFO would block forever) and files larger than max bytes
// (ErrTooLarge), reading at most max+1 bytes whatever the file does
// meanwhile. Symlinks inside the workspace are followed; a path that
// resolves into .git or out of the workspace is ErrPathOutside.
func (f *FS) ReadFile(rel string, max int64) ([]byte, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK makes opening a FIFO return at once; it changes nothing
	// for regular files.
	fd, err := f.openFinal(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, mapErr("read", rel, err)
	}
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, mapErr("read", rel, err)
	}
	if err := regular(rel, &st); err != nil {
		return nil, err
	}
	if st.Size > max {
		return nil, grove.Errorf(grove.ErrTooLarge, "%s: %d bytes exceeds the limit of %d", rel, st.Size, max)
	}
	// One spare byte detects a file that grew after the Fstat.
	buf := make([]byte, st.Size+1)
	n, err := readFull(fd, buf)
	if err != nil {
		return nil, mapErr("read", rel, err)
	}
	if n == len(buf) {
		file := os.NewFile(uintptr(fd), rel)
		fd = -1
		defer file.Close()
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

// readFull reads into buf until it is full or the file ends.
func readFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, err
		case m == 0:
			return n, nil
		}
		n += m
	}
	return n, nil
}

// WriteFile replaces the content of rel atomically: it writes a temporary
// file in Options.TempDir, fsyncs it (unless Options.NoSync), renames it
// over rel and fsyncs the directory. Concurrent writers never produce a
// torn file; the last rename wins. Missing parent directories are created.
// An existing file keeps its permission bits; perm applies to new files.
// If rel is a symlink, the file it points to is written, provided it is
// inside the workspace, outside .git, and the link is relative
// (ErrPathOutside otherwise). rel may not be a directory (ErrIsDirectory).
func (f *FS) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	rel, err := CleanPath(rel)
	if err != nil {
		return err
	}
	if rel == "." {
		return grove.Errorf(grove.ErrIsDirectory, "cannot write the workspace root")
	}
	if f.tmpFd < 0 {
		return errNoTempDir
	}
	w := f.walk(rel)
	defer w.close()
	name, err := w.next(true)
	mode := uint32(perm.Perm())
	for err == nil {
		if name == "." {
			return grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
		}
		var st unix.Stat_t
		serr := unix.Fstatat(w.top(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if serr == unix.ENOENT {
			break
		}
		if serr != nil {
			return mapErr("write", rel, serr)
		}
		if err := f.checkID(&st, rel); err != nil {
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			mode = uint32(st.Mode) & 0o777
		case unix.S_IFDIR:
			return grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
		case unix.S_IFLNK:
			// Write the target rather than turning the link into a file.
			var followed bool
			if followed, err = w.follow(name); followed {
				name, err = w.next(true)
			}
			continue
		default:
			return grove.Errorf(grove.ErrInvalid, "%s is not a regular file", rel)
		}
		break
	}
	if err != nil {
		return err
	}
	tmp, err := f.writeTemp(data, mode)
	if err != nil {
		return mapErr("write", rel, err)
	}
	inheritOwner(f.tmpFd, tmp, w.top())
	if testHookBeforeRename != nil && testHookBeforeRename() {
		return errors.New("fsops: test crash")
	}
	if err := unix.Renameat(f.tmpFd, tmp, w.top(), name); err != nil {
		unix.Unlinkat(f.tmpFd, tmp, 0)
		if err == unix.EXDEV {
			return fmt.Errorf("fsops: write %s: the temporary directory is on another mount than the workspace", rel)
		}
		return mapErr("write", rel, err)
	}
	if !f.opts.NoSync {
		// The rename is durable only once the directory is.
		if err := unix.Fsync(w.top()); err != nil {
			return mapErr("sync", rel, err)
		}
	}
	return nil
}

// testHookBeforeRename, when it returns true, makes WriteFile stop as a
// crash would: after the temporary file is complete, before the rename,
// without cleaning up.
var testHookBeforeRename func() bool

// tempPrefix starts the name of every temporary file in Options.TempDir.
const tempPrefix = ".grove-tmp-"

// writeTemp writes data to a new file in the temporary directory and
// returns its name there.
func (f *FS) writeTemp(data []byte, mode uint32) (string, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	name := tempPrefix + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(f.tmpFd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return "", err
	}
	for len(data) > 0 && err == nil {
		var n int
		n, err = unix.Write(fd, data)
		if err == unix.EINTR {
			err = nil
		}
		data = data[n:]
	}
	if err == nil && !f.opts.NoSync {
		err = unix.Fsync(fd)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(f.tmpFd, name, 0)
		return "", err
	}
	return name, nil
}

// maxLinks bounds symlink chains, as the kernel does with ELOOP.
const maxLinks = 40

// DeleteFile removes the file or symlink rel (a symlink itself, not its
// target); directories are refused with ErrIsDirectory, and so is any path
// whose directories resolve into .git (ErrPathOutside).
func (f *FS) DeleteFile(rel string) error {
	rel, err := CleanPath(rel)
	if err != nil {
		return err
	}
	w := f.walk(rel)
	defer w.close()
	name, err := w.next(false)
	if err != nil {
		return err
	}
	if name == "." {
		return grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(w.top(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return mapErr("delete", rel, err)
	}
	if err := f.checkID(&st, rel); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
	}
	return mapErr("delete", rel, unix.Unlinkat(w.top(), name, 0))
}

// Stat describes rel, following symlinks that stay inside the workspace
// and out of .git.
func (f *FS) Stat(rel string) (grove.DirEntry, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return grove.DirEntry{}, err
	}
	st, err := f.lstatFinal(rel)
	if err != nil {
		return grove.DirEntry{}, err
	}
	return entry(rel, &st), nil
}

func entry(rel string, st *unix.Stat_t) grove.DirEntry {
	e := grove.DirEntry{Path: rel, Name: path.Base(rel), IsDir: st.Mode&unix.S_IFMT == unix.S_IFDIR, ModTime: mtime(st)}
	if !e.IsDir {
		e.Size = st.Size
	}
	return e
}

func regular(rel string, st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFDIR:
		return grove.Errorf(grove.ErrIsDirectory, "%s is a directory", rel)
	}
	return grove.Errorf(grove.ErrInvalid, "%s is not a regular file (%s)", rel, typeName(st))
}

func typeName(st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "named pipe"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFLNK:
		return "symlink"
	}
	return "special file"
}

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
	case grove.KindOf(err) != nil:
		return err // already ours (from the walker)
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

// asRoot is whether this process writes as root. A root server's
// workspaces belong to the unprivileged uid their sandbox runs as
// (driver/bwrap); what Grove writes into them must belong to that uid too,
// or the agent could not change it in place.
var asRoot = os.Geteuid() == 0

// inheritOwner gives the file name in dirfd the owner of the directory
// parent, when running as root and they differ. Failure is harmless (the
// file stays root's and readable) and not reported.
func inheritOwner(dirfd int, name string, parent int) {
	if !asRoot {
		return
	}
	var pst, st unix.Stat_t
	if unix.Fstat(parent, &pst) != nil || unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if st.Uid != pst.Uid || st.Gid != pst.Gid {
		_ = unix.Fchownat(dirfd, name, int(pst.Uid), int(pst.Gid), unix.AT_SYMLINK_NOFOLLOW)
	}
}
