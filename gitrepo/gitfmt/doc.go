// Package gitfmt builds the argument lists of git's machine-readable output
// formats and parses that output. It runs no process: the same functions
// serve host git and git run inside a remote runtime, where only bytes come
// back.
//
// Every format here is NUL-separated (-z) so that file names with spaces,
// newlines, quotes or invalid UTF-8 survive unquoted and byte-exact; paths
// are returned as Go strings holding git's raw bytes.
//
// Parsers treat their input as untrusted: malformed input gives an error
// wrapping grove.ErrInvalid, never a panic.
package gitfmt
