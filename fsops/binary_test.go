package fsops

import (
	"bytes"
	"strings"
	"testing"
)

func TestIsBinary(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want bool
	}{
		{"empty", nil, false},
		{"ascii", []byte("package main\n\nfunc main() {}\n"), false},
		{"utf-8", []byte("héllo wörld — ✓\n"), false},
		{"latin-1 word", []byte("caf\xe9 au lait, tr\xe8s bien, voil\xe0 la r\xe9ponse\n"), false},
		{"ansi escapes", []byte("\x1b[31mred\x1b[0m\n"), false},
		{"nul", []byte("abc\x00def"), true},
		{"png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), true},
		{"random high bytes", bytes.Repeat([]byte{0xff, 0xfe, 0x81, 0x90}, 100), true},
		{"control soup", bytes.Repeat([]byte{1, 2, 3, 'a'}, 100), true},
		{"nul after 8 KiB", append([]byte(strings.Repeat("a", 9000)), 0), false},
		{"rune cut at 8 KiB", []byte(strings.Repeat("a", 8191) + "é"), false},
	}
	for _, tt := range tests {
		if got := IsBinary(tt.data); got != tt.want {
			t.Errorf("%s: IsBinary = %v, want %v", tt.name, got, tt.want)
		}
	}
}
