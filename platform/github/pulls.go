package github

import (
	"context"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v93/github"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/platform"
)

// DefaultBranch implements platform.Platform.
func (c *Client) DefaultBranch(ctx context.Context, repo grove.RepoID, token string) (string, error) {
	var r *gh.Repository
	err := c.do(ctx, "repository lookup", func() (*gh.Response, error) {
		var resp *gh.Response
		var err error
		r, resp, err = c.gh.Repositories.Get(withToken(ctx, token), repo.Owner, repo.Name)
		return resp, err
	})
	if err != nil {
		return "", mapErr("repository lookup", repo, err)
	}
	if r.GetDefaultBranch() == "" {
		return "", grove.Errorf(grove.ErrNotFound, "repository %s has no default branch (empty repository?)", repo.Path())
	}
	return r.GetDefaultBranch(), nil
}

// CreatePullRequest implements platform.Platform. Order matters for "nothing
// created on bad input": validate, find an existing pull request, check
// every reviewer, then create, then request reviews and add labels.
func (c *Client) CreatePullRequest(ctx context.Context, repo grove.RepoID, token string, spec platform.PullRequestSpec) (*grove.PullRequest, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	tctx := withToken(ctx, token)
	if pr, err := c.findOpen(ctx, repo, token, spec); err != nil || pr != nil {
		return pr, err
	}
	for _, r := range spec.Reviewers {
		var ok bool
		err := c.do(ctx, "reviewer check", func() (*gh.Response, error) {
			var resp *gh.Response
			var err error
			ok, resp, err = c.gh.Repositories.IsCollaborator(tctx, repo.Owner, repo.Name, r)
			return resp, err
		})
		if err != nil && statusOf(err) != http.StatusNotFound {
			return nil, mapErr("reviewer check", repo, err)
		}
		if !ok {
			return nil, platform.Fail(platform.ErrUnknownReviewer, grove.ErrInvalid, "reviewer %q does not exist or is not a collaborator on %s", r, repo.Path())
		}
	}

	var pr *gh.PullRequest
	err := c.do(ctx, "pull request create", func() (*gh.Response, error) {
		var resp *gh.Response
		var err error
		pr, resp, err = c.gh.PullRequests.Create(tctx, repo.Owner, repo.Name, gh.CreatePullRequest{
			Title: new(spec.Title), Head: spec.Head, Base: spec.Base, Body: new(spec.Body), Draft: new(spec.Draft),
		})
		return resp, err
	})
	if statusOf(err) == http.StatusUnprocessableEntity {
		v := strings.ToLower(validation(err))
		switch {
		case strings.Contains(v, "already exists"):
			// Lost a race with another create: return the winner.
			if found, ferr := c.findOpen(ctx, repo, token, spec); ferr != nil || found != nil {
				return found, ferr
			}
		case strings.Contains(v, "no commits between"):
			return nil, platform.Fail(platform.ErrNoCommits, grove.ErrConflict, "no commits between %s and %s: commit and push first", spec.Base, spec.Head)
		case strings.Contains(v, "base"):
			return nil, platform.Fail(platform.ErrBaseNotFound, grove.ErrNotFound, "base branch %q not found on %s", spec.Base, repo.Path())
		case strings.Contains(v, "head"):
			return nil, platform.Fail(platform.ErrBranchNotPushed, grove.ErrNotFound, "branch %q is not on %s: push it first", spec.Head, repo.Path())
		}
	}
	if err != nil {
		return nil, mapErr("pull request create", repo, err)
	}
	out := toPR(pr, true)
	if len(spec.Reviewers) > 0 {
		err := c.do(ctx, "review request", func() (*gh.Response, error) {
			_, resp, err := c.gh.PullRequests.RequestReviewers(tctx, repo.Owner, repo.Name, pr.GetNumber(), gh.ReviewersRequest{Reviewers: spec.Reviewers})
			return resp, err
		})
		if err != nil {
			return out, mapErr("review request", repo, err)
		}
	}
	if len(spec.Labels) > 0 {
		err := c.do(ctx, "labels", func() (*gh.Response, error) {
			_, resp, err := c.gh.Issues.AddLabelsToIssue(tctx, repo.Owner, repo.Name, pr.GetNumber(), spec.Labels)
			return resp, err
		})
		if err != nil {
			return out, mapErr("labels", repo, err)
		}
	}
	return out, nil
}

