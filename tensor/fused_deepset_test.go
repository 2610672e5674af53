package tensor

import (
	"fmt"
	"math"
	"runtime"
	"testing"
)

// deepSetOperands returns random DeepSetScores operands of shape (r, n, d)
// and an upstream gradient.
func deepSetOperands(rng *RNG, dt DType, r, n, d int) (s, ctx, ws, bs, wo, bo, gy *Tensor) {
	return FillUniform(New(dt, r, n), rng, -3, 3), FillUniform(New(dt, r, d), rng, -1.5, 1.5),
		FillUniform(New(dt, d), rng, -1.5, 1.5), FillUniform(New(dt, d), rng, -1, 1),
		FillUniform(New(dt, d), rng, -1, 1), FillUniform(New(dt, 1), rng, -1, 1),
		FillUniform(New(dt, r, n), rng, -1, 1)
}

// The CPU's fused DeepSet rounds its pre-activations and GELU exactly as
// the unfused ops (Mul, Add, Add, GELU, and GELUGrad of the read-out's
// gradient) and sums them in float64: against those ops followed by the
// same float64 sums, the per-row results are equal bit for bit.
func TestDeepSetScoresMatchesUnfused(t *testing.T) {
	rng := NewRNG(7)
	for _, dt := range dtypes {
		for _, sh := range [][3]int{{5, 7, 3}, {40, 64, 16}, {3, 9, 24}} {
			r, n, d := sh[0], sh[1], sh[2]
			s, ctx, ws, bs, wo, bo, gy := deepSetOperands(rng, dt, r, n, d)
			what := fmt.Sprintf("%v %v", dt, sh)
			pre := Add(nil, Add(nil, Mul(nil, s.Unsqueeze(2), ws), bs), ctx.Unsqueeze(1)) // (R, N, D)
			hid := GELU(nil, pre).Float64s()
			dh := GELUGrad(nil, pre, Mul(nil, gy.Unsqueeze(2), wo)).Float64s()
			w, v, b0 := wo.Float64s(), ws.Float64s(), bo.Float64s()[0]
			wy, wds, wdc := New(dt, r, n), New(dt, r, n), New(dt, r, d)
			for i := range r * n {
				wy.Set(b0+dot64(hid[i*d:(i+1)*d], w), i/n, i%n)
				wds.Set(dot64(dh[i*d:(i+1)*d], v), i/n, i%n)
			}
			for i := range r {
				for k := range d {
					acc := 0.0
					for j := range n {
						acc += dh[(i*n+j)*d+k]
					}
					wdc.Set(acc, i, k)
				}
			}
			exactly(t, "DeepSetScores "+what, DeepSetScores(nil, s, ctx, ws, bs, wo, bo), wy)
			ds, dc := New(dt, r, n), New(dt, r, d)
			dws, dbs, dwo, dbo := New(dt, d), New(dt, d), New(dt, d), New(dt, 1)
			DeepSetScoresBackward(ds, dc, dws, dbs, dwo, dbo, gy, s, ctx, ws, bs, wo)
			exactly(t, "DeepSetScoresBackward ds "+what, ds, wds)
			exactly(t, "DeepSetScoresBackward dctx "+what, dc, wdc)
			// The parameter gradients, summed per chunk, against SumTo.
			sum := func(x *Tensor) *Tensor {
				o := New(dt, 1, 1, x.Dim(2))
				SumTo(o, x)
				return o.Reshape(x.Dim(2))
			}
			dh3 := FromFloat64(dh, r, n, d).To(dt)
			checkClose(t, "dws "+what, dws, sum(Mul(nil, dh3, s.Unsqueeze(2))), 1e-5)
			checkClose(t, "dbs "+what, dbs, sum(dh3), 1e-5)
			checkClose(t, "dwo "+what, dwo, sum(Mul(nil, FromFloat64(hid, r, n, d).To(dt), gy.Unsqueeze(2))), 1e-5)
			checkClose(t, "dbo "+what, dbo, Full(dt, SumAll(gy), 1), 1e-5)
		}
	}
}

// The fused DeepSet gives the same bits whatever the number of threads:
// rows are split into chunks that depend only on the shapes, and the
// parameter gradients are summed per chunk and added in chunk order.
func TestDeepSetScoresThreadsBitwise(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := NewRNG(8)
	for _, dt := range dtypes {
		r, n, d := 1000, 64, 16 // 64 chunks
		s, ctx, ws, bs, wo, bo, gy := deepSetOperands(rng, dt, r, n, d)
		var first []*Tensor
		for _, procs := range []int{1, 2, 3, 4} {
			runtime.GOMAXPROCS(procs)
			y := DeepSetScores(nil, s, ctx, ws, bs, wo, bo)
			ds, dc := New(dt, r, n), New(dt, r, d)
			dws, dbs, dwo, dbo := Full(dt, 0.5, d), Full(dt, 0.5, d), Full(dt, 0.5, d), Full(dt, 0.5, 1)
			DeepSetScoresBackward(ds, dc, dws, dbs, dwo, dbo, gy, s, ctx, ws, bs, wo)
			got := []*Tensor{y, ds, dc, dws, dbs, dwo, dbo}
			if first == nil {
				first = got
				continue
			}
			for i, g := range got {
				a, b := g.Float64s(), first[i].Float64s()
				for k := range a {
					if math.Float64bits(a[k]) != math.Float64bits(b[k]) {
						t.Fatalf("%v output %d element %d = %v with GOMAXPROCS %d, %v with 1", dt, i, k, a[k], procs, b[k])
					}
				}
			}
		}
	}
}
