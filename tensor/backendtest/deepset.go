package backendtest

import (
	"fmt"
	"math"
	"testing"

	"lgflow/tensor"
)

// Cases of the LG-VAE decoder's fused DeepSet (tensor/fused_deepset.go),
// against a float64 reference computed with plain loops.

// deepSetShapes are the (R, N, D) of the DeepSet cases: size 1, one row,
// one column, widths that are not multiples of 8 or 16, and a block of
// rows large enough for the CPU to split it over several chunks.
var deepSetShapes = [][3]int{{1, 1, 1}, {1, 5, 3}, {7, 1, 16}, {6, 9, 5}, {11, 17, 24}, {130, 64, 16}, {4, 33, 13}}

// deepSetIn holds the inputs of a case as CPU tensors of the case's dtype.
type deepSetIn struct {
	s, ctx, ws, bs, wo, bo, gy *tensor.Tensor
	r, n, d                    int
}

// deepSetInputs returns random inputs of shape (r, n, d). The scores hold
// what a padded batch holds: every third row ends in zeros (padding
// nodes), every fifth has large scores, where GELU saturates.
func deepSetInputs(rng *tensor.RNG, dt tensor.DType, r, n, d int) deepSetIn {
	sv := make([]float64, r*n)
	for i := range r {
		row := sv[i*n : (i+1)*n]
		for j := range row {
			row[j] = 6*rng.Uniform() - 3
			switch {
			case i%3 == 2 && j >= (n+1)/2:
				row[j] = 0
			case i%5 == 4:
				row[j] *= 10
			}
		}
	}
	return deepSetIn{
		s:   tensor.FromFloat64(sv, r, n).To(dt),
		ctx: rand(rng, dt, -1.5, 1.5, r, d),
		ws:  rand(rng, dt, -1.5, 1.5, d), bs: rand(rng, dt, -1, 1, d),
		wo: rand(rng, dt, -1, 1, d), bo: rand(rng, dt, -1, 1, 1),
		gy: rand(rng, dt, -1, 1, r, n),
		r:  r, n: n, d: d,
	}
}

// deepSetRef holds the float64 reference results of a case.
type deepSetRef struct {
	y, ds, dctx   []float64
	dws, dbs, dwo []float64
	dbo           float64
}

func gelu64(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }
func geluGrad64(x float64) float64 {
	return 0.5*math.Erfc(-x/math.Sqrt2) + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
}

// reference computes the forward and the gradients of in in float64.
func (in deepSetIn) reference() deepSetRef {
	s, ctx, gy := in.s.Float64s(), in.ctx.Float64s(), in.gy.Float64s()
	ws, bs, wo, bo := in.ws.Float64s(), in.bs.Float64s(), in.wo.Float64s(), in.bo.Float64s()[0]
	r, n, d := in.r, in.n, in.d
	o := deepSetRef{y: make([]float64, r*n), ds: make([]float64, r*n), dctx: make([]float64, r*d),
		dws: make([]float64, d), dbs: make([]float64, d), dwo: make([]float64, d)}
	for i := range r {
		for j := range n {
			sv, g := s[i*n+j], gy[i*n+j]
			y := bo
			for k := range d {
				h := sv*ws[k] + bs[k] + ctx[i*d+k]
				y += wo[k] * gelu64(h)
				dh := g * wo[k] * geluGrad64(h)
				o.ds[i*n+j] += dh * ws[k]
				o.dctx[i*d+k] += dh
				o.dws[k] += dh * sv
				o.dbs[k] += dh
				o.dwo[k] += g * gelu64(h)
			}
			o.y[i*n+j] = y
			o.dbo += g
		}
	}
	return o
}

// deepSetTols returns the tolerances of the row results (sums over D), of
// dctx (sums over N) and of the parameter gradients (sums over R·N).
func deepSetTols(dt tensor.DType, r, n, d int) (row, ctx, param tol) {
	f := func(k int) tol {
		if dt == tensor.Float64 {
			return tol{1e-11, 1e-13 * float64(k+1)}
		}
		return tol{1e-4, 3e-6 * float64(k+1)}
	}
	return f(d), f(n), f(r * n)
}

