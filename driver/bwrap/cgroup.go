package bwrap

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var (
	errInval = syscall.EINVAL
	errBusy  = syscall.EBUSY
)

// cgroupName is the directory under each hierarchy that holds Grove's
// cgroups: <hierarchy>/grove/<user>/<workspace>.
const cgroupName = "grove"

// controllers are the cgroup controllers the driver uses.
var controllers = []string{"pids", "memory", "cpu"}

// cgroups manages one cgroup per workspace, nested under one per user, in
// the pids, memory and cpu controllers. On cgroup v1 each controller is a
// hierarchy of its own (base["pids"] = /sys/fs/cgroup/pids/grove, ...); on
// v2 all share the unified one (/sys/fs/cgroup/grove).
//
// Every command of a workspace enters the workspace's cgroup, so its pids
// and memory limits bound all of that workspace's commands together, and
// the user's cgroup bounds the processes of all of the user's workspaces.
// Entering costs one write to cgroup.procs per hierarchy; the cgroups
// themselves are made once per workspace and removed by Destroy (or, left
// behind by a stopped server, by the next New).
type cgroups struct {
	v2   bool
	base map[string]string // controller -> <hierarchy>/grove

	mu sync.Mutex
	ws map[string]*wsCgroup // by workspace id
}

// wsCgroup is one workspace's cgroup.
type wsCgroup struct {
	user, id string
	l        limits
	// dirs is one directory per hierarchy (v2: one), keyed by the
	// controllers it serves ("pids", "memory", "cpu"; on v2 "" for all).
	dirs map[string]string
}

// findCgroups returns the cgroups the driver can use under mount (the
// cgroup file system, normally /sys/fs/cgroup), or nil when it cannot
// create cgroups with at least the pids controller. v1 is used where the
// pids controller has a hierarchy of its own; otherwise v2 where mount is
// a unified hierarchy offering pids.
func findCgroups(mount string) *cgroups {
	if mount == "" {
		mount = "/sys/fs/cgroup"
	}
	var cg *cgroups
	if fileExists(filepath.Join(mount, "pids", "cgroup.procs")) {
		cg = &cgroups{base: map[string]string{}}
		for _, c := range controllers {
			h := filepath.Join(mount, c)
			if !fileExists(filepath.Join(h, "cgroup.procs")) {
				continue
			}
			dir := filepath.Join(h, cgroupName)
			if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
				continue
			}
			cg.base[c] = dir
		}
	} else if ctl, err := os.ReadFile(filepath.Join(mount, "cgroup.controllers")); err == nil {
		cg = &cgroups{v2: true, base: map[string]string{}}
		dir := filepath.Join(mount, cgroupName)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return nil
		}
		have := strings.Fields(string(ctl))
		for _, c := range controllers {
			if !contains(have, c) {
				continue
			}
			// Delegate the controller to our subtree; harmless when it
			// already is.
			_ = os.WriteFile(filepath.Join(mount, "cgroup.subtree_control"), []byte("+"+c), 0o644)
			if os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0o644) == nil {
				cg.base[c] = dir
			}
		}
	}
	if cg == nil || cg.base["pids"] == "" {
		return nil
	}
	cg.ws = map[string]*wsCgroup{}
	return cg
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// has reports whether controller c is in use.
func (c *cgroups) has(ctl string) bool { return c != nil && c.base[ctl] != "" }

// hierarchies returns the distinct base directories, each with the
// controllers it serves.
func (c *cgroups) hierarchies() map[string][]string {
	out := map[string][]string{}
	for _, ctl := range controllers {
		if b := c.base[ctl]; b != "" {
			out[b] = append(out[b], ctl)
		}
	}
	return out
}

// safeName matches names used as they are for cgroup directories.
var safeName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// userDir names a user's cgroup: a hash, so that user names (which may
// hold any character) never reach the file system.
func userDir(user string) string {
	h := sha256.Sum256([]byte(user))
	return "u-" + hex.EncodeToString(h[:8])
}

