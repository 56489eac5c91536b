package bwrap

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/grove-dev/grove"
	"github.com/grove-dev/grove/driver"
	"github.com/grove-dev/grove/internal/testenv"
)

// BenchmarkExecTrue compares one Exec of `true` with the same bwrap
// command line launched raw (os/exec, output discarded, no limits), in one
// run, so the ratio is meaningful on a noisy machine.
func BenchmarkExecTrue(b *testing.B) {
	testenv.RequireBinary(b, "bwrap", "bwrap")
	d, err := New(Options{Cgroups: os.Getenv("GROVE_BENCH_CGROUPS")})
	if err != nil {
		b.Fatal(err)
	}
	spec := driver.Spec{WorkspaceID: "bench", WorkDir: b.TempDir(), Writable: true}
	ctx := context.Background()
	if _, err := d.Create(ctx, spec); err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.Logf("cgroups in use: %v", d.cgroups != nil)
	groveOnce := func(b *testing.B) {
		res, err := d.Exec(ctx, "bench", grove.ExecRequest{Argv: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	// The raw launch has the same flags, the seccomp filter on fd 5
	// included (and, as root, the same setpriv).
	rawOnce := func(b *testing.B) {
		cmd, done, err := d.RawCommand("bench", []string{"true"})
		if err != nil {
			b.Fatal(err)
		}
		defer done()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("grove", func(b *testing.B) {
		for b.Loop() {
			groveOnce(b)
		}
	})
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			rawOnce(b)
		}
	})
	// Alternating the two cancels out the machine's drift between the
	// sub-benchmarks above; the medians and their ratio are the numbers
	// to compare.
	b.Run("interleaved", func(b *testing.B) {
		var gs, rs []time.Duration
		for b.Loop() {
			t0 := time.Now()
			groveOnce(b)
			t1 := time.Now()
			rawOnce(b)
			gs, rs = append(gs, t1.Sub(t0)), append(rs, time.Since(t1))
		}
		g, r := median(gs), median(rs)
		b.ReportMetric(float64(g.Microseconds()), "grove-p50-µs")
		b.ReportMetric(float64(r.Microseconds()), "raw-p50-µs")
		b.ReportMetric(float64(g)/float64(r), "ratio")
	})
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
