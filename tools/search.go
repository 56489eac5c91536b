package tools

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/wire"
)

type FindFilesInput struct {
	Pattern       string `json:"pattern" jsonschema:"glob such as '*.go' or 'src/**/test_*.py' (a pattern without '/' matches file names at any depth)"`
	Path          string `json:"path,omitempty" jsonschema:"directory to search under (default: the root)"`
	IncludeHidden bool   `json:"include_hidden,omitempty" jsonschema:"include dot-files and dot-directories"`
	MaxResults    int    `json:"max_results,omitempty" jsonschema:"maximum files to return (default 200, max 2000)"`
}

type FoundFile struct {
	Path  string    `json:"path"`
	Size  int64     `json:"size"`
	MTime time.Time `json:"mtime"`
}

type FindFilesOutput struct {
	Files     []FoundFile `json:"files"`
	Total     int         `json:"total"`
	Truncated bool        `json:"truncated"`
}

// dirArg checks a directory argument that will reach a command line: it
// must be inside the workspace (the Service resolves symlinks) and exist.
func (c *call) dirArg(ctx context.Context, p string) (string, error) {
	p, err := c.relPath(ctx, p)
	if err != nil || p == "." {
		return p, err
	}
	if _, err := c.svc.ListDir(ctx, c.ws, p, 1); err != nil {
		if isKind(err, grove.ErrIsDirectory) {
			return p, nil
		}
		// A file is a fine search root too; ListDir on a file is not.
		if _, ferr := c.svc.ReadFile(ctx, c.ws, p, 1); ferr == nil || isKind(ferr, grove.ErrTooLarge) || isKind(ferr, grove.ErrBinaryFile) {
			return p, nil
		}
		return "", c.notFound(ctx, p, err)
	}
	return p, nil
}

// rg runs ripgrep in the workspace's runtime as a read command. Exit 1
// (nothing found) is not an error; exit 2 is the caller's bad pattern or
// glob.
func (c *call) rg(ctx context.Context, args []string) ([]byte, error) {
	res, err := c.svc.Exec(ctx, c.ws, grove.ExecRequest{
		Argv: append([]string{"rg"}, args...), Class: grove.ClassRead,
		Timeout: 60 * time.Second, MaxOutput: 8 << 20,
	})
	if err != nil {
		return nil, err
	}
	switch res.ExitCode {
	case 0, 1:
		return res.Stdout, nil
	case 127:
		return nil, grove.Errorf(grove.ErrNotInstalled, "ripgrep (rg) is not installed in this workspace's runtime")
	}
	if res.TimedOut {
		return nil, grove.Errorf(grove.ErrTimeout, "the search timed out after 60s")
	}
	msg := strings.TrimSpace(string(res.Stderr))
	if len(res.Stdout) > 0 && (strings.Contains(msg, "Permission denied") || strings.Contains(msg, "No such file")) {
		// Partial results with unreadable entries are still results.
		return res.Stdout, nil
	}
	return nil, &Error{Code: "E_INVALID_ARGUMENT", Msg: "invalid pattern or glob: " + clip(firstLines(msg, 5), 600), Hint: "fix the regex (or set fixed_string=true to search literally) or the glob", Err: grove.ErrInvalid}
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	return strings.Join(l[:min(n, len(l))], "\n")
}

