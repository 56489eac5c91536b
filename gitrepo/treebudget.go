package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"github.com/grove-dev/grove"
)

// Defaults for WorkspaceOptions' checkout bounds.
const (
	DefaultMaxCheckoutFiles = 1_000_000
	DefaultMaxCheckoutBytes = 10 << 30
)

// errOverBudget stops ls-tree once a tree is known to be too big.
var errOverBudget = errors.New("tree over the checkout budget")

// treeCounter reads `git ls-tree -r -l -z` and counts entries and blob
// bytes, failing the write (so git stops) once either bound is passed.
type treeCounter struct {
	maxFiles, maxBytes int64
	files, bytes       int64
	partial            []byte
}

func (c *treeCounter) Write(p []byte) (int, error) {
	data := append(c.partial, p...)
	for {
		i := bytes.IndexByte(data, 0)
		if i < 0 {
			break
		}
		rec := data[:i]
		data = data[i+1:]
		c.files++
		// "<mode> SP <type> SP <object> SP+ <size> TAB <path>"
		if meta, _, ok := bytes.Cut(rec, []byte{'\t'}); ok {
			f := bytes.Fields(meta)
			if len(f) == 4 {
				if n, err := strconv.ParseInt(string(f[3]), 10, 64); err == nil {
					c.bytes += n
				}
			}
		}
		if c.files > c.maxFiles || c.bytes > c.maxBytes {
			return 0, errOverBudget
		}
	}
	c.partial = append(c.partial[:0], data...)
	return len(p), nil
}

// checkTree refuses to check out rev in the repository of dir when its
// tree — with every repeated subtree expanded, as checkout would write
// it — holds more than maxFiles entries or maxBytes of content: a few
// kilobytes of objects (one subtree listed many times, many levels deep)
// would otherwise make host git write millions of files, outside every
// quota, before any sandbox exists.
func (g *Git) checkTree(ctx context.Context, dir, rev string, maxFiles, maxBytes int64) error {
	if maxFiles <= 0 {
		maxFiles = DefaultMaxCheckoutFiles
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxCheckoutBytes
	}
	c := &treeCounter{maxFiles: maxFiles, maxBytes: maxBytes}
	_, err := g.run(ctx, call{args: []string{"ls-tree", "-r", "-l", "-z", "--full-tree", "--end-of-options", rev}, dir: dir, env: workEnv(dir), stdout: c})
	if c.files > maxFiles || c.bytes > maxBytes {
		return grove.Errorf(grove.ErrResourceLimit, "the tree to check out holds more than %d files or %d bytes (this server's bound for a workspace)", maxFiles, maxBytes)
	}
	return err
}
