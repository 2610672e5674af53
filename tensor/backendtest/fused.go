package backendtest

import (
	"fmt"
	"math"
	"testing"

	"lgflow/tensor"
)

// opt returns s.on(x), or nil for a nil x.
func (s *suite) opt(x *tensor.Tensor) *tensor.Tensor {
	if x == nil {
		return nil
	}
	return s.on(x)
}

func testLayerNorm(t *testing.T, s *suite) {
	r := tensor.NewRNG(17)
	for _, dt := range dtypes {
		tl := tolFor(dt, kNorm)
		for _, shape := range [][]int{{1, 1}, {5, 7, 33}, {3, 300}, {2, 1029}} {
			d := shape[len(shape)-1]
			rows := shape[:len(shape)-1]
			x := rand(r, dt, -2, 3, shape...)
			gamma, beta := rand(r, dt, 0.5, 1.5, d), rand(r, dt, -1, 1, d)
			for _, withG := range []bool{false, true} {
				for _, withB := range []bool{false, true} {
					g, b := gamma, beta
					if !withG {
						g = nil
					}
					if !withB {
						b = nil
					}
					mean, rstd := tensor.New(dt, rows...), tensor.New(dt, rows...)
					want := tensor.LayerNorm(nil, mean, rstd, x, g, b, 1e-5)
					for _, lay := range layouts {
						gx := lay.make(s, x)
						if gx == nil {
							continue
						}
						what := fmt.Sprintf("LayerNorm %v %v gamma %v beta %v %s", dt, shape, withG, withB, lay.name)
						gm, gr := tensor.NewOn(s.b, dt, rows...), tensor.NewOn(s.b, dt, rows...)
						s.check(t, what, tensor.LayerNorm(nil, gm, gr, gx, s.opt(g), s.opt(b), 1e-5), want, tl)
						s.check(t, what+" mean", gm, mean, tl)
						s.check(t, what+" rstd", gr, rstd, tl)
						s.check(t, what+" no stats", tensor.LayerNorm(s.stridedDst(dt, shape...), nil, nil, gx, s.opt(g), s.opt(b), 1e-5), want, tl)
					}
				}
			}
			// Strided gamma and beta (a column of a matrix).
			gb := rand(r, dt, 0.5, 1.5, d, 2)
			want := tensor.LayerNorm(nil, nil, nil, x, gb.Slice(1, 0, 1).Squeeze(1), gb.Slice(1, 1, 2).Squeeze(1), 1e-3)
			ggb := s.on(gb)
			got := tensor.LayerNorm(nil, nil, nil, s.on(x), ggb.Slice(1, 0, 1).Squeeze(1), ggb.Slice(1, 1, 2).Squeeze(1), 1e-3)
			s.check(t, fmt.Sprintf("LayerNorm %v %v strided gamma, beta", dt, shape), got, want, tl)
		}
	}
}

func testLayerNormBackward(t *testing.T, s *suite) {
	r := tensor.NewRNG(18)
	for _, dt := range dtypes {
		tl := tolFor(dt, kNorm)
		for _, shape := range [][]int{{1, 1}, {5, 7, 33}, {3, 300}, {700, 6}} {
			d := shape[len(shape)-1]
			rows := shape[:len(shape)-1]
			x := rand(r, dt, -2, 3, shape...)
			gy := rand(r, dt, -1, 1, shape...)
			gamma := rand(r, dt, 0.5, 1.5, d)
			mean, rstd := tensor.New(dt, rows...), tensor.New(dt, rows...)
			tensor.LayerNorm(nil, mean, rstd, x, gamma, nil, 1e-5)
			for _, withG := range []bool{false, true} {
				g := gamma
				if !withG {
					g = nil
				}
				dg0, db0 := rand(r, dt, -1, 1, d), rand(r, dt, -1, 1, d)
				dg, db := dg0.Clone(), db0.Clone()
				want := tensor.LayerNormBackward(nil, dg, db, gy, x, mean, rstd, g)
				for _, lay := range layouts {
					gx, ggy := lay.make(s, x), lay.make(s, gy)
					if gx == nil {
						continue
					}
					what := fmt.Sprintf("LayerNormBackward %v %v gamma %v %s", dt, shape, withG, lay.name)
					gdg, gdb := lay.make(s, dg0), lay.make(s, db0)
					if gdg == nil {
						gdg, gdb = s.on(dg0), s.on(db0)
					}
					got := tensor.LayerNormBackward(nil, gdg, gdb, ggy, gx, s.on(mean), s.on(rstd), s.opt(g))
					s.check(t, what+" dx", got, want, tl)
					gtl := tl
					gtl.atol *= float64(x.Size() / d)
					s.check(t, what+" dgamma", gdg, dg, gtl)
					s.check(t, what+" dbeta", gdb, db, gtl)
				}
				// dx only, into a strided destination.
				got := tensor.LayerNormBackward(s.stridedDst(dt, shape...), nil, nil, s.on(gy), s.on(x), s.on(mean), s.on(rstd), s.opt(g))
				s.check(t, fmt.Sprintf("LayerNormBackward %v %v strided dx", dt, shape), got, want, tl)
			}
		}
	}
}

