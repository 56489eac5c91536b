package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/platform"
)

type WorkspaceOpenInput struct {
	Repo         string `json:"repo" jsonschema:"repository: owner/name, a URL or scp-style address"`
	Project      string `json:"project,omitempty" jsonschema:"project the workspace belongs to (default: 'default')"`
	Mode         string `json:"mode" jsonschema:"analysis (read-only, at ref), edit (one per conversation) or task (one per task)"`
	Conversation string `json:"conversation,omitempty" jsonschema:"conversation id (edit mode)"`
	Task         string `json:"task,omitempty" jsonschema:"task id (task mode)"`
	Ref          string `json:"ref,omitempty" jsonschema:"base ref (default: the default branch)"`
	Branch       string `json:"branch,omitempty" jsonschema:"branch to work on instead of agent/edits-<conversation> or agent/task-<task>"`
	Refresh      bool   `json:"refresh,omitempty" jsonschema:"fetch from the remote even if the cache is fresh"`
}

type WorkspaceOpenOutput struct {
	ID       string `json:"id"`
	Root     string `json:"root,omitempty"`
	Branch   string `json:"branch,omitempty"`
	HeadSHA  string `json:"head_sha,omitempty"`
	Created  bool   `json:"created"`
	Writable bool   `json:"writable"`
	Dirty    bool   `json:"dirty"`
}

func workspaceOpen(ctx context.Context, c *call, in WorkspaceOpenInput) (WorkspaceOpenOutput, string, error) {
	mode, err := grove.ParseMode(in.Mode)
	if err != nil {
		return WorkspaceOpenOutput{}, "", err
	}
	caller := callerFrom(ctx)
	project := in.Project
	if project == "" {
		project = "default"
	}
	c.progress(0, 0, "opening workspace (may clone or fetch)")
	ws, created, err := c.svc.Acquire(ctx, grove.AcquireRequest{
		Repo: in.Repo, User: caller.User, Project: project, Mode: mode,
		Conversation: in.Conversation, Task: in.Task, Ref: in.Ref, Branch: in.Branch,
		Token: caller.Token, Refresh: in.Refresh,
	})
	if err != nil {
		return WorkspaceOpenOutput{}, "", err
	}
	out := WorkspaceOpenOutput{ID: ws.ID, Root: ws.LocalPath, Branch: ws.Branch, HeadSHA: ws.HeadSHA, Created: created, Writable: ws.Capabilities().Writable, Dirty: ws.Dirty}
	verb := "Re-attached"
	if created {
		verb = "Created"
	}
	access := "read-only"
	if out.Writable {
		access = "writable"
	}
	branch := out.Branch
	if branch == "" {
		branch = "(detached at " + ws.BaseRef + ")"
	}
	return out, fmt.Sprintf("%s %s workspace %s on %s at %s. Pass workspace_id=%q to the other tools.", verb, access, ws.ID, branch, shortSHA(ws.HeadSHA), ws.ID), nil
}

type CreatePullRequestInput struct {
	Title      string   `json:"title"`
	Body       string   `json:"body,omitempty"`
	BaseBranch string   `json:"base_branch,omitempty" jsonschema:"branch to merge into (default: the repository's default branch)"`
	Draft      bool     `json:"draft,omitempty"`
	Reviewers  []string `json:"reviewers,omitempty"`
	Labels     []string `json:"labels,omitempty"`
}

type CreatePullRequestOutput struct {
	Number  int    `json:"number"`
	URL     string `json:"url"`
	State   string `json:"state"`
	Created bool   `json:"created"`
}

func createPullRequest(ctx context.Context, c *call, in CreatePullRequestInput) (CreatePullRequestOutput, string, error) {
	if in.Title == "" {
		return CreatePullRequestOutput{}, "", invalidf("title is required")
	}
	pr, ok := c.svc.(grove.PullRequester)
	if !ok {
		return CreatePullRequestOutput{}, "", ErrPlatformNotConfigured
	}
	res, err := pr.CreatePullRequest(ctx, c.ws, grove.CreatePullRequestRequest{
		Title: in.Title, Body: in.Body, Base: in.BaseBranch, Draft: in.Draft,
		Reviewers: in.Reviewers, Labels: in.Labels, Token: callerFrom(ctx).Token,
	})
	if err != nil {
		return CreatePullRequestOutput{}, "", prError(err)
	}
	out := CreatePullRequestOutput{Number: res.Number, URL: res.URL, State: res.State, Created: res.Created}
	if res.Created {
		return out, fmt.Sprintf("opened pull request #%d (%s → %s): %s", res.Number, res.Head, res.Base, res.URL), nil
	}
	return out, fmt.Sprintf("pull request #%d (%s → %s) was already open: %s", res.Number, res.Head, res.Base, res.URL), nil
}

// prError keeps the not-configured error the model knows and adds what to
// do next for the platform's failures.
func prError(err error) error {
	switch {
	case errors.Is(err, grove.ErrPlatformNotConfigured):
		e := *ErrPlatformNotConfigured
		e.Msg = err.Error()
		return &e
	case errors.Is(err, platform.ErrBranchNotPushed):
		return withHint(err, "push the branch with git_push first")
	case errors.Is(err, platform.ErrNoCommits):
		return withHint(err, "commit your changes with git_commit and push them with git_push")
	case errors.Is(err, platform.ErrBaseNotFound):
		return withHint(err, "omit base_branch to use the repository's default branch")
	case errors.Is(err, platform.ErrUnknownReviewer):
		return withHint(err, "leave the reviewer out or ask the user for the right login")
	case errors.Is(err, platform.ErrPermission):
		return withHint(err, "the credential may not do this; tell the user")
	}
	return err
}

type CommentPullRequestInput struct {
	PRNumber int    `json:"pr_number"`
	Body     string `json:"body"`
	Path     string `json:"path,omitempty" jsonschema:"file for an inline comment (with line)"`
	Line     int    `json:"line,omitempty" jsonschema:"line for an inline comment (with path)"`
	CommitID string `json:"commit_id,omitempty"`
}

type CommentPullRequestOutput struct {
	ID  int64  `json:"id"`
	URL string `json:"url"`
}

func commentPullRequest(ctx context.Context, c *call, in CommentPullRequestInput) (CommentPullRequestOutput, string, error) {
	switch {
	case in.PRNumber <= 0:
		return CommentPullRequestOutput{}, "", invalidf("pr_number must be positive")
	case in.Body == "":
		return CommentPullRequestOutput{}, "", invalidf("body is required")
	case (in.Path == "") != (in.Line == 0):
		return CommentPullRequestOutput{}, "", invalidf("give both path and line for an inline comment, or neither")
	}
	pr, ok := c.svc.(grove.PullRequester)
	if !ok {
		return CommentPullRequestOutput{}, "", ErrPlatformNotConfigured
	}
	p := in.Path
	if p != "" {
		rp, err := c.relPath(ctx, p)
		if err != nil {
			return CommentPullRequestOutput{}, "", err
		}
		p = rp
	}
	res, err := pr.CommentPullRequest(ctx, c.ws, grove.CommentRequest{
		Number: in.PRNumber, Body: in.Body, Path: p, Line: in.Line, CommitID: in.CommitID, Token: callerFrom(ctx).Token,
	})
	if err != nil {
		return CommentPullRequestOutput{}, "", prError(err)
	}
	return CommentPullRequestOutput{ID: res.ID, URL: res.URL}, fmt.Sprintf("commented on pull request #%d: %s", in.PRNumber, res.URL), nil
}
