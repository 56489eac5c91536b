package patch

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/grove-dev/grove"
)

func countVisits(t *testing.T) *int64 {
	var n int64
	onVisits = func(v int64) { n += v }
	t.Cleanup(func() { onVisits = nil })
	return &n
}

// The old search compared every file line with every pattern line at each
// fuzz level: about 1M × 200 × 3 comparisons here. The linear one visits
// each line once per level.
func TestApplySearchIsLinear(t *testing.T) {
	const lines, ctxLines = 1_000_000, 200
	file := strings.Repeat("x\n", lines)
	read := func(string) ([]byte, error) { return []byte(file), nil }
	for _, tail := range []string{"-y\n+z\n", " x\n-x\n+z\n*** End of File\n"} {
		visits := countVisits(t)
		p, err := Parse("*** Begin Patch\n*** Update File: f\n@@\n" + strings.Repeat(" x\n", ctxLines) + tail + "*** End Patch\n")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Apply(p, read)
		if tail[0] == '-' && !errors.Is(err, grove.ErrInvalid) {
			t.Fatalf("err = %v, want context not found", err)
		}
		if tail[0] != '-' && err != nil {
			t.Fatal(err)
		}
		if bound := int64(3 * (lines + ctxLines + 2)); *visits > bound {
			t.Fatalf("%d line visits, want at most %d", *visits, bound)
		}
	}
}

func TestIndexLines(t *testing.T) {
	visits := countVisits(t)
	lines := strings.Split(strings.Repeat("a\n", 500_000)+"  b", "\n")
	pat := append(strings.Split(strings.Repeat("a\n", 199), "\n")[:199], "b")
	at, err := IndexLines(context.Background(), lines, pat, strings.TrimSpace)
	if err != nil || at != len(lines)-len(pat) {
		t.Fatalf("IndexLines = %d, %v; want %d", at, err, len(lines)-len(pat))
	}
	if *visits > int64(len(lines)+len(pat)) {
		t.Fatalf("%d line visits for %d lines", *visits, len(lines)+len(pat))
	}
	if at, _ := IndexLines(context.Background(), []string{"a", "b"}, []string{"b", "a"}, identity); at != -1 {
		t.Fatalf("IndexLines = %d, want -1", at)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := IndexLines(ctx, lines, pat, identity); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
}

func TestApplyCancelled(t *testing.T) {
	file, text := manyOpsPatch(380_000, 300)
	p, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	read := func(string) ([]byte, error) { return []byte(file), nil }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ApplyContext(ctx, p, read); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: err = %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	start := time.Now()
	_, err = ApplyContext(ctx, p, read)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while applying: err = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("returned %v after the cancel", d)
	}
}

// 300 Updates of a 10 MB file used to keep a copy of the file per
// operation (3 GB and more); one buffer suffices.
func TestApplyManyOpsMemory(t *testing.T) {
	file, text := manyOpsPatch(380_000, 300)
	p, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	read := func(string) ([]byte, error) { return []byte(file), nil }
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	changes, err := Apply(p, read)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 200<<20 {
		t.Fatalf("allocated %d MB for %d ops over a %d MB file", alloc>>20, len(p.Files), len(file)>>20)
	}
	t.Logf("allocated %d MB", (after.TotalAlloc-before.TotalAlloc)>>20)
	if len(changes) != 300 {
		t.Fatalf("%d changes", len(changes))
	}
	got := string(changes[len(changes)-1].New)
	for _, k := range []int{0, 150, 299} {
		if !strings.Contains(got, fmt.Sprintf("\nchanged %d\n", k)) && !strings.HasPrefix(got, fmt.Sprintf("changed %d\n", k)) {
			t.Fatalf("op %d not applied", k)
		}
	}
	if len(got) > len(file) || strings.Contains(got, "line 00000000 ") {
		t.Fatal("unexpected result")
	}
}

