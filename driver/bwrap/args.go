package bwrap

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
//
// The sandbox holds no privileges (DESIGN.md §3): as a non-root server,
// bwrap makes a user namespace and drops every capability in it; as root,
// it builds the sandbox without one and starts the command through setpriv
// as an unprivileged uid (d.drop). Either way the seccomp filter
// (seccomp.go, on fd 5) forbids mounting, new namespaces and the other
// ways back to privilege, and no_new_privs is set.
func (d *Driver) args(spec driver.Spec, dir string, env []string, argv []string) []string {
	a := []string{"--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--new-session",
		"--hostname", "grove",
		"--seccomp", "5",
	}
	if d.drop == nil {
		a = append(a, "--unshare-user", "--cap-drop", "ALL")
	}
	if spec.Network != driver.NetworkDefault {
		a = append(a, "--unshare-net")
	}
	a = append(a, d.mounts...)
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
		// World-writable (sticky) as a normal /tmp: as root the tmpfs is
		// root's and the command's uid is not.
		"--perms", "1777",
	)
	if d.tmpSize {
		a = append(a, "--size", strconv.FormatInt(limitsOf(spec.Limits).tmp, 10))
	}
	a = append(a, "--tmpfs", "/tmp",
		"--perms", "0777", "--dir", sandboxHome,
	)
	work := filepath.Clean(spec.WorkDir)
	if d.drop != nil {
		// bwrap gives the directories it creates for a mount point the
		// modes of their host counterparts; a root server's data root is
		// typically 0700, which the command's uid could not traverse.
		for _, p := range mountParents(append([]string{work}, spec.ReadOnlyPaths...)) {
			a = append(a, "--perms", "0755", "--dir", p)
		}
	}
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
	a = append(a, d.drop...)
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

// mountParents lists the directories above the given mount points that the
// sandbox must create, shallowest first, leaving out / and the trees the
// sandbox binds from the system or makes itself (/tmp is a fresh tmpfs,
// where the directories are new).
func mountParents(targets []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range targets {
		var chain []string
		for p := filepath.Dir(filepath.Clean(t)); p != "/" && p != "."; p = filepath.Dir(p) {
			chain = append(chain, p)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			p := chain[i]
			if seen[p] || p == "/tmp" || underSystem(p) {
				continue
			}
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func underSystem(p string) bool {
	for _, s := range systemDirs {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}
