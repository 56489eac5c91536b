package client

import (
	"context"
	"fmt"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/wire"
)

var _ grove.PullRequester = (*Client)(nil)

// CreatePullRequest implements grove.PullRequester over the HTTP API. A
// server without a git platform answers ErrPlatformNotConfigured.
func (c *Client) CreatePullRequest(ctx context.Context, id string, req grove.CreatePullRequestRequest) (*grove.PullRequest, error) {
	var r grove.PullRequest
	body := wire.PullRequestBody{Title: req.Title, Body: req.Body, Base: req.Base, Draft: req.Draft,
		Reviewers: req.Reviewers, Labels: req.Labels, Token: req.Token}
	if _, err := c.call(ctx, "POST", ws(id, "/pulls"), nil, body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// CommentPullRequest implements grove.PullRequester over the HTTP API.
func (c *Client) CommentPullRequest(ctx context.Context, id string, req grove.CommentRequest) (*grove.Comment, error) {
	var r grove.Comment
	body := wire.PullCommentBody{Body: req.Body, Path: req.Path, Line: req.Line, CommitID: req.CommitID, Token: req.Token}
	if _, err := c.call(ctx, "POST", ws(id, fmt.Sprintf("/pulls/%d/comments", req.Number)), nil, body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
