package backendtest

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"lgflow/tensor"
)

// Cases of the diffusion transformer's fused ops (tensor/fused_dit.go).

// setShapes are the (G, R, D) shapes of the per-set fused ops: size 1,
// primes, and a DiT-like block of sets.
var setShapes = [][3]int{{1, 1, 1}, {3, 5, 7}, {2, 37, 33}, {4, 16, 64}}

// perSet returns a (G, D) CPU tensor as a strided view: column block 1 of
// a (G, 3D) matrix, as a chunk of the adaLN projection is.
func perSet(r *tensor.RNG, dt tensor.DType, lo, hi float64, g, d int) *tensor.Tensor {
	return rand(r, dt, lo, hi, g, 3*d).Slice(1, d, 2*d)
}

// onStrided returns the (G, D) view x on the backend under test, itself a
// column block of a wider matrix.
func (s *suite) onStrided(x *tensor.Tensor) *tensor.Tensor {
	g, d := x.Dim(0), x.Dim(1)
	w := tensor.NewOn(s.b, x.DType(), g, 3*d).Fill(55)
	v := w.Slice(1, d, 2*d)
	tensor.Copy(v, x)
	return v
}

// optLay is lay.make for an optional tensor, falling back to a contiguous
// copy where the layout does not apply to x's rank.
func optLay(s *suite, lay layout, x *tensor.Tensor) *tensor.Tensor {
	if x == nil {
		return nil
	}
	if t := lay.make(s, x); t != nil {
		return t
	}
	return s.on(x)
}

func testLayerNormModulate(t *testing.T, s *suite) {
	r := tensor.NewRNG(31)
	for _, dt := range dtypes {
		tl := tolFor(dt, kNorm)
		for _, sh := range setShapes {
			g, rows, d := sh[0], sh[1], sh[2]
			x := rand(r, dt, -2, 3, g, rows, d)
			gamma, beta := rand(r, dt, 0.5, 1.5, d), rand(r, dt, -1, 1, d)
			shift, scale := perSet(r, dt, -1, 1, g, d), perSet(r, dt, -1, 1, g, d)
			for _, affine := range []bool{false, true} {
				gm, bt := gamma, beta
				if !affine {
					gm, bt = nil, nil
				}
				mean, rstd := tensor.New(dt, g, rows), tensor.New(dt, g, rows)
				want := tensor.LayerNormModulate(nil, mean, rstd, x, gm, bt, shift, scale, 1e-5)
				for _, lay := range layouts {
					gx := lay.make(s, x)
					what := fmt.Sprintf("LayerNormModulate %v %v affine %v %s", dt, sh, affine, lay.name)
					gmean, grstd := tensor.NewOn(s.b, dt, g, rows), tensor.NewOn(s.b, dt, g, rows)
					got := tensor.LayerNormModulate(nil, gmean, grstd, gx, s.opt(gm), s.opt(bt), s.onStrided(shift), s.onStrided(scale), 1e-5)
					s.check(t, what, got, want, tl)
					s.check(t, what+" mean", gmean, mean, tl)
					s.check(t, what+" rstd", grstd, rstd, tl)
				}
				// No statistics, strided destination, contiguous shift and scale.
				got := tensor.LayerNormModulate(s.stridedDst(dt, g, rows, d), nil, nil, s.on(x), s.opt(gm), s.opt(bt), s.on(shift), s.on(scale), 1e-5)
				s.check(t, fmt.Sprintf("LayerNormModulate %v %v affine %v strided y", dt, sh, affine), got, want, tl)
			}
		}
	}
}

