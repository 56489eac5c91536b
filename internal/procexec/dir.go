package procexec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/grove-dev/grove"
)

// ResolveDir turns a request's Dir (workspace-relative; an absolute path is
// accepted only when it lies inside root) into an absolute directory inside
// root. Lexical escapes ("../x", "/etc") and escapes through symlinks are
// grove.ErrPathOutside; a missing directory is grove.ErrNotFound.
//
// The symlink check resolves the final path, so a link planted inside the
// workspace that points outside it is caught. A link swapped in after the
// check (a race with a concurrent command) is contained by the sandbox for
// isolated drivers; the subprocess driver is not isolated by definition.
func ResolveDir(root, dir string) (string, error) {
	if strings.IndexByte(dir, 0) >= 0 {
		return "", grove.Errorf(grove.ErrInvalid, "dir contains a NUL byte")
	}
	root = filepath.Clean(root)
	var p string
	if filepath.IsAbs(dir) {
		p = filepath.Clean(dir)
	} else {
		p = filepath.Join(root, dir)
	}
	if !within(root, p) {
		return "", grove.Errorf(grove.ErrPathOutside, "dir %q is outside the workspace", dir)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", grove.Errorf(grove.ErrNotFound, "workspace directory is missing")
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", grove.Errorf(grove.ErrNotFound, "dir %q does not exist", dir)
		}
		return "", grove.Errorf(grove.ErrInvalid, "dir %q: %v", dir, errors.Unwrap(err))
	}
	if !within(realRoot, real) {
		return "", grove.Errorf(grove.ErrPathOutside, "dir %q resolves outside the workspace", dir)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", grove.Errorf(grove.ErrNotFound, "dir %q does not exist", dir)
	}
	if !st.IsDir() {
		return "", grove.Errorf(grove.ErrInvalid, "dir %q is not a directory", dir)
	}
	// Return the lexical path, not the resolved one: inside a sandbox the
	// workspace is mounted at its host path, and a symlinked root (say
	// /tmp -> /private/tmp) must keep the name it is mounted under.
	return p, nil
}

func within(root, p string) bool {
	if p == root {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator)) || root == string(filepath.Separator)
}
