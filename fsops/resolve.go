package fsops

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/grove-dev/grove"
)

// Path resolution.
//
// Every operation resolves its path here, one component at a time, the way
// the kernel would but under Grove's rules:
//
//   - each directory is opened with openat(O_NOFOLLOW|O_DIRECTORY) relative
//     to the directory before it, starting from the workspace root held
//     open since Open, so nothing is looked up by a host path string;
//   - a symlink is never followed by the kernel: its target is read with
//     readlinkat and resolved here, in the same way, from the directory
//     that holds the link; absolute targets are refused, and ".." never
//     climbs above the root;
//   - no component, whether it comes from the caller's path or from a
//     symlink target, may be named .git in any case (a nested repository's
//     .git is as dangerous to host git as the workspace's own);
//   - every directory passed through, and the object finally opened, is
//     compared by identity (device and inode, from fstat on the open
//     descriptor) with the workspace's .git as it was when the FS was
//     opened, which also catches spellings the name rule cannot know
//     (case folding or Unicode normalisation on other filesystems).
//
// The operations then act on a name relative to the last directory's
// descriptor (openat, fstatat, renameat, unlinkat). A directory the
// walker has checked stays the directory it checked, whatever is renamed
// or replaced meanwhile, so there is no window between check and use.

// fileID identifies a file on this machine.
type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{uint64(st.Dev), st.Ino} }

// dirFlags opens a directory for openat and getdents, never through a
// symlink.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// isGitName reports whether a path component names a repository's
// metadata directory or gitfile, as git itself compares it.
func isGitName(name string) bool { return len(name) == 4 && strings.EqualFold(name, ".git") }

func gitErr(rel string) error {
	return grove.Errorf(grove.ErrPathOutside, "path %q resolves into .git, which holds the repository's metadata; file tools may not touch it", rel)
}

func outsideErr(rel string) error {
	return grove.Errorf(grove.ErrPathOutside, "path %q leads outside the workspace (through a symlink)", rel)
}

// walker resolves one path. Its zero value is unusable: start with
// f.walk, and close it when done with the directory it leads to.
type walker struct {
	f     *FS
	rel   string // the caller's clean path, for messages
	rest  string // components still to resolve
	stack []int  // directory descriptors; stack[0] is the root, not owned
	links int
}

func (f *FS) walk(rel string) walker {
	w := walker{f: f, rel: rel, rest: rel}
	w.stack = append(make([]int, 0, 8), f.rootFd)
	return w
}

// top is the descriptor of the directory reached so far.
func (w *walker) top() int { return w.stack[len(w.stack)-1] }

func (w *walker) close() {
	for _, fd := range w.stack[1:] {
		unix.Close(fd)
	}
	w.stack = w.stack[:1]
}

// next resolves every component but the last, following symlinks, and
// returns the last: a name in the directory top(), or "." when the path
// ends at top() itself. With create, missing directories on the way are
// made (mode 0755). The returned name is never .git.
func (w *walker) next(create bool) (string, error) {
	for {
		if w.rest == "" {
			return ".", nil
		}
		c, rest, _ := strings.Cut(w.rest, "/")
		w.rest = rest
		switch {
		case c == "" || c == ".":
			continue
		case c == "..":
			if len(w.stack) == 1 {
				return "", outsideErr(w.rel)
			}
			unix.Close(w.top())
			w.stack = w.stack[:len(w.stack)-1]
			continue
		case isGitName(c):
			return "", gitErr(w.rel)
		case rest == "":
			return c, nil
		}
		if err := w.enter(c, create); err != nil {
			return "", err
		}
	}
}

// enter moves into the directory c of top(), or on into the target of c
// if c is a symlink.
func (w *walker) enter(c string, create bool) error {
	for try := 0; ; try++ {
		fd, err := unix.Openat(w.top(), c, dirFlags, 0)
		if err == nil {
			if err := w.f.checkOpen(fd, w.rel); err != nil {
				unix.Close(fd)
				return err
			}
			w.stack = append(w.stack, fd)
			return nil
		}
		switch {
		case err == unix.ENOENT && create && try < 3:
			if err := unix.Mkdirat(w.top(), c, 0o755); err != nil && err != unix.EEXIST {
				return mapErr("mkdir", w.rel, err)
			} else if err == nil {
				inheritOwner(w.top(), c, w.top())
			}
		case isLinkErr(err):
			followed, ferr := w.follow(c)
			if ferr != nil {
				return ferr
			}
			if !followed {
				return mapErr("resolve", w.rel, unix.ENOTDIR)
			}
			return nil
		default:
			return mapErr("resolve", w.rel, err)
		}
	}
}

