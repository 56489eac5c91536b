package gitrepo

import (
	"strings"
	"unicode/utf8"

	"github.com/grove-dev/grove"
)

// maxRefLen bounds ref names; git has no fixed limit but file systems do
// (refs are files), and nothing legitimate comes close.
const maxRefLen = 1024

// ValidateRef checks a ref name (a branch, a tag, a full refs/... name or a
// commit sha) against git check-ref-format's rules, one level allowed, plus
// Grove's own: no leading '-' (it would read as an option) and valid UTF-8.
// Revision syntax (HEAD~1, a@{1}, a..b) is deliberately not accepted.
func ValidateRef(ref string) error {
	if why := refProblem(ref); why != "" {
		return grove.Errorf(grove.ErrInvalid, "ref %q: %s", sanitizeForMessage(ref), why)
	}
	return nil
}

// ValidateBranch checks a branch name: ValidateRef's rules, and not "HEAD"
// nor a name starting with "refs/" (which git would store as
// refs/heads/refs/..., a trap rather than a branch).
func ValidateBranch(name string) error {
	why := refProblem(name)
	switch {
	case why != "":
	case name == "HEAD":
		why = `"HEAD" is not a branch name`
	case strings.HasPrefix(name, "refs/"):
		why = `branch names must not start with "refs/"`
	}
	if why != "" {
		return grove.Errorf(grove.ErrInvalid, "branch %q: %s", sanitizeForMessage(name), why)
	}
	return nil
}

// refProblem returns why ref is not a valid ref name, or "".
func refProblem(ref string) string {
	switch {
	case ref == "":
		return "empty"
	case len(ref) > maxRefLen:
		return "too long"
	case !utf8.ValidString(ref):
		return "not valid UTF-8"
	case ref[0] == '-':
		return "must not start with '-'"
	case ref == "@":
		return `"@" is not a ref name`
	case strings.Contains(ref, ".."):
		return `must not contain ".."`
	case strings.Contains(ref, "@{"):
		return `must not contain "@{"`
	case strings.Contains(ref, "//"):
		return `must not contain "//"`
	case ref[0] == '/' || ref[len(ref)-1] == '/':
		return "must not start or end with '/'"
	case ref[len(ref)-1] == '.':
		return "must not end with '.'"
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if c < 0x20 || c == 0x7f {
			return "must not contain control characters"
		}
		switch c {
		case ' ', '~', '^', ':', '?', '*', '[', '\\':
			return "must not contain space or any of ~^:?*[\\"
		}
	}
	for _, comp := range strings.Split(ref, "/") {
		if strings.HasPrefix(comp, ".") {
			return "no component may start with '.'"
		}
		if strings.HasSuffix(comp, ".lock") {
			return `no component may end with ".lock"`
		}
	}
	return ""
}

// IsCommitID reports whether s is a full (40 or 64 hex digit) object name.
func IsCommitID(s string) bool { return isHexSHA(s) }

// isHexSHA reports whether s is a full (40 or 64 hex digit) object name.
func isHexSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return isHex(s)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// maxRevSuffix bounds the ancestry suffix of a revision (~3^2…).
const maxRevSuffix = 64

// ValidateRevision checks a revision an agent may name as a base to
// compare with: a ref (ValidateRef's rules: a branch, tag, remote branch,
// full refs/ name, HEAD or a commit sha) followed by any number of
// ancestry steps ~, ~N, ^ and ^N — HEAD~1, HEAD^, main~2^2. Ranges (a..b,
// a...b), reflog (@{…}), peeling (^{…}), ^! and ^@, and :path are refused:
// a diff base names one commit. Callers still pass it after
// --end-of-options.
func ValidateRevision(rev string) error {
	name, suffix := splitRevision(rev)
	why := refProblem(name)
	if why == "" {
		why = suffixProblem(suffix)
	}
	if why != "" {
		return grove.Errorf(grove.ErrInvalid, "revision %q: %s; want a branch, tag, commit sha or HEAD, optionally with ~N or ^N", sanitizeForMessage(rev), why)
	}
	return nil
}

// ResolveRevision validates rev and returns the first of its spellings
// that names a commit, as exists reports (exists runs git rev-parse
// --verify wherever the repository lives): rev itself, then — for a bare
// branch name with no local branch, which is what an agent writes for the
// default branch in a workspace that only has it as a remote branch —
// refs/remotes/origin/<name> with the same ancestry steps. ErrNotFound
// when none exists.
func ResolveRevision(rev string, exists func(candidate string) (bool, error)) (string, error) {
	if err := ValidateRevision(rev); err != nil {
		return "", err
	}
	candidates := []string{rev}
	if name, suffix := splitRevision(rev); name != "HEAD" && !strings.HasPrefix(name, "refs/") && !isHex(name) {
		candidates = append(candidates, "refs/remotes/origin/"+name+suffix)
	}
	for _, c := range candidates {
		ok, err := exists(c)
		if err != nil {
			return "", err
		}
		if ok {
			return c, nil
		}
	}
	if len(candidates) > 1 {
		return "", grove.Errorf(grove.ErrNotFound, "revision %q is not a branch, tag or commit here, nor origin/%s", sanitizeForMessage(rev), sanitizeForMessage(rev))
	}
	return "", grove.Errorf(grove.ErrNotFound, "revision %q does not name a commit here", sanitizeForMessage(rev))
}

// splitRevision splits rev at its first ~ or ^ into the ref and the
// ancestry steps.
func splitRevision(rev string) (name, suffix string) {
	if i := strings.IndexAny(rev, "~^"); i >= 0 {
		return rev[:i], rev[i:]
	}
	return rev, ""
}

// suffixProblem returns why suffix is not a run of ~, ~N, ^ and ^N steps,
// or "".
func suffixProblem(suffix string) string {
	if len(suffix) > maxRevSuffix {
		return "too many ancestry steps"
	}
	for i := 0; i < len(suffix); {
		if suffix[i] != '~' && suffix[i] != '^' {
			return "only ~N and ^N may follow the ref"
		}
		i++
		digits := 0
		for i < len(suffix) && suffix[i] >= '0' && suffix[i] <= '9' {
			i, digits = i+1, digits+1
		}
		if digits > 6 {
			return "ancestry step too large"
		}
	}
	return ""
}
