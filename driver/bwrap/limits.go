package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/internal/procexec"
)

// limits are the effective limits of one workspace's commands.
type limits struct {
	processes     int
	userProcesses int
	fileSize      int64
	cpu           time.Duration // 0: none
	memory        int64
	cpus          float64
	tmp           int64
}

func limitsOf(l driver.Limits) limits {
	out := limits{processes: l.Processes, userProcesses: l.UserProcesses, fileSize: l.FileSize, cpu: l.CPUTime,
		memory: l.MemoryBytes, cpus: l.CPUs, tmp: l.TmpBytes}
	if out.processes == 0 {
		out.processes = DefaultProcesses
	}
	if out.userProcesses == 0 {
		out.userProcesses = DefaultUserProcesses
	}
	if out.fileSize == 0 {
		out.fileSize = DefaultFileSize
	}
	if out.memory == 0 {
		out.memory = DefaultMemory
	}
	if out.cpus == 0 {
		out.cpus = DefaultCPUs
	}
	if out.tmp == 0 {
		out.tmp = DefaultTmp
	}
	return out
}

// infoTimeout bounds the wait for bwrap to report its sandbox's pid.
const infoTimeout = 10 * time.Second

// launch is bwrap's command line for args, started blocked (--block-fd)
// and reporting its sandbox's pid (--info-fd), with started — the hook to
// run once the process is up — which applies the limits to that pid (and
// enters the workspace's cgroup) before letting the sandbox go, and
// release, which frees the descriptors once the process is gone. Exec and
// Spawn share it, so a spawned process gets exactly Exec's sandbox.
func (d *Driver) launch(args []string, l limits, cg *wsCgroup) (cmd *exec.Cmd, started func(int) error, release func(), err error) {
	blockR, blockW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bwrap: %w", err)
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		blockR.Close()
		blockW.Close()
		return nil, nil, nil, fmt.Errorf("bwrap: %w", err)
	}
	filter, err := filterFile(d.seccomp)
	if err != nil {
		blockR.Close()
		blockW.Close()
		infoR.Close()
		infoW.Close()
		return nil, nil, nil, err
	}
	// ExtraFiles become fds 3, 4 and 5 in bwrap (args names 5 for
	// --seccomp).
	full := append([]string{d.bin, "--block-fd", "3", "--info-fd", "4"}, args...)
	cmd = &exec.Cmd{Path: d.bin, Args: full, Env: []string{}, ExtraFiles: []*os.File{blockR, infoW, filter}}
	var once sync.Once
	release = func() {
		once.Do(func() {
			blockR.Close()
			infoW.Close()
			blockW.Close()
			infoR.Close()
			filter.Close()
		})
	}
	started = func(int) error {
		blockR.Close()
		infoW.Close()
		pid, err := sandboxPid(infoR)
		if err != nil {
			// bwrap failed before creating the sandbox; its exit status
			// and stderr tell why.
			return errNoSandbox
		}
		if cg != nil {
			if err := d.cgroups.enter(cg, pid); err != nil {
				return err
			}
		}
		if err := setLimits(pid, l, d.drop == nil); err != nil {
			return err
		}
		_, err = blockW.Write([]byte{1})
		return err
	}
	return cmd, started, release, nil
}

// errNoSandbox: bwrap reported no sandbox (it failed before making one).
var errNoSandbox = errors.New("bwrap did not start the sandbox")

// run starts bwrap blocked (--block-fd), applies the limits to the sandbox
// process it reports (--info-fd), then lets it run.
func (d *Driver) run(ctx context.Context, args []string, l limits, cg *wsCgroup, p procexec.Params) (*grove.ExecResult, error) {
	cmd, started, release, err := d.launch(args, l, cg)
	if err != nil {
		return nil, err
	}
	defer release()

	ooms := int64(-1)
	if cg != nil {
		ooms = d.cgroups.oomKills(cg)
	}
	p.Started = func(pid int) error {
		if err := started(pid); err != nil && !errors.Is(err, errNoSandbox) {
			return err
		}
		// Without a sandbox, bwrap's exit status and stderr tell why:
		// let Run collect them.
		return nil
	}
	res, err := procexec.Run(ctx, cmd, p)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, grove.Errorf(grove.ErrNotInstalled, "bwrap: %v", err)
		}
		return nil, err
	}
	// The count is the workspace's: with concurrent commands in one
	// workspace, a failed one reports the kill of any of them.
	if ooms >= 0 && res.ExitCode != 0 && d.cgroups.oomKills(cg) > ooms {
		res.OOMKilled = true
	}
	return res, nil
}

// sandboxPid reads the child pid from bwrap's --info-fd JSON.
func sandboxPid(r *os.File) (int, error) {
	_ = r.SetReadDeadline(time.Now().Add(infoTimeout))
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0, err
	}
	if info.ChildPid <= 0 {
		return 0, errors.New("bwrap reported no child pid")
	}
	return info.ChildPid, nil
}

// setLimits sets hard and soft limits on the (still blocked) sandbox
// process; everything the command starts inherits them. nproc says
// whether RLIMIT_NPROC applies: in its own user namespace it counts only
// the command's processes, but a root server's sandboxes all run as one
// host uid, where it would count every tenant's together (the pids cgroup
// bounds those instead).
func setLimits(pid int, l limits, nproc bool) error {
	set := func(res int, v uint64) error {
		if err := prlimit(pid, res, v); err != nil {
			return fmt.Errorf("bwrap: prlimit: %w", err)
		}
		return nil
	}
	if nproc {
		if err := set(rlimitNproc, uint64(l.processes)); err != nil {
			return err
		}
	}
	if err := set(syscall.RLIMIT_FSIZE, uint64(l.fileSize)); err != nil {
		return err
	}
	if l.cpu > 0 {
		secs := uint64((l.cpu + time.Second - 1) / time.Second)
		if err := set(syscall.RLIMIT_CPU, secs); err != nil {
			return err
		}
	}
	return nil
}

// rlimitNproc is RLIMIT_NPROC, which package syscall does not name.
const rlimitNproc = 6

// prlimit sets soft and hard limit res of another process. Package
// syscall only sets the calling process's limits; this avoids a
// golang.org/x/sys dependency for one system call.
func prlimit(pid, res int, v uint64) error {
	lim := syscall.Rlimit{Cur: v, Max: v}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(res), uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
