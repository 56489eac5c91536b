package gitfmt

import (
	"strconv"
	"time"

	"github.com/grove-dev/grove"
)

// logFormat puts the free-text subject last and separates fields with NUL,
// which git never lets into names, emails or dates. With -z git also ends
// each commit with NUL, so the output is a flat list of NUL-separated
// fields read five at a time.
const logFormat = "format:%H%x00%an%x00%ae%x00%aI%x00%s"

const logFields = 5

// LogArgs is the git argument list whose output ParseLog reads: the newest
// limit commits reachable from HEAD (limit <= 0: no limit), optionally only
// those touching path. path is placed after "--" so it can never be read as
// an option; the caller validates it as a workspace path.
func LogArgs(limit int, path string) []string {
	args := []string{"log", "-z", "--no-color", "--no-show-signature", "--pretty=" + logFormat}
	if limit > 0 {
		args = append(args, "-n", strconv.Itoa(limit))
	}
	args = append(args, "--")
	if path != "" {
		args = append(args, path)
	}
	return args
}

// ParseLog parses the output of LogArgs.
func ParseLog(out []byte) ([]grove.Commit, error) {
	fields := splitNUL(out)
	if len(fields)%logFields != 0 {
		return nil, grove.Errorf(grove.ErrInvalid, "git log: %d fields is not a whole number of commits", len(fields))
	}
	commits := make([]grove.Commit, 0, len(fields)/logFields)
	for i := 0; i < len(fields); i += logFields {
		f := fields[i : i+logFields]
		if !isObjectID(f[0]) {
			return nil, grove.Errorf(grove.ErrInvalid, "git log: %q is not a commit id", clip(f[0]))
		}
		date, err := time.Parse(time.RFC3339, f[3])
		if err != nil {
			return nil, grove.Errorf(grove.ErrInvalid, "git log: commit %s: bad date %q", f[0], clip(f[3]))
		}
		commits = append(commits, grove.Commit{SHA: f[0], Author: f[1], Email: f[2], Date: date, Subject: f[4]})
	}
	return commits, nil
}

// isObjectID accepts SHA-1 and SHA-256 object names in lower-case hex.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
