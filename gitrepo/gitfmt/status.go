package gitfmt

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/grove-dev/grove"
)

// StatusArgs is the git argument list whose output ParseStatusV2 reads.
// Untracked files are listed one by one (not collapsed into their
// directory) because callers act on files.
func StatusArgs() []string {
	return []string{"status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--renames", "--ignored=no"}
}

// ParseStatusV2 parses `git status --porcelain=v2 --branch -z` output.
//
// A path that is both staged and changed in the working tree appears in
// both Staged and Unstaged. Ignored entries ("!") are skipped. Slices are
// never nil so that JSON shows empty lists rather than null.
func ParseStatusV2(out []byte) (*grove.Status, error) {
	st := &grove.Status{
		Staged:     []grove.FileStatus{},
		Unstaged:   []grove.FileStatus{},
		Untracked:  []string{},
		Conflicted: []grove.FileStatus{},
	}
	fields := splitNUL(out)
	sawAB := false
	for i := 0; i < len(fields); i++ {
		rec := fields[i]
		if len(rec) < 2 || rec[1] != ' ' {
			return nil, grove.Errorf(grove.ErrInvalid, "git status: malformed entry %q", clip(rec))
		}
		body := rec[2:]
		switch rec[0] {
		case '#':
			if err := parseBranchHeader(st, body); err != nil {
				return nil, err
			}
			sawAB = sawAB || strings.HasPrefix(body, "branch.ab ")
		case '1':
			// 1 XY sub mH mI mW hH hI path — the path may contain spaces, so
			// split off exactly the fixed fields.
			parts := strings.SplitN(body, " ", 8)
			if len(parts) != 8 {
				return nil, grove.Errorf(grove.ErrInvalid, "git status: short ordinary entry %q", clip(rec))
			}
			if err := addChanged(st, parts[0], parts[7], ""); err != nil {
				return nil, err
			}
		case '2':
			// 2 XY sub mH mI mW hH hI Xscore path NUL origPath
			parts := strings.SplitN(body, " ", 9)
			if len(parts) != 9 {
				return nil, grove.Errorf(grove.ErrInvalid, "git status: short rename entry %q", clip(rec))
			}
			if i+1 >= len(fields) {
				return nil, grove.Errorf(grove.ErrInvalid, "git status: rename entry %q lacks its original path", clip(rec))
			}
			i++
			if err := addChanged(st, parts[0], parts[8], fields[i]); err != nil {
				return nil, err
			}
		case 'u':
			// u XY sub m1 m2 m3 mW h1 h2 h3 path
			parts := strings.SplitN(body, " ", 10)
			if len(parts) != 10 {
				return nil, grove.Errorf(grove.ErrInvalid, "git status: short unmerged entry %q", clip(rec))
			}
			xy, err := parseXY(parts[0])
			if err != nil {
				return nil, err
			}
			if parts[9] == "" {
				return nil, grove.Errorf(grove.ErrInvalid, "git status: unmerged entry without path")
			}
			st.Conflicted = append(st.Conflicted, grove.FileStatus{Path: parts[9], Index: xy[:1], WorkTree: xy[1:]})
		case '?':
			if body == "" {
				return nil, grove.Errorf(grove.ErrInvalid, "git status: untracked entry without path")
			}
			st.Untracked = append(st.Untracked, body)
		case '!':
			// Ignored files are not changes; StatusArgs does not ask for them.
		default:
			return nil, grove.Errorf(grove.ErrInvalid, "git status: unknown entry type %q", rec[:1])
		}
	}
	st.Clean = len(st.Staged) == 0 && len(st.Unstaged) == 0 && len(st.Untracked) == 0 && len(st.Conflicted) == 0
	// git prints branch.ab only when the upstream's ref exists.
	st.UpstreamGone = st.Upstream != "" && !sawAB
	return st, nil
}

func parseBranchHeader(st *grove.Status, body string) error {
	key, val, _ := strings.Cut(body, " ")
	switch key {
	case "branch.oid":
		if val != "(initial)" {
			st.Head = val
		}
	case "branch.head":
		if val != "(detached)" {
			st.Branch = val
		}
	case "branch.upstream":
		st.Upstream = val
	case "branch.ab":
		a, b, ok := strings.Cut(val, " ")
		if !ok || !strings.HasPrefix(a, "+") || !strings.HasPrefix(b, "-") {
			return grove.Errorf(grove.ErrInvalid, "git status: malformed branch.ab %q", clip(val))
		}
		ahead, err1 := strconv.Atoi(a[1:])
		behind, err2 := strconv.Atoi(b[1:])
		if err1 != nil || err2 != nil || ahead < 0 || behind < 0 {
			return grove.Errorf(grove.ErrInvalid, "git status: malformed branch.ab %q", clip(val))
		}
		st.Ahead, st.Behind = ahead, behind
	default:
		// Newer git versions may add headers (e.g. "# stash"); they carry
		// nothing Status holds.
	}
	return nil
}

func addChanged(st *grove.Status, xyField, path, orig string) error {
	xy, err := parseXY(xyField)
	if err != nil {
		return err
	}
	if path == "" {
		return grove.Errorf(grove.ErrInvalid, "git status: entry without path")
	}
	fs := grove.FileStatus{Path: path, OrigPath: orig, Index: xy[:1], WorkTree: xy[1:]}
	if xy[0] != '.' {
		st.Staged = append(st.Staged, fs)
	}
	if xy[1] != '.' {
		st.Unstaged = append(st.Unstaged, fs)
	}
	return nil
}

func parseXY(s string) (string, error) {
	if len(s) != 2 || !isStatusLetter(s[0]) || !isStatusLetter(s[1]) {
		return "", grove.Errorf(grove.ErrInvalid, "git status: malformed XY %q", clip(s))
	}
	return s, nil
}

func isStatusLetter(c byte) bool {
	return c == '.' || ('A' <= c && c <= 'Z')
}

// splitNUL splits NUL-terminated records; a missing final terminator is
// tolerated, an empty input gives no records.
func splitNUL(out []byte) []string {
	out = bytes.TrimSuffix(out, []byte{0})
	if len(out) == 0 {
		return nil
	}
	parts := bytes.Split(out, []byte{0})
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = string(p)
	}
	return s
}

// clip keeps error messages short when the input is garbage.
func clip(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