// isLinkErr is what openat with O_NOFOLLOW (and O_DIRECTORY) reports for a
// symlink, or for a non-directory: the caller tells them apart with
// readlinkat.
func isLinkErr(err error) bool {
	return err == unix.ELOOP || err == unix.EMLINK || err == unix.ENOTDIR
}

// follow makes the target of the symlink name (in top()) the path still to
// resolve, ahead of what remains. It reports false, with no error, when
// name is not a symlink.
func (w *walker) follow(name string) (bool, error) {
	w.links++
	if w.links > maxLinks {
		return false, grove.Errorf(grove.ErrInvalid, "%s: too many levels of symbolic links", w.rel)
	}
	var buf [4096]byte // PATH_MAX
	n, err := unix.Readlinkat(w.top(), name, buf[:])
	switch {
	case err == unix.EINVAL:
		return false, nil
	case err != nil:
		return false, mapErr("readlink", w.rel, err)
	case n == 0:
		return false, grove.Errorf(grove.ErrNotFound, "%s: empty symlink", w.rel)
	case n == len(buf):
		return false, grove.Errorf(grove.ErrInvalid, "%s: symlink target too long", w.rel)
	}
	target := string(buf[:n])
	// Absolute targets are refused even when they name a place inside the
	// workspace: the workspace's host path is not the agent's to know, and
	// inside its runtime the same link may mean something else.
	if target[0] == '/' {
		return false, outsideErr(w.rel)
	}
	if w.rest != "" {
		target += "/" + w.rest
	}
	w.rest = target
	return true, nil
}

// checkOpen refuses an open descriptor that is the workspace's .git.
func (f *FS) checkOpen(fd int, rel string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return mapErr("stat", rel, err)
	}
	return f.checkID(&st, rel)
}

func (f *FS) checkID(st *unix.Stat_t, rel string) error {
	id := idOf(st)
	for _, g := range f.gitIDs() {
		if id == g {
			return gitErr(rel)
		}
	}
	return nil
}

// gitIDs is the identity of the root's .git (and of its target, should it
// be a symlink). It is taken when the FS opens; a workspace without .git
// then is probed again on use until one appears.
func (f *FS) gitIDs() []fileID {
	if ids := f.git.Load(); ids != nil {
		return *ids
	}
	ids := probeGit(f.rootFd)
	if len(ids) > 0 {
		f.git.Store(&ids)
	}
	return ids
}

func probeGit(rootFd int) []fileID {
	var ids []fileID
	var st unix.Stat_t
	if unix.Fstatat(rootFd, ".git", &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return nil
	}
	ids = append(ids, idOf(&st))
	if st.Mode&unix.S_IFMT == unix.S_IFLNK && unix.Fstatat(rootFd, ".git", &st, 0) == nil {
		ids = append(ids, idOf(&st))
	}
	return ids
}

// openFinal opens rel, following symlinks at every component including the
// last, with flags (O_NOFOLLOW and O_CLOEXEC are added). The descriptor it
// returns is not the workspace's .git. An error from openat on the last
// component is returned as the errno, for the caller to map.
func (f *FS) openFinal(rel string, flags int) (int, error) {
	w := f.walk(rel)
	defer w.close()
	for {
		name, err := w.next(false)
		if err != nil {
			return -1, err
		}
		fd, err := unix.Openat(w.top(), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if isLinkErr(err) {
				followed, ferr := w.follow(name)
				if ferr != nil {
					return -1, ferr
				}
				if followed {
					continue
				}
			}
			return -1, err
		}
		if err := f.checkOpen(fd, rel); err != nil {
			unix.Close(fd)
			return -1, err
		}
		return fd, nil
	}
}

// lstatFinal stats rel, following symlinks at every component including
// the last, without opening the object.
func (f *FS) lstatFinal(rel string) (unix.Stat_t, error) {
	w := f.walk(rel)
	defer w.close()
	var st unix.Stat_t
	name, err := w.next(false)
	for err == nil {
		if err := unix.Fstatat(w.top(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return st, mapErr("stat", rel, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return st, f.checkID(&st, rel)
		}
		var followed bool
		if followed, err = w.follow(name); followed {
			name, err = w.next(false)
		}
		// Not followed and no error: no longer a symlink, stat it again
		// (follow counted the round, so this cannot spin).
	}
	return st, err
}

var errNoTempDir = errors.New("fsops: writes need Options.TempDir, a directory for temporary files outside the workspace")
