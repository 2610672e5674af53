package backendtest

import (
	"fmt"
	"math"
	"testing"

	"lgflow/tensor"
)

// opShape returns the stored shape of an operand that is (rows, cols) after
// an optional transpose, with batch dimensions in front.
func opShape(batch []int, rows, cols int, trans bool) []int {
	s := append([]int(nil), batch...)
	if trans {
		return append(s, cols, rows)
	}
	return append(s, rows, cols)
}

// testGemmBias checks dst = alpha·op(a)·op(b) + bias against copying bias
// into dst and accumulating with Gemm (beta = 1) on the CPU: every transpose,
// products large enough for the blocked kernels, a shared rank-2 weight
// with batched inputs, equal batches, a strided bias, a transposed or NaN
// dst, alpha = 0 and k = 0.
func testGemmBias(t *testing.T, s *suite) {
	r := tensor.NewRNG(17)
	ref := func(dst *tensor.Tensor, alpha float64, a, b *tensor.Tensor, ta, tb bool, bias *tensor.Tensor) *tensor.Tensor {
		tensor.Copy(dst, bias)
		return tensor.Gemm(dst, alpha, a, b, ta, tb, 1)
	}
	for _, dt := range dtypes {
		for _, d := range [][3]int{{1, 1, 1}, {7, 13, 5}, {70, 40, 50}, {130, 33, 64}} {
			m, k, n := d[0], d[1], d[2]
			tl := gemmTol(dt, k)
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					a := rand(r, dt, -1, 1, opShape(nil, m, k, ta)...)
					b := rand(r, dt, -1, 1, opShape(nil, k, n, tb)...)
					bias := rand(r, dt, -1, 1, n)
					what := fmt.Sprintf("%v m%d k%d n%d ta %v tb %v", dt, m, k, n, ta, tb)
					want := ref(tensor.New(dt, m, n), -0.5, a, b, ta, tb, bias)
					nan := tensor.NewOn(s.b, dt, m, n).Fill(math.NaN())
					s.check(t, "GemmBias over NaN "+what, tensor.GemmBias(nan, -0.5, s.on(a), s.on(b), ta, tb, s.on(bias)), want, tl)
					s.check(t, "GemmBias nil dst "+what, tensor.GemmBias(nil, -0.5, s.on(a), s.on(b), ta, tb, s.on(bias)), want, tl)
					ct := tensor.NewOn(s.b, dt, n, m).T()
					s.check(t, "GemmBias transposed dst "+what, tensor.GemmBias(ct, -0.5, s.on(a), s.on(b), ta, tb, s.on(bias)), want, tl)
					bs := tensor.NewOn(s.b, dt, n, 2).Slice(1, 1, 2).Squeeze(1)
					tensor.Copy(bs, s.on(bias))
					s.check(t, "GemmBias strided bias "+what, tensor.GemmBias(nil, -0.5, s.on(a), s.on(b), ta, tb, bs), want, tl)
				}
			}
		}
		// Batched inputs against a shared weight (a linear layer), and equal batches.
		for _, bc := range []struct{ ba, bb []int }{{[]int{2, 3}, nil}, {[]int{4}, []int{4}}} {
			m, k, n := 20, 36, 40
			a := rand(r, dt, -1, 1, append(append([]int(nil), bc.ba...), m, k)...)
			b := rand(r, dt, -1, 1, append(append([]int(nil), bc.bb...), n, k)...)
			bias := rand(r, dt, -1, 1, n)
			want := ref(tensor.MatMul(nil, a, b, false, true), 1, a, b, false, true, bias)
			s.check(t, fmt.Sprintf("GemmBias batched %v %v,%v", dt, a.Shape(), b.Shape()), tensor.GemmBias(nil, 1, s.on(a), s.on(b), false, true, s.on(bias)), want, gemmTol(dt, k))
		}
		// alpha = 0 and k = 0 leave bias in every row.
		bias := rand(r, dt, -1, 1, 2)
		rows := tensor.Copy(tensor.New(dt, 3, 2), bias)
		a, b := rand(r, dt, -1, 1, 3, 4), rand(r, dt, -1, 1, 4, 2)
		s.check(t, fmt.Sprintf("GemmBias %v alpha 0", dt), tensor.GemmBias(nil, 0, s.on(a), s.on(b), false, false, s.on(bias)), rows, gemmTol(dt, 0))
		e0, e1 := tensor.New(dt, 3, 0), tensor.New(dt, 0, 2)
		s.check(t, fmt.Sprintf("GemmBias %v k=0", dt), tensor.GemmBias(nil, 1, s.on(e0), s.on(e1), false, false, s.on(bias)), rows, gemmTol(dt, 0))
	}
}

