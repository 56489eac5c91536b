package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/gitrepo/gitfmt"
)

// Identity is a git author or committer.
type Identity struct {
	Name  string
	Email string
}

// DefaultIdentity signs commits when neither the Git nor the request names
// anyone: a fixed identity, never the host user's.
var DefaultIdentity = Identity{Name: "Grove Agent", Email: "agent@grove.invalid"}

func (id Identity) check(what string) error {
	for _, s := range []string{id.Name, id.Email} {
		if !utf8.ValidString(s) || strings.ContainsAny(s, "<>\n\r\x00") || len(s) > 256 {
			return grove.Errorf(grove.ErrInvalid, "%s identity: names and emails must be one line of UTF-8 without <>", what)
		}
	}
	return nil
}

// defaultDiffBytes caps a patch when the request names no cap.
const defaultDiffBytes = 1 << 20

// defaultLogLimit bounds a log when the caller asks for "all".
const defaultLogLimit = 100

// checkPath validates a workspace-relative path from a caller. Paths go to
// git after "--" with GIT_LITERAL_PATHSPECS, so this only keeps them inside
// the workspace.
func checkPath(p string) error {
	switch {
	case p == "":
		return grove.Errorf(grove.ErrInvalid, "path: empty")
	case strings.HasPrefix(p, "/"):
		return grove.Errorf(grove.ErrPathOutside, "path %q: absolute paths are not allowed", sanitizeForMessage(p))
	case strings.ContainsRune(p, 0):
		return grove.Errorf(grove.ErrInvalid, "path: contains NUL")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return grove.Errorf(grove.ErrPathOutside, "path %q escapes the workspace", sanitizeForMessage(p))
		}
		if seg == ".git" {
			return grove.Errorf(grove.ErrInvalid, "path %q: .git is not part of the work tree", sanitizeForMessage(p))
		}
	}
	return nil
}

func checkPaths(ps []string) error {
	for _, p := range ps {
		if err := checkPath(p); err != nil {
			return err
		}
	}
	return nil
}

// Status parses `git status --porcelain=v2` of the workspace.
func (g *Git) Status(ctx context.Context, dir string) (*grove.Status, error) {
	out, err := g.run(ctx, call{args: gitfmt.StatusArgs(), dir: dir, env: workEnv(dir)})
	if err != nil {
		return nil, err
	}
	return gitfmt.ParseStatusV2(out)
}

