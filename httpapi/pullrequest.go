package httpapi

import (
	"net/http"
	"strconv"

	"github.com/grove-dev/grove"
)

// pullRequester is the caller's service as a grove.PullRequester, or
// ErrPlatformNotConfigured when this server has no git platform.
func pullRequester(c *caller) (grove.PullRequester, error) {
	pr, ok := c.svc.(grove.PullRequester)
	if !ok {
		return nil, grove.Errorf(grove.ErrPlatformNotConfigured, "this server has no git platform configured")
	}
	return pr, nil
}

func (c *caller) gitToken(body string) string {
	if body != "" {
		return body
	}
	return c.token
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request, c *caller) error {
	var b PullRequestBody
	if err := Decode(r.Body, &b); err != nil {
		return err
	}
	pr, err := pullRequester(c)
	if err != nil {
		return err
	}
	res, err := pr.CreatePullRequest(r.Context(), r.PathValue("id"), grove.CreatePullRequestRequest{
		Title: b.Title, Body: b.Body, Base: b.Base, Draft: b.Draft, Reviewers: b.Reviewers, Labels: b.Labels, Token: c.gitToken(b.Token)})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	writeJSON(w, status, res)
	return nil
}

func (s *Server) commentPull(w http.ResponseWriter, r *http.Request, c *caller) error {
	number, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || number <= 0 {
		return grove.Errorf(grove.ErrInvalid, "pull request number: want a positive integer")
	}
	var b PullCommentBody
	if err := Decode(r.Body, &b); err != nil {
		return err
	}
	pr, err := pullRequester(c)
	if err != nil {
		return err
	}
	res, err := pr.CommentPullRequest(r.Context(), r.PathValue("id"), grove.CommentRequest{
		Number: number, Body: b.Body, Path: b.Path, Line: b.Line, CommitID: b.CommitID, Token: c.gitToken(b.Token)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, res)
	return nil
}
