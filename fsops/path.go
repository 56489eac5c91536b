// Package fsops gives file access to a local workspace such that no
// caller-supplied path — "..", an absolute path or a symlink, however
// chained — can reach outside the workspace directory or into a .git
// (the workspace's own or a nested repository's).
//
// Paths are workspace-relative and slash-separated. CleanPath is the first
// gate every path passes; resolution (resolve.go) then walks the path one
// component at a time from the workspace root held open, with openat and
// O_NOFOLLOW, resolving symlinks itself under the same rules and checking
// every directory's identity against .git, so the boundary holds at every
// system call, including against symlinks the workspace's own commands may
// create between a check and a use.
package fsops

import (
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/grove-dev/grove"
)

// CleanPath validates a caller's workspace-relative path and returns it in
// clean slash form; "" and "." both mean the workspace root, ".".
//
// It refuses, with grove.ErrPathOutside: absolute paths (convert those with
// Rel first), paths that climb out with "..", and paths through a ".git"
// component. The repository's metadata is not part of the workspace's
// files: a worktree's .git points into the shared repo cache, and writing
// hooks or config there would let an agent run code on the host. With
// grove.ErrInvalid: NUL and other control characters, which no honest
// caller sends and which break logs, terminals and git's own quoting.
//
// "%2e%2e" and backslashes are ordinary characters on Linux, not
// separators or escapes, and are kept literally.
func CleanPath(p string) (string, error) {
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if r != utf8.RuneError && (r < 0x20 || r == 0x7f) {
			return "", grove.Errorf(grove.ErrInvalid, "path %q: control characters are not allowed", p)
		}
		i += size
	}
	if strings.HasPrefix(p, "/") {
		return "", grove.Errorf(grove.ErrPathOutside, "path %q: absolute paths are not allowed, use a workspace-relative path", p)
	}
	c := path.Clean("./" + p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", grove.Errorf(grove.ErrPathOutside, "path %q escapes the workspace", p)
	}
	for _, part := range strings.Split(c, "/") {
		if strings.EqualFold(part, ".git") {
			return "", grove.Errorf(grove.ErrPathOutside, "path %q: .git holds the repository's metadata, which file tools may not touch", p)
		}
	}
	return c, nil
}

// Rel converts an absolute host path inside root into a clean
// workspace-relative path. It compares the paths lexically: resolve
// symlinks in both first if they may differ (e.g. /tmp vs /private/tmp).
func Rel(root, abs string) (string, error) {
	if !filepath.IsAbs(abs) {
		return "", grove.Errorf(grove.ErrInvalid, "path %q is not absolute", abs)
	}
	r, err := filepath.Rel(filepath.Clean(root), filepath.Clean(abs))
	if err != nil {
		return "", grove.Errorf(grove.ErrPathOutside, "path is outside the workspace")
	}
	r = filepath.ToSlash(r)
	if r == ".." || strings.HasPrefix(r, "../") {
		// Not echoing abs: it is a host path the caller may not own.
		return "", grove.Errorf(grove.ErrPathOutside, "path is outside the workspace")
	}
	return CleanPath(r)
}