// Diff returns the files changed and the patch. Without BaseRef it compares
// HEAD with the working tree (everything uncommitted, staged or not; new
// untracked files are not part of a git diff until added); with BaseRef it
// compares that commit instead of HEAD. StagedOnly compares with the index
// rather than the working tree. The patch is cut at MaxBytes (default
// 1 MiB) with Truncated set.
func (g *Git) Diff(ctx context.Context, dir string, req grove.DiffRequest) (*grove.Diff, error) {
	if err := checkPaths(req.Paths); err != nil {
		return nil, err
	}
	base := "HEAD"
	if req.BaseRef != "" {
		var err error
		if base, err = ResolveRevision(req.BaseRef, func(rev string) (bool, error) {
			_, err := g.run(ctx, call{args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"}, dir: dir, env: workEnv(dir)})
			var gerr *Error
			if errors.As(err, &gerr) && gerr.ExitCode == 1 {
				return false, nil
			}
			return err == nil, err
		}); err != nil {
			return nil, err
		}
	}
	rev := []string{}
	if req.StagedOnly {
		rev = append(rev, "--cached")
	}
	tail := append([]string{"--end-of-options", base, "--"}, req.Paths...)

	args := append(append(append([]string{"diff"}, gitfmt.DiffFilesFlags()...), rev...), tail...)
	out, err := g.run(ctx, call{args: args, dir: dir, env: workEnv(dir)})
	if err != nil {
		return nil, err
	}
	files, err := gitfmt.ParseDiffFiles(out)
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
	capped := &cappedBuffer{max: max}
	args = append(append([]string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"}, rev...), tail...)
	if _, err := g.run(ctx, call{args: args, dir: dir, env: workEnv(dir), stdout: capped}); err != nil {
		return nil, err
	}
	d.Patch, d.Truncated = capped.buf.String(), capped.truncated
	return d, nil
}

// cappedBuffer keeps the first max bytes and drains the rest, so git never
// blocks on a full pipe and memory stays bounded.
type cappedBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
			c.truncated = true
		} else {
			c.buf.Write(p)
		}
	} else if len(p) > 0 {
		c.truncated = true
	}
	return len(p), nil
}

// Log returns up to limit commits reachable from HEAD (limit <= 0: 100),
// newest first, optionally only those touching path.
func (g *Git) Log(ctx context.Context, dir string, limit int, path string) ([]grove.Commit, error) {
	if path != "" {
		if err := checkPath(path); err != nil {
			return nil, err
		}
	}
	if limit <= 0 {
		limit = defaultLogLimit
	}
	out, err := g.run(ctx, call{args: gitfmt.LogArgs(limit, path), dir: dir, env: workEnv(dir)})
	if err != nil {
		return nil, err
	}
	return gitfmt.ParseLog(out)
}

// Commit stages req.Paths (all changes when empty) and commits them with
// hooks disabled. The committer is identity (or g.Identity, or
// DefaultIdentity); the author is the request's, else the committer. It
// returns grove.ErrNothingToCommit when nothing would change.
func (g *Git) Commit(ctx context.Context, dir string, req grove.CommitRequest, identity Identity) (*grove.CommitResult, error) {
	if strings.TrimSpace(req.Message) == "" {
		return nil, grove.Errorf(grove.ErrInvalid, "commit message is empty")
	}
	if strings.ContainsRune(req.Message, 0) || !utf8.ValidString(req.Message) {
		return nil, grove.Errorf(grove.ErrInvalid, "commit message must be UTF-8 without NUL")
	}
	if err := checkPaths(req.Paths); err != nil {
		return nil, err
	}
	committer := identity
	if committer.Name == "" || committer.Email == "" {
		committer = g.Identity
	}
	if committer.Name == "" || committer.Email == "" {
		committer = DefaultIdentity
	}
	author := Identity{Name: req.AuthorName, Email: req.AuthorEmail}
	if author.Name == "" {
		author.Name = committer.Name
	}
	if author.Email == "" {
		author.Email = committer.Email
	}
	if err := committer.check("committer"); err != nil {
		return nil, err
	}
	if err := author.check("author"); err != nil {
		return nil, err
	}

	env := workEnv(dir)
	// Without paths, `add -A` stages the whole tree (git >= 2.0).
	add := []string{"add", "-A"}
	if len(req.Paths) > 0 {
		add = append(append(add, "--"), req.Paths...)
	}
	if _, err := g.run(ctx, call{args: add, dir: dir, env: env}); err != nil {
		return nil, err
	}
	quiet := append([]string{"diff", "--cached", "--quiet", "--"}, req.Paths...)
	if _, err := g.run(ctx, call{args: quiet, dir: dir, env: env}); err == nil {
		return nil, grove.Errorf(grove.ErrNothingToCommit, "nothing to commit")
	} else if gerr := (*Error)(nil); !errors.As(err, &gerr) || gerr.ExitCode != 1 {
		return nil, err
	}

	env = append(env,
		"GIT_AUTHOR_NAME="+author.Name, "GIT_AUTHOR_EMAIL="+author.Email,
		"GIT_COMMITTER_NAME="+committer.Name, "GIT_COMMITTER_EMAIL="+committer.Email,
	)
	commit := []string{"commit", "--quiet", "--no-verify", "--no-edit", "--cleanup=strip", "-F", "-"}
	if len(req.Paths) > 0 {
		commit = append(append(commit, "--"), req.Paths...)
	}
	if _, err := g.run(ctx, call{args: commit, dir: dir, env: env, stdin: strings.NewReader(req.Message)}); err != nil {
		return nil, err
	}
	sha, err := g.ResolveCommit(ctx, dir+"/.git", "HEAD")
	if err != nil {
		return nil, err
	}
	out, err := g.run(ctx, call{args: []string{"show", "--shortstat", "--format=", "--no-color", "--no-ext-diff", "--end-of-options", sha}, dir: dir, env: workEnv(dir)})
	if err != nil {
		return nil, err
	}
	files, ins, del := gitfmt.ParseShortstat(string(out))
	return &grove.CommitResult{SHA: sha, FilesChanged: files, Insertions: ins, Deletions: del}, nil
}

// PushOptions tune Push.
type PushOptions struct {
	Token          string // per call; reaches git only through its environment
	ForceWithLease bool   // overwrite the remote branch only if it is still where the cache last saw it
	Progress       io.Writer
	// Protected are branch names or path.Match patterns ("release/*")
	// that must never be pushed to: the caller puts the base branch, the
	// repository's default branch and configured patterns here. A match
	// is grove.ErrForbidden before any network call.
	Protected []string
	// NoSetUpstream skips recording the pushed branch as the upstream
	// (refs/remotes/origin/<branch> and branch.<branch>.merge), which is
	// otherwise done after every successful push so status shows
	// ahead/behind and the next force-with-lease leases against it.
	NoSetUpstream bool
}

// CheckProtected returns grove.ErrForbidden when branch matches one of
// the protected names or patterns.
func CheckProtected(branch string, protected []string) error {
	for _, p := range protected {
		if p == "" {
			continue
		}
		if ok, err := path.Match(p, branch); p == branch || (err == nil && ok) {
			return grove.Errorf(grove.ErrForbidden, "branch %q is protected (%s): push your work on a branch of its own", branch, p)
		}
	}
	return nil
}

// Push sends refs/heads/<branch> of the workspace — and nothing else — to
// the same branch at url, which must be credential-free (the token travels
// as an HTTP header). A rejected push is grove.ErrConflict.
//
// With ForceWithLease the lease is the workspace's refs/remotes/origin/<branch>:
// the commit the cache held when the workspace was made, i.e. what the
// agent's work is based on; without one, the branch must not exist yet.
func (g *Git) Push(ctx context.Context, dir, remoteURL, branch string, opt PushOptions) (*grove.PushResult, error) {
	if err := ValidateBranch(branch); err != nil {
		return nil, err
	}
	if err := checkPushURL(remoteURL); err != nil {
		return nil, err
	}
	if err := CheckProtected(branch, opt.Protected); err != nil {
		return nil, err
	}
	env := workEnv(dir)
	local, err := g.ResolveCommit(ctx, dir+"/.git", "refs/heads/"+branch)
	if err != nil {
		return nil, err
	}
	ref := "refs/heads/" + branch
	args := []string{"push", "--porcelain", "--no-verify"}
	if opt.Progress != nil {
		args = append(args, "--progress")
	} // never --quiet: it silences the porcelain report too
	if opt.ForceWithLease {
		expect, err := g.ResolveCommit(ctx, dir+"/.git", "refs/remotes/origin/"+branch)
		if err != nil && !errors.Is(err, grove.ErrNotFound) {
			return nil, err
		}
		args = append(args, "--force-with-lease="+ref+":"+expect)
	}
	if isLocalURL(remoteURL) {
		// The target's hooks would otherwise run on the host.
		args = append(args, "--receive-pack="+hardenedReceivePack)
	}
	args = append(args, "--", remoteURL, ref+":"+ref)
	out, runErr := g.run(ctx, call{args: args, dir: dir, env: env, token: opt.Token, progress: opt.Progress})
	flag, summary, found := parsePushPorcelain(out, ref)
	if found && flag == '!' {
		return nil, grove.Errorf(grove.ErrConflict, "push of %s rejected: %s", branch, summary)
	}
	if runErr != nil {
		return nil, runErr
	}
	if !found {
		return nil, grove.Errorf(grove.ErrUnavailable, "push of %s: git reported no status for the branch", branch)
	}
	if !opt.NoSetUpstream {
		if err := g.setUpstream(ctx, dir, branch, local); err != nil {
			return nil, err
		}
	}
	return &grove.PushResult{
		Branch:        branch,
		RemoteSHA:     local,
		CreatedBranch: flag == '*',
		UpToDate:      flag == '=',
	}, nil
}

// setUpstream records what the remote now holds. The workspace's origin is
// the cache (a path, never a URL with credentials), so the upstream is
// origin/<branch>, and its tracking ref is set to the pushed commit.
func (g *Git) setUpstream(ctx context.Context, dir, branch, sha string) error {
	env := workEnv(dir)
	for _, args := range [][]string{
		{"update-ref", "-m", "grove push", "--end-of-options", "refs/remotes/origin/" + branch, sha},
		{"config", "--local", "branch." + branch + ".remote", "origin"},
		{"config", "--local", "branch." + branch + ".merge", "refs/heads/" + branch},
	} {
		if _, err := g.run(ctx, call{args: args, dir: dir, env: env}); err != nil {
			return err
		}
	}
	return nil
}

// parsePushPorcelain finds ref's line in `git push --porcelain` output:
// "<flag>\t<from>:<to>\t<summary>".
func parsePushPorcelain(out []byte, ref string) (flag byte, summary string, found bool) {
	for _, line := range strings.Split(string(out), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) < 3 || len(parts[0]) != 1 {
			continue
		}
		if _, to, ok := strings.Cut(parts[1], ":"); ok && to == ref {
			return parts[0][0], strings.TrimSpace(parts[2]), true
		}
	}
	return 0, "", false
}

