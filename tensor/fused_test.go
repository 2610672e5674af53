package tensor

import (
	"fmt"
	"math"
	"testing"
)

// numGrad returns the central-difference gradient of f with respect to x
// (float64), perturbing each element in place.
func numGrad(x *Tensor, f func() float64) []float64 {
	const h = 1e-6
	g := make([]float64, x.Size())
	i := 0
	forEachIndex(x.shape, func(idx []int) {
		v := x.At(idx...)
		x.Set(v+h, idx...)
		p := f()
		x.Set(v-h, idx...)
		m := f()
		x.Set(v, idx...)
		g[i] = (p - m) / (2 * h)
		i++
	})
	return g
}

// dot returns Σ a∘b.
func dot(a, b *Tensor) float64 { return SumAll(Mul(nil, a, b)) }

func TestLayerNorm(t *testing.T) {
	r := NewRNG(40)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{1, 1}, {3, 5}, {2, 3, 17}, {70, 64}} {
			d := shape[len(shape)-1]
			rows := shape[:len(shape)-1]
			x := randT(r, dt, shape...)
			gamma, beta := randT(r, dt, d), randT(r, dt, d)
			for _, affine := range []bool{false, true} {
				g, b := gamma, beta
				if !affine {
					g, b = nil, nil
				}
				mean, rstd := New(dt, rows...), New(dt, rows...)
				y := LayerNorm(nil, mean, rstd, x, g, b, 1e-5)
				var want []float64
				xv := x.Float64s()
				for r0 := 0; r0 < len(xv)/d; r0++ {
					row := xv[r0*d : (r0+1)*d]
					mu := refSum(row) / float64(d)
					v := 0.0
					for _, e := range row {
						v += (e - mu) * (e - mu)
					}
					rs := 1 / math.Sqrt(v/float64(d)+1e-5)
					for i, e := range row {
						o := (e - mu) * rs
						if affine {
							o = o*gamma.At(i) + beta.At(i)
						}
						want = append(want, o)
					}
				}
				name := fmt.Sprintf("%v/%v/affine%v", dt, shape, affine)
				assertClose(t, y, shape, want, 1e-4, name)
				// Strided input and output.
				for lname, xs := range layouts(x) {
					for _, ys := range layouts(New(dt, shape...)) {
						LayerNorm(ys, nil, nil, xs, g, b, 1e-5)
						assertClose(t, ys, shape, want, 1e-4, name+"/"+lname)
					}
				}
			}
		}
	}
}

func TestLayerNormBackward(t *testing.T) {
	r := NewRNG(41)
	for _, shape := range [][]int{{1, 3}, {3, 5}, {2, 2, 7}} {
		d := shape[len(shape)-1]
		rows := shape[:len(shape)-1]
		x := randT(r, Float64, shape...)
		gamma, beta := randT(r, Float64, d), randT(r, Float64, d)
		w := randT(r, Float64, shape...)
		loss := func() float64 { return dot(LayerNorm(nil, nil, nil, x, gamma, beta, 1e-5), w) }
		mean, rstd := New(Float64, rows...), New(Float64, rows...)
		LayerNorm(nil, mean, rstd, x, gamma, beta, 1e-5)
		dgamma, dbeta := Full(Float64, 1, d), Full(Float64, 2, d)
		dx := LayerNormBackward(nil, dgamma, dbeta, w, x, mean, rstd, gamma)
		name := fmt.Sprint(shape)
		assertClose(t, dx, shape, numGrad(x, loss), 1e-6, name+"/dx")
		dg := numGrad(gamma, loss)
		db := numGrad(beta, loss)
		for i := range d {
			dg[i]++
			db[i] += 2
		}
		assertClose(t, dgamma, []int{d}, dg, 1e-6, name+"/dgamma (accumulated)")
		assertClose(t, dbeta, []int{d}, db, 1e-6, name+"/dbeta (accumulated)")
		// Without gamma.
		lossNo := func() float64 { return dot(LayerNorm(nil, nil, nil, x, nil, nil, 1e-5), w) }
		dx = LayerNormBackward(nil, nil, nil, w, x, mean, rstd, nil)
		assertClose(t, dx, shape, numGrad(x, lossNo), 1e-6, name+"/dx no gamma")
		// float32 agrees with float64.
		dx32 := LayerNormBackward(nil, nil, nil, w.To(Float32), x.To(Float32), mean.To(Float32), rstd.To(Float32), gamma.To(Float32))
		assertClose(t, dx32, shape, LayerNormBackward(nil, nil, nil, w, x, mean, rstd, gamma).Float64s(), 1e-4, name+"/float32")
	}
	// Many rows: parallel partial sums of dgamma.
	x := randT(r, Float64, 700, 40)
	gy := randT(r, Float64, 700, 40)
	mean, rstd := New(Float64, 700), New(Float64, 700)
	LayerNorm(nil, mean, rstd, x, nil, nil, 1e-5)
	dgamma, dbeta := New(Float64, 40), New(Float64, 40)
	LayerNormBackward(nil, dgamma, dbeta, gy, x, mean, rstd, nil)
	xhat := LayerNorm(nil, nil, nil, x, nil, nil, 1e-5)
	assertClose(t, dgamma, []int{40}, Sum(nil, Mul(nil, gy, xhat), 0, false).Float64s(), 1e-9, "dgamma parallel")
	assertClose(t, dbeta, []int{40}, Sum(nil, gy, 0, false).Float64s(), 1e-9, "dbeta parallel")
}

