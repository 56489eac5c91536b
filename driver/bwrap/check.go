package bwrap

import (
	"bytes"
	"context"
	"os/exec"
	"strings"

	"github.com/grove-dev/grove"
)

// Check runs `true` in a sandbox with the namespaces every command uses,
// and returns an error wrapping grove.ErrUnavailable with bwrap's own
// explanation when this machine cannot create them (user namespaces
// disabled by sysctl, by an AppArmor policy, or inside a container that
// forbids them). Available only looks for the binary; Check proves it
// works, so callers can fall back truthfully.
func (d *Driver) Check(ctx context.Context) error {
	args := append([]string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"}, d.mounts...)
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--", "true")
	cmd := exec.CommandContext(ctx, d.bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return grove.Errorf(grove.ErrUnavailable, "bwrap cannot create a sandbox here: %s", msg)
	}
	return nil
}
