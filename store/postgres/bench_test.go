package postgres_test

import (
	"context"
	"testing"
)

// BenchmarkGetWorkspaceByKey measures the store's share of re-acquiring
// an existing workspace (DESIGN.md §9: ≤ 1 ms p50 for the whole call), on a
// table of 1000 workspaces, over loopback TCP.
func BenchmarkGetWorkspaceByKey(b *testing.B) {
	s := open(b, newSchema(b))
	defer s.Close()
	ws := seed(b, s, 1000)
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		i := 0
		for b.Loop() {
			w := ws[i%len(ws)]
			if _, err := s.GetWorkspaceByKey(ctx, w.Key); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := s.GetWorkspaceByKey(ctx, ws[i%len(ws)].Key); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	})
}
