package tools

import (
	"context"
	"fmt"

	"github.com/grove-dev/grove"
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
	return CreatePullRequestOutput{}, "", ErrPlatformNotConfigured
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
	return CommentPullRequestOutput{}, "", ErrPlatformNotConfigured
}
