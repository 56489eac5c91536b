// Package bench measures Grove against the raw tool it wraps, in the same
// run, and prints latency percentiles and ratios. Machines here are noisy,
// so only ratios from one run are comparable.
package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Sample is a set of latencies of one operation.
type Sample []time.Duration

// Time runs fn n times and records each duration; it stops at the first
// error.
func Time(n int, fn func() error) (Sample, error) {
	s := make(Sample, 0, n)
	for range n {
		t0 := time.Now()
		if err := fn(); err != nil {
			return s, err
		}
		s = append(s, time.Since(t0))
	}
	return s, nil
}

// Pct returns the p-th percentile (0..100), nearest rank.
func (s Sample) Pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	i := int(p/100*float64(len(c))+0.5) - 1
	i = max(0, min(i, len(c)-1))
	return c[i]
}

// Min is the fastest run.
func (s Sample) Min() time.Duration { return s.Pct(0) }

// Row is one line of the report: Grove's sample and, when there is one, the
// raw tool's.
type Row struct {
	Name  string
	Grove Sample
	Raw   Sample // nil when there is nothing raw to compare with
	Note  string
}

// Ratio is Grove's p50 over the raw p50.
func (r Row) Ratio() float64 {
	if len(r.Raw) == 0 || r.Raw.Pct(50) == 0 {
		return 0
	}
	return float64(r.Grove.Pct(50)) / float64(r.Raw.Pct(50))
}

// Print writes the rows as a table.
func Print(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tn\tmin\tp50\tp95\tp99\traw p50\traw p95\tratio p50\tnote\t")
	for _, r := range rows {
		raw50, raw95, ratio := "-", "-", "-"
		if len(r.Raw) > 0 {
			raw50, raw95 = fmtDur(r.Raw.Pct(50)), fmtDur(r.Raw.Pct(95))
			ratio = fmt.Sprintf("%.2fx", r.Ratio())
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Name, len(r.Grove),
			fmtDur(r.Grove.Min()), fmtDur(r.Grove.Pct(50)), fmtDur(r.Grove.Pct(95)), fmtDur(r.Grove.Pct(99)),
			raw50, raw95, ratio, r.Note)
	}
	return tw.Flush()
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	}
}
