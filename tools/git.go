package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/grove-dev/grove"
)

type Empty struct{}

func gitStatus(ctx context.Context, c *call, _ Empty) (grove.Status, string, error) {
	st, err := c.svc.Status(ctx, c.ws)
	if err != nil {
		return grove.Status{}, "", err
	}
	var b strings.Builder
	branch := st.Branch
	if branch == "" {
		branch = "(detached)"
	}
	fmt.Fprintf(&b, "branch %s at %s", branch, shortSHA(st.Head))
	switch {
	case st.UpstreamGone:
		fmt.Fprintf(&b, ", upstream %s (not on the remote: never pushed, or deleted there)", st.Upstream)
	case st.Upstream != "":
		fmt.Fprintf(&b, ", upstream %s (ahead %d, behind %d)", st.Upstream, st.Ahead, st.Behind)
	}
	b.WriteByte('\n')
	if st.Clean {
		b.WriteString("working tree clean\n")
	}
	section := func(title string, fs []grove.FileStatus, side func(grove.FileStatus) string) {
		if len(fs) == 0 {
			return
		}
		b.WriteString(title + ":\n")
		for _, f := range fs {
			p := f.Path
			if f.OrigPath != "" {
				p = f.OrigPath + " -> " + f.Path
			}
			fmt.Fprintf(&b, "  %s %s\n", side(f), p)
		}
	}
	section("staged", st.Staged, func(f grove.FileStatus) string { return f.Index })
	section("unstaged", st.Unstaged, func(f grove.FileStatus) string { return f.WorkTree })
	section("conflicted", st.Conflicted, func(f grove.FileStatus) string { return f.Index + f.WorkTree })
	if len(st.Untracked) > 0 {
		b.WriteString("untracked:\n")
		for _, u := range st.Untracked {
			b.WriteString("  " + u + "\n")
		}
	}
	return *st, b.String(), nil
}

func shortSHA(s string) string { return clip(s, 12) }

type GitDiffInput struct {
	BaseRef    string   `json:"base_ref,omitempty" jsonschema:"compare the working tree with this commit: a branch (main, or origin/main), a tag, a commit sha, HEAD~N or HEAD^ (default: HEAD, i.e. uncommitted changes); ranges (a..b) are not accepted"`
	Paths      []string `json:"paths,omitempty" jsonschema:"limit to these paths"`
	StagedOnly bool     `json:"staged_only,omitempty" jsonschema:"only changes staged in the index"`
	StatOnly   bool     `json:"stat_only,omitempty" jsonschema:"only the per-file summary, no patch"`
	MaxBytes   int      `json:"max_bytes,omitempty" jsonschema:"bytes of patch text to return (default 50000, max 1000000)"`
}

func gitDiff(ctx context.Context, c *call, in GitDiffInput) (grove.Diff, string, error) {
	if in.MaxBytes < 0 || in.MaxBytes > 1_000_000 {
		return grove.Diff{}, "", invalidf("max_bytes must be between 0 and 1000000")
	}
	if in.MaxBytes == 0 {
		in.MaxBytes = 50000
	}
	for i, p := range in.Paths {
		rp, err := c.relPath(ctx, p)
		if err != nil {
			return grove.Diff{}, "", err
		}
		in.Paths[i] = rp
	}
	d, err := c.svc.Diff(ctx, c.ws, grove.DiffRequest{BaseRef: in.BaseRef, Paths: in.Paths, StagedOnly: in.StagedOnly, StatOnly: in.StatOnly, MaxBytes: in.MaxBytes})
	if err != nil {
		if in.BaseRef != "" && (isKind(err, grove.ErrNotFound) || isKind(err, grove.ErrInvalid)) {
			return grove.Diff{}, "", withHint(err, "base_ref takes a branch (main), a remote branch (origin/main), a tag, a commit SHA or HEAD~N; git_log lists commits")
		}
		return grove.Diff{}, "", err
	}
	var b strings.Builder
	if len(d.Files) == 0 {
		b.WriteString("no changes\n")
	}
	for _, f := range d.Files {
		if f.Binary {
			fmt.Fprintf(&b, "%s %s (binary)\n", f.Status, f.Path)
		} else {
			fmt.Fprintf(&b, "%s %s +%d -%d\n", f.Status, f.Path, f.Additions, f.Deletions)
		}
	}
	if d.Patch != "" {
		b.WriteString("\n" + d.Patch)
	}
	if d.Truncated {
		fmt.Fprintf(&b, "\n[diff truncated at %d bytes; pass paths to see single files or raise max_bytes]\n", in.MaxBytes)
	}
	return *d, b.String(), nil
}

