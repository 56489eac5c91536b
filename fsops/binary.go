package fsops

import (
	"bytes"
	"unicode/utf8"
)

// sniffLen is how much of a file IsBinary looks at, as git does.
const sniffLen = 8 << 10

// IsBinary reports whether data looks like a binary file: a NUL byte in
// the first 8 KiB (git's own rule), or a sample in which more than a
// tenth of the bytes are invalid UTF-8 or control characters other than
// whitespace and escape. The tolerance keeps Latin-1 and mostly-UTF-8
// text readable.
func IsBinary(data []byte) bool {
	if len(data) > sniffLen {
		data = data[:sniffLen]
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			// A rune cut off by the sample's end is not evidence.
			if !utf8.FullRune(data[i:]) {
				return bad*10 > len(data)
			}
			bad++
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f' && r != '\v' && r != 0x1b:
			bad++
		}
		i += size
	}
	return bad*10 > len(data)
}
