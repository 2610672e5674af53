package metrics

import (
	"context"
	"testing"

	"lgflow/graph/datasets"
)

// BenchmarkEvaluatePlanar times the full planar evaluation of the paper's
// protocol: 256 generated graphs against the 256 test graphs, with
// novelty and V.U.N. against the 8192 training graphs of the Planar data
// set (64 nodes). The "generated" graphs are other random planar graphs.
// It reports seconds per evaluation (target: under 10 s on 2 cores).
func BenchmarkEvaluatePlanar(b *testing.B) {
	all := datasets.Planar(64, 8704, 0)
	train, test := all[:8192], all[8448:]
	gen := datasets.Planar(64, 256, 1)
	ctx := context.Background()
	var rep *Report
	for b.Loop() {
		var err error
		if rep, err = Evaluate(ctx, gen, test, train, Options{Kind: Planar}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/eval")
	b.Log("\n" + rep.String())
}
