package execpath

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo"
)

// bundleFileScript writes a bundle of $1 (minus the history of the
// remaining arguments, each ^sha) to a new temporary file and prints the
// file's path and size.
const bundleFileScript = `set -e
f=$(mktemp /tmp/grove-bundle-XXXXXXXX)
if ! git bundle create --quiet "$f" "$@"; then rm -f "$f"; exit 1; fi
printf '%s\n%s\n' "$f" "$(stat -c %s "$f")"`

// BundleFile is Bundle for runtimes whose command output is text (a
// remote sandbox's toolbox, where a binary bundle cannot cross stdout):
// the bundle is written to a temporary file inside the runtime, fetch is
// called with that file's absolute path to copy it out through the
// runtime's files API, and the file is removed. The bundle stays
// untrusted data, checked by the receiver as with Bundle.
func BundleFile(ctx context.Context, x Execer, id, ref string, exclude []string, fetch func(path string) error) error {
	if err := gitrepo.ValidateRef(ref); err != nil {
		return err
	}
	argv := []string{"sh", "-c", bundleFileScript, "sh", ref}
	for _, sha := range exclude {
		if gitrepo.IsCommitID(sha) {
			argv = append(argv, "^"+sha)
		}
	}
	res, err := run(ctx, x, id, grove.ExecRequest{Argv: argv, Env: gitEnv(), Class: grove.ClassRead, Timeout: 10 * time.Minute})
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "/tmp/grove-bundle-") || strings.Count(lines[0], "/") != 2 {
		return grove.Errorf(grove.ErrInvalid, "git bundle: unexpected answer %q", res.Stdout)
	}
	path := lines[0]
	defer func() {
		// Best effort: /tmp of the runtime is the runtime's own.
		_, _ = x.Exec(context.WithoutCancel(ctx), id, grove.ExecRequest{Argv: []string{"rm", "-f", "--", path}, Class: grove.ClassRead, Timeout: 30 * time.Second})
	}()
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return grove.Errorf(grove.ErrInvalid, "git bundle: unexpected size %q", lines[1])
	}
	if size > MaxBundle {
		return grove.Errorf(grove.ErrTooLarge, "the workspace's unsaved commits exceed %d bytes", MaxBundle)
	}
	return fetch(path)
}
