package search

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/internal/testenv"
)

// BenchmarkSearch runs Run and raw rg (same arguments, output discarded)
// over a generated tree of 3000 files, interleaved, and reports
// grove/raw. raw-unsorted-ns/op shows what --sort=path (stable pages)
// costs against rg's parallel default.
func BenchmarkSearch(b *testing.B) {
	rg := testenv.RequireBinary(b, "rg", "rg")
	dir := b.TempDir()
	body := strings.Repeat("lorem ipsum dolor sit amet\nconsectetur adipiscing elit\n", 40)
	for i := range 3000 {
		p := filepath.Join(dir, fmt.Sprintf("d%02d/s%02d/f%04d.txt", i%30, i%7, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		content := body
		if i%10 == 0 {
			content += "needle in a haystack\n"
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	req := grove.SearchRequest{Pattern: "needle", MaxResults: MaxResults}
	args, err := Args(req)
	if err != nil {
		b.Fatal(err)
	}
	raw := func(args []string) {
		cmd := exec.Command(rg, args...)
		cmd.Dir = dir
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
	grove := func() {
		res, err := Run(context.Background(), dir, req)
		if err != nil || len(res.Matches) != 300 {
			b.Fatalf("%v, %d matches", err, len(res.Matches))
		}
	}
	unsorted := []string{"--json", "--", "needle", "."}
	// The machine is shared and noisy: alternate the contenders within
	// each iteration so that drift hits both alike, and report the ratio.
	var tRaw, tGrove, tUnsorted time.Duration
	for b.Loop() {
		start := time.Now()
		raw(args)
		tRaw += time.Since(start)
		start = time.Now()
		grove()
		tGrove += time.Since(start)
		start = time.Now()
		raw(unsorted)
		tUnsorted += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tRaw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(tGrove.Nanoseconds())/n, "grove-ns/op")
	b.ReportMetric(float64(tUnsorted.Nanoseconds())/n, "raw-unsorted-ns/op")
	b.ReportMetric(float64(tGrove)/float64(tRaw), "grove/raw")
}
