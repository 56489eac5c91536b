package bwrap

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter every sandboxed command runs under, given to bwrap
// with --seccomp. It is a deny list over an allow-by-default policy: the
// goal is not to shrink the kernel's surface as far as possible (Docker's
// default profile and gVisor do that) but to make sure agent code can
// never regain what the sandbox took away — even when some other layer
// (capabilities, the user namespace) is weaker than intended, for example
// on a host where user namespaces behave differently.
//
// Denied with EPERM:
//
//   - the mount family (mount, umount2, pivot_root, move_mount, open_tree,
//     fsopen, fsmount, fsconfig, fspick, mount_setattr): read-only binds of
//     the system, the cache's objects and the workspace's protected git
//     files stay read-only because nothing can remount or unmount them;
//   - new namespaces (unshare, setns, and clone with any CLONE_NEW* flag):
//     a fresh user namespace would hand the command a full capability set
//     over new mounts;
//   - the kernel keyring (keyctl, add_key, request_key), bpf,
//     perf_event_open, userfaultfd and io_uring (io_uring_setup,
//     io_uring_enter, io_uring_register): large kernel surfaces with a
//     history of local privilege escalations and nothing a build needs;
//   - kexec_load, kexec_file_load, init_module, finit_module,
//     delete_module, reboot, swapon, swapoff, acct, quotactl, quotactl_fd,
//     iopl, ioperm, chroot, name_to_handle_at, open_by_handle_at
//     (the latter escapes a bind mount by file handle), syslog, vhangup,
//     settimeofday, clock_settime, clock_adjtime, adjtimex,
//     lookup_dcookie, pidfd_getfd.
//
// clone3 answers ENOSYS: its flags live in memory a filter cannot read,
// and libc falls back to clone, whose flags it can.
//
// ptrace and process_vm_readv/writev stay allowed: debuggers (lldb, dlv,
// gdb) need them, and the sandbox's own pid namespace means the only
// processes a command can name are its own.
//
// Architectures other than the host's native one are refused outright
// (for x86-64 that includes the i386 and x32 system call tables, which a
// deny list written for x86-64 would not cover).
var deniedSyscalls = []string{
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount",
	"fsconfig", "fspick", "mount_setattr",
	"unshare", "setns",
	"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
	"chroot", "name_to_handle_at", "open_by_handle_at", "syslog", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "lookup_dcookie", "pidfd_getfd",
}

// x86-only system calls, denied where they exist.
var deniedX86 = []string{"iopl", "ioperm"}

// namespaceFlags are the clone flags that create a namespace.
var namespaceFlags = []uint64{
	unix.CLONE_NEWNS, unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// compileFilter assembles the filter into the raw sock_filter array bwrap
// reads from its --seccomp descriptor.
func compileFilter() ([]byte, error) {
	eperm := seccomp.Action(uint32(seccomp.ActionErrno) | uint32(unix.EPERM))
	enosys := seccomp.Action(uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS))
	names := deniedSyscalls
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "386" {
		names = append(append([]string(nil), names...), deniedX86...)
	}
	var cloneNS []seccomp.NameWithConditions
	for _, f := range namespaceFlags {
		cloneNS = append(cloneNS, seccomp.NameWithConditions{
			Name:       "clone",
			Conditions: seccomp.ArgumentConditions{{Argument: cloneFlagsArg(), Operation: seccomp.BitsSet, Value: f}},
		})
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: names, Action: eperm},
			{NamesWithCondtions: cloneNS, Action: eperm},
			{Names: []string{"clone3"}, Action: enosys},
		},
	}
	prog, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("bwrap: seccomp policy: %w", err)
	}
	// The library sends other architectures to the default action (allow);
	// refuse them before its program runs.
	native, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("bwrap: no seccomp architecture for %s", runtime.GOARCH)
	}
	guard := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: native, SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
	}
	raw, err := bpf.Assemble(append(guard, prog...))
	if err != nil {
		return nil, fmt.Errorf("bwrap: seccomp assemble: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.NativeEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}

// cloneFlagsArg is the position of clone's flags argument: 0, except on
// s390x, whose clone takes the stack first.
func cloneFlagsArg() uint32 {
	if runtime.GOARCH == "s390x" {
		return 1
	}
	return 0
}

// auditArch maps GOARCH to the AUDIT_ARCH value seccomp reports.
var auditArch = map[string]uint32{
	"amd64":   unix.AUDIT_ARCH_X86_64,
	"arm64":   unix.AUDIT_ARCH_AARCH64,
	"386":     unix.AUDIT_ARCH_I386,
	"riscv64": unix.AUDIT_ARCH_RISCV64,
	"ppc64le": unix.AUDIT_ARCH_PPC64LE,
	"s390x":   unix.AUDIT_ARCH_S390X,
}

// filterFile returns a pipe's read end holding the compiled filter, for one
// bwrap to read through --seccomp (bwrap reads it to the end, so each
// sandbox needs its own).
func filterFile(filter []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("bwrap: %w", err)
	}
	// The filter (a few hundred bytes) fits the pipe's buffer: the write
	// never blocks.
	_, err = w.Write(filter)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("bwrap: seccomp filter: %w", err)
	}
	return r, nil
}
