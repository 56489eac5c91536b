package fsops

import (
	"errors"
	"io"
	"path"
	"slices"
	"strings"

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
// Symlinks are listed as entries but never followed.
//
// At most maxEntries entries are returned (<= 0: DefaultMaxEntries); the
// bool reports whether the listing was cut short.
func (f *FS) ListDir(rel string, depth, maxEntries int) ([]grove.DirEntry, bool, error) {
	rel, err := CleanPath(rel)
	if err != nil {
		return nil, false, err
	}
	fi, err := f.root.Stat(rel)
	if err != nil {
		return nil, false, mapErr("list", rel, err)
	}
	if !fi.IsDir() {
		return nil, false, grove.Errorf(grove.ErrInvalid, "%s is not a directory", rel)
	}
	depth = min(max(depth, 1), MaxDepth)
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	var out []grove.DirEntry
	level := []string{rel}
	for d := 0; d < depth && len(level) > 0; d++ {
		var next []string
		for _, dir := range level {
			entries, cut, err := f.readDir(dir)
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

// readDir reads one directory, sorted dirs first; cut reports a directory
// larger than maxDirScan.
func (f *FS) readDir(dir string) ([]grove.DirEntry, bool, error) {
	d, err := f.root.Open(dir)
	if err != nil {
		return nil, false, mapErr("list", dir, err)
	}
	defer d.Close()
	var entries []grove.DirEntry
	cut := false
	for {
		batch, err := d.ReadDir(1024)
		for _, de := range batch {
			if strings.EqualFold(de.Name(), ".git") {
				continue
			}
			info, err := de.Info()
			if err != nil {
				continue // removed since the directory was read
			}
			p := de.Name()
			if dir != "." {
				p = path.Join(dir, de.Name())
			}
			entries = append(entries, entry(p, info))
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