type GitLogInput struct {
	Limit int    `json:"limit,omitempty" jsonschema:"number of commits (default 20, max 500)"`
	Path  string `json:"path,omitempty" jsonschema:"only commits touching this path"`
}

type GitLogOutput struct {
	Commits []grove.Commit `json:"commits"`
}

func gitLog(ctx context.Context, c *call, in GitLogInput) (GitLogOutput, string, error) {
	if in.Limit < 0 || in.Limit > 500 {
		return GitLogOutput{}, "", invalidf("limit must be between 1 and 500")
	}
	if in.Limit == 0 {
		in.Limit = 20
	}
	p := ""
	if in.Path != "" {
		rp, err := c.relPath(ctx, in.Path)
		if err != nil {
			return GitLogOutput{}, "", err
		}
		p = rp
	}
	cs, err := c.svc.Log(ctx, c.ws, in.Limit, p)
	if err != nil {
		return GitLogOutput{}, "", err
	}
	var b strings.Builder
	for _, cm := range cs {
		fmt.Fprintf(&b, "%s %s %s <%s> %s\n", shortSHA(cm.SHA), cm.Date.Format("2006-01-02"), cm.Author, cm.Email, cm.Subject)
	}
	if len(cs) == 0 {
		b.WriteString("no commits\n")
	}
	return GitLogOutput{Commits: cs}, b.String(), nil
}

type GitCommitInput struct {
	Message string   `json:"message" jsonschema:"commit message: a short subject line, a blank line, then the why"`
	Paths   []string `json:"paths,omitempty" jsonschema:"stage and commit only these paths (default: every change, including untracked files)"`
}

func gitCommit(ctx context.Context, c *call, in GitCommitInput) (grove.CommitResult, string, error) {
	if strings.TrimSpace(in.Message) == "" {
		return grove.CommitResult{}, "", invalidf("message is empty")
	}
	for i, p := range in.Paths {
		rp, err := c.relPath(ctx, p)
		if err != nil {
			return grove.CommitResult{}, "", err
		}
		in.Paths[i] = rp
	}
	r, err := c.svc.Commit(ctx, c.ws, grove.CommitRequest{Message: in.Message, Paths: in.Paths})
	if err != nil {
		return grove.CommitResult{}, "", err
	}
	return *r, fmt.Sprintf("committed %s: %d files changed, %d insertions(+), %d deletions(-)", shortSHA(r.SHA), r.FilesChanged, r.Insertions, r.Deletions), nil
}

type GitPushInput struct {
	SetUpstream    bool `json:"set_upstream,omitempty" jsonschema:"record the remote branch as upstream"`
	ForceWithLease bool `json:"force_with_lease,omitempty" jsonschema:"overwrite the remote branch only if it is where we last saw it (after a rebase)"`
}

func gitPush(ctx context.Context, c *call, in GitPushInput) (grove.PushResult, string, error) {
	r, err := c.svc.Push(ctx, c.ws, grove.PushRequest{Token: callerFrom(ctx).Token, SetUpstream: in.SetUpstream, ForceWithLease: in.ForceWithLease})
	if err != nil {
		if isKind(err, grove.ErrConflict) {
			return grove.PushResult{}, "", withHint(err, "the remote branch has commits you do not have; fetch and rebase with run_command, then push with force_with_lease=true")
		}
		if isKind(err, grove.ErrNotFound) {
			return grove.PushResult{}, "", withHint(err, "the remote repository was not found: it may have been moved, renamed or deleted, or the credential cannot see it; tell the user")
		}
		return grove.PushResult{}, "", err
	}
	switch {
	case r.UpToDate:
		return *r, fmt.Sprintf("%s is already up to date on the remote", r.Branch), nil
	case r.CreatedBranch:
		return *r, fmt.Sprintf("pushed and created remote branch %s at %s", r.Branch, shortSHA(r.RemoteSHA)), nil
	}
	return *r, fmt.Sprintf("pushed %s to %s", r.Branch, shortSHA(r.RemoteSHA)), nil
}