// vecs returns the float64 values v as a CPU tensor of dtype dt and shape.
func vecs(dt tensor.DType, v []float64, shape ...int) *tensor.Tensor {
	return tensor.FromFloat64(v, shape...).To(dt)
}

// strideVec returns the vector x on the backend as a strided view (a column
// of a (D, 2) matrix).
func (s *suite) strideVec(x *tensor.Tensor) *tensor.Tensor {
	w := tensor.NewOn(s.b, x.DType(), x.Dim(0), 2).Fill(33)
	v := w.Slice(1, 1, 2).Squeeze(1)
	tensor.Copy(v, x)
	return v
}

func testDeepSetScores(t *testing.T, s *suite) {
	r := tensor.NewRNG(41)
	for _, dt := range dtypes {
		for _, sh := range deepSetShapes {
			in := deepSetInputs(r, dt, sh[0], sh[1], sh[2])
			ref := in.reference()
			rowTol, _, _ := deepSetTols(dt, in.r, in.n, in.d)
			want := vecs(dt, ref.y, in.r, in.n)
			for _, lay := range layouts {
				what := fmt.Sprintf("DeepSetScores %v %v %s", dt, sh, lay.name)
				got := tensor.DeepSetScores(nil, lay.make(s, in.s), lay.make(s, in.ctx), optLay(s, lay, in.ws),
					optLay(s, lay, in.bs), optLay(s, lay, in.wo), optLay(s, lay, in.bo))
				s.check(t, what, got, want, rowTol)
			}
			// Strided y and vectors.
			got := tensor.DeepSetScores(s.stridedDst(dt, in.r, in.n), s.on(in.s), s.on(in.ctx), s.strideVec(in.ws),
				s.strideVec(in.bs), s.strideVec(in.wo), s.strideVec(in.bo))
			s.check(t, fmt.Sprintf("DeepSetScores %v %v strided y, ws, bs, wo, bo", dt, sh), got, want, rowTol)
		}
		// No columns: nothing to compute.
		in := deepSetInputs(r, dt, 3, 0, 4)
		if got := tensor.DeepSetScores(nil, s.on(in.s), s.on(in.ctx), s.on(in.ws), s.on(in.bs), s.on(in.wo), s.on(in.bo)); got.Size() != 0 {
			t.Errorf("DeepSetScores %v with N = 0: shape %v", dt, got.Shape())
		}
	}
	if !mustPanicShape(func() {
		x := tensor.NewOn(s.b, tensor.Float32, 3, 4)
		v := tensor.NewOn(s.b, tensor.Float32, 5)
		tensor.DeepSetScores(nil, x, tensor.NewOn(s.b, tensor.Float32, 3, 4), v, v, v, tensor.NewOn(s.b, tensor.Float32, 1))
	}) {
		t.Errorf("DeepSetScores with vectors of the wrong width did not fail with ErrShape")
	}
}