func TestSoftmaxCrossEntropy(t *testing.T) {
	r := NewRNG(42)
	for _, dt := range dtypes {
		logits := randT(r, dt, 4, 3, 5)
		targets := []int32{0, 4, 2, 1, 3, 3, 0, 1, 2, 4, 4, 0}
		weight := []float32{1, 0.5, 0, 2, 1, 1, 1, 0, 1, 1, 3, 1}
		targets[2] = -7 // ignored: weight 0
		prob := New(dt, 4, 3, 5)
		loss := SoftmaxCrossEntropy(prob, logits, targets, weight)
		want := 0.0
		lsm := LogSoftmax(nil, logits.To(Float64), -1).Reshape(12, 5)
		for i, tg := range targets {
			if weight[i] != 0 {
				want -= float64(weight[i]) * lsm.At(i, int(tg))
			}
		}
		if !near(loss, want, 1e-5) {
			t.Errorf("%v loss %v, want %v", dt, loss, want)
		}
		assertClose(t, prob, prob.shape, Softmax(nil, logits, -1).Float64s(), 1e-6, "prob")
		// Strided logits and prob.
		for lname, lg := range layouts(logits) {
			p2 := layouts(New(dt, 4, 3, 5))["transposed"]
			if l2 := SoftmaxCrossEntropy(p2, lg, targets, weight); !near(l2, want, 1e-5) {
				t.Errorf("%v %s loss %v, want %v", dt, lname, l2, want)
			}
			assertClose(t, p2, prob.shape, prob.Float64s(), 1e-6, "prob "+lname)
		}
	}
	// Backward against finite differences.
	logits := randT(r, Float64, 6, 7)
	targets := []int32{0, 6, 3, 3, 1, 2}
	weight := []float32{1, 2, 0, 1, 0.5, 1}
	prob := New(Float64, 6, 7)
	SoftmaxCrossEntropy(prob, logits, targets, weight)
	d := SoftmaxCrossEntropyBackward(nil, prob, targets, weight, 0.25)
	num := numGrad(logits, func() float64 { return 0.25 * SoftmaxCrossEntropy(nil, logits, targets, weight) })
	assertClose(t, d, []int{6, 7}, num, 1e-6, "dlogits")
	mustPanic(t, ErrIndex, func() { SoftmaxCrossEntropy(nil, logits, []int32{0, 7, 0, 0, 0, 0}, nil) }, "target 7")
}

// refAttention computes out and probs with float64 loops.
func refAttention(q, k, v, mask *Tensor, scale float64) (out, probs []float64) {
	B, H, N, D := q.Dim(0), q.Dim(1), q.Dim(2), q.Dim(3)
	for b := range B {
		for h := range H {
			P := make([]float64, N*N)
			for i := range N {
				m := math.Inf(-1)
				for j := range N {
					s := 0.0
					for c := range D {
						s += q.At(b, h, i, c) * k.At(b, h, j, c)
					}
					s *= scale
					if mask != nil && mask.At(b, j) == 0 {
						s = math.Inf(-1)
					}
					P[i*N+j] = s
					m = math.Max(m, s)
				}
				sum := 0.0
				for j := range N {
					if math.IsInf(m, -1) {
						P[i*N+j] = 0
						continue
					}
					P[i*N+j] = math.Exp(P[i*N+j] - m)
					sum += P[i*N+j]
				}
				for j := range N {
					if sum > 0 {
						P[i*N+j] /= sum
					}
				}
			}
			probs = append(probs, P...)
			for i := range N {
				for c := range D {
					s := 0.0
					for j := range N {
						s += P[i*N+j] * v.At(b, h, j, c)
					}
					out = append(out, s)
				}
			}
		}
	}
	return out, probs
}

