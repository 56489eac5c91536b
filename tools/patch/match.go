package patch

import (
	"context"
	"hash/maphash"
	"strings"

	"github.com/grove-dev/grove"
)

// Limits on one patch (see docs/SECURITY.md, "Limits"). They bound the
// memory and CPU a single apply_patch call can take whatever its input:
//
//   - MaxPatchBytes: the patch text itself (E_TOO_LARGE);
//   - MaxFileOps: "*** Add/Delete/Update File" sections (E_INVALID_ARGUMENT);
//   - MaxHunks: "@@" hunks over the whole patch (E_INVALID_ARGUMENT);
//   - MaxLineVisits: file lines hashed while searching for anchors and
//     context, summed over every hunk and fuzz level (E_RESOURCE_LIMIT).
//     Each search is linear in the file, so this allows about 40 full
//     searches of a 5-million-line file.
const (
	MaxPatchBytes = 4 << 20
	MaxFileOps    = 1000
	MaxHunks      = 5000
	MaxLineVisits = 200_000_000
)

// lineBudget is MaxLineVisits; tests lower it.
var lineBudget int64 = MaxLineVisits

// checkEvery is how many lines a search visits between two looks at its
// context.
const checkEvery = 4096

// matcher finds runs of lines in linear time: each file line is hashed
// once per search and the hashes are matched against the pattern's with
// Knuth-Morris-Pratt, so a search costs O(file lines + pattern lines)
// whatever the content. The first match is verified line by line; later
// ones only count towards ambiguity and are trusted to their 64-bit hash.
type matcher struct {
	ctx    context.Context
	seed   maphash.Seed
	budget int64 // line visits left; below zero the caller gets E_RESOURCE_LIMIT
	visits int64 // line visits so far, for tests
	ph     []uint64
	fail   []int
}

func newMatcher(ctx context.Context, budget int64) *matcher {
	return &matcher{ctx: ctx, seed: maphash.MakeSeed(), budget: budget}
}

var errBudget = grove.Errorf(grove.ErrResourceLimit, "the patch needs more than %d line comparisons to locate its hunks; split it into smaller patches or add \"@@\" anchors", MaxLineVisits)

// charge accounts for n line visits and looks at the context.
func (m *matcher) charge(n int) error {
	m.visits += int64(n)
	m.budget -= int64(n)
	if err := m.ctx.Err(); err != nil {
		return err
	}
	if m.budget < 0 {
		return errBudget
	}
	return nil
}

// index returns the first i at which pat matches text under norm and how
// many positions match (counting stops at the first unless all).
func (m *matcher) index(text, pat []string, norm func(string) string, all bool) (first, n int, err error) {
	first = -1
	if len(pat) == 0 || len(pat) > len(text) {
		return first, 0, nil
	}
	if err := m.charge(len(pat)); err != nil {
		return -1, 0, err
	}
	ph := m.ph[:0]
	for _, p := range pat {
		ph = append(ph, maphash.String(m.seed, norm(p)))
	}
	fail := m.fail[:0]
	fail = append(fail, 0)
	for i, k := 1, 0; i < len(ph); i++ {
		for k > 0 && ph[i] != ph[k] {
			k = fail[k-1]
		}
		if ph[i] == ph[k] {
			k++
		}
		fail = append(fail, k)
	}
	m.ph, m.fail = ph, fail
	k := 0
	for i, l := range text {
		if i%checkEvery == 0 {
			if err := m.charge(min(checkEvery, len(text)-i)); err != nil {
				return -1, 0, err
			}
		}
		h := maphash.String(m.seed, norm(l))
		for k > 0 && ph[k] != h {
			k = fail[k-1]
		}
		if ph[k] == h {
			k++
		}
		if k < len(ph) {
			continue
		}
		k = fail[k-1]
		at := i - len(ph) + 1
		if first < 0 {
			if !equalLines(text[at:at+len(pat)], pat, norm) {
				continue // a hash collision
			}
			first = at
		}
		n++
		if !all {
			break
		}
	}
	return first, n, nil
}

func equalLines(a, b []string, norm func(string) string) bool {
	for j := range b {
		if norm(a[j]) != norm(b[j]) {
			return false
		}
	}
	return true
}

// IndexLines returns the first i at which norm(lines[i+j]) == norm(pat[j])
// for every j, or -1, in time linear in len(lines)+len(pat). It stops with
// ctx's error when ctx ends.
func IndexLines(ctx context.Context, lines, pat []string, norm func(string) string) (int, error) {
	m := newMatcher(ctx, int64(len(lines)+len(pat))+checkEvery)
	first, _, err := m.index(lines, pat, norm, false)
	if hook := onVisits; hook != nil {
		hook(m.visits)
	}
	return first, err
}

// onVisits, when set by a test, receives each search's line visits.
var onVisits func(int64)

func normalizer(f Fuzz) func(string) string {
	switch f {
	case FuzzTrailingSpace:
		return trimTrailing
	case FuzzSpace:
		return strings.TrimSpace
	}
	return identity
}

func trimTrailing(s string) string { return strings.TrimRight(s, " \t\r") }
func identity(s string) string     { return s }