func testLayerNormModulateBackward(t *testing.T, s *suite) {
	r := tensor.NewRNG(32)
	for _, dt := range dtypes {
		tl := tolFor(dt, kNorm)
		for _, sh := range setShapes {
			g, rows, d := sh[0], sh[1], sh[2]
			x := rand(r, dt, -2, 3, g, rows, d)
			gy := rand(r, dt, -1, 1, g, rows, d)
			gamma, beta := rand(r, dt, 0.5, 1.5, d), rand(r, dt, -1, 1, d)
			scale := perSet(r, dt, -1, 1, g, d)
			for _, affine := range []bool{false, true} {
				gm, bt := gamma, beta
				if !affine {
					gm, bt = nil, nil
				}
				mean, rstd := tensor.New(dt, g, rows), tensor.New(dt, g, rows)
				tensor.LayerNormModulate(nil, mean, rstd, x, gm, bt, scale, scale, 1e-5)
				dg0, db0 := rand(r, dt, -1, 1, d), rand(r, dt, -1, 1, d)
				dg, db := dg0.Clone(), db0.Clone()
				dsh, dsc := tensor.New(dt, g, d), tensor.New(dt, g, d)
				want := tensor.LayerNormModulateBackward(nil, dg, db, dsh, dsc, gy, x, mean, rstd, gm, bt, scale)
				// Parameter and per-set gradients are sums over rows.
				gtl := tl
				gtl.atol *= float64(g * rows)
				for _, lay := range layouts {
					gx, ggy := lay.make(s, x), lay.make(s, gy)
					what := fmt.Sprintf("LayerNormModulateBackward %v %v affine %v %s", dt, sh, affine, lay.name)
					gdg, gdb := s.on(dg0), s.on(db0)
					gdsh, gdsc := s.onStrided(tensor.New(dt, g, d)), s.stridedDst(dt, g, d)
					got := tensor.LayerNormModulateBackward(nil, gdg, gdb, gdsh, gdsc, ggy, gx, s.on(mean), s.on(rstd),
						optLay(s, lay, gm), optLay(s, lay, bt), s.onStrided(scale))
					s.check(t, what+" dx", got, want, tl)
					s.check(t, what+" dgamma", gdg, dg, gtl)
					s.check(t, what+" dbeta", gdb, db, gtl)
					s.check(t, what+" dshift", gdsh, dsh, gtl)
					s.check(t, what+" dscale", gdsc, dsc, gtl)
				}
				// dx only, into a strided destination.
				got := tensor.LayerNormModulateBackward(s.stridedDst(dt, g, rows, d), nil, nil, nil, nil, s.on(gy), s.on(x),
					s.on(mean), s.on(rstd), s.opt(gm), s.opt(bt), s.on(scale))
				s.check(t, fmt.Sprintf("LayerNormModulateBackward %v %v affine %v strided dx", dt, sh, affine), got, want, tl)
			}
		}
	}
}

func testGateResidual(t *testing.T, s *suite) {
	r := tensor.NewRNG(33)
	for _, dt := range dtypes {
		tl := tolFor(dt, kElem)
		for _, sh := range setShapes {
			g, rows, d := sh[0], sh[1], sh[2]
			x, h := rand(r, dt, -2, 2, g, rows, d), rand(r, dt, -2, 2, g, rows, d)
			gate := perSet(r, dt, -1, 1, g, d)
			want := tensor.GateResidual(nil, x, gate, h)
			for _, lay := range layouts {
				what := fmt.Sprintf("GateResidual %v %v %s", dt, sh, lay.name)
				got := tensor.GateResidual(nil, lay.make(s, x), s.onStrided(gate), lay.make(s, h))
				s.check(t, what, got, want, tl)
				// In place: out is x.
				gx := lay.make(s, x)
				tensor.GateResidual(gx, gx, s.on(gate), s.on(h))
				s.check(t, what+" in place", gx, want, tl)
			}
			got := tensor.GateResidual(s.stridedDst(dt, g, rows, d), s.on(x), s.on(gate), s.on(h))
			s.check(t, fmt.Sprintf("GateResidual %v %v strided out", dt, sh), got, want, tl)
		}
	}
}

func testGateResidualBackward(t *testing.T, s *suite) {
	r := tensor.NewRNG(34)
	for _, dt := range dtypes {
		tl := tolFor(dt, kElem)
		for _, sh := range setShapes {
			g, rows, d := sh[0], sh[1], sh[2]
			gy, h := rand(r, dt, -2, 2, g, rows, d), rand(r, dt, -2, 2, g, rows, d)
			gate := perSet(r, dt, -1, 1, g, d)
			dh, dgate := tensor.New(dt, g, rows, d), tensor.New(dt, g, d)
			tensor.GateResidualBackward(dh, dgate, gy, h, gate)
			stl := tolFor(dt, kReduce)
			stl.atol *= float64(rows)
			for _, lay := range layouts {
				what := fmt.Sprintf("GateResidualBackward %v %v %s", dt, sh, lay.name)
				gdh, gdg := lay.make(s, tensor.New(dt, g, rows, d)), s.onStrided(tensor.New(dt, g, d))
				tensor.GateResidualBackward(gdh, gdg, lay.make(s, gy), lay.make(s, h), s.onStrided(gate))
				s.check(t, what+" dh", gdh, dh, tl)
				s.check(t, what+" dgate", gdg, dgate, stl)
			}
			// One gradient at a time.
			gdh := tensor.NewOn(s.b, dt, g, rows, d)
			tensor.GateResidualBackward(gdh, nil, s.on(gy), s.on(h), s.on(gate))
			s.check(t, fmt.Sprintf("GateResidualBackward %v %v dh only", dt, sh), gdh, dh, tl)
			gdg := s.stridedDst(dt, g, d)
			tensor.GateResidualBackward(nil, gdg, s.on(gy), s.on(h), s.on(gate))
			s.check(t, fmt.Sprintf("GateResidualBackward %v %v dgate only", dt, sh), gdg, dgate, stl)
		}
	}
}

