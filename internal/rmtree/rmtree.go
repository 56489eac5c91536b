// Package rmtree removes a directory tree of any depth with a constant
// number of open file descriptors and no path longer than one name.
//
// os.RemoveAll keeps a descriptor open for every level it descends, so a
// tree 50,000 directories deep (which agent code can make in seconds) runs
// a server out of descriptors; path-based removal fails past PATH_MAX.
// Here the walk holds one directory at a time, remembers only the names it
// went down through, and climbs back with "..". It is meant for trees no
// live process is changing (a workspace whose runtime is gone, Grove's own
// temporaries). It never follows a symlink, and it checks every climb: the
// directory ".." leads to must be the one it came down from (device and
// inode), so a rename racing the walk (a process an agent left behind)
// makes it stop with an error instead of deleting outside the tree.
package rmtree

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// RemoveAll removes dir and everything below it. A missing dir is not an
// error.
func RemoveAll(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return os.Remove(dir) // a file or a symlink: removed itself, never followed
	}
	if err != nil {
		return fmt.Errorf("rmtree: open %s: %w", dir, err)
	}
	// names from dir to the directory fd is open on, and the identity of
	// each directory they are entries of.
	var down []string
	var parents []unix.Stat_t
	for {
		sub, err := clearDir(fd)
		if err != nil {
			unix.Close(fd)
			return err
		}
		if sub != "" {
			var here unix.Stat_t
			if err := unix.Fstat(fd, &here); err != nil {
				unix.Close(fd)
				return fmt.Errorf("rmtree: %w", err)
			}
			next, err := unix.Openat(fd, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			if err != nil {
				return fmt.Errorf("rmtree: descend: %w", err)
			}
			fd = next
			down = append(down, sub)
			parents = append(parents, here)
			if testHookDescended != nil {
				testHookDescended(down)
			}
			continue
		}
		// fd's directory is empty.
		if len(down) == 0 {
			unix.Close(fd)
			if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("rmtree: %w", err)
			}
			return nil
		}
		up, err := unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("rmtree: climb: %w", err)
		}
		fd = up
		want := parents[len(parents)-1]
		var got unix.Stat_t
		if err := unix.Fstat(fd, &got); err != nil || got.Dev != want.Dev || got.Ino != want.Ino {
			unix.Close(fd)
			return fmt.Errorf("rmtree: %s changed while it was being removed; stopped", dir)
		}
		name := down[len(down)-1]
		down, parents = down[:len(down)-1], parents[:len(parents)-1]
		if err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			unix.Close(fd)
			return fmt.Errorf("rmtree: %w", err)
		}
	}
}

// testHookDescended, when set, runs after each descent with the names
// walked down so far.
var testHookDescended func(down []string)

// clearDir unlinks every non-directory in the directory open on fd and
// every empty subdirectory, and returns the name of a non-empty
// subdirectory to descend into, or "" when the directory is now empty.
func clearDir(fd int) (string, error) {
	// A private descriptor for reading entries, so fd's offset is
	// untouched and the listing restarts cleanly after each pass.
	rfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("rmtree: %w", err)
	}
	f := os.NewFile(uintptr(rfd), ".")
	defer f.Close()
	for {
		names, err := f.Readdirnames(1024)
		for _, name := range names {
			err := unix.Unlinkat(fd, name, 0)
			switch {
			case err == nil, errors.Is(err, unix.ENOENT):
				continue
			case errors.Is(err, unix.EISDIR), errors.Is(err, unix.EPERM):
			default:
				return "", fmt.Errorf("rmtree: unlink: %w", err)
			}
			err = unix.Unlinkat(fd, name, unix.AT_REMOVEDIR)
			switch {
			case err == nil, errors.Is(err, unix.ENOENT):
			case errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
				return name, nil
			default:
				return "", fmt.Errorf("rmtree: rmdir: %w", err)
			}
		}
		if err == io.EOF || (err == nil && len(names) == 0) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("rmtree: read: %w", err)
		}
	}
}
