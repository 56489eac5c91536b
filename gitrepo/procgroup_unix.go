//go:build unix

package gitrepo

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts git in its own process group and makes cancellation
// kill the whole group: git spawns helpers (remote-https, ssh, pack-objects)
// that would otherwise outlive the context and hold the pipes open. git
// also dies with Grove (Pdeathsig): a clone or fetch must not go on
// writing into a cache after the server that started it was killed.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
