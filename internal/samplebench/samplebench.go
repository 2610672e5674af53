// Package samplebench times flow.Sample in benchmarks: the loop and the
// figures that the sampling benchmarks of flow and pipeline share.
package samplebench

import (
	"context"
	"testing"
	"time"

	"lgflow/flow"
)

// Run calls flow.Sample for n graphs once per iteration of b, with seeds
// 0, 1, 2, ... after opts, and returns the wall-clock seconds per call. A
// sampling error or a short result fails b.
func Run(b *testing.B, m *flow.Model, n int, opts ...flow.SampleOption) float64 {
	b.Helper()
	opts = append(opts[:len(opts):len(opts)], nil) // the last slot takes each iteration's seed
	seed := uint64(0)
	start := time.Now()
	for b.Loop() {
		opts[len(opts)-1] = flow.WithSeed(seed)
		gs, err := flow.Sample(context.Background(), m, n, opts...)
		if err != nil {
			b.Fatal(err)
		}
		if len(gs) != n {
			b.Fatalf("%d graphs, want %d", len(gs), n)
		}
		seed++
	}
	return time.Since(start).Seconds() / float64(b.N)
}

// Report reports sec seconds per call of n graphs as s/op and graphs/s,
// with ns/op zeroed (a call takes seconds: s/op reads better).
func Report(b *testing.B, sec float64, n int) {
	b.ReportMetric(sec, "s/op")
	b.ReportMetric(float64(n)/sec, "graphs/s")
	b.ReportMetric(0, "ns/op")
}