// Applying a patch whole gives the files that applying its operations one
// at a time gives (the old implementation's semantics).
func TestApplyWholeEqualsSequential(t *testing.T) {
	files := map[string]string{
		"a": "one\ntwo\nthree\n",
		"c": "x\r\ny\r\n",
		"e": "only",
	}
	patches := []string{
		"*** Update File: a\n-one\n+ONE\n*** Update File: a\n-two\n+TWO\n*** Update File: a\n three\n+four\n",
		"*** Update File: a\n*** Move to: b\n-one\n+1\n*** Update File: b\n-1\n+uno\n*** Add File: a\n+fresh\n",
		"*** Update File: c\n-x\n+X\n*** Update File: c\n-y\n*** Update File: c\n-X\n*** Update File: c\n@@\n+back\n",
		"*** Update File: e\n-only\n*** Update File: e\n@@\n+new\n*** Update File: e\n-new\n+newer\n",
		"*** Update File: a\n-one\n+ONE\n*** Delete File: a\n*** Add File: a\n+again\n*** Update File: a\n-again\n+and again\n",
		"*** Update File: c\n-x\n+x\r\n*** Update File: c\n-y\n+z\n",
	}
	for i, body := range patches {
		whole := "*** Begin Patch\n" + body + "*** End Patch"
		p, err := Parse(whole)
		if err != nil {
			t.Fatal(err)
		}
		read := func(fs map[string]string) ReadFunc {
			return func(path string) ([]byte, error) {
				if s, ok := fs[path]; ok {
					return []byte(s), nil
				}
				return nil, grove.Errorf(grove.ErrNotFound, "%s", path)
			}
		}
		// One operation at a time, writing each result.
		seq := map[string]string{}
		for k, v := range files {
			seq[k] = v
		}
		for _, op := range p.Files {
			changes, err := Apply(&Patch{Files: []FileOp{op}}, read(seq))
			if err != nil {
				t.Fatalf("patch %d: %v", i, err)
			}
			writeAll(seq, changes)
		}
		got := map[string]string{}
		for k, v := range files {
			got[k] = v
		}
		changes, err := Apply(p, read(files))
		if err != nil {
			t.Fatalf("patch %d: %v", i, err)
		}
		writeAll(got, changes)
		if fmt.Sprint(got) != fmt.Sprint(seq) {
			t.Errorf("patch %d: whole %q, one by one %q", i, got, seq)
		}
	}
}

// writeAll writes changes in order as the tool layer does.
func writeAll(fs map[string]string, changes []Change) {
	for _, c := range changes {
		dst := c.Path
		if c.MoveTo != "" && c.MoveTo != c.Path {
			dst = c.MoveTo
		}
		if c.New != nil {
			fs[dst] = string(c.New)
		}
		if c.New == nil || dst != c.Path {
			delete(fs, c.Path)
		}
	}
}

func TestPatchLimits(t *testing.T) {
	big := "*** Begin Patch\n*** Add File: a\n" + strings.Repeat("+"+strings.Repeat("x", 99)+"\n", MaxPatchBytes/100+1) + "*** End Patch"
	if _, err := Parse(big); !errors.Is(err, grove.ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(MaxPatchBytes)) {
		t.Fatalf("big patch: err = %v", err)
	}
	ops := "*** Begin Patch\n" + strings.Repeat("*** Delete File: a\n", MaxFileOps+1) + "*** End Patch"
	if _, err := Parse(ops); !errors.Is(err, grove.ErrInvalid) || !strings.Contains(err.Error(), "1000 file operations") {
		t.Fatalf("many ops: err = %v", err)
	}
	hunks := "*** Begin Patch\n*** Update File: a\n" + strings.Repeat("@@\n-x\n+y\n", MaxHunks+1) + "*** End Patch"
	if _, err := Parse(hunks); !errors.Is(err, grove.ErrInvalid) || !strings.Contains(err.Error(), "5000 hunks") {
		t.Fatalf("many hunks: err = %v", err)
	}
	// A Patch built by hand is checked by Apply.
	p := &Patch{Files: make([]FileOp, MaxFileOps+1)}
	if _, err := Apply(p, nil); !errors.Is(err, grove.ErrInvalid) {
		t.Fatalf("hand-built: err = %v", err)
	}
	// The search budget.
	defer func(b int64) { lineBudget = b }(lineBudget)
	lineBudget = 10_000
	file := strings.Repeat("x\n", 20_000)
	p, err := Parse("*** Begin Patch\n*** Update File: f\n-y\n+z\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(p, func(string) ([]byte, error) { return []byte(file), nil })
	if !errors.Is(err, grove.ErrResourceLimit) || !strings.Contains(err.Error(), "line comparisons") {
		t.Fatalf("budget: err = %v", err)
	}
}
