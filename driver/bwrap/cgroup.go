package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// pidsCgroup is a parent cgroup, in a hierarchy with the pids controller,
// under which each command gets a child cgroup bounding its process count.
type pidsCgroup struct {
	dir string

	// free holds empty cgroups for reuse. Removing a cgroup right after
	// its command fails with EBUSY until the kernel has released the
	// exited tasks, which costs milliseconds per command; reusing an empty
	// one costs two small writes.
	mu   sync.Mutex
	free []*cgroup
}

// maxFree bounds the reuse pool; more concurrent commands than this make
// and remove their own cgroups.
const maxFree = 8

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

// get returns an empty cgroup limited to max processes.
func (p *pidsCgroup) get(max int) (*cgroup, error) {
	p.mu.Lock()
	var cg *cgroup
	for len(p.free) > 0 && cg == nil {
		c := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		if c.empty() {
			cg = c
		} else {
			c.remove()
		}
	}
	p.mu.Unlock()
	if cg == nil {
		return p.make(max)
	}
	if err := os.WriteFile(filepath.Join(cg.dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		cg.remove()
		return nil, fmt.Errorf("bwrap: pids cgroup: %w", err)
	}
	return cg, nil
}

// put returns a cgroup whose command has ended.
func (p *pidsCgroup) put(cg *cgroup) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < maxFree {
		p.free = append(p.free, cg)
		return
	}
	cg.remove()
}

// close removes the pooled cgroups.
func (p *pidsCgroup) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cg := range p.free {
		cg.remove()
	}
	p.free = nil
}

// enter takes a cgroup limited to max processes and moves pid into it.
// pid is blocked before forking, so all its descendants are counted.
func (p *pidsCgroup) enter(pid, max int) (*cgroup, error) {
	cg, err := p.get(max)
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

// empty reports whether no task is left in the cgroup (exited tasks may
// linger briefly after their command returned).
func (c *cgroup) empty() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "pids.current"))
	return err == nil && strings.TrimSpace(string(b)) == "0"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
