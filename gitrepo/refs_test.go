package gitrepo

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/grove-dev/grove"
)

var refCases = []struct {
	ref  string
	ok   bool
	isBr bool // also a valid branch name
}{
	{"main", true, true},
	{"agent/edits-c1", true, true},
	{"feature/x.y_z", true, true},
	{"v1.2.3", true, true},
	{"refs/heads/main", true, false},
	{"HEAD", true, false},
	{"0123456789abcdef0123456789abcdef01234567", true, true},
	{"a..b", false, false},
	{"main\n", false, false},
	{"-x", false, false},
	{"--upload-pack=x", false, false},
	{"@{", false, false},
	{"a@{1}", false, false},
	{"@", false, false},
	{"", false, false},
	{"a b", false, false},
	{"a~1", false, false},
	{"a^", false, false},
	{"a:b", false, false},
	{"a?", false, false},
	{"a*", false, false},
	{"a[b", false, false},
	{`a\b`, false, false},
	{"a\x7f", false, false},
	{"a\tb", false, false},
	{"x.lock", false, false},
	{"a/x.lock/b", false, false},
	{"a/", false, false},
	{"/a", false, false},
	{"a//b", false, false},
	{"a.", false, false},
	{".a", false, false},
	{"a/.b", false, false},
	{"../../etc", false, false},
	{"\xff", false, false},
	{strings.Repeat("a", 2000), false, false},
}

func TestValidateRef(t *testing.T) {
	for _, tt := range refCases {
		err := ValidateRef(tt.ref)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateRef(%q) = %v, want ok=%v", tt.ref, err, tt.ok)
		}
		if err != nil && !errors.Is(err, grove.ErrInvalid) {
			t.Errorf("ValidateRef(%q) = %v, want ErrInvalid", tt.ref, err)
		}
		berr := ValidateBranch(tt.ref)
		if (berr == nil) != tt.isBr {
			t.Errorf("ValidateBranch(%q) = %v, want ok=%v", tt.ref, berr, tt.isBr)
		}
	}
}

// TestValidateBranchAgreesWithGit checks that every branch we accept, git
// accepts too (we may be stricter, never looser).
func TestValidateBranchAgreesWithGit(t *testing.T) {
	requireGit(t)
	names := []string{"main", "agent/edits-c1", "feature/x.y_z", "v1.2.3", "a-b", "a_b", "x/y/z",
		"ünïcode", "a.b.c", "UPPER", "0123456789abcdef0123456789abcdef01234567", "a@b", "a{b}", "a+b", "a!b"}
	for _, tt := range refCases {
		names = append(names, tt.ref)
	}
	for _, n := range names {
		if ValidateBranch(n) != nil {
			continue
		}
		out, err := exec.Command("git", "check-ref-format", "--branch", n).CombinedOutput()
		if err != nil {
			t.Errorf("ValidateBranch accepts %q but git check-ref-format --branch rejects it: %s", n, out)
		}
	}
}

func FuzzValidateRef(f *testing.F) {
	for _, tt := range refCases {
		f.Add(tt.ref)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		for _, validate := range []func(string) error{ValidateRef, ValidateBranch} {
			if validate(ref) != nil {
				continue
			}
			if strings.HasPrefix(ref, "-") || strings.Contains(ref, "..") || strings.Contains(ref, "@{") {
				t.Fatalf("accepted %q", ref)
			}
			for _, c := range []byte(ref) {
				if c < 0x20 || c == 0x7f || c == ' ' {
					t.Fatalf("accepted %q with a control character or space", ref)
				}
			}
		}
	})
}

func TestValidateRevision(t *testing.T) {
	for _, rev := range []string{"HEAD", "HEAD~1", "HEAD~", "HEAD^", "HEAD^2", "HEAD~2^2~", "main", "origin/main", "main~3", "refs/remotes/origin/main", "v1.0", "0123456789abcdef0123456789abcdef01234567", "abc1234"} {
		if err := ValidateRevision(rev); err != nil {
			t.Errorf("ValidateRevision(%q) = %v", rev, err)
		}
	}
	for _, rev := range []string{"", "-x", "--output=/tmp/x", "main..HEAD", "main...HEAD", "HEAD@{1}", "@{-1}", "HEAD^{tree}", "HEAD^!", "HEAD^@", "main:README.md", "HEAD~1x", "HEAD~-1", "~1", "^main", "HEAD~1234567", "a b", "main\x00", strings.Repeat("~", 100)} {
		if err := ValidateRevision(rev); err == nil {
			t.Errorf("ValidateRevision(%q) accepted", rev)
		}
	}
}

func TestResolveRevisionFallsBackToOrigin(t *testing.T) {
	refs := map[string]bool{"HEAD~1": true, "refs/remotes/origin/main~2": true, "refs/remotes/origin/dev": true}
	exists := func(c string) (bool, error) { return refs[c], nil }
	for rev, want := range map[string]string{"HEAD~1": "HEAD~1", "main~2": "refs/remotes/origin/main~2", "dev": "refs/remotes/origin/dev"} {
		if got, err := ResolveRevision(rev, exists); err != nil || got != want {
			t.Errorf("ResolveRevision(%q) = %q, %v; want %q", rev, got, err, want)
		}
	}
	if _, err := ResolveRevision("nope", exists); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("missing revision: %v", err)
	}
	if _, err := ResolveRevision("HEAD~9", exists); !errors.Is(err, grove.ErrNotFound) {
		t.Errorf("HEAD~9 must not fall back to origin: %v", err)
	}
}
