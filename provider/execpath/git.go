package execpath

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo"
	"github.com/grove-dev/grove/gitrepo/gitfmt"
)

// defaultDiffBytes caps a patch when the request names no cap.
const defaultDiffBytes = 1 << 20

// Status is git status of the workspace, parsed.
func Status(ctx context.Context, x Execer, id string) (*grove.Status, error) {
	res, err := run(ctx, x, id, grove.ExecRequest{Argv: append([]string{"git"}, gitfmt.StatusArgs()...)})
	if err != nil {
		return nil, err
	}
	return gitfmt.ParseStatusV2(res.Stdout)
}

// Log is the workspace's history, newest first. path must already be a
// validated workspace path; it is placed after "--".
func Log(ctx context.Context, x Execer, id string, limit int, path string) ([]grove.Commit, error) {
	res, err := run(ctx, x, id, grove.ExecRequest{Argv: append([]string{"git"}, gitfmt.LogArgs(limit, path)...)})
	if err != nil {
		return nil, err
	}
	return gitfmt.ParseLog(res.Stdout)
}

// Diff returns the files changed and the patch. Without BaseRef it compares
// HEAD with the working tree; with BaseRef (validated by the caller) that
// revision instead. StagedOnly compares with the index. The patch is cut at
// MaxBytes (default 1 MiB) with Truncated set. Paths must already be
// validated workspace paths.
func Diff(ctx context.Context, x Execer, id string, req grove.DiffRequest) (*grove.Diff, error) {
	base := "HEAD"
	if req.BaseRef != "" {
		// What an agent naturally writes: HEAD~1, or "main" for a branch
		// the workspace has only as origin/main.
		var err error
		base, err = gitrepo.ResolveRevision(req.BaseRef, func(rev string) (bool, error) {
			_, err := commitOf(ctx, x, id, rev) // ResolveRevision validated rev
			if errors.Is(err, grove.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return nil, err
		}
	}
	var rev []string
	if req.StagedOnly {
		rev = append(rev, "--cached")
	}
	tail := append([]string{"--end-of-options", base, "--"}, req.Paths...)
	argv := append(append(append([]string{"git", "diff"}, gitfmt.DiffFilesFlags()...), rev...), tail...)
	res, err := run(ctx, x, id, grove.ExecRequest{Argv: argv})
	if err != nil {
		return nil, err
	}
	files, err := gitfmt.ParseDiffFiles(res.Stdout)
	if err != nil {
		return nil, err
	}
	d := &grove.Diff{Files: files}
	if req.StatOnly {
		return d, nil
	}
	max := req.MaxBytes
	if max <= 0 {
		max = defaultDiffBytes
	}
	argv = append(append([]string{"git", "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"}, rev...), tail...)
	res, err = x.Exec(ctx, id, grove.ExecRequest{Argv: argv, Env: gitEnv(), Class: grove.ClassRead, MaxOutput: max})
	if err != nil {
		return nil, err
	}
	if err := check("git", res, max, nil); err != nil && res.StdoutOmitted == 0 {
		return nil, err
	}
	d.Patch, d.Truncated = string(res.Stdout), res.StdoutOmitted > 0
	return d, nil
}

// commitScript stages and commits in one command: paths are "$@"; exit 3
// means nothing to commit. The message arrives on stdin, the identities
// in the environment; hooks are off through the forced config as well as
// --no-verify.
const commitScript = `set -e
if [ "$#" -gt 0 ]; then git add -A -- "$@"; else git add -A; fi
if git diff --cached --quiet -- "$@"; then exit 3; fi
if [ "$#" -gt 0 ]; then
  git commit --quiet --no-verify --no-edit --cleanup=strip -F - -- "$@"
else
  git commit --quiet --no-verify --no-edit --cleanup=strip -F -
fi
git rev-parse --verify HEAD
git show --shortstat --format= --no-color --no-ext-diff HEAD`

// Commit stages req.Paths (all changes when empty) and commits them in the
// workspace's runtime. committer signs the commit; the author is the
// request's, else the committer. Paths must already be validated.
// grove.ErrNothingToCommit when nothing would change.
func Commit(ctx context.Context, x Execer, id string, req grove.CommitRequest, committer gitrepo.Identity) (*grove.CommitResult, error) {
	if strings.TrimSpace(req.Message) == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "commit message is empty")
	}
	if strings.ContainsRune(req.Message, 0) || !utf8.ValidString(req.Message) {
		return nil, grove.Errorf(grove.ErrInvalid, "commit message must be UTF-8 without NUL")
	}
	if committer.Name == "" || committer.Email == "" {
		committer = gitrepo.DefaultIdentity
	}
	author := gitrepo.Identity{Name: req.AuthorName, Email: req.AuthorEmail}
	if author.Name == "" {
		author.Name = committer.Name
	}
	if author.Email == "" {
		author.Email = committer.Email
	}
	if err := committer.Validate("committer"); err != nil {
		return nil, err
	}
	if err := author.Validate("author"); err != nil {
		return nil, err
	}
	env := gitEnv(
		"GIT_AUTHOR_NAME", author.Name, "GIT_AUTHOR_EMAIL", author.Email,
		"GIT_COMMITTER_NAME", committer.Name, "GIT_COMMITTER_EMAIL", committer.Email,
	)
	argv := append([]string{"sh", "-c", commitScript, "grove-commit"}, req.Paths...)
	res, err := run(ctx, x, id, grove.ExecRequest{Argv: argv, Env: env, Class: grove.ClassWrite, Stdin: []byte(req.Message)}, 3)
	if err != nil {
		return nil, err
	}
	if res.ExitCode == 3 {
		return nil, grove.Errorf(grove.ErrNothingToCommit, "nothing to commit")
	}
	sha, stat, _ := strings.Cut(string(res.Stdout), "\n")
	sha = strings.TrimSpace(sha)
	if !gitrepo.IsCommitID(sha) {
		return nil, grove.Errorf(grove.ErrInvalid, "commit: git printed no commit id")
	}
	files, ins, del := gitfmt.ParseShortstat(stat)
	return &grove.CommitResult{SHA: sha, FilesChanged: files, Insertions: ins, Deletions: del}, nil
}

// Info is what Inspect observed.
type Info struct {
	Head  string // "" for a repository with no commit
	Dirty bool   // uncommitted changes or untracked files that are not ignored
}

// Inspect reports the workspace's head commit and whether it has
// uncommitted work, with one command.
func Inspect(ctx context.Context, x Execer, id string) (Info, error) {
	st, err := Status(ctx, x, id)
	if err != nil {
		return Info{}, err
	}
	return Info{Head: st.Head, Dirty: !st.Clean}, nil
}

// SetUpstream records in the workspace what a push from Grove's copy put on
// the remote — the tracking ref origin/<branch>; the branch's upstream
// config was set when the workspace was made — so the agent's own git
// shows ahead/behind. It is a courtesy to the agent: its failure is
// reported, never fatal to the push.
func SetUpstream(ctx context.Context, x Execer, id, branch, sha string) error {
	if err := gitrepo.ValidateBranch(branch); err != nil {
		return err
	}
	if !gitrepo.IsCommitID(sha) {
		return grove.Errorf(grove.ErrInvalid, "%q is not a commit id", sha)
	}
	script := `git update-ref -m "grove push" --end-of-options "refs/remotes/origin/$1" "$2"`
	env := gitEnv()
	_, err := run(ctx, x, id, grove.ExecRequest{Argv: []string{"sh", "-c", script, "grove-upstream", branch, sha}, Env: env, Class: grove.ClassWrite})
	return err
}
