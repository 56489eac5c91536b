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