func TestAttention(t *testing.T) {
	r := NewRNG(43)
	for _, dt := range dtypes {
		for _, sh := range [][4]int{{1, 1, 1, 1}, {2, 3, 5, 4}, {3, 2, 9, 8}} {
			B, H, N, D := sh[0], sh[1], sh[2], sh[3]
			q, k, v := randT(r, dt, B, H, N, D), randT(r, dt, B, H, N, D), randT(r, dt, B, H, N, D)
			mask := New(dt, B, N).Fill(1)
			for b := range B {
				for j := N - b; j < N; j++ { // batch b has b padding tokens
					mask.Set(0, b, j)
				}
			}
			if B == 3 {
				for j := range N {
					mask.Set(0, 2, j) // a fully padded sequence
				}
			}
			scale := 1 / math.Sqrt(float64(D))
			for _, m := range []*Tensor{nil, mask} {
				wantOut, wantP := refAttention(q, k, v, m, scale)
				probs := New(dt, B, H, N, N)
				out := Attention(nil, probs, q, k, v, m, scale)
				name := fmt.Sprintf("%v/%v/mask%v", dt, sh, m != nil)
				assertClose(t, out, q.shape, wantOut, 1e-5, name+"/out")
				assertClose(t, probs, probs.shape, wantP, 1e-5, name+"/probs")
				// Permuted (B, N, H, Dh) storage is used in place.
				qp := q.Permute(0, 2, 1, 3).Clone().Permute(0, 2, 1, 3)
				outp := New(dt, B, N, H, D).Permute(0, 2, 1, 3)
				Attention(outp, nil, qp, k, v, m, scale)
				assertClose(t, outp, q.shape, wantOut, 1e-5, name+"/permuted")
			}
		}
	}
}

func TestAttentionBackward(t *testing.T) {
	r := NewRNG(44)
	B, H, N, D := 2, 2, 5, 3
	q, k, v := randT(r, Float64, B, H, N, D), randT(r, Float64, B, H, N, D), randT(r, Float64, B, H, N, D)
	mask := New(Float64, B, N).Fill(1)
	mask.Set(0, 1, 4)
	mask.Set(0, 1, 3)
	w := randT(r, Float64, B, H, N, D)
	scale := 0.7
	loss := func() float64 { return dot(Attention(nil, nil, q, k, v, mask, scale), w) }
	probs := New(Float64, B, H, N, N)
	Attention(nil, probs, q, k, v, mask, scale)
	dq, dk, dv := q.NewLike(), k.NewLike(), v.NewLike()
	AttentionBackward(dq, dk, dv, w, q, k, v, probs, scale)
	assertClose(t, dq, q.shape, numGrad(q, loss), 1e-6, "dq")
	assertClose(t, dk, k.shape, numGrad(k, loss), 1e-6, "dk")
	assertClose(t, dv, v.shape, numGrad(v, loss), 1e-6, "dv")
	// float32 agrees.
	f := func(x *Tensor) *Tensor { return x.To(Float32) }
	dq32, dk32, dv32 := f(dq).NewLike(), f(dk).NewLike(), f(dv).NewLike()
	AttentionBackward(dq32, dk32, dv32, f(w), f(q), f(k), f(v), f(probs), scale)
	assertClose(t, dq32, q.shape, dq.Float64s(), 1e-4, "dq32")
	assertClose(t, dk32, q.shape, dk.Float64s(), 1e-4, "dk32")
	assertClose(t, dv32, q.shape, dv.Float64s(), 1e-4, "dv32")
	// Permuted (B, N, H, Dh) storage for inputs and gradients.
	perm := func(x *Tensor) *Tensor { return x.Permute(0, 2, 1, 3).Clone().Permute(0, 2, 1, 3) }
	pdq, pdk, pdv := perm(q.NewLike()), perm(k.NewLike()), perm(v.NewLike())
	AttentionBackward(pdq, pdk, pdv, perm(w), perm(q), perm(k), perm(v), probs, scale)
	assertClose(t, pdq, q.shape, dq.Float64s(), 1e-12, "dq permuted")
	assertClose(t, pdk, q.shape, dk.Float64s(), 1e-12, "dk permuted")
	assertClose(t, pdv, q.shape, dv.Float64s(), 1e-12, "dv permuted")
	// A transposed (non-GEMM-able) probs is copied, not misread.
	AttentionBackward(pdq, pdk, pdv, w, q, k, v, probs.Transpose(2, 3).Clone().Transpose(2, 3), scale)
	assertClose(t, pdq, q.shape, dq.Float64s(), 1e-12, "dq with strided probs")
}