// ceInputs returns logits, targets and weights (with zero-weight rows whose
// target is -1) for rows × c.
func ceInputs(r *tensor.RNG, dt tensor.DType, shape []int) (*tensor.Tensor, []int32, []float32) {
	c := shape[len(shape)-1]
	x := rand(r, dt, -4, 4, shape...)
	rows := x.Size() / c
	targets := randIdx(r, rows, c)
	weight := make([]float32, rows)
	for i := range weight {
		weight[i] = float32(0.5 + r.Uniform())
		if i%4 == 3 {
			weight[i] = 0
			targets[i] = -1
		}
	}
	return x, targets, weight
}

func testCrossEntropy(t *testing.T, s *suite) {
	r := tensor.NewRNG(19)
	for _, dt := range dtypes {
		tl := tolFor(dt, kNorm)
		for _, shape := range [][]int{{1, 1}, {9, 11}, {3, 4, 40}, {2, 1000}} {
			x, targets, weight := ceInputs(r, dt, shape)
			for _, w := range [][]float32{nil, weight} {
				tg := targets
				if w == nil {
					tg = randIdx(r, len(targets), shape[len(shape)-1])
				}
				prob := tensor.New(dt, shape...)
				want := tensor.SoftmaxCrossEntropy(prob, x, tg, w)
				for _, lay := range layouts {
					gx := lay.make(s, x)
					if gx == nil {
						continue
					}
					what := fmt.Sprintf("SoftmaxCrossEntropy %v %v weights %v %s", dt, shape, w != nil, lay.name)
					gp := tensor.NewOn(s.b, dt, shape...)
					checkScalar(t, what+" loss", tensor.SoftmaxCrossEntropy(gp, gx, tg, w), want, tol{tl.rtol, tl.atol * float64(len(tg))})
					s.check(t, what+" prob", gp, prob, tl)
					gp = s.stridedDst(dt, shape...)
					checkScalar(t, what+" loss, strided prob", tensor.SoftmaxCrossEntropy(gp, gx, tg, w), want, tol{tl.rtol, tl.atol * float64(len(tg))})
					s.check(t, what+" strided prob", gp, prob, tl)
				}
			}
		}
		// Empty input.
		e := tensor.NewOn(s.b, dt, 0, 5)
		if l := tensor.SoftmaxCrossEntropy(nil, e, nil, nil); l != 0 {
			t.Errorf("SoftmaxCrossEntropy %v of no rows = %v", dt, l)
		}
	}
}

func testCrossEntropyBackward(t *testing.T, s *suite) {
	r := tensor.NewRNG(20)
	for _, dt := range dtypes {
		tl := tolFor(dt, kNorm)
		for _, shape := range [][]int{{1, 1}, {9, 11}, {3, 4, 40}} {
			x, targets, weight := ceInputs(r, dt, shape)
			prob := tensor.New(dt, shape...)
			tensor.SoftmaxCrossEntropy(prob, x, targets, weight)
			for _, w := range [][]float32{nil, weight} {
				tg := targets
				if w == nil {
					tg = randIdx(r, len(targets), shape[len(shape)-1])
				}
				want := tensor.SoftmaxCrossEntropyBackward(nil, prob, tg, w, 0.25)
				for _, lay := range layouts {
					gp := lay.make(s, prob)
					if gp == nil {
						continue
					}
					what := fmt.Sprintf("SoftmaxCrossEntropyBackward %v %v weights %v %s", dt, shape, w != nil, lay.name)
					s.check(t, what, tensor.SoftmaxCrossEntropyBackward(nil, gp, tg, w, 0.25), want, tl)
					s.check(t, what+" strided dst", tensor.SoftmaxCrossEntropyBackward(s.stridedDst(dt, shape...), gp, tg, w, 0.25), want, tl)
				}
			}
		}
	}
}

// attnInputs returns q, k, v as (B, N, H, Dh) tensors and a key mask (B, N)
// whose first batch is all real, whose second has padding at the end, and
// whose third (if any) is all padding.
func attnInputs(r *tensor.RNG, dt tensor.DType, b, n, h, dh int) (q, k, v, mask *tensor.Tensor) {
	q, k, v = rand(r, dt, -1, 1, b, n, h, dh), rand(r, dt, -1, 1, b, n, h, dh), rand(r, dt, -1, 1, b, n, h, dh)
	mask = tensor.Full(dt, 1, b, n)
	if b > 1 {
		for j := n - n/3; j < n; j++ {
			mask.Set(0, 1, j)
		}
	}
	if b > 2 {
		mask.Slice(0, 2, 3).Fill(0)
	}
	return q, k, v, mask
}