func testDeepSetScoresBackward(t *testing.T, s *suite) {
	r := tensor.NewRNG(42)
	for _, dt := range dtypes {
		for _, sh := range deepSetShapes {
			in := deepSetInputs(r, dt, sh[0], sh[1], sh[2])
			ref := in.reference()
			rt, ct, pt := deepSetTols(dt, in.r, in.n, in.d)
			d := in.d
			// The parameter gradients accumulate into nonzero values.
			p0 := [4]*tensor.Tensor{rand(r, dt, -1, 1, d), rand(r, dt, -1, 1, d), rand(r, dt, -1, 1, d), rand(r, dt, -1, 1, 1)}
			plus := func(t0 *tensor.Tensor, g []float64) *tensor.Tensor {
				v := t0.Float64s()
				for i := range v {
					v[i] += g[i]
				}
				return vecs(dt, v, t0.Shape()...)
			}
			wantDS, wantDC := vecs(dt, ref.ds, in.r, in.n), vecs(dt, ref.dctx, in.r, d)
			wantP := [4]*tensor.Tensor{plus(p0[0], ref.dws), plus(p0[1], ref.dbs), plus(p0[2], ref.dwo), plus(p0[3], []float64{ref.dbo})}
			names := [4]string{"dws", "dbs", "dwo", "dbo"}
			checkParams := func(what string, got [4]*tensor.Tensor, want [4]*tensor.Tensor) {
				t.Helper()
				for i, g := range got {
					if g != nil {
						s.check(t, what+" "+names[i], g, want[i], pt)
					}
				}
			}
			for _, lay := range layouts {
				what := fmt.Sprintf("DeepSetScoresBackward %v %v %s", dt, sh, lay.name)
				gds, gdc := lay.make(s, tensor.New(dt, in.r, in.n)), lay.make(s, tensor.Full(dt, 5, in.r, d))
				gp := [4]*tensor.Tensor{s.on(p0[0]), s.on(p0[1]), s.on(p0[2]), s.on(p0[3])}
				tensor.DeepSetScoresBackward(gds, gdc, gp[0], gp[1], gp[2], gp[3], lay.make(s, in.gy), lay.make(s, in.s),
					lay.make(s, in.ctx), optLay(s, lay, in.ws), optLay(s, lay, in.bs), optLay(s, lay, in.wo))
				s.check(t, what+" ds", gds, wantDS, rt)
				s.check(t, what+" dctx", gdc, wantDC, ct)
				checkParams(what, gp, wantP)
			}
			// One output at a time, into strided destinations, with
			// strided vectors.
			for k := range 6 {
				what := fmt.Sprintf("DeepSetScoresBackward %v %v output %d only", dt, sh, k)
				var gds, gdc *tensor.Tensor
				var gp [4]*tensor.Tensor
				switch k {
				case 0:
					gds = s.stridedDst(dt, in.r, in.n)
				case 1:
					gdc = s.stridedDst(dt, in.r, d)
				default:
					gp[k-2] = s.strideVec(p0[k-2])
				}
				tensor.DeepSetScoresBackward(gds, gdc, gp[0], gp[1], gp[2], gp[3], s.on(in.gy), s.on(in.s), s.on(in.ctx),
					s.strideVec(in.ws), s.strideVec(in.bs), s.strideVec(in.wo))
				if gds != nil {
					s.check(t, what+" ds", gds, wantDS, rt)
				}
				if gdc != nil {
					s.check(t, what+" dctx", gdc, wantDC, ct)
				}
				checkParams(what, gp, wantP)
			}
		}
		// No columns: dctx is overwritten with zeros, the parameter
		// gradients are unchanged.
		in := deepSetInputs(r, dt, 3, 0, 4)
		gdc, gdb := tensor.NewOn(s.b, dt, 3, 4).Fill(5), tensor.NewOn(s.b, dt, 4).Fill(2)
		tensor.DeepSetScoresBackward(tensor.NewOn(s.b, dt, 3, 0), gdc, nil, gdb, nil, nil, s.on(in.gy), s.on(in.s), s.on(in.ctx),
			s.on(in.ws), s.on(in.bs), s.on(in.wo))
		s.check(t, fmt.Sprintf("DeepSetScoresBackward %v N = 0 dctx", dt), gdc, tensor.New(dt, 3, 4), tolFor(dt, kExact))
		s.check(t, fmt.Sprintf("DeepSetScoresBackward %v N = 0 dbs", dt), gdb, tensor.Full(dt, 2, 4), tolFor(dt, kExact))
	}
	if !mustPanicShape(func() {
		x, v := tensor.NewOn(s.b, tensor.Float64, 3, 4), tensor.NewOn(s.b, tensor.Float64, 2)
		tensor.DeepSetScoresBackward(nil, tensor.NewOn(s.b, tensor.Float64, 3, 3), nil, nil, nil, nil, x, x,
			tensor.NewOn(s.b, tensor.Float64, 3, 2), v, v, v)
	}) {
		t.Errorf("DeepSetScoresBackward with a dctx of the wrong shape did not fail with ErrShape")
	}
}
