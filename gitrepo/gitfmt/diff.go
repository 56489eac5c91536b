package gitfmt

import (
	"strconv"
	"strings"

	"github.com/grove-dev/grove"
)

// DiffFilesFlags are the git diff options whose output ParseDiffFiles reads:
// --raw gives each file's status letter and --numstat its line counts, in
// one git call (git drops --numstat when combined with --name-status, but
// not with --raw). The caller appends revisions and then "--" and paths.
func DiffFilesFlags() []string {
	return []string{"--raw", "--numstat", "-z", "-M", "--no-color", "--no-ext-diff", "--no-textconv", "--abbrev=40"}
}

// ParseDiffFiles parses `git diff --raw --numstat -z` (DiffFilesFlags)
// output into one DiffFile per path, in git's order.
func ParseDiffFiles(out []byte) ([]grove.DiffFile, error) {
	fields := splitNUL(out)
	// The --raw records come first, each a ":..." head and one or two
	// paths; the numstat records follow.
	n := 0
	for n < len(fields) && strings.HasPrefix(fields[n], ":") {
		step := 2
		if renameOrCopy(rawStatus(fields[n])) {
			step = 3
		}
		if n+step > len(fields) {
			return nil, grove.Errorf(grove.ErrInvalid, "git diff --raw: entry %q lacks its path", clip(fields[n]))
		}
		n += step
	}
	raw, err := parseStatusRecords(fields[:n], rawStatus, "git diff --raw")
	if err != nil {
		return nil, err
	}
	nums, err := parseNumstatFields(fields[n:])
	if err != nil {
		return nil, err
	}
	return MergeDiffFiles(raw, nums), nil
}

// ParseNameStatus parses `git diff --name-status -z` output: Status, Path
// and, for renames and copies, OrigPath.
func ParseNameStatus(out []byte) ([]grove.DiffFile, error) {
	return parseStatusRecords(splitNUL(out), func(s string) string { return s }, "git diff --name-status")
}

// ParseNumstat parses `git diff --numstat -z` output: Path, OrigPath for
// renames, and line counts; binary files ("-\t-") get Binary and zero
// counts. Status is left empty: merge with ParseNameStatus's result through
// MergeDiffFiles, or use ParseDiffFiles to get both from one git call.
func ParseNumstat(out []byte) ([]grove.DiffFile, error) {
	return parseNumstatFields(splitNUL(out))
}

// MergeDiffFiles adds numstat's counts to name-status's entries, matched by
// path, keeping name-status's order; numstat entries with no name-status
// entry are appended.
func MergeDiffFiles(nameStatus, numstat []grove.DiffFile) []grove.DiffFile {
	idx := make(map[string]int, len(nameStatus))
	files := make([]grove.DiffFile, len(nameStatus), len(nameStatus)+len(numstat))
	copy(files, nameStatus)
	for i, f := range files {
		idx[f.Path] = i
	}
	for _, ns := range numstat {
		i, ok := idx[ns.Path]
		if !ok {
			idx[ns.Path] = len(files)
			files = append(files, ns)
			continue
		}
		files[i].Additions, files[i].Deletions, files[i].Binary = ns.Additions, ns.Deletions, ns.Binary
		if files[i].OrigPath == "" {
			files[i].OrigPath = ns.OrigPath
		}
	}
	return files
}

// parseStatusRecords reads "STATUS NUL path NUL" records, with a second
// path for renames and copies; status extracts the status token from the
// record head.
func parseStatusRecords(fields []string, status func(string) string, what string) ([]grove.DiffFile, error) {
	files := []grove.DiffFile{}
	for i := 0; i < len(fields); {
		head := fields[i]
		s := status(head)
		if s == "" || !isStatusLetter(s[0]) || s[0] == '.' || (len(s) > 1 && !allDigits(s[1:])) {
			return nil, grove.Errorf(grove.ErrInvalid, "%s: malformed status %q", what, clip(head))
		}
		letter := s[:1]
		paths := 1
		if renameOrCopy(letter) {
			paths = 2
		}
		if i+paths >= len(fields) {
			return nil, grove.Errorf(grove.ErrInvalid, "%s: entry %q lacks its path", what, clip(head))
		}
		f := grove.DiffFile{Status: letter, Path: fields[i+paths]}
		if paths == 2 {
			f.OrigPath = fields[i+1]
		}
		if f.Path == "" {
			return nil, grove.Errorf(grove.ErrInvalid, "%s: entry %q with empty path", what, clip(head))
		}
		files = append(files, f)
		i += 1 + paths
	}
	return files, nil
}

// rawStatus extracts the status (e.g. "M", "R100") from a --raw record head
// ":100644 100644 <old> <new> M"; it gives "" for a malformed head.
func rawStatus(head string) string {
	if !strings.HasPrefix(head, ":") {
		return ""
	}
	parts := strings.Split(head[1:], " ")
	if len(parts) != 5 {
		return ""
	}
	return parts[4]
}

func renameOrCopy(status string) bool {
	return strings.HasPrefix(status, "R") || strings.HasPrefix(status, "C")
}

func parseNumstatFields(fields []string) ([]grove.DiffFile, error) {
	files := []grove.DiffFile{}
	for i := 0; i < len(fields); i++ {
		add, rest, ok1 := strings.Cut(fields[i], "\t")
		del, path, ok2 := strings.Cut(rest, "\t")
		if !ok1 || !ok2 {
			return nil, grove.Errorf(grove.ErrInvalid, "git diff --numstat: malformed entry %q", clip(fields[i]))
		}
		var f grove.DiffFile
		switch {
		case add == "-" && del == "-":
			f.Binary = true
		default:
			a, err1 := strconv.Atoi(add)
			d, err2 := strconv.Atoi(del)
			if err1 != nil || err2 != nil || a < 0 || d < 0 || !allDigits(add) || !allDigits(del) {
				return nil, grove.Errorf(grove.ErrInvalid, "git diff --numstat: malformed counts in %q", clip(fields[i]))
			}
			f.Additions, f.Deletions = a, d
		}
		if path == "" {
			// A rename: with -z the path field is empty and the old and new
			// paths follow as their own fields.
			if i+2 >= len(fields) {
				return nil, grove.Errorf(grove.ErrInvalid, "git diff --numstat: rename lacks its paths")
			}
			f.OrigPath, f.Path = fields[i+1], fields[i+2]
			i += 2
			if f.Path == "" {
				return nil, grove.Errorf(grove.ErrInvalid, "git diff --numstat: rename with empty path")
			}
		} else {
			f.Path = path
		}
		files = append(files, f)
	}
	return files, nil
}

// ParseShortstat reads a `--shortstat` summary line such as
// " 3 files changed, 10 insertions(+), 2 deletions(-)" (also printed by
// git commit). Parts git omits, or that do not parse, count as zero.
func ParseShortstat(line string) (files, ins, del int) {
	for _, part := range strings.Split(strings.TrimSpace(line), ",") {
		num, word, ok := strings.Cut(strings.TrimSpace(part), " ")
		if !ok || !allDigits(num) {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(word, "file"):
			files = n
		case strings.HasPrefix(word, "insertion"):
			ins = n
		case strings.HasPrefix(word, "deletion"):
			del = n
		}
	}
	return files, ins, del
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