// heads returns the (B, H, N, Dh) view of a (B, N, H, Dh) tensor.
func heads(x *tensor.Tensor) *tensor.Tensor { return x.Permute(0, 2, 1, 3) }

func testAttention(t *testing.T, s *suite) {
	r := tensor.NewRNG(21)
	for _, dt := range dtypes {
		tl := tolFor(dt, kNorm)
		for _, sz := range [][4]int{{1, 1, 1, 1}, {3, 5, 2, 8}, {2, 37, 3, 16}} {
			b, n, h, dh := sz[0], sz[1], sz[2], sz[3]
			q, k, v, mask := attnInputs(r, dt, b, n, h, dh)
			scale := 1 / math.Sqrt(float64(dh))
			for _, m := range []*tensor.Tensor{nil, mask} {
				probs := tensor.New(dt, b, h, n, n)
				want := tensor.Attention(nil, probs, heads(q), heads(k), heads(v), m, scale)
				what := fmt.Sprintf("Attention %v B%d N%d H%d Dh%d mask %v", dt, b, n, h, dh, m != nil)
				// Permuted (B, N, H, Dh) storage, used in place.
				gp := tensor.NewOn(s.b, dt, b, h, n, n)
				out := heads(tensor.NewOn(s.b, dt, b, n, h, dh))
				got := tensor.Attention(out, gp, heads(s.on(q)), heads(s.on(k)), heads(s.on(v)), s.opt(m), scale)
				s.check(t, what+" permuted out", got, want, tl)
				s.check(t, what+" probs", gp, probs, tl)
				// Contiguous (B, H, N, Dh) operands, probs not saved.
				got = tensor.Attention(nil, nil, s.on(heads(q)), s.on(heads(k)), s.on(heads(v)), s.opt(m), scale)
				s.check(t, what+" contiguous", got, want, tl)
				// A strided probs destination.
				gp = s.stridedDst(dt, b, h, n, n)
				tensor.Attention(nil, gp, s.on(heads(q)), s.on(heads(k)), s.on(heads(v)), s.opt(m), scale)
				s.check(t, what+" strided probs", gp, probs, tl)
			}
		}
	}
}

func testAttentionBackward(t *testing.T, s *suite) {
	r := tensor.NewRNG(22)
	for _, dt := range dtypes {
		tl := tolFor(dt, kNorm)
		for _, sz := range [][4]int{{1, 1, 1, 1}, {3, 5, 2, 8}, {2, 37, 3, 16}} {
			b, n, h, dh := sz[0], sz[1], sz[2], sz[3]
			q, k, v, mask := attnInputs(r, dt, b, n, h, dh)
			scale := 1 / math.Sqrt(float64(dh))
			probs := tensor.New(dt, b, h, n, n)
			tensor.Attention(nil, probs, heads(q), heads(k), heads(v), mask, scale)
			gout := rand(r, dt, -1, 1, b, n, h, dh)
			dq, dk, dv := tensor.New(dt, b, h, n, dh), tensor.New(dt, b, h, n, dh), tensor.New(dt, b, h, n, dh)
			tensor.AttentionBackward(dq, dk, dv, heads(gout), heads(q), heads(k), heads(v), probs, scale)
			what := fmt.Sprintf("AttentionBackward %v B%d N%d H%d Dh%d", dt, b, n, h, dh)
			// Permuted operands and gradients.
			gdq, gdk, gdv := heads(tensor.NewOn(s.b, dt, b, n, h, dh)), heads(tensor.NewOn(s.b, dt, b, n, h, dh)), heads(tensor.NewOn(s.b, dt, b, n, h, dh))
			tensor.AttentionBackward(gdq, gdk, gdv, heads(s.on(gout)), heads(s.on(q)), heads(s.on(k)), heads(s.on(v)), s.on(probs), scale)
			s.check(t, what+" permuted dq", gdq, dq, tl)
			s.check(t, what+" permuted dk", gdk, dk, tl)
			s.check(t, what+" permuted dv", gdv, dv, tl)
			// Contiguous operands, transposed probs view.
			cdq, cdk, cdv := tensor.NewOn(s.b, dt, b, h, n, dh), tensor.NewOn(s.b, dt, b, h, n, dh), tensor.NewOn(s.b, dt, b, h, n, dh)
			gprobs := s.on(probs.Transpose(2, 3)).Transpose(2, 3)
			tensor.AttentionBackward(cdq, cdk, cdv, s.on(heads(gout)), s.on(heads(q)), s.on(heads(k)), s.on(heads(v)), gprobs, scale)
			s.check(t, what+" dq", cdq, dq, tl)
			s.check(t, what+" dk", cdk, dk, tl)
			s.check(t, what+" dv", cdv, dv, tl)
		}
	}
}
