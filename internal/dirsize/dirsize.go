// Package dirsize measures the disk a directory tree takes without ever
// leaving it: agent code may swap any directory for a symlink while the
// walk runs, so the walk opens each directory relative to its parent with
// O_NOFOLLOW and never crosses into another filesystem (a mount).
//
// It counts allocated blocks (st_blocks × 512) of every inode — directories,
// symlinks and empty files included — plus a charge per inode, so a tree of
// millions of empty files is not free, and it counts the inodes.
package dirsize

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// InodeCharge is what each inode counts for beyond its blocks: one block,
// so a byte quota also bounds the inodes a tree may take (a 10 GiB quota
// allows about 2.6 million empty files, not unlimited ones).
const InodeCharge = 4096

// MaxDepth bounds how deep the walk goes (each level holds a descriptor);
// deeper directories count as one inode each, unvisited.
const MaxDepth = 256

// Usage is what a tree takes.
type Usage struct {
	Bytes  int64 // allocated bytes plus InodeCharge per inode
	Inodes int64
}

// Of measures dir. A dir that does not exist is empty.
func Of(dir string) Usage {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Usage{}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return Usage{}
	}
	var u Usage
	u.add(&st)
	u.walk(fd, st.Dev, 1)
	return u
}

func (u *Usage) add(st *unix.Stat_t) {
	u.Inodes++
	u.Bytes += st.Blocks*512 + InodeCharge
}

// walk adds everything in the directory open on fd.
func (u *Usage) walk(fd int, dev uint64, depth int) {
	rfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(rfd), ".")
	defer f.Close()
	for {
		names, err := f.Readdirnames(512)
		for _, name := range names {
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Dev != dev {
				continue // vanished, or another filesystem mounted here
			}
			u.add(&st)
			if st.Mode&unix.S_IFMT != unix.S_IFDIR || depth >= MaxDepth {
				continue
			}
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // swapped for a link or a file since the stat: not ours to follow
			}
			var sst unix.Stat_t
			if unix.Fstat(sub, &sst) == nil && sst.Dev == dev && sst.Ino == st.Ino {
				u.walk(sub, dev, depth+1)
			}
			unix.Close(sub)
		}
		if err != nil || len(names) == 0 {
			if !errors.Is(err, io.EOF) && err != nil {
				return
			}
			return
		}
	}
}