// workspaceDir names a workspace's cgroup: its id when that is a safe
// name, else a hash of it.
func workspaceDir(id string) string {
	if safeName.MatchString(id) {
		return "w-" + id
	}
	h := sha256.Sum256([]byte(id))
	return "w-" + hex.EncodeToString(h[:8])
}

// workspace returns the workspace's cgroup, creating it (and its user's)
// with the limits l the first time.
func (c *cgroups) workspace(user, id string, l limits) (*wsCgroup, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.ws[id]; w != nil && w.user == user && w.l == l {
		return w, nil
	}
	w := &wsCgroup{user: user, id: id, l: l, dirs: map[string]string{}}
	if err := c.build(w); err != nil {
		return nil, err
	}
	c.ws[id] = w
	return w, nil
}

// build makes w's directories and writes its limits; it is idempotent, so
// it also repairs a cgroup removed underneath the driver (another server's
// New cleaning up what looked like a leftover).
func (c *cgroups) build(w *wsCgroup) error {
	for base, ctls := range c.hierarchies() {
		udir := filepath.Join(base, userDir(w.user))
		if err := mkdir(udir); err != nil {
			return err
		}
		dir := filepath.Join(udir, workspaceDir(w.id))
		if err := mkdir(dir); err != nil {
			return err
		}
		if c.v2 {
			for _, ctl := range ctls {
				if err := writeCgroup(udir, "cgroup.subtree_control", "+"+ctl); err != nil {
					return err
				}
			}
		}
		for _, ctl := range ctls {
			if err := c.writeLimits(ctl, udir, dir, w.l); err != nil {
				return err
			}
			w.dirs[ctl] = dir
		}
	}
	return nil
}

func mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return fmt.Errorf("bwrap: cgroup: %w", err)
	}
	return nil
}

// writeLimits writes controller ctl's limits into the user's cgroup udir
// and the workspace's cgroup dir. The file names are cgroupFiles'.
func (c *cgroups) writeLimits(ctl, udir, dir string, l limits) error {
	for _, f := range cgroupFiles(c.v2, ctl, l) {
		target := dir
		if f.user {
			target = udir
		}
		if f.optional && !fileExists(filepath.Join(target, f.name)) {
			continue
		}
		if err := writeCgroup(target, f.name, f.value); err != nil {
			return err
		}
	}
	return nil
}

// cgroupFile is one limit written at cgroup creation.
type cgroupFile struct {
	name, value string
	user        bool // the user's cgroup, not the workspace's
	optional    bool // absent without swap accounting
}

// cgroupFiles lists what controller ctl's limits write, in order. On v1
// memory.memsw.limit_in_bytes (memory plus swap) must not be below
// memory.limit_in_bytes, so the memory limit comes first; it equals the
// memory limit, so swap is no way around it.
func cgroupFiles(v2 bool, ctl string, l limits) []cgroupFile {
	switch {
	case ctl == "pids":
		return []cgroupFile{
			{name: "pids.max", value: strconv.Itoa(l.userProcesses), user: true},
			{name: "pids.max", value: strconv.Itoa(l.processes)},
		}
	case ctl == "memory" && v2:
		return []cgroupFile{
			{name: "memory.max", value: strconv.FormatInt(l.memory, 10)},
			{name: "memory.swap.max", value: "0", optional: true},
		}
	case ctl == "memory":
		return []cgroupFile{
			{name: "memory.limit_in_bytes", value: strconv.FormatInt(l.memory, 10)},
			{name: "memory.memsw.limit_in_bytes", value: strconv.FormatInt(l.memory, 10), optional: true},
		}
	case ctl == "cpu" && v2:
		return []cgroupFile{{name: "cpu.max", value: fmt.Sprintf("%d %d", l.cpuQuota(), cpuPeriod)}}
	case ctl == "cpu":
		return []cgroupFile{
			{name: "cpu.cfs_period_us", value: strconv.Itoa(cpuPeriod)},
			{name: "cpu.cfs_quota_us", value: strconv.FormatInt(l.cpuQuota(), 10)},
		}
	}
	return nil
}

// cpuPeriod is the CFS period, in microseconds.
const cpuPeriod = 100000

