package docker

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/moby/profiles/seccomp"
)

// tracing are the system calls that read or steer another process, which
// Docker's default profile allows to every container on kernels ≥ 4.8.
// A command could then attach to the container's init or to the running
// commands of the other workspaces that share the container (same uid),
// and write into their workspaces through them. (A bwrap sandbox holds one
// command in its own pid namespace, so there ptrace only reaches the
// command's own processes and stays allowed for debuggers;
// docs/SECURITY.md, "Sandbox privileges".)
var tracing = []string{"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise"}

// seccompProfile is Docker's default seccomp profile (moby's, the one the
// engine applies when a container names none) without the tracing calls,
// as the JSON the engine takes in HostConfig.SecurityOpt. Rules granted
// only with a capability are left alone: containers have none.
// tracingProfile is Docker's default profile unchanged, tracing calls
// included: the profile of a workspace's debug container (spawn.go),
// which hosts that workspace alone.
//
// It also lets a process set ADDR_NO_RANDOMIZE (alone or with the
// personalities the default profile allows): debuggers launch their
// program with address randomisation off, which only weakens that
// program, and lldb refuses to launch when the call fails.
var tracingProfile = sync.OnceValues(func() (string, error) {
	b, err := json.Marshal(seccomp.DefaultProfile())
	if err != nil {
		return "", fmt.Errorf("docker: seccomp profile: %w", err)
	}
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		return "", fmt.Errorf("docker: seccomp profile: %w", err)
	}
	const addrNoRandomize = 0x0040000
	calls, _ := p["syscalls"].([]any)
	for _, persona := range []int{0x0, 0x0008, 0x20000, 0x20008} {
		calls = append(calls, map[string]any{
			"names":  []string{"personality"},
			"action": "SCMP_ACT_ALLOW",
			"args":   []any{map[string]any{"index": 0, "value": persona | addrNoRandomize, "op": "SCMP_CMP_EQ"}},
		})
	}
	p["syscalls"] = calls
	if b, err = json.Marshal(p); err != nil {
		return "", fmt.Errorf("docker: seccomp profile: %w", err)
	}
	return string(b), nil
})

var seccompProfile = sync.OnceValues(func() (string, error) {
	p := seccomp.DefaultProfile()
	kept := p.Syscalls[:0]
	for _, sc := range p.Syscalls {
		if sc.Includes == nil || len(sc.Includes.Caps) == 0 {
			sc.Names = slices.DeleteFunc(sc.Names, func(n string) bool { return slices.Contains(tracing, n) })
			if len(sc.Names) == 0 {
				continue
			}
		}
		kept = append(kept, sc)
	}
	p.Syscalls = kept
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("docker: seccomp profile: %w", err)
	}
	return string(b), nil
})
