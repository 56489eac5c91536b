//go:build unix

package gitrepo

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts git in its own process group and makes cancellation
// kill the whole group: git spawns helpers (remote-https, ssh, pack-objects)
// that would otherwise outlive the context and hold the pipes open.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
