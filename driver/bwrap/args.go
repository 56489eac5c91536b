package bwrap

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
)

// sandboxHome is HOME inside the sandbox: in the private /tmp, so dotfiles
// written by tools vanish with the command instead of landing in the
// workspace.
const sandboxHome = "/tmp/home"

// systemDirs are bound read-only. On merged-/usr systems /bin, /lib, ...
// are symlinks into /usr and are recreated as symlinks.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// maskedFiles are readable by the sandbox's uid when Grove runs as root
// (the sandbox's uid maps to the caller's) and hold nothing a command
// needs.
var maskedFiles = []string{"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"}

// systemMounts computes the system part of the command line once.
func systemMounts() []string {
	var args []string
	for _, p := range systemDirs {
		st, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case st.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				continue
			}
			args = append(args, "--symlink", target, p)
		case st.IsDir():
			args = append(args, "--ro-bind", p, p)
		}
	}
	for _, p := range maskedFiles {
		if _, err := os.Stat(p); err == nil {
			args = append(args, "--ro-bind", "/dev/null", p)
		}
	}
	return args
}

// args builds bwrap's command line for one command. Order matters: later
// mounts cover earlier ones, so the workspace comes before the paths
// protected inside it.
func (d *Driver) args(spec driver.Spec, dir string, env []string, argv []string) []string {
	a := []string{
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--new-session",
		"--hostname", "grove",
	}
	if spec.Network != driver.NetworkDefault {
		a = append(a, "--unshare-net")
	}
	a = append(a, d.mounts...)
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
		"--tmpfs", "/tmp",
		"--dir", sandboxHome,
	)
	work := filepath.Clean(spec.WorkDir)
	if spec.Writable {
		a = append(a, "--bind", work, work)
	} else {
		a = append(a, "--ro-bind", work, work)
	}
	for _, p := range spec.ReadOnlyPaths {
		a = append(a, "--ro-bind", p, p)
	}
	if spec.Writable {
		for _, p := range pinnedDirs(work, spec.ProtectedPaths) {
			a = append(a, "--bind", p, p)
		}
	}
	for _, p := range spec.ProtectedPaths {
		a = append(a, "--ro-bind", p, p)
	}
	a = append(a, "--chdir", dir, "--clearenv")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	a = append(a, "--")
	return append(a, argv...)
}

// pinnedDirs lists every directory strictly between root and a protected
// path, shallowest first. Binding each over itself makes it a mount point,
// which cannot be renamed or removed from inside the sandbox.
func pinnedDirs(root string, protected []string) []string {
	seen := map[string]bool{}
	for _, p := range protected {
		for d := filepath.Dir(filepath.Clean(p)); d != root && strings.HasPrefix(d, root+"/"); d = filepath.Dir(d) {
			seen[d] = true
		}
	}
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool {
		if ci, cj := strings.Count(dirs[i], "/"), strings.Count(dirs[j], "/"); ci != cj {
			return ci < cj
		}
		return dirs[i] < dirs[j]
	})
	return dirs
}

// mapExecFailure turns bwrap's own report that the program could not be
// executed into the shell's exit codes (127 not found, 126 not
// executable), as the driver contract requires.
func mapExecFailure(res *grove.ExecResult) {
	if res.ExitCode != 1 || !strings.HasPrefix(string(res.Stderr), "bwrap: execvp ") {
		return
	}
	switch {
	case strings.Contains(string(res.Stderr), "No such file or directory"):
		res.ExitCode = 127
	case strings.Contains(string(res.Stderr), "Permission denied"):
		res.ExitCode = 126
	}
}
