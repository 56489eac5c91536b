package auth

import (
	"context"
	"testing"

	"github.com/grove-dev/grove"
)

// recorder records the requests Scope passes on; other methods are not
// called by the test.
type recorder struct {
	grove.Service
	ensure  grove.EnsureRepoRequest
	acquire grove.AcquireRequest
}

func (r *recorder) EnsureRepo(_ context.Context, req grove.EnsureRepoRequest) (*grove.RepoCache, error) {
	r.ensure = req
	return &grove.RepoCache{}, nil
}

func (r *recorder) Acquire(_ context.Context, req grove.AcquireRequest) (*grove.Workspace, bool, error) {
	r.acquire = req
	return &grove.Workspace{}, true, nil
}

// TestScopeActsAsTheKeysUser: the engine checks repository access with the
// credentials of the user Scope names, whatever the request claims.
func TestScopeActsAsTheKeysUser(t *testing.T) {
	rec := &recorder{}
	s := Scope(rec, Principal{User: "bob"})
	if _, err := s.EnsureRepo(context.Background(), grove.EnsureRepoRequest{Repo: "octo/private", User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if rec.ensure.User != "bob" {
		t.Errorf("EnsureRepo acted as %q, want bob", rec.ensure.User)
	}
	if _, _, err := s.Acquire(context.Background(), grove.AcquireRequest{Repo: "octo/private", User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if rec.acquire.User != "bob" {
		t.Errorf("Acquire acted as %q, want bob", rec.acquire.User)
	}
}