func testBiasGELU(t *testing.T, s *suite) {
	r := tensor.NewRNG(35)
	for _, dt := range dtypes {
		tl := tolFor(dt, kTrans)
		for _, shape := range [][]int{{1, 1}, {5, 7, 33}, {3, 300}, {64, 256}} {
			d := shape[len(shape)-1]
			x, bias := rand(r, dt, -4, 4, shape...), rand(r, dt, -1, 1, d)
			for _, b := range []*tensor.Tensor{nil, bias} {
				want := tensor.BiasGELU(nil, x, b)
				for _, lay := range layouts {
					what := fmt.Sprintf("BiasGELU %v %v bias %v %s", dt, shape, b != nil, lay.name)
					s.check(t, what, tensor.BiasGELU(nil, lay.make(s, x), optLay(s, lay, b)), want, tl)
				}
				got := tensor.BiasGELU(s.stridedDst(dt, shape...), s.on(x), s.opt(b))
				s.check(t, fmt.Sprintf("BiasGELU %v %v bias %v strided y", dt, shape, b != nil), got, want, tl)
			}
		}
	}
}

func testBiasGELUBackward(t *testing.T, s *suite) {
	r := tensor.NewRNG(36)
	for _, dt := range dtypes {
		tl := tolFor(dt, kTrans)
		for _, shape := range [][]int{{1, 1}, {5, 7, 33}, {3, 300}, {64, 256}} {
			d := shape[len(shape)-1]
			x, gy, bias := rand(r, dt, -4, 4, shape...), rand(r, dt, -1, 1, shape...), rand(r, dt, -1, 1, d)
			btl := tl
			btl.atol *= float64(x.Size() / d)
			for _, b := range []*tensor.Tensor{nil, bias} {
				db0 := rand(r, dt, -1, 1, d)
				db := db0.Clone()
				want := tensor.BiasGELUBackward(nil, db, gy, x, b)
				for _, lay := range layouts {
					what := fmt.Sprintf("BiasGELUBackward %v %v bias %v %s", dt, shape, b != nil, lay.name)
					gdb := s.on(db0)
					got := tensor.BiasGELUBackward(nil, gdb, lay.make(s, gy), lay.make(s, x), optLay(s, lay, b))
					s.check(t, what+" dx", got, want, tl)
					s.check(t, what+" dbias", gdb, db, btl)
				}
				got := tensor.BiasGELUBackward(s.stridedDst(dt, shape...), nil, s.on(gy), s.on(x), s.opt(b))
				s.check(t, fmt.Sprintf("BiasGELUBackward %v %v bias %v strided dx", dt, shape, b != nil), got, want, tl)
			}
		}
	}
}

// flashSizes are the (B, N, H, Dh) of the FlashAttention cases, up to the
// largest accepted.
var flashSizes = [][4]int{{1, 1, 1, 1}, {3, 5, 2, 8}, {3, 37, 3, 16}, {3, 64, 2, 32}, {2, 128, 1, 64}}

func testFlashAttention(t *testing.T, s *suite) {
	r := tensor.NewRNG(37)
	for _, dt := range dtypes {
		tl := tolFor(dt, kNorm)
		for _, sz := range flashSizes {
			b, n, h, dh := sz[0], sz[1], sz[2], sz[3]
			q, k, v, mask := attnInputs(r, dt, b, n, h, dh)
			scale := 1 / math.Sqrt(float64(dh))
			for _, m := range []*tensor.Tensor{nil, mask} {
				what := fmt.Sprintf("FlashAttention %v B%d N%d H%d Dh%d mask %v", dt, b, n, h, dh, m != nil)
				lse := tensor.New(dt, b, h, n)
				want := tensor.FlashAttention(nil, lse, heads(q), heads(k), heads(v), m, scale)
				// The same output as Attention.
				s.checkValues(t, what+" vs Attention", want, tensor.Attention(nil, nil, heads(q), heads(k), heads(v), m, scale), tl)
				// Permuted (B, N, H, Dh) storage, used in place.
				out := heads(tensor.NewOn(s.b, dt, b, n, h, dh))
				glse := tensor.NewOn(s.b, dt, b, h, n)
				got := tensor.FlashAttention(out, glse, heads(s.on(q)), heads(s.on(k)), heads(s.on(v)), s.opt(m), scale)
				s.check(t, what+" permuted out", got, want, tl)
				s.check(t, what+" lse", glse, lse, tl)
				// Contiguous (B, H, N, Dh) operands, strided lse.
				glse = s.stridedDst(dt, b, h, n)
				got = tensor.FlashAttention(nil, glse, s.on(heads(q)), s.on(heads(k)), s.on(heads(v)), s.opt(m), scale)
				s.check(t, what+" contiguous", got, want, tl)
				s.check(t, what+" strided lse", glse, lse, tl)
				// No lse wanted: the same out.
				got = tensor.FlashAttention(nil, nil, heads(s.on(q)), heads(s.on(k)), heads(s.on(v)), s.opt(m), scale)
				s.check(t, what+" without lse", got, want, tl)
			}
		}
	}
	if !mustPanicShape(func() {
		q := tensor.NewOn(s.b, tensor.Float32, 1, 1, tensor.FlashAttentionMaxTokens+1, 8)
		tensor.FlashAttention(nil, nil, q, q, q, nil, 1)
	}) {
		t.Errorf("FlashAttention with N > FlashAttentionMaxTokens did not fail with ErrShape")
	}
}

