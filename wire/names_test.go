package wire

import (
	"testing"
	"unicode/utf8"
)

func TestEscapePathRoundTrips(t *testing.T) {
	cases := map[string]string{
		"plain.go":      "plain.go",
		"dir/é.txt":     "dir/é.txt",
		"caf\xe9.txt":   `caf\xe9.txt`,
		"a\xff\xfe/b":   `a\xff\xfe/b`,
		`lit\xe9`:       `lit\\xe9`,
		`back\\slash`:   `back\\\\slash`,
		`win\path`:      `win\path`, // a lone backslash is not an escape
		`lit\x41`:       `lit\x41`,  // \x41 is not a byte escape (< 0x80)
		"mixed\\\xe9":   `mixed\\\xe9`,
		"trunc\xe2\x82": `trunc\xe2\x82`,
		"":              "",
	}
	for raw, wire := range cases {
		if got := EscapePath(raw); got != wire {
			t.Errorf("EscapePath(%q) = %q, want %q", raw, got, wire)
		}
		if got := UnescapePath(wire); got != raw {
			t.Errorf("UnescapePath(%q) = %q, want %q", wire, got, raw)
		}
		if !utf8.ValidString(EscapePath(raw)) {
			t.Errorf("EscapePath(%q) is not UTF-8", raw)
		}
	}
}

func FuzzEscapePath(f *testing.F) {
	for _, s := range []string{"a", "caf\xe9", `\\x`, `\xe9`, "\xff\\", `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := EscapePath(s)
		if !utf8.ValidString(e) {
			t.Fatalf("EscapePath(%q) = %q is not UTF-8", s, e)
		}
		if got := UnescapePath(e); got != s {
			t.Fatalf("UnescapePath(EscapePath(%q)) = %q", s, got)
		}
	})
}
