package fsops

import (
	"errors"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/grove-dev/grove"
)

// Listing limits. The per-directory limit bounds the memory one huge
// directory can take before it is sorted.
const (
	DefaultMaxEntries = 1000
	MaxDepth          = 16
	maxDirScan        = 100_000
)

// ListDir lists the directory rel down to depth levels (1: its direct
// children; <= 0 counts as 1; capped at MaxDepth), skipping .git at every
// level. It walks breadth-first so that a cap keeps the shallow entries:
// all of level 1 comes first, then level 2 directory by directory; within
// one directory, subdirectories come before files, each sorted by name.
// Symlinks in rel are followed (within the workspace, never into .git);
// below rel they are listed as entries but never followed, and no
// subdirectory is entered through one, even if it is swapped for one
// while the listing runs.
//
// At most maxEntries entries are returned (<= 0: DefaultMaxEntries); the
// bool reports whether the listing was cut short.
func (f *FS) ListDir(rel string, depth, maxEntries int) ([]grove.DirEntry, bool, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return nil, false, err
	}
	base, err := f.openFinal(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOTDIR) {
		return nil, false, grove.Errorf(grove.ErrInvalid, "%s is not a directory", rel)
	}
	if err != nil {
		return nil, false, mapErr("list", rel, err)
	}
	defer unix.Close(base)
	depth = min(max(depth, 1), MaxDepth)
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	var out []grove.DirEntry
	level := []string{rel}
	for d := 0; d < depth && len(level) > 0; d++ {
		var next []string
		for _, dir := range level {
			entries, cut, err := f.readDir(base, rel, dir)
			if err != nil {
				if d == 0 {
					return nil, false, err
				}
				// A subdirectory that vanished or is unreadable does not
				// spoil the listing of its parent.
				continue
			}
			for _, e := range entries {
				if len(out) == maxEntries {
					return out, true, nil
				}
				out = append(out, e)
				if e.IsDir {
					next = append(next, e.Path)
				}
			}
			if cut {
				return out, true, nil
			}
		}
		level = next
	}
	return out, false, nil
}

// openBelow opens dir, a directory at or below base (the directory rel),
// one component at a time without following any symlink, and checks each
// against .git.
func (f *FS) openBelow(base int, rel, dir string) (int, error) {
	var sub string // dir relative to rel
	switch {
	case dir == rel:
	case rel == ".":
		sub = dir
	default:
		sub = strings.TrimPrefix(dir, rel+"/")
	}
	fd, err := unix.Openat(base, ".", dirFlags, 0)
	if err != nil {
		return -1, mapErr("list", dir, err)
	}
	for c := range strings.SplitSeq(sub, "/") {
		if c == "" {
			continue
		}
		if isGitName(c) || c == "." || c == ".." {
			unix.Close(fd)
			return -1, gitErr(dir)
		}
		next, err := unix.Openat(fd, c, dirFlags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, mapErr("list", dir, err)
		}
		if err := f.checkOpen(next, dir); err != nil {
			unix.Close(next)
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// readDir reads one directory, sorted dirs first; cut reports a directory
// larger than maxDirScan.
func (f *FS) readDir(base int, rel, dir string) ([]grove.DirEntry, bool, error) {
	fd, err := f.openBelow(base, rel, dir)
	if err != nil {
		return nil, false, err
	}
	d := os.NewFile(uintptr(fd), dir)
	defer d.Close()
	var entries []grove.DirEntry
	cut := false
	for {
		batch, err := d.ReadDir(1024)
		for _, de := range batch {
			if isGitName(de.Name()) {
				continue
			}
			var st unix.Stat_t
			if unix.Fstatat(fd, de.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue // removed since the directory was read
			}
			p := de.Name()
			if dir != "." {
				p = path.Join(dir, de.Name())
			}
			if f.checkID(&st, p) != nil {
				continue // .git under another spelling, or a link to the gitfile
			}
			entries = append(entries, entry(p, &st))
		}
		if errors.Is(err, io.EOF) || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, false, mapErr("list", dir, err)
		}
		if len(entries) >= maxDirScan {
			cut = true
			break
		}
	}
	slices.SortFunc(entries, func(a, b grove.DirEntry) int {
		if a.IsDir != b.IsDir {
			if a.IsDir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return entries, cut, nil
}
