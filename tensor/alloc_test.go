package tensor

import (
	"runtime"
	"testing"
)

// TestZeroAllocs checks that ops writing into a preallocated dst allocate
// nothing, on small tensors (serial path) and large ones (worker pool).
func TestZeroAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	r := NewRNG(50)
	for _, n := range []int{7, 300} {
		for _, dt := range dtypes {
			a, b := randT(r, dt, n, 257), randT(r, dt, n, 257)
			row := randT(r, dt, 257)
			col := randT(r, dt, n, 1)
			dst := New(dt, n, 257)
			red := New(dt, n)
			redKeep := New(dt, 1, 257)
			mean, rstd := New(dt, n), New(dt, n)
			gamma := randT(r, dt, 257)
			dg := New(dt, 257)
			idx := make([]int32, 2*n)
			for i := range idx {
				idx[i] = int32(i % n)
			}
			src := randT(r, dt, 2*n, 257)
			seg := New(dt, n, 257)
			tgt := make([]int32, n)
			q, k, v := randT(r, dt, 2, 2, 16, 8), randT(r, dt, 2, 2, 16, 8), randT(r, dt, 2, 2, 16, 8)
			ao, ap := New(dt, 2, 2, 16, 8), New(dt, 2, 2, 16, 16)
			dq, dk, dv := q.NewLike(), k.NewLike(), v.NewLike()
			mask := Full(dt, 1, 2, 16)
			mm := New(dt, n, n)
			m1, v1 := New(dt, n, 257), New(dt, n, 257)
			dstT, aT, bT, aTT := dst.T(), a.T(), b.T(), a.T().T()
			dsCtx, dsVec, dsBo := randT(r, dt, n, 16), randT(r, dt, 16), randT(r, dt, 1)
			dsCtxGrad, dsVecGrad, dsBoGrad := New(dt, n, 16), New(dt, 16), New(dt, 1)
			ops := map[string]func(){
				"Add":          func() { Add(dst, a, b) },
				"AddRow":       func() { Add(dst, a, row) },
				"MulCol":       func() { Mul(dst, a, col) },
				"AddT":         func() { Add(dstT, aT, bT) },
				"AddScaled":    func() { AddScaled(dst, dst, b, 0.5) },
				"Exp":          func() { Exp(dst, a) },
				"GELU":         func() { GELU(dst, a) },
				"GELUGrad":     func() { GELUGrad(dst, a, b) },
				"MulScalar":    func() { MulScalar(dst, a, 2) },
				"Where":        func() { Where(dst, a, a, b) },
				"Sum":          func() { Sum(red, a, 1, false) },
				"SumAxis0":     func() { Sum(redKeep, a, 0, true) },
				"SumTo":        func() { SumTo(row, a) },
				"SumAll":       func() { SumAll(a) },
				"Softmax":      func() { Softmax(dst, a, -1) },
				"LogSumExp":    func() { LogSumExp(red, a, -1, false) },
				"MatMul":       func() { MatMul(mm, a, b, false, true) },
				"Gather":       func() { Gather(src, a, idx) },
				"ScatterAdd":   func() { ScatterAdd(dst, src, idx) },
				"SegmentSum":   func() { SegmentSum(seg, src, idx, n) },
				"SegmentMean":  func() { SegmentMean(seg, src, idx, n) },
				"LayerNorm":    func() { LayerNorm(dst, mean, rstd, a, gamma, row, 1e-5) },
				"LayerNormBwd": func() { LayerNormBackward(dst, dg, row, b, a, mean, rstd, gamma) },
				"CE":           func() { SoftmaxCrossEntropy(dst, a, tgt, nil) },
				"CEBwd":        func() { SoftmaxCrossEntropyBackward(dst, a, tgt, nil, 1) },
				"Attention":    func() { Attention(ao, ap, q, k, v, mask, 0.3) },
				"AttentionBwd": func() { AttentionBackward(dq, dk, dv, ao, q, k, v, ap, 0.3) },
				"AdamW":        func() { AdamWStep(dst, a, m1, v1, 1e-3, 0.9, 0.999, 1e-8, 0.01, 1) },
				"Fill":         func() { dst.Fill(1) },
				"DeepSet":      func() { DeepSetScores(dst, a, dsCtx, dsVec, dsVec, dsVec, dsBo) },
				"DeepSetBwd": func() {
					DeepSetScoresBackward(dst, dsCtxGrad, dsVecGrad, dsVecGrad, dsVecGrad, dsBoGrad, b, a, dsCtx, dsVec, dsVec, dsVec)
				},
				"Copy": func() { Copy(dst, aTT) },
			}
			for name, f := range ops {
				f() // warm pools
				// testing.AllocsPerRun runs with GOMAXPROCS=1; the pool's
				// workers still exist and take chunks.
				if got := testing.AllocsPerRun(20, f); got != 0 {
					t.Errorf("%v n=%d %s: %v allocs per run, want 0", dt, n, name, got)
				}
				// The runtime may allocate a sudog for a blocking wait after
				// a GC emptied its caches: allow one allocation in 10 runs.
				// (internal/gemm's parallel path is measured by its own tests.)
				if got := allocsParallel(f); got > 0.1 && name != "MatMul" {
					t.Errorf("%v n=%d %s: %v allocs per run with GOMAXPROCS=%d, want 0", dt, n, name, got, runtime.GOMAXPROCS(0))
				}
			}
		}
	}
}

// allocsParallel is AllocsPerRun without forcing GOMAXPROCS to 1. It
// returns the least of three trials, since a garbage collection during a
// trial empties the sync.Pools that hold kernel descriptors.
func allocsParallel(f func()) float64 {
	const runs = 20
	best := 1e9
	for range 3 {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range runs {
			f()
		}
		runtime.ReadMemStats(&m1)
		best = min(best, float64(m1.Mallocs-m0.Mallocs)/runs)
	}
	return best
}