// findOpen returns the open pull request from spec.Head into spec.Base, or
// nil.
func (c *Client) findOpen(ctx context.Context, repo grove.RepoID, token string, spec platform.PullRequestSpec) (*grove.PullRequest, error) {
	var prs []*gh.PullRequest
	err := c.do(ctx, "pull request list", func() (*gh.Response, error) {
		var resp *gh.Response
		var err error
		prs, resp, err = c.gh.PullRequests.List(withToken(ctx, token), repo.Owner, repo.Name, &gh.PullRequestListOptions{
			State: "open", Head: repo.Owner + ":" + spec.Head, Base: spec.Base,
		})
		return resp, err
	})
	if err != nil {
		return nil, mapErr("pull request list", repo, err)
	}
	for _, pr := range prs {
		if pr.GetHead().GetRef() == spec.Head && pr.GetBase().GetRef() == spec.Base {
			return toPR(pr, false), nil
		}
	}
	return nil, nil
}

func toPR(pr *gh.PullRequest, created bool) *grove.PullRequest {
	return &grove.PullRequest{
		Number: pr.GetNumber(), URL: pr.GetHTMLURL(), State: pr.GetState(),
		Head: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef(), Draft: pr.GetDraft(), Created: created,
	}
}

// CommentPullRequest implements platform.Platform.
func (c *Client) CommentPullRequest(ctx context.Context, repo grove.RepoID, token string, req grove.CommentRequest) (*grove.Comment, error) {
	if err := platform.ValidateComment(req); err != nil {
		return nil, err
	}
	tctx := withToken(ctx, token)
	if req.Path == "" {
		var cm *gh.IssueComment
		err := c.do(ctx, "comment", func() (*gh.Response, error) {
			var resp *gh.Response
			var err error
			cm, resp, err = c.gh.Issues.CreateComment(tctx, repo.Owner, repo.Name, req.Number, gh.IssueCommentRequest{Body: req.Body})
			return resp, err
		})
		if statusOf(err) == http.StatusNotFound {
			return nil, grove.Errorf(grove.ErrNotFound, "pull request #%d not found on %s", req.Number, repo.Path())
		}
		if err != nil {
			return nil, mapErr("comment", repo, err)
		}
		return &grove.Comment{ID: cm.GetID(), URL: cm.GetHTMLURL()}, nil
	}
	commit := req.CommitID
	if commit == "" {
		var pr *gh.PullRequest
		err := c.do(ctx, "pull request lookup", func() (*gh.Response, error) {
			var resp *gh.Response
			var err error
			pr, resp, err = c.gh.PullRequests.Get(tctx, repo.Owner, repo.Name, req.Number)
			return resp, err
		})
		if statusOf(err) == http.StatusNotFound {
			return nil, grove.Errorf(grove.ErrNotFound, "pull request #%d not found on %s", req.Number, repo.Path())
		}
		if err != nil {
			return nil, mapErr("pull request lookup", repo, err)
		}
		commit = pr.GetHead().GetSHA()
	}
	var cm *gh.PullRequestComment
	err := c.do(ctx, "inline comment", func() (*gh.Response, error) {
		var resp *gh.Response
		var err error
		cm, resp, err = c.gh.PullRequests.CreateComment(tctx, repo.Owner, repo.Name, req.Number, gh.CreatePullRequestCommentRequest{
			Body: req.Body, CommitID: commit, Path: req.Path, Line: new(req.Line), Side: new("RIGHT"),
		})
		return resp, err
	})
	if statusOf(err) == http.StatusNotFound {
		return nil, grove.Errorf(grove.ErrNotFound, "pull request #%d not found on %s", req.Number, repo.Path())
	}
	if err != nil {
		return nil, mapErr("inline comment", repo, err)
	}
	return &grove.Comment{ID: cm.GetID(), URL: cm.GetHTMLURL()}, nil
}
