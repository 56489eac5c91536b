// Package github is the GitHub and GitHub Enterprise adapter of the
// platform port, on go-github. It also mints GitHub App installation
// tokens for package credentials (it implements credentials.Minter).
package github

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v93/github"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/credentials"
	"github.com/grove-dev/grove/platform"
)

// Options configure a Client.
type Options struct {
	// BaseURL is the GitHub web URL (GITHUB_BASE_URL): "" or
	// https://github.com for github.com, anything else is a GitHub
	// Enterprise Server whose API lives under <BaseURL>/api/v3/.
	BaseURL string
	// APIURL overrides the API base for github.com-style layouts (tests,
	// proxies); "" derives it from BaseURL.
	APIURL string
	// HTTPClient is the transport; nil uses one with a 30 s timeout.
	HTTPClient *http.Client
	// Attempts is how many times a rate-limited or 5xx call is tried
	// (default 4); Backoff the first wait, doubled each time (default
	// 500 ms), capped by MaxBackoff (default 10 s) and by Retry-After.
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Sleep waits between attempts; tests shorten it. nil honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client talks to one GitHub (or GitHub Enterprise) instance.
type Client struct {
	opt  Options
	gh   *gh.Client
	host string // git host of repositories served here
}

var (
	_ platform.Platform  = (*Client)(nil)
	_ credentials.Minter = (*Client)(nil)
)

// New returns a Client. The token of each call travels in the request
// context to the transport, so one go-github client serves every user.
func New(opt Options) (*Client, error) {
	base := opt.BaseURL
	if base == "" {
		base = "https://github.com"
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "GITHUB_BASE_URL must be an http(s) URL without credentials")
	}
	hc := opt.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	inner := hc.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	cp := *hc
	cp.Transport = &tokenTransport{inner: inner}
	opts := []gh.ClientOptionsFunc{gh.WithHTTPClient(&cp), gh.WithDisableRateLimitCheck(), gh.WithUserAgent("grove")}
	host := strings.ToLower(u.Host)
	switch {
	case opt.APIURL != "":
		api := strings.TrimSuffix(opt.APIURL, "/") + "/"
		opts = append(opts, gh.WithURLs(&api, &api))
	case host == "github.com":
	default:
		web := strings.TrimSuffix(base, "/") + "/"
		opts = append(opts, gh.WithEnterpriseURLs(web, web))
	}
	c, err := gh.NewClient(opts...)
	if err != nil {
		return nil, grove.Errorf(grove.ErrInvalid, "GitHub client: %v", err)
	}
	if opt.Attempts <= 0 {
		opt.Attempts = 4
	}
	if opt.Backoff <= 0 {
		opt.Backoff = 500 * time.Millisecond
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = 10 * time.Second
	}
	if opt.Sleep == nil {
		opt.Sleep = sleep
	}
	return &Client{opt: opt, gh: c, host: host}, nil
}

// Name implements platform.Platform.
func (c *Client) Name() string { return "github" }

// Host is the git host of the repositories this client serves.
func (c *Client) Host() string { return c.host }

// Serves implements platform.Platform.
func (c *Client) Serves(repo grove.RepoID) bool { return strings.EqualFold(repo.Host, c.host) }

type tokenKey struct{}

// tokenTransport sets the call's token as the Authorization header. The
// App JWT is a Bearer token; installation, OAuth and personal tokens are
// sent the same way, which GitHub accepts for all of them.
type tokenTransport struct{ inner http.RoundTripper }

func (t *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, _ := r.Context().Value(tokenKey{}).(string)
	if tok != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return t.inner.RoundTrip(r)
}

func withToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, tokenKey{}, token)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// do runs call, retrying rate limits, 5xx and connection failures with
// exponential backoff; what is still failing then is grove.ErrUnavailable.
func (c *Client) do(ctx context.Context, what string, call func() (*gh.Response, error)) error {
	wait := c.opt.Backoff
	var last error
	for attempt := 1; ; attempt++ {
		resp, err := call()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		retry, after := transient(resp, err)
		if !retry {
			return err
		}
		last = err
		if attempt >= c.opt.Attempts {
			break
		}
		d := min(wait, c.opt.MaxBackoff)
		if after > d {
			d = min(after, c.opt.MaxBackoff)
		}
		if err := c.opt.Sleep(ctx, d); err != nil {
			return err
		}
		wait *= 2
	}
	return grove.Errorf(grove.ErrUnavailable, "GitHub %s: still failing after %d attempts (%s)", what, c.opt.Attempts, describe(last))
}

// transient reports whether a failed call may succeed later, and how long
// GitHub asked us to wait.
func transient(resp *gh.Response, err error) (bool, time.Duration) {
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	switch {
	case errors.As(err, &rl):
		return true, time.Until(rl.Rate.Reset.Time)
	case errors.As(err, &abuse):
		return true, abuse.GetRetryAfter()
	}
	if resp != nil && resp.Response != nil {
		s := resp.StatusCode
		if s == http.StatusTooManyRequests || s >= 500 {
			return true, retryAfter(resp.Header.Get("Retry-After"))
		}
		if s == http.StatusForbidden && resp.Header.Get("X-RateLimit-Remaining") == "0" {
			return true, 0
		}
		return false, 0
	}
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue), 0
}

func retryAfter(v string) time.Duration {
	var s int
	if _, err := fmt.Sscanf(v, "%d", &s); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// describe is a short, token-free account of an error for messages.
func describe(err error) string {
	var er *gh.ErrorResponse
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	switch {
	case errors.As(err, &rl):
		return "rate limited"
	case errors.As(err, &abuse):
		return "secondary rate limit"
	case errors.As(err, &er) && er.Response != nil:
		return fmt.Sprintf("HTTP %d: %s", er.Response.StatusCode, clip(er.Message, 200))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return "connection failed: " + clip(ue.Err.Error(), 200)
	}
	return clip(err.Error(), 200)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// statusOf is the HTTP status of a go-github error, or 0.
func statusOf(err error) int {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// mapErr turns the errors every endpoint shares into grove kinds; callers
// handle their endpoint's 404 and 422 first.
func mapErr(what string, repo grove.RepoID, err error) error {
	if err == nil {
		return nil
	}
	if grove.KindOf(err) != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	switch statusOf(err) {
	case http.StatusUnauthorized:
		return grove.Errorf(grove.ErrAuthFailed, "GitHub %s on %s: the credential was rejected (expired or revoked)", what, repo.Path())
	case http.StatusForbidden:
		return platform.Fail(platform.ErrPermission, grove.ErrForbidden, "GitHub %s on %s: the credential lacks permission (%s)", what, repo.Path(), describe(err))
	case http.StatusNotFound:
		return grove.Errorf(grove.ErrNotFound, "GitHub %s: repository %s not found or not visible to the credential", what, repo.Path())
	case http.StatusUnprocessableEntity:
		return grove.Errorf(grove.ErrInvalid, "GitHub %s on %s refused the request: %s", what, repo.Path(), validation(err))
	}
	return grove.Errorf(grove.ErrUnavailable, "GitHub %s on %s: %s", what, repo.Path(), describe(err))
}

// validation flattens a 422's message and field errors.
func validation(err error) string {
	var er *gh.ErrorResponse
	if !errors.As(err, &er) {
		return clip(err.Error(), 300)
	}
	parts := []string{er.Message}
	for _, e := range er.Errors {
		m := e.Message
		if m == "" {
			m = e.Code + " " + e.Field
		}
		parts = append(parts, m)
	}
	return clip(strings.Join(parts, "; "), 300)
}
