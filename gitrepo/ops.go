package gitrepo

import (
	"io"
	"net/url"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/grove-dev/grove"
)

// Identity is a git author or committer.
type Identity struct {
	Name  string
	Email string
}

// DefaultIdentity signs commits when neither the Git nor the request names
// anyone: a fixed identity, never the host user's.
var DefaultIdentity = Identity{Name: "Grove Agent", Email: "agent@grove.invalid"}

// Validate refuses names and emails git would mangle or that could forge
// another header line of a commit.
func (id Identity) Validate(what string) error {
	for _, s := range []string{id.Name, id.Email} {
		if !utf8.ValidString(s) || strings.ContainsAny(s, "<>\n\r\x00") || len(s) > 256 {
			return grove.Errorf(grove.ErrInvalid, "%s identity: names and emails must be one line of UTF-8 without <>", what)
		}
	}
	return nil
}

// PushOptions tune Push.
type PushOptions struct {
	Token          string // per call; reaches git only through its environment
	ForceWithLease bool   // overwrite the remote branch only if it is still where the cache last saw it
	Progress       io.Writer
	// Protected are branch names or path.Match patterns ("release/*")
	// that must never be pushed to: the caller puts the base branch, the
	// repository's default branch and configured patterns here. A match
	// is grove.ErrForbidden before any network call.
	Protected []string
	// Config is forced on the push (SourcePolicy.FetchConfig for a
	// network caller: no redirects, the address pinned).
	Config [][2]string
}

// CheckProtected returns grove.ErrForbidden when branch matches one of
// the protected names or patterns.
func CheckProtected(branch string, protected []string) error {
	for _, p := range protected {
		if p == "" {
			continue
		}
		if ok, err := path.Match(p, branch); p == branch || (err == nil && ok) {
			return grove.Errorf(grove.ErrForbidden, "branch %q is protected (%s): push your work on a branch of its own", branch, p)
		}
	}
	return nil
}

// parsePushPorcelain finds ref's line in `git push --porcelain` output:
// "<flag>\t<from>:<to>\t<summary>".
func parsePushPorcelain(out []byte, ref string) (flag byte, summary string, found bool) {
	for _, line := range strings.Split(string(out), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) < 3 || len(parts[0]) != 1 {
			continue
		}
		if _, to, ok := strings.Cut(parts[1], ":"); ok && to == ref {
			return parts[0][0], strings.TrimSpace(parts[2]), true
		}
	}
	return 0, "", false
}

// isLocalURL reports whether git reaches u through its local transport.
func isLocalURL(u string) bool {
	return strings.HasPrefix(u, "/") || strings.HasPrefix(u, "file://") || (!strings.Contains(u, "://") && !isSCP(u))
}

// checkPushURL refuses URLs that carry credentials or could be read as
// options or transport helpers.
func checkPushURL(u string) error {
	switch {
	case u == "":
		return grove.Errorf(grove.ErrInvalid, "push URL is empty")
	case strings.HasPrefix(u, "-"):
		return grove.Errorf(grove.ErrInvalid, "push URL must not start with '-'")
	case strings.Contains(u, "::"):
		return grove.Errorf(grove.ErrInvalid, "push URL: transport helpers are not allowed")
	case strings.IndexFunc(u, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0:
		return grove.Errorf(grove.ErrInvalid, "push URL contains whitespace or control characters")
	}
	if strings.Contains(u, "://") {
		p, err := url.Parse(u)
		if err != nil {
			return grove.Errorf(grove.ErrInvalid, "push URL is malformed")
		}
		if p.User != nil && (p.Scheme == "http" || p.Scheme == "https") {
			return grove.Errorf(grove.ErrInvalid, "push URL must not embed credentials; pass the token separately")
		}
		if _, hasPw := p.User.Password(); p.User != nil && hasPw {
			return grove.Errorf(grove.ErrInvalid, "push URL must not embed credentials; pass the token separately")
		}
	}
	return nil
}
