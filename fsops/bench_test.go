package fsops

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkReadWrite4K times fsops and the raw os calls on a 4 KiB file,
// interleaved within each iteration so that the noise of a shared machine
// hits all contenders alike, and reports the ratios:
//
//	read/os           fsops.ReadFile vs os.ReadFile
//	write-nosync/os   atomic WriteFile without fsync vs os.WriteFile (in place, not atomic)
//	write-nosync/tmp  the same vs a raw temp file + rename (the floor for an atomic write)
//	write-fsync/os    atomic, durable WriteFile vs os.WriteFile
func BenchmarkReadWrite4K(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	raw := filepath.Join(dir, "raw.txt")
	if err := os.WriteFile(raw, data, 0o644); err != nil {
		b.Fatal(err)
	}
	open := func(opts Options) *FS {
		opts.TempDir = filepath.Join(filepath.Dir(dir), "tmp")
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
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	var t [6]time.Duration
	timed := func(i int, f func()) {
		start := time.Now()
		f()
		t[i] += time.Since(start)
	}
	for b.Loop() {
		timed(0, func() { _, err := os.ReadFile(raw); must(err) })
		timed(1, func() { _, err := synced.ReadFile("f.txt", 1<<20); must(err) })
		timed(2, func() { must(os.WriteFile(raw, data, 0o644)) })
		timed(3, func() {
			must(os.WriteFile(raw+".tmp", data, 0o644))
			must(os.Rename(raw+".tmp", raw))
		})
		timed(4, func() { must(unsynced.WriteFile("f.txt", data, 0o644)) })
		timed(5, func() { must(synced.WriteFile("f.txt", data, 0o644)) })
	}
	n := float64(b.N)
	for i, name := range []string{"os-read", "fsops-read", "os-write", "os-tmp+rename", "fsops-write-nosync", "fsops-write-fsync"} {
		b.ReportMetric(float64(t[i].Nanoseconds())/n, name+"-ns/op")
	}
	b.ReportMetric(float64(t[1])/float64(t[0]), "read/os")
	b.ReportMetric(float64(t[4])/float64(t[2]), "write-nosync/os")
	b.ReportMetric(float64(t[4])/float64(t[3]), "write-nosync/tmp")
	b.ReportMetric(float64(t[5])/float64(t[2]), "write-fsync/os")
}
