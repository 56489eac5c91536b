package execpath

import (
	"bytes"
	"context"
	"io"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo"
)

// MaxBundle bounds the work one bundle may carry out of a workspace.
const MaxBundle = 1 << 30

// Head returns the commit ref names in the workspace, or grove.ErrNotFound.
func Head(ctx context.Context, x Execer, id, ref string) (string, error) {
	if err := gitrepo.ValidateRef(ref); err != nil {
		return "", err
	}
	return commitOf(ctx, x, id, ref)
}

// commitOf resolves an already validated ref or revision in the workspace.
func commitOf(ctx context.Context, x Execer, id, ref string) (string, error) {
	res, err := run(ctx, x, id, grove.ExecRequest{Argv: []string{"git", "rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}"}}, 1)
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(res.Stdout))
	if res.ExitCode == 1 || !gitrepo.IsCommitID(sha) {
		return "", grove.Errorf(grove.ErrNotFound, "ref %q not found in the workspace", ref)
	}
	return sha, nil
}

// Bundle streams a git bundle of ref — without the history of the commits
// in exclude, which the receiving Grove-owned repository already holds —
// from the workspace's runtime to w. The bundle is untrusted data: the
// receiver fetches it with every object checked and compares its tip with
// what Head reported.
func Bundle(ctx context.Context, x Execer, id, ref string, exclude []string, w io.Writer) error {
	if err := gitrepo.ValidateRef(ref); err != nil {
		return err
	}
	argv := []string{"git", "bundle", "create", "--quiet", "-", ref}
	for _, sha := range exclude {
		if gitrepo.IsCommitID(sha) {
			argv = append(argv, "^"+sha)
		}
	}
	var stderr bytes.Buffer
	var written int64
	res, err := x.ExecStream(ctx, id, grove.ExecRequest{
		Argv: argv, Env: gitEnv(), Class: grove.ClassRead, MaxOutput: MaxBundle + 1, StreamOnly: true,
	}, func(c grove.Chunk) error {
		if c.Stream == grove.Stderr {
			if stderr.Len() < 4<<10 {
				stderr.Write(c.Data)
			}
			return nil
		}
		written += int64(len(c.Data))
		_, err := w.Write(c.Data)
		return err
	})
	if err != nil {
		return err
	}
	res.Stderr = stderr.Bytes()
	if res.StdoutOmitted > 0 || written > MaxBundle {
		return grove.Errorf(grove.ErrTooLarge, "the workspace's unsaved commits exceed %d bytes", MaxBundle)
	}
	return check("git bundle", res, MaxBundle, nil)
}

// snapshotScript commits everything in the workspace — staged, unstaged,
// untracked and not ignored — on top of HEAD with a private index, so the
// branch, index and files stay exactly as they were, and points
// refs/grove/snapshot at it. The message arrives on stdin.
const snapshotScript = `set -e
idx=$(mktemp)
trap 'rm -f "$idx"' EXIT
cur=$(git rev-parse --git-path index)
if [ -f "$cur" ]; then cp "$cur" "$idx"; else rm -f "$idx"; fi
export GIT_INDEX_FILE="$idx"
git add -A
tree=$(git write-tree)
if head=$(git rev-parse --verify -q "HEAD^{commit}"); then
  c=$(git commit-tree -p "$head" -F - "$tree")
else
  c=$(git commit-tree -F - "$tree")
fi
git update-ref -m "grove snapshot" refs/grove/snapshot "$c"
echo "$c"`

// SnapshotRef is where Snapshot leaves its commit in the workspace, for
// Bundle to carry out.
const SnapshotRef = "refs/grove/snapshot"

// Snapshot records all of the workspace's work as one commit (see
// snapshotScript) signed by id, and returns it.
func Snapshot(ctx context.Context, x Execer, wsID, message string, id gitrepo.Identity) (string, error) {
	if id.Name == "" || id.Email == "" {
		id = gitrepo.DefaultIdentity
	}
	env := gitEnv(
		"GIT_AUTHOR_NAME", id.Name, "GIT_AUTHOR_EMAIL", id.Email,
		"GIT_COMMITTER_NAME", id.Name, "GIT_COMMITTER_EMAIL", id.Email,
	)
	res, err := run(ctx, x, wsID, grove.ExecRequest{Argv: []string{"sh", "-c", snapshotScript}, Env: env, Class: grove.ClassWrite, Stdin: []byte(message)})
	if err != nil {
		return "", err
	}
	sha := strings.TrimSpace(string(res.Stdout))
	if !gitrepo.IsCommitID(sha) {
		return "", grove.Errorf(grove.ErrInvalid, "snapshot: git printed no commit id")
	}
	return sha, nil
}