// cpuQuota is the CFS quota per period for l.cpus CPUs.
func (l limits) cpuQuota() int64 {
	q := int64(l.cpus * cpuPeriod)
	if q < 1000 {
		q = 1000 // the kernel's minimum
	}
	return q
}

// writeCgroup writes one cgroup file. On v1 a memory limit above the
// current memory+swap limit (raising the limits of a cgroup kept from an
// earlier run) fails with EINVAL until memory+swap is raised first.
func writeCgroup(dir, name, value string) error {
	err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0o644)
	if err != nil && errors.Is(err, errInval) && name == "memory.limit_in_bytes" {
		// Raising the limit above an existing, lower memsw limit (a
		// cgroup kept from an earlier run): raise memsw first.
		if os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(value), 0o644) == nil {
			err = os.WriteFile(filepath.Join(dir, name), []byte(value), 0o644)
		}
	}
	if err != nil {
		return fmt.Errorf("bwrap: cgroup: %s: %w", name, err)
	}
	return nil
}

// enter moves pid into the workspace's cgroup in every hierarchy. pid is
// blocked before running the command, so all its descendants are counted.
// A cgroup removed underneath (another server's leftover cleanup) is made
// again.
func (c *cgroups) enter(w *wsCgroup, pid int) error {
	for attempt := 0; ; attempt++ {
		err := c.enterOnce(w, pid)
		if err == nil || attempt == 2 || !errors.Is(err, os.ErrNotExist) {
			return err
		}
		c.mu.Lock()
		err = c.build(w)
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

func (c *cgroups) enterOnce(w *wsCgroup, pid int) error {
	done := map[string]bool{}
	for _, ctl := range controllers {
		dir := w.dirs[ctl]
		if dir == "" || done[dir] {
			continue
		}
		done[dir] = true
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("bwrap: cgroup: %w", err)
		}
	}
	return nil
}

// oomKills reads the workspace's count of processes killed by the OOM
// killer (-1: unknown). Comparing it before and after a command tells
// whether one of the workspace's processes was killed meanwhile.
func (c *cgroups) oomKills(w *wsCgroup) int64 {
	dir := w.dirs["memory"]
	if dir == "" {
		return -1
	}
	name := "memory.oom_control"
	if c.v2 {
		name = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return -1
	}
	return parseKeyed(string(b), "oom_kill")
}

// parseKeyed returns the value of key in a "key value" per line file, or
// -1.
func parseKeyed(s, key string) int64 {
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// remove deletes a workspace's cgroups (its commands have ended; the
// kernel may take a moment to release the last exited tasks).
func (c *cgroups) remove(id string) {
	c.mu.Lock()
	w := c.ws[id]
	delete(c.ws, id)
	c.mu.Unlock()
	if w == nil {
		return
	}
	done := map[string]bool{}
	for _, dir := range w.dirs {
		if !done[dir] {
			done[dir] = true
			rmdirWait(dir)
		}
	}
}

// rmdirWait removes an empty cgroup, waiting briefly for exiting tasks.
func rmdirWait(dir string) {
	for i := 0; i < 50; i++ {
		err := os.Remove(dir)
		if err == nil || os.IsNotExist(err) || !errors.Is(err, errBusy) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cleanup removes the empty cgroups under Grove's directories, deepest
// first: those a stopped server left behind. A cgroup with processes or
// children cannot be removed and stays; one another running server uses
// and that is empty right now is made again by its next enter.
func (c *cgroups) cleanup() {
	for base := range c.hierarchies() {
		users, _ := os.ReadDir(base)
		for _, u := range users {
			if !u.IsDir() {
				continue
			}
			udir := filepath.Join(base, u.Name())
			wss, _ := os.ReadDir(udir)
			for _, w := range wss {
				if w.IsDir() {
					_ = os.Remove(filepath.Join(udir, w.Name()))
				}
			}
			_ = os.Remove(udir)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// complete reports whether every controller is in use, so that all of
// Limits is enforced.
func (c *cgroups) complete() bool {
	for _, ctl := range controllers {
		if !c.has(ctl) {
			return false
		}
	}
	return true
}
