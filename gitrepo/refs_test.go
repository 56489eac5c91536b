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