func TestFusedShapeErrors(t *testing.T) {
	x := New(Float32, 4, 8)
	mustPanic(t, ErrShape, func() { LayerNorm(nil, New(Float32, 5), nil, x, nil, nil, 1e-5) }, "tensor.LayerNorm", "mean", "[5]", "[4]")
	mustPanic(t, ErrShape, func() { LayerNorm(nil, nil, nil, x, New(Float32, 7), nil, 1e-5) }, "tensor.LayerNorm", "[7]")
	mustPanic(t, ErrShape, func() { SoftmaxCrossEntropy(nil, x, []int32{0, 1}, nil) }, "tensor.SoftmaxCrossEntropy", "2 targets")
	q := New(Float32, 2, 3, 5, 4)
	mustPanic(t, ErrShape, func() { Attention(nil, nil, q, New(Float32, 2, 3, 6, 4), q, nil, 1) }, "tensor.Attention", "[2 3 5 4]", "[2 3 6 4]")
	mustPanic(t, ErrShape, func() { Attention(nil, nil, q, q, q, New(Float32, 2, 6), 1) }, "tensor.Attention", "keyMask")
	mustPanic(t, ErrShape, func() { AttentionBackward(nil, q, q, q, q, q, q, New(Float32, 2, 3, 5, 5), 1) }, "tensor.AttentionBackward", "dq is nil")
	mustPanic(t, ErrShape, func() { AdamWStep(x, New(Float32, 8, 4), x, x, 1, 0.9, 0.99, 1e-8, 0, 1) }, "tensor.AdamWStep", "[8 4]")
	mustPanic(t, ErrDType, func() { AdamWStep(x, x.To(Float64), x, x, 1, 0.9, 0.99, 1e-8, 0, 1) }, "tensor.AdamWStep")
}

func TestAdamWStep(t *testing.T) {
	r := NewRNG(45)
	for _, dt := range dtypes {
		p, g := randT(r, dt, 3, 7), randT(r, dt, 3, 7)
		m, v := randT(r, dt, 3, 7), Abs(nil, randT(r, dt, 3, 7))
		lr, b1, b2, eps, wd, step := 1e-2, 0.9, 0.999, 1e-8, 0.1, 3
		var wantP, wantM, wantV []float64
		for i, pv := range p.Float64s() {
			gv, mv, vv := g.Float64s()[i], m.Float64s()[i], v.Float64s()[i]
			mv = b1*mv + (1-b1)*gv
			vv = b2*vv + (1-b2)*gv*gv
			mh := mv / (1 - math.Pow(b1, float64(step)))
			vh := vv / (1 - math.Pow(b2, float64(step)))
			pv = pv - lr*wd*pv - lr*mh/(math.Sqrt(vh)+eps)
			wantP, wantM, wantV = append(wantP, pv), append(wantM, mv), append(wantV, vv)
		}
		AdamWStep(p, g, m, v, lr, b1, b2, eps, wd, step)
		assertClose(t, p, p.shape, wantP, 1e-5, "param")
		assertClose(t, m, p.shape, wantM, 1e-6, "m")
		assertClose(t, v, p.shape, wantV, 1e-6, "v")
	}
}

// TestSoftmaxGradRows checks the attention backward's softmax gradient
// rows, four at a time and with the vector kernels, against one row at a
// time in the plain loop, bit for bit: n from 1 to 70 (every remainder of
// four rows and every vector tail), a row stride wider than n, and rows
// of probabilities with zeros, in float32 and float64.
func TestSoftmaxGradRows(t *testing.T) {
	r := NewRNG(46)
	for _, dt := range dtypes {
		for n := 1; n <= 70; n++ {
			ldp := n + 3
			p, ds := randT(r, dt, n*ldp), randT(r, dt, n*n)
			pv, dv := p.Float64s(), ds.Float64s()
			for i := range pv {
				if i%7 == 0 {
					pv[i] = 0
				} else {
					pv[i] = math.Abs(pv[i])
				}
			}
			want := make([]float64, len(dv))
			for i := range n {
				var s float64
				for j := range n {
					if dt == Float32 {
						s += float64(float32(dv[i*n+j])) * float64(float32(pv[i*ldp+j]))
					} else {
						s += float64(dv[i*n+j] * pv[i*ldp+j])
					}
				}
				for j := range n {
					if dt == Float32 {
						st := float32(s)
						want[i*n+j] = float64(float32(pv[i*ldp+j]) * (float32(dv[i*n+j]) - st))
					} else {
						want[i*n+j] = pv[i*ldp+j] * (dv[i*n+j] - s)
					}
				}
			}
			if dt == Float32 {
				pp, dd := make([]float32, len(pv)), make([]float32, len(dv))
				for i := range pv {
					pp[i] = float32(pv[i])
				}
				for i := range dv {
					dd[i] = float32(dv[i])
				}
				softmaxGradRows(pp, ldp, dd, n)
				for i := range dd {
					if math.Float32bits(dd[i]) != math.Float32bits(float32(want[i])) {
						t.Fatalf("float32 n %d: ds[%d] = %v, want %v", n, i, dd[i], want[i])
					}
				}
				continue
			}
			softmaxGradRows(pv, ldp, dv, n)
			for i := range dv {
				if math.Float64bits(dv[i]) != math.Float64bits(want[i]) {
					t.Fatalf("float64 n %d: ds[%d] = %v, want %v", n, i, dv[i], want[i])
				}
			}
		}
	}
}
