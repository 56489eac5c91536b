package credentials

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/grove-dev/grove"
)

// Env is the environment-token source: GH_TOKEN, then GITHUB_TOKEN, then
// the entries of GH_TOKEN_LIST taken in turn (round robin, so several
// tokens share the rate limit), an entry that failed authentication being
// skipped for SkipFor.
type Env struct {
	single []string // GH_TOKEN, GITHUB_TOKEN: used in this order
	list   []string
	// SkipFor is how long a failed list entry is left out (default 10 min).
	SkipFor time.Duration
	Now     func() time.Time

	mu     sync.Mutex
	next   int
	failed map[int]time.Time
}

var _ Source = (*Env)(nil)

// EnvFrom reads the tokens through getenv (os.Getenv in production). A
// GH_TOKEN_LIST with an empty or whitespace-only entry is refused with
// grove.ErrInvalid naming the entry's position — a silently shorter list
// would hide a broken deployment. It returns nil when no variable is set.
func EnvFrom(getenv func(string) string) (*Env, error) {
	e := &Env{}
	for _, name := range []string{"GH_TOKEN", "GITHUB_TOKEN"} {
		v := getenv(name)
		if v == "" {
			continue
		}
		if strings.TrimSpace(v) != v || strings.ContainsAny(v, " \t\r\n") {
			return nil, grove.Errorf(grove.ErrInvalid, "%s contains whitespace", name)
		}
		e.single = append(e.single, v)
	}
	if raw := getenv("GH_TOKEN_LIST"); raw != "" {
		for i, part := range strings.Split(raw, ",") {
			tok := strings.TrimSpace(part)
			if tok == "" {
				return nil, grove.Errorf(grove.ErrInvalid, "GH_TOKEN_LIST entry %d is empty or whitespace", i+1)
			}
			if strings.ContainsAny(tok, " \t\r\n") {
				return nil, grove.Errorf(grove.ErrInvalid, "GH_TOKEN_LIST entry %d contains whitespace", i+1)
			}
			e.list = append(e.list, tok)
		}
	}
	if len(e.single) == 0 && len(e.list) == 0 {
		return nil, nil
	}
	return e, nil
}

func (e *Env) Kind() Kind { return KindEnv }

// Credential implements Source.
func (e *Env) Credential(_ context.Context, _ Request) (Credential, error) {
	if len(e.single) > 0 {
		return Credential{Kind: KindEnv, Token: e.single[0]}, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for range e.list {
		i := e.next
		e.next = (e.next + 1) % len(e.list)
		if until, bad := e.failed[i]; bad && now.Before(until) {
			continue
		}
		delete(e.failed, i)
		return Credential{Kind: KindEnv, Token: e.list[i], fail: func() { e.markFailed(i) }}, nil
	}
	return Credential{}, grove.Errorf(grove.ErrAuthFailed, "every GH_TOKEN_LIST entry failed authentication recently")
}

func (e *Env) markFailed(i int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed == nil {
		e.failed = map[int]time.Time{}
	}
	skip := e.SkipFor
	if skip <= 0 {
		skip = 10 * time.Minute
	}
	e.failed[i] = e.now().Add(skip)
}

func (e *Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Size is the number of tokens the source holds, for configuration reports.
func (e *Env) Size() int { return len(e.single) + len(e.list) }
