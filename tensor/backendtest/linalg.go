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
