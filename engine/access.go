package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/credentials"
	"github.com/grove-dev/grove/gitrepo"
)

// DefaultAccessCheckTTL is how long a successful access check of one user
// on one repository is remembered when Config.AccessCheckTTL is zero.
const DefaultAccessCheckTTL = 5 * time.Minute

// maxAccessEntries bounds the remembered checks; past it, expired entries
// are swept on insert.
const maxAccessEntries = 16384

// accessKey is one user on one repository.
type accessKey struct{ user, repo string }

// accessMemo remembers when each (user, repository) last passed a check.
// It is only an optimisation: forgetting (a restart, another process)
// costs one `git ls-remote`.
type accessMemo struct {
	mu sync.Mutex
	ok map[accessKey]time.Time // → when the check passed
}

// checkAccess lets user use the remote repository only if a credential
// belonging to this request — the call's token, else what the credential
// chain yields for user (their OAuth token, or a credential the operator
// configured for every user: GitHub App, environment tokens) — or no
// credential at all (a public repository) can read it now. A shared cache
// filled by another user's token proves nothing about this user.
//
// A success is remembered per (user, repository) for the configured TTL, so
// re-acquiring one's own workspace stays a store read and a stat; after the
// TTL the next acquire asks the remote again, so revoked access stops new
// work within one TTL. A denial is never remembered.
//
// Denied and nonexistent repositories get one answer (noRepo): same kind,
// same message, so a user cannot probe for private repositories. Local
// repositories (host "local") are not checked here.
func (e *Engine) checkAccess(ctx context.Context, user string, remote gitrepo.Remote, callToken string) error {
	if remote.Local {
		return nil
	}
	key := accessKey{user: user, repo: remote.ID.Key()}
	ttl := e.cfg.AccessCheckTTL
	if ttl == 0 {
		ttl = DefaultAccessCheckTTL
	}
	now := e.now()
	if ttl > 0 && e.access.fresh(key, now, ttl) {
		return nil
	}
	var gitConfig [][2]string
	if grove.IsRemoteCaller(ctx) {
		// The check is an outbound fetch like any: resolved and pinned.
		cfg, err := e.sources.FetchConfig(ctx, remote)
		if err != nil {
			return err
		}
		gitConfig = cfg
	}
	creq := credentials.Request{Repo: remote.ID, User: user, Token: callToken}
	for attempt := 0; ; attempt++ {
		cred, err := e.cfg.Credentials.Resolve(ctx, creq)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, grove.ErrUnavailable), errors.Is(err, grove.ErrTimeout):
			return err
		default:
			// A source that should have had a credential and could not
			// make one (an App not installed on this repository): the
			// repository may still be public.
			cred = credentials.Credential{Kind: credentials.KindNone}
		}
		err = e.prov.CheckAccess(ctx, remote.ID, remote.URL, cred.Token, gitConfig)
		if err == nil {
			if ttl > 0 {
				e.access.remember(key, e.now(), ttl)
			}
			return nil
		}
		if attempt < 2 && errors.Is(err, grove.ErrAuthFailed) && cred.Failed() {
			e.log.Warn("credential rejected by the access check; trying the next", "repo", remote.ID.String(), "credential", cred.Kind)
			continue
		}
		if ctx.Err() != nil || errors.Is(err, grove.ErrUnavailable) || errors.Is(err, grove.ErrTimeout) {
			return err // the remote could not be asked; nothing is revealed
		}
		// Authentication failures, 404s and whatever else the remote
		// answered all read the same to the caller; the operator's log
		// keeps git's own words.
		e.log.Info("access denied", "user", user, "repo", remote.ID.String(), "credential", cred.Kind, "err", err)
		return noRepo(remote.ID)
	}
}

// noRepo is the one answer for a repository that does not exist and for
// one the request's credentials cannot read.
func noRepo(id grove.RepoID) error {
	return grove.Errorf(grove.ErrNotFound, "repository %s not found, or not readable with the credentials of this request", id)
}

func (m *accessMemo) fresh(k accessKey, now time.Time, ttl time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.ok[k]
	if ok && now.Sub(at) < ttl && !now.Before(at) {
		return true
	}
	delete(m.ok, k)
	return false
}

func (m *accessMemo) remember(k accessKey, now time.Time, ttl time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ok == nil {
		m.ok = map[accessKey]time.Time{}
	}
	if len(m.ok) >= maxAccessEntries {
		for k, at := range m.ok {
			if now.Sub(at) >= ttl {
				delete(m.ok, k)
			}
		}
	}
	if _, known := m.ok[k]; !known && len(m.ok) >= maxAccessEntries {
		return // full of fresh entries: this one is checked again next time
	}
	m.ok[k] = now
}