func testGemm(t *testing.T, s *suite) {
	r := tensor.NewRNG(13)
	dims := [][3]int{{1, 1, 1}, {7, 13, 5}, {31, 2, 17}, {64, 65, 3}, {1, 40, 9}}
	for _, dt := range dtypes {
		// Every transpose combination, rank 2, through MatMul and Gemm.
		for _, d := range dims {
			m, k, n := d[0], d[1], d[2]
			tl := gemmTol(dt, k)
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					a := rand(r, dt, -1, 1, opShape(nil, m, k, ta)...)
					b := rand(r, dt, -1, 1, opShape(nil, k, n, tb)...)
					what := fmt.Sprintf("%v m%d k%d n%d ta %v tb %v", dt, m, k, n, ta, tb)
					want := tensor.MatMul(nil, a, b, ta, tb)
					for _, la := range layouts {
						for _, lb := range layouts {
							ga, gb := la.make(s, a), lb.make(s, b)
							s.check(t, "MatMul "+what+" "+la.name+","+lb.name, tensor.MatMul(nil, ga, gb, ta, tb), want, tl)
						}
					}
					c := rand(r, dt, -1, 1, m, n)
					wantG := tensor.Gemm(c.Clone(), 0.5, a, b, ta, tb, -2)
					s.check(t, "Gemm beta "+what, tensor.Gemm(s.on(c), 0.5, s.on(a), s.on(b), ta, tb, -2), wantG, tl)
					// A transposed destination, and one with no unit stride.
					ct := s.on(c.T()).T()
					s.check(t, "Gemm transposed dst "+what, tensor.Gemm(ct, 0.5, s.on(a), s.on(b), ta, tb, -2), wantG, tl)
					cs := tensor.NewOn(s.b, dt, m, n, 2).Slice(2, 0, 1).Squeeze(2)
					tensor.Copy(cs, c)
					s.check(t, "Gemm strided dst "+what, tensor.Gemm(cs, 0.5, s.on(a), s.on(b), ta, tb, -2), wantG, tl)
				}
			}
		}
		// beta = 0 ignores NaNs in dst; alpha = 0 and k = 0 scale dst.
		a, b := rand(r, dt, -1, 1, 3, 4), rand(r, dt, -1, 1, 4, 2)
		nan := tensor.NewOn(s.b, dt, 3, 2).Fill(math.NaN())
		s.check(t, fmt.Sprintf("Gemm %v beta 0 over NaN", dt), tensor.Gemm(nan, 1, s.on(a), s.on(b), false, false, 0), tensor.MatMul(nil, a, b, false, false), gemmTol(dt, 4))
		c := rand(r, dt, -1, 1, 3, 2)
		s.check(t, fmt.Sprintf("Gemm %v alpha 0", dt), tensor.Gemm(s.on(c), 0, s.on(a), s.on(b), false, false, 3), tensor.MulScalar(nil, c, 3), gemmTol(dt, 4))
		e0, e1 := tensor.New(dt, 3, 0), tensor.New(dt, 0, 2)
		s.check(t, fmt.Sprintf("Gemm %v k=0", dt), tensor.Gemm(s.on(c), 1, s.on(e0), s.on(e1), false, false, 0.5), tensor.MulScalar(nil, c, 0.5), gemmTol(dt, 0))

		// Batched: equal batches, a shared rank-2 b, a shared rank-2 a.
		batched := []struct {
			ba, bb []int
		}{
			{[]int{2, 3}, []int{2, 3}},
			{[]int{5}, nil},
			{nil, []int{4}},
			{[]int{1, 3}, []int{1, 3}},
		}
		for _, bc := range batched {
			m, k, n := 6, 9, 5
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					a := rand(r, dt, -1, 1, opShape(bc.ba, m, k, ta)...)
					b := rand(r, dt, -1, 1, opShape(bc.bb, k, n, tb)...)
					want := tensor.MatMul(nil, a, b, ta, tb)
					what := fmt.Sprintf("batched %v %v,%v ta %v tb %v", dt, a.Shape(), b.Shape(), ta, tb)
					for _, la := range layouts {
						ga := la.make(s, a)
						s.check(t, what+" "+la.name, tensor.MatMul(nil, ga, s.on(b), ta, tb), want, gemmTol(dt, k))
					}
					s.check(t, what+" strided dst", tensor.MatMul(s.stridedDst(dt, want.Shape()...), s.on(a), s.on(b), ta, tb), want, gemmTol(dt, k))
				}
			}
		}
		// Permuted batch axes, as in multi-head attention: (B, N, H, D) viewed
		// as (B, H, N, D).
		q := rand(r, dt, -1, 1, 2, 7, 3, 4)
		kk := rand(r, dt, -1, 1, 2, 7, 3, 4)
		want := tensor.MatMul(nil, q.Permute(0, 2, 1, 3), kk.Permute(0, 2, 1, 3), false, true)
		got := tensor.MatMul(nil, s.on(q).Permute(0, 2, 1, 3), s.on(kk).Permute(0, 2, 1, 3), false, true)
		s.check(t, fmt.Sprintf("MatMul %v permuted batches", dt), got, want, gemmTol(dt, 4))
		v := rand(r, dt, -1, 1, 2, 3, 7, 4)
		out := tensor.NewOn(s.b, dt, 2, 7, 3, 4).Permute(0, 2, 1, 3)
		want = tensor.MatMul(nil, want, v, false, false)
		s.check(t, fmt.Sprintf("MatMul %v into permuted dst", dt), tensor.MatMul(out, got, s.on(v), false, false), want, gemmTol(dt, 7))
	}
}
