package tensor

import (
	"errors"
	"math"
	"testing"
)

// TestSetBF16MatMul checks the switch: off by default (unless
// LGFLOW_GEMM_BF16=1), ErrBF16Unsupported where the CPU lacks the
// feature, and where it has it, a MatMul within bf16 tolerances of the
// float32 one and different from it.
func TestSetBF16MatMul(t *testing.T) {
	defer SetBF16MatMul(BF16MatMul())
	if err := SetBF16MatMul(false); err != nil || BF16MatMul() {
		t.Fatalf("SetBF16MatMul(false) = %v, BF16MatMul() = %v", err, BF16MatMul())
	}
	if !BF16MatMulAvailable() {
		if err := SetBF16MatMul(true); !errors.Is(err, ErrBF16Unsupported) || BF16MatMul() {
			t.Fatalf("without the CPU feature: SetBF16MatMul(true) = %v, BF16MatMul() = %v", err, BF16MatMul())
		}
		t.Skip("the CPU lacks AVX512_BF16: the bf16 product is not tested here")
	}
	const m, n, k = 96, 80, 200
	r := NewRNG(7)
	a, b := RandU(r, Float32, m, k), RandU(r, Float32, n, k)
	want := MatMul(nil, a, b, false, true).Data32()
	if err := SetBF16MatMul(true); err != nil || !BF16MatMul() {
		t.Fatalf("SetBF16MatMul(true) = %v, BF16MatMul() = %v", err, BF16MatMul())
	}
	got := MatMul(nil, a, b, false, true).Data32()
	ad, bd := a.Data32(), b.Data32()
	differ := false
	for i := range m {
		for j := range n {
			var sa float64
			for p := range k {
				sa += math.Abs(float64(ad[i*k+p]) * float64(bd[j*k+p]))
			}
			g, w := got[i*n+j], want[i*n+j]
			differ = differ || g != w
			// bf16 operands: at most (2u+u^2) sum|ab| with u = 2^-8, plus float32 sums.
			if d := math.Abs(float64(g - w)); d > (0x1p-7+0x1p-16+float64(2*k+4)*0x1p-24)*sa {
				t.Fatalf("C[%d][%d] = %v with bf16, %v with float32", i, j, g, w)
			}
		}
	}
	if !differ {
		t.Errorf("the bf16 product has the float32 product's bits: not on the bf16 path?")
	}
}
