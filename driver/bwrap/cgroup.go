package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// pidsCgroup is a parent cgroup, in a hierarchy with the pids controller,
// under which each command gets a child cgroup bounding its process count.
type pidsCgroup struct {
	dir string
}

// cgroupSeq names per-command cgroups uniquely within this process; every
// driver in the process shares the parent directory.
var cgroupSeq atomic.Int64

// findPidsCgroup returns a usable pids cgroup parent: the configured one,
// or a "grove" child of the v1 pids hierarchy or of the v2 root. Nil when
// none is writable.
func findPidsCgroup(configured string) *pidsCgroup {
	candidates := []string{configured}
	if configured == "" {
		candidates = []string{"/sys/fs/cgroup/pids/grove", "/sys/fs/cgroup/grove"}
	}
	for _, dir := range candidates {
		parent := filepath.Dir(dir)
		v2 := fileExists(filepath.Join(parent, "cgroup.controllers"))
		if v2 {
			// Delegate the pids controller to our subtree; harmless when
			// it already is.
			_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+pids"), 0)
		}
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			continue
		}
		if v2 {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0)
		}
		cg := &pidsCgroup{dir: dir}
		if probe, err := cg.make(1); err == nil {
			probe.remove()
			return cg
		}
	}
	return nil
}

// cgroup is one command's cgroup.
type cgroup struct{ dir string }

func (p *pidsCgroup) make(max int) (*cgroup, error) {
	var dir string
	for {
		dir = filepath.Join(p.dir, fmt.Sprintf("exec-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) { // a leftover of an earlier process with our pid
			return nil, fmt.Errorf("bwrap: pids cgroup: %w", err)
		}
	}
	cg := &cgroup{dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		cg.remove()
		return nil, fmt.Errorf("bwrap: pids cgroup: %w", err)
	}
	return cg, nil
}

// enter creates a cgroup limited to max processes and moves pid into it.
// pid is blocked before forking, so all its descendants are counted.
func (p *pidsCgroup) enter(pid, max int) (*cgroup, error) {
	cg, err := p.make(max)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cg.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		cg.remove()
		return nil, fmt.Errorf("bwrap: pids cgroup: %w", err)
	}
	return cg, nil
}

// remove deletes the cgroup once its processes are gone; the kernel may
// take a moment to release the last exited ones.
func (c *cgroup) remove() {
	for i := 0; i < 50; i++ {
		err := os.Remove(c.dir)
		if err == nil || os.IsNotExist(err) || !strings.Contains(err.Error(), "busy") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
