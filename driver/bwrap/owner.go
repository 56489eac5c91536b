package bwrap

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// handOver gives a root server's workspace to the sandbox's uid: every
// file and directory under dir, links themselves (never their targets).
// Host code no longer reads the workspace's git data (DESIGN.md §3), so
// host git's ownership checks do not stand in the way; Grove's own file
// writes give what they create the owner of the directory they write into
// (fsops). A workspace whose root already has the owner was handed over
// before.
func handOver(dir string, uid, gid int) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("bwrap: workspace: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) == uid && int(sys.Gid) == gid {
		return nil
	}
	// The root last: an interrupted walk is redone next time.
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		return os.Lchown(p, uid, gid)
	})
	if err == nil {
		err = os.Lchown(dir, uid, gid)
	}
	if err != nil {
		return fmt.Errorf("bwrap: hand the workspace to the sandbox's uid: %w", err)
	}
	return nil
}
