// Package search runs ripgrep over a workspace and parses its JSON output
// into pages of matches with context.
package search

import (
	"strconv"
	"strings"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/fsops"
)

// Limits on a request.
const (
	DefaultMaxResults = 100
	MaxResults        = 1000
	MaxContext        = 20
	// MaxLineBytes bounds the text kept of one matching or context line;
	// rg's --max-columns does not apply to its JSON output.
	MaxLineBytes = 1000
)

// normalise validates req and fills defaults. The path is returned in
// clean workspace-relative form.
func normalise(req grove.SearchRequest) (grove.SearchRequest, error) {
	if req.Pattern == "" {
		return req, grove.Errorf(grove.ErrInvalid, "search: empty pattern")
	}
	if strings.ContainsRune(req.Pattern, 0) || strings.ContainsRune(req.Glob, 0) {
		return req, grove.Errorf(grove.ErrInvalid, "search: pattern and glob may not contain NUL")
	}
	if strings.ContainsAny(req.Glob, "\n\r") {
		return req, grove.Errorf(grove.ErrInvalid, "search: glob may not contain line breaks")
	}
	p, err := fsops.CleanPath(req.Path)
	if err != nil {
		return req, err
	}
	req.Path = p
	if req.Context < 0 || req.Context > MaxContext {
		return req, grove.Errorf(grove.ErrInvalid, "search: context %d out of range 0..%d", req.Context, MaxContext)
	}
	if req.Offset < 0 {
		return req, grove.Errorf(grove.ErrInvalid, "search: negative offset")
	}
	switch {
	case req.MaxResults <= 0:
		req.MaxResults = DefaultMaxResults
	case req.MaxResults > MaxResults:
		req.MaxResults = MaxResults
	}
	return req, nil
}

// Args validates req and returns rg's arguments (without the program
// name). Everything the caller controls is either an option value glued
// to its flag (--glob=VALUE) or placed after "--", so a pattern or path
// such as "--pre=sh" is searched for, never obeyed. The path is always
// given ("." for the whole workspace) so that rg never decides to read
// its stdin instead, whatever stdin is. --sort=path makes the order, and
// so pagination, stable across calls.
func Args(req grove.SearchRequest) ([]string, error) {
	req, err := normalise(req)
	if err != nil {
		return nil, err
	}
	return args(req, true), nil
}

// args builds rg's arguments for a normalised request; sorted makes rg
// walk in path order on one thread (Run sorts parallel output itself).
func args(req grove.SearchRequest, sorted bool) []string {
	args := []string{"--json", "--no-config", "--no-follow"}
	if sorted {
		args = append(args, "--sort=path")
	}
	if req.FixedString {
		args = append(args, "--fixed-strings")
	}
	if req.CaseInsensitive {
		args = append(args, "--ignore-case")
	} else {
		args = append(args, "--case-sensitive")
	}
	if req.Context > 0 {
		args = append(args, "--context="+strconv.Itoa(req.Context))
	}
	if req.Glob != "" {
		args = append(args, "--glob="+req.Glob)
	}
	// .git is hidden and so already skipped; the explicit glob keeps it
	// out even if hidden files are ever searched.
	return append(args, "--glob=!.git", "--", req.Pattern, req.Path)
}