func findFiles(ctx context.Context, c *call, in FindFilesInput) (FindFilesOutput, string, error) {
	if strings.TrimSpace(in.Pattern) == "" {
		return FindFilesOutput{}, "", invalidf("pattern is required (for example '*.go')")
	}
	limit := in.MaxResults
	if limit <= 0 {
		limit = 200
	}
	if limit > 2000 {
		return FindFilesOutput{}, "", invalidf("max_results %d is over the maximum of 2000", limit)
	}
	dir, err := c.dirArg(ctx, in.Path)
	if err != nil {
		return FindFilesOutput{}, "", err
	}
	args := []string{"--files", "--null", "--no-config", "--no-messages", "--glob", in.Pattern}
	if in.IncludeHidden {
		args = append(args, "--hidden", "--glob", "!.git/")
	}
	// Paths reach rg raw; names come back escaped (wire.EscapePath), like
	// every other name a tool shows.
	args = append(args, "--", wire.UnescapePath(dir))
	outb, err := c.rg(ctx, args)
	if err != nil {
		return FindFilesOutput{}, "", err
	}
	var paths []string
	for _, p := range bytes.Split(outb, []byte{0}) {
		if len(p) > 0 {
			paths = append(paths, wire.EscapePath(strings.TrimPrefix(string(p), "./")))
		}
	}
	sort.Strings(paths)
	out := FindFilesOutput{Total: len(paths)}
	if len(paths) > limit {
		paths, out.Truncated = paths[:limit], true
	}
	stats := c.stat(ctx, paths)
	for _, p := range paths {
		st := stats[p]
		out.Files = append(out.Files, FoundFile{Path: p, Size: st.Size, MTime: st.MTime})
	}
	var b strings.Builder
	for _, f := range out.Files {
		b.WriteString(f.Path + "\n")
	}
	if out.Total == 0 {
		fmt.Fprintf(&b, "No files match %q (files ignored by .gitignore are skipped", in.Pattern)
		if !in.IncludeHidden {
			b.WriteString("; set include_hidden=true for dot-files")
		}
		b.WriteString(")\n")
	}
	if out.Truncated {
		fmt.Fprintf(&b, "[%d of %d files shown; narrow the pattern or path]\n", limit, out.Total)
	}
	return out, b.String(), nil
}

// stat fetches size and mtime for paths in one command. It is best effort:
// a file that vanished in between just has zero values.
func (c *call) stat(ctx context.Context, paths []string) map[string]FoundFile {
	out := map[string]FoundFile{}
	if len(paths) == 0 {
		return out
	}
	res, err := c.svc.Exec(ctx, c.ws, grove.ExecRequest{
		Argv:  append([]string{"stat", "--printf", `%s\t%Y\t%n\0`, "--"}, paths...),
		Class: grove.ClassRead, Timeout: 30 * time.Second, MaxOutput: 4 << 20,
	})
	if err != nil {
		return out
	}
	for _, rec := range bytes.Split(res.Stdout, []byte{0}) {
		f := strings.SplitN(string(rec), "\t", 3)
		if len(f) != 3 {
			continue
		}
		size, _ := strconv.ParseInt(f[0], 10, 64)
		sec, _ := strconv.ParseInt(f[1], 10, 64)
		out[strings.TrimPrefix(f[2], "./")] = FoundFile{Size: size, MTime: time.Unix(sec, 0).UTC()}
	}
	return out
}

type SearchCodeInput struct {
	Pattern         string `json:"pattern" jsonschema:"regular expression (Rust regex syntax), or a literal with fixed_string"`
	Path            string `json:"path,omitempty" jsonschema:"file or directory to search (default: the root)"`
	Glob            string `json:"glob,omitempty" jsonschema:"only files matching this glob, e.g. '*.go'"`
	FixedString     bool   `json:"fixed_string,omitempty" jsonschema:"treat pattern as a literal string"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty"`
	OutputMode      string `json:"output_mode,omitempty" jsonschema:"content (matching lines, default), files (paths only) or count (matches per file)"`
	Context         int    `json:"context,omitempty" jsonschema:"lines of context before and after each match (content mode, max 10)"`
	MaxResults      int    `json:"max_results,omitempty" jsonschema:"matches, files or counts per page (default 100, max 1000)"`
	Offset          int    `json:"offset,omitempty" jsonschema:"results to skip, from next_offset of the previous page"`
}

type FileCount struct {
	Path  string `json:"path"`
	Count int    `json:"count"`
}

type SearchCodeOutput struct {
	Mode       string              `json:"mode"`
	Matches    []grove.SearchMatch `json:"matches"`
	Files      []string            `json:"files"`
	Counts     []FileCount         `json:"counts"`
	Total      int                 `json:"total"`
	Truncated  bool                `json:"truncated"`
	NextOffset int                 `json:"next_offset,omitempty"`
}

