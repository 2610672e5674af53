package tensor

import (
	"fmt"
	"testing"
)

// refMatMul computes alpha·op(a)·op(b) + beta·c0 with float64 loops.
func refMatMul(a, b *Tensor, transA, transB bool, alpha, beta float64, c0 *Tensor) ([]int, []float64) {
	ra, rb := a.Rank(), b.Rank()
	m, k := a.shape[ra-2], a.shape[ra-1]
	if transA {
		m, k = k, m
	}
	n := b.shape[rb-1]
	if transB {
		n = b.shape[rb-2]
	}
	var batch []int
	if ra >= rb {
		batch = a.shape[:ra-2]
	} else {
		batch = b.shape[:rb-2]
	}
	shape := append(append([]int(nil), batch...), m, n)
	var out []float64
	forEachIndex(shape, func(idx []int) {
		bi := idx[:len(batch)]
		i, j := idx[len(batch)], idx[len(batch)+1]
		s := 0.0
		for p := range k {
			ai := append([]int(nil), bi[len(bi)-(ra-2):]...)
			if transA {
				ai = append(ai, p, i)
			} else {
				ai = append(ai, i, p)
			}
			bj := append([]int(nil), bi[len(bi)-(rb-2):]...)
			if transB {
				bj = append(bj, j, p)
			} else {
				bj = append(bj, p, j)
			}
			s += a.At(ai...) * b.At(bj...)
		}
		v := alpha * s
		if beta != 0 {
			v += beta * c0.At(idx...)
		}
		out = append(out, v)
	})
	return shape, out
}

func TestMatMul(t *testing.T) {
	r := NewRNG(20)
	type mm struct{ a, b []int }
	cases := []mm{
		{[]int{1, 1}, []int{1, 1}},
		{[]int{3, 5}, []int{5, 7}},
		{[]int{13, 1}, []int{1, 11}},
		{[]int{37, 41}, []int{41, 29}},
		{[]int{70, 65}, []int{65, 67}},
		{[]int{2, 3, 5, 4}, []int{2, 3, 4, 6}},
		{[]int{3, 6, 5}, []int{5, 2}},
		{[]int{6, 5}, []int{3, 5, 2}},
		{[]int{2, 3, 40, 33}, []int{33, 35}}, // shared b, batches folded into rows
		{[]int{1, 1, 5}, []int{5, 3}},
		{[]int{4, 0}, []int{0, 3}},
	}
	for _, dt := range dtypes {
		for _, c := range cases {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					as, bs := cloneInts(c.a), cloneInts(c.b)
					if ta {
						as[len(as)-1], as[len(as)-2] = as[len(as)-2], as[len(as)-1]
					}
					if tb {
						bs[len(bs)-1], bs[len(bs)-2] = bs[len(bs)-2], bs[len(bs)-1]
					}
					a0, b0 := randT(r, dt, as...), randT(r, dt, bs...)
					shape, want := refMatMul(a0, b0, ta, tb, 1, 0, nil)
					c0 := randT(r, dt, shape...)
					_, wantGemm := refMatMul(a0, b0, ta, tb, -0.5, 2, c0)
					lbs := layouts(b0)
					for la, a := range layouts(a0) {
						for lb, b := range lbs {
							name := fmt.Sprintf("%v/%v%v/tA%v/tB%v/%s/%s", dt, as, bs, ta, tb, la, lb)
							assertClose(t, MatMul(nil, a, b, ta, tb), shape, want, 10*tol(dt), name)
							if la != lb {
								continue
							}
							// Gemm with beta into every dst layout.
							for lc, c := range layouts(c0.Clone()) {
								Gemm(c, -0.5, a, b, ta, tb, 2)
								assertClose(t, c, shape, wantGemm, 10*tol(dt), name+"/gemm "+lc)
							}
						}
					}
				}
			}
		}
	}
}

func TestMatMulBatchedViews(t *testing.T) {
	// Heads of a (B, N, H, Dh) tensor permuted to (B, H, N, Dh) without copying.
	r := NewRNG(21)
	x := randT(r, Float32, 2, 5, 3, 4).Permute(0, 2, 1, 3)
	y := randT(r, Float32, 2, 5, 3, 4).Permute(0, 2, 1, 3)
	shape, want := refMatMul(x, y, false, true, 1, 0, nil)
	assertClose(t, MatMul(nil, x, y, false, true), shape, want, 1e-5, "permuted heads")
	dst := New(Float32, 2, 5, 3, 5).Permute(0, 2, 1, 3)
	assertClose(t, MatMul(dst, x, y, false, true), shape, want, 1e-5, "permuted dst")
}

func TestMatMulShapeErrors(t *testing.T) {
	a, b := New(Float32, 3, 4), New(Float32, 5, 6)
	mustPanic(t, ErrShape, func() { MatMul(nil, a, b, false, false) }, "tensor.MatMul", "[3 4]", "[5 6]")
	mustPanic(t, ErrShape, func() { MatMul(New(Float32, 3, 3), a, New(Float32, 4, 6), false, false) }, "tensor.MatMul", "dst shape [3 3]")
	mustPanic(t, ErrShape, func() { MatMul(nil, New(Float32, 2, 3, 4), New(Float32, 3, 4, 5), false, false) }, "batch")
	mustPanic(t, ErrShape, func() { Gemm(nil, 1, a, New(Float32, 4, 2), false, false, 1) }, "tensor.Gemm", "beta")
	w := New(Float32, 6, 4) // a linear layer's weight (out, in)
	mustPanic(t, ErrShape, func() { GemmBias(nil, 1, a, w, false, true, New(Float32, 4)) }, "tensor.GemmBias", "bias shape [4]", "6 output columns")
	mustPanic(t, ErrShape, func() { GemmBias(nil, 1, a, w, false, true, New(Float32, 1, 6)) }, "tensor.GemmBias", "bias shape [1 6]")
	mustPanic(t, ErrShape, func() { GemmBias(New(Float32, 3, 5), 1, a, w, false, true, New(Float32, 6)) }, "tensor.GemmBias", "dst shape [3 5]")
	mustPanic(t, ErrShape, func() { GemmBias(nil, 1, a, b, false, true, New(Float32, 5)) }, "tensor.GemmBias", "[3 4]", "[5 6]")
	mustPanic(t, ErrDType, func() { GemmBias(nil, 1, a, w, false, true, New(Float64, 6)) }, "tensor.GemmBias")
}