// isLocalURL reports whether git reaches u through its local transport.
func isLocalURL(u string) bool {
	return strings.HasPrefix(u, "/") || strings.HasPrefix(u, "file://") || (!strings.Contains(u, "://") && !isSCP(u))
}

// checkPushURL refuses URLs that carry credentials or could be read as
// options or transport helpers.
func checkPushURL(u string) error {
	switch {
	case u == "":
		return grove.Errorf(grove.ErrInvalid, "push URL is empty")
	case strings.HasPrefix(u, "-"):
		return grove.Errorf(grove.ErrInvalid, "push URL must not start with '-'")
	case strings.Contains(u, "::"):
		return grove.Errorf(grove.ErrInvalid, "push URL: transport helpers are not allowed")
	case strings.IndexFunc(u, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0:
		return grove.Errorf(grove.ErrInvalid, "push URL contains whitespace or control characters")
	}
	if strings.Contains(u, "://") {
		p, err := url.Parse(u)
		if err != nil {
			return grove.Errorf(grove.ErrInvalid, "push URL is malformed")
		}
		if p.User != nil && (p.Scheme == "http" || p.Scheme == "https") {
			return grove.Errorf(grove.ErrInvalid, "push URL must not embed credentials; pass the token separately")
		}
		if _, hasPw := p.User.Password(); p.User != nil && hasPw {
			return grove.Errorf(grove.ErrInvalid, "push URL must not embed credentials; pass the token separately")
		}
	}
	return nil
}