func searchCode(ctx context.Context, c *call, in SearchCodeInput) (SearchCodeOutput, string, error) {
	if in.Pattern == "" {
		return SearchCodeOutput{}, "", invalidf("pattern is required")
	}
	mode := in.OutputMode
	if mode == "" {
		mode = "content"
	}
	limit := in.MaxResults
	if limit <= 0 {
		limit = 100
	}
	if limit > 1000 || in.Offset < 0 || in.Context < 0 || in.Context > 10 {
		return SearchCodeOutput{}, "", invalidf("out of range: max_results must be 1-1000, offset >= 0, context 0-10")
	}
	dir, err := c.dirArg(ctx, in.Path)
	if err != nil {
		return SearchCodeOutput{}, "", err
	}
	out := SearchCodeOutput{Mode: mode}
	var b strings.Builder
	switch mode {
	case "content":
		res, err := c.svc.Search(ctx, c.ws, grove.SearchRequest{
			Pattern: in.Pattern, Path: dir, Glob: in.Glob, FixedString: in.FixedString,
			CaseInsensitive: in.CaseInsensitive, Context: in.Context, MaxResults: limit, Offset: in.Offset,
		})
		if err != nil {
			if isKind(err, grove.ErrInvalid) {
				return out, "", withHint(err, "fix the regex (or set fixed_string=true to search literally) or the glob")
			}
			return out, "", err
		}
		out.Matches, out.Total, out.Truncated, out.NextOffset = res.Matches, res.Total, res.Truncated, res.NextOffset
		for _, m := range res.Matches {
			for i, l := range m.Before {
				fmt.Fprintf(&b, "%s-%d-%s\n", m.Path, m.Line-len(m.Before)+i, clip(l, maxLineLen))
			}
			fmt.Fprintf(&b, "%s:%d:%s\n", m.Path, m.Line, clip(m.Text, maxLineLen))
			for i, l := range m.After {
				fmt.Fprintf(&b, "%s-%d-%s\n", m.Path, m.Line+1+i, clip(l, maxLineLen))
			}
			if in.Context > 0 {
				b.WriteString("--\n")
			}
		}
	case "files", "count":
		args := []string{"--null", "--no-config", "--no-messages", "--color=never"}
		if mode == "files" {
			args = append(args, "--files-with-matches")
		} else {
			args = append(args, "--count-matches")
		}
		if in.FixedString {
			args = append(args, "--fixed-strings")
		}
		if in.CaseInsensitive {
			args = append(args, "--ignore-case")
		}
		if in.Glob != "" {
			args = append(args, "--glob", in.Glob)
		}
		args = append(args, "--regexp", in.Pattern, "--", wire.UnescapePath(dir))
		raw, err := c.rg(ctx, args)
		if err != nil {
			return out, "", err
		}
		type rec struct {
			path string
			n    int
		}
		var recs []rec
		if mode == "files" {
			for _, p := range bytes.Split(raw, []byte{0}) {
				if s := strings.TrimSpace(string(p)); s != "" {
					recs = append(recs, rec{path: wire.EscapePath(strings.TrimPrefix(s, "./"))})
				}
			}
		} else {
			// --null --count-matches prints "path\0count\n".
			for _, line := range bytes.Split(raw, []byte{'\n'}) {
				p, n, ok := bytes.Cut(line, []byte{0})
				if !ok {
					continue
				}
				cnt, _ := strconv.Atoi(string(n))
				recs = append(recs, rec{wire.EscapePath(strings.TrimPrefix(string(p), "./")), cnt})
			}
		}
		sort.Slice(recs, func(i, j int) bool { return recs[i].path < recs[j].path })
		out.Total = len(recs)
		lo := min(in.Offset, len(recs))
		hi := min(lo+limit, len(recs))
		if hi < len(recs) {
			out.Truncated, out.NextOffset = true, hi
		}
		for _, r := range recs[lo:hi] {
			if mode == "files" {
				out.Files = append(out.Files, r.path)
				b.WriteString(r.path + "\n")
			} else {
				out.Counts = append(out.Counts, FileCount{r.path, r.n})
				fmt.Fprintf(&b, "%s:%d\n", r.path, r.n)
			}
		}
	default:
		return out, "", invalidf("output_mode %q: want content, files or count", clip(mode, 40))
	}
	if out.Total == 0 {
		b.WriteString("No matches.\n")
	}
	if out.Truncated {
		fmt.Fprintf(&b, "[more results: continue with offset=%d, or narrow with path or glob]\n", out.NextOffset)
	}
	return out, b.String(), nil
}

func isKind(err, kind error) bool { return grove.KindOf(err) == kind }
