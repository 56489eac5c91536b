package bench

import (
	"strings"
	"testing"
	"time"
)

func TestPercentilesAndRatio(t *testing.T) {
	var s Sample
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	if s.Pct(50) != 50*time.Millisecond || s.Pct(99) != 99*time.Millisecond || s.Min() != time.Millisecond {
		t.Fatalf("p50=%s p99=%s min=%s", s.Pct(50), s.Pct(99), s.Min())
	}
	r := Row{Name: "x", Grove: s, Raw: Sample{25 * time.Millisecond}}
	if r.Ratio() != 2 {
		t.Fatalf("ratio %v", r.Ratio())
	}
	var b strings.Builder
	if err := Print(&b, []Row{r}); err != nil || !strings.Contains(b.String(), "2.00x") {
		t.Fatalf("print: %v %q", err, b.String())
	}
}
