package patch

import (
	"fmt"
	"strings"
	"testing"
)

// manyOpsPatch builds a patch of ops Update sections on one file of the
// given number of unique lines, each replacing a different line.
func manyOpsPatch(lines, ops int) (string, string) {
	var f strings.Builder
	for i := range lines {
		fmt.Fprintf(&f, "line %08d of the big file\n", i)
	}
	var p strings.Builder
	p.WriteString("*** Begin Patch\n")
	for k := range ops {
		i := k * (lines / ops)
		fmt.Fprintf(&p, "*** Update File: big.txt\n@@\n-line %08d of the big file\n+changed %d\n", i, k)
	}
	p.WriteString("*** End Patch\n")
	return f.String(), p.String()
}

// BenchmarkApplyPatchManyOps applies 300 Update ops to one ~10 MB file.
func BenchmarkApplyPatchManyOps(b *testing.B) {
	file, text := manyOpsPatch(380_000, 300)
	read := func(string) ([]byte, error) { return []byte(file), nil }
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Apply(p, read); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyPatchLongContext looks for 200 lines of context that all
// occur in a 200,000-line file but never in that order.
func BenchmarkApplyPatchLongContext(b *testing.B) {
	file := strings.Repeat("x\n", 200_000)
	text := "*** Begin Patch\n*** Update File: f\n@@\n" + strings.Repeat(" x\n", 200) + "-y\n+z\n*** End Patch\n"
	read := func(string) ([]byte, error) { return []byte(file), nil }
	for b.Loop() {
		p, err := Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Apply(p, read); err == nil {
			b.Fatal("applied")
		}
	}
}
