package fsops

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadWrite4K runs fsops and the raw os calls side by side on a
// 4 KiB file; compare ns/op of the fsops and os sub-benchmarks.
func BenchmarkReadWrite4K(b *testing.B) {
	dir := b.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	raw := filepath.Join(dir, "raw.txt")
	if err := os.WriteFile(raw, data, 0o644); err != nil {
		b.Fatal(err)
	}
	open := func(opts Options) *FS {
		fsys, err := Open(dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { fsys.Close() })
		return fsys
	}
	synced, unsynced := open(Options{}), open(Options{NoSync: true})
	if err := synced.WriteFile("f.txt", data, 0o644); err != nil {
		b.Fatal(err)
	}

	b.Run("read/os", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read/fsops", func(b *testing.B) {
		for b.Loop() {
			if _, err := synced.ReadFile("f.txt", 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write/os", func(b *testing.B) {
		for b.Loop() {
			if err := os.WriteFile(raw, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The raw form of an atomic replace, without fsync: what fsops-nosync
	// cannot beat, whatever its own overhead.
	b.Run("write/os-tmp+rename", func(b *testing.B) {
		tmp := raw + ".tmp"
		for b.Loop() {
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.Rename(tmp, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write/fsops-nosync", func(b *testing.B) {
		for b.Loop() {
			if err := unsynced.WriteFile("f.txt", data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write/fsops-fsync", func(b *testing.B) {
		for b.Loop() {
			if err := synced.WriteFile("f.txt", data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}