func testFlashAttentionBackward(t *testing.T, s *suite) {
	r := tensor.NewRNG(38)
	for _, dt := range dtypes {
		tl := tolFor(dt, kNorm)
		for _, sz := range flashSizes {
			b, n, h, dh := sz[0], sz[1], sz[2], sz[3]
			q, k, v, mask := attnInputs(r, dt, b, n, h, dh)
			scale := 1 / math.Sqrt(float64(dh))
			gout := rand(r, dt, -1, 1, b, n, h, dh)
			for _, m := range []*tensor.Tensor{nil, mask} {
				what := fmt.Sprintf("FlashAttentionBackward %v B%d N%d H%d Dh%d mask %v", dt, b, n, h, dh, m != nil)
				lse := tensor.New(dt, b, h, n)
				out := tensor.FlashAttention(nil, lse, heads(q), heads(k), heads(v), m, scale)
				dq, dk, dv := tensor.New(dt, b, h, n, dh), tensor.New(dt, b, h, n, dh), tensor.New(dt, b, h, n, dh)
				tensor.FlashAttentionBackward(dq, dk, dv, heads(gout), heads(q), heads(k), heads(v), out, lse, m, scale)
				// The same gradients as AttentionBackward.
				probs := tensor.New(dt, b, h, n, n)
				tensor.Attention(nil, probs, heads(q), heads(k), heads(v), m, scale)
				rq, rk, rv := tensor.New(dt, b, h, n, dh), tensor.New(dt, b, h, n, dh), tensor.New(dt, b, h, n, dh)
				tensor.AttentionBackward(rq, rk, rv, heads(gout), heads(q), heads(k), heads(v), probs, scale)
				s.checkValues(t, what+" vs AttentionBackward dq", dq, rq, tl)
				s.checkValues(t, what+" vs AttentionBackward dk", dk, rk, tl)
				s.checkValues(t, what+" vs AttentionBackward dv", dv, rv, tl)
				// Permuted operands and gradients.
				nb := func() *tensor.Tensor { return heads(tensor.NewOn(s.b, dt, b, n, h, dh)) }
				gdq, gdk, gdv := nb(), nb(), nb()
				gsout := heads(s.on(out.Permute(0, 2, 1, 3)))
				tensor.FlashAttentionBackward(gdq, gdk, gdv, heads(s.on(gout)), heads(s.on(q)), heads(s.on(k)), heads(s.on(v)),
					gsout, s.on(lse), s.opt(m), scale)
				s.check(t, what+" permuted dq", gdq, dq, tl)
				s.check(t, what+" permuted dk", gdk, dk, tl)
				s.check(t, what+" permuted dv", gdv, dv, tl)
				// Contiguous operands, strided lse.
				nc := func() *tensor.Tensor { return tensor.NewOn(s.b, dt, b, h, n, dh) }
				cdq, cdk, cdv := nc(), nc(), nc()
				glse := s.stridedDst(dt, b, h, n)
				tensor.Copy(glse, s.on(lse))
				tensor.FlashAttentionBackward(cdq, cdk, cdv, s.on(heads(gout)), s.on(heads(q)), s.on(heads(k)), s.on(heads(v)),
					s.on(out), glse, s.opt(m), scale)
				s.check(t, what+" dq", cdq, dq, tl)
				s.check(t, what+" dk", cdk, dk, tl)
				s.check(t, what+" dv", cdv, dv, tl)
			}
		}
	}
}

// mustPanicShape reports whether f panics with an error wrapping
// tensor.ErrShape.
func mustPanicShape(f func()) (ok bool) {
	defer func() {
		err, isErr := recover().(error)
		ok = isErr && errors.Is(err, tensor.ErrShape)
	}()
	f()
	return false
}
