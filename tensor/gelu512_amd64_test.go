//go:build amd64 && !noasm

package tensor

import (
	"math"
	"testing"
)

// TestGELUAVX512 checks that the AVX-512 GELU kernels give the AVX2
// kernels' bits on every lane, in the 16-lane loop and in every tail
// length, for ordinary, extreme and special inputs, and that they write
// nothing past n.
func TestGELUAVX512(t *testing.T) {
	if !cpuHasAVX512 {
		t.Skip("the CPU lacks AVX-512F/DQ")
	}
	r := NewRNG(512)
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-45, -1e-45, 14.44, 14.46, -14.46, 30, -30,
		1e30, -1e30, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -float32(math.NaN()), 3.4e38, -3.4e38}
	const pad = 17
	sentinel := float32(-12345.5)
	for _, n := range append([]int{0, 1, 7, 15, 16, 17, 31, 32, 33, 40, 1000}, len(specials)) {
		x := make([]float32, n)
		for i := range x {
			switch {
			case n == len(specials):
				x[i] = specials[i]
			case i%5 == 0:
				x[i] = float32(r.Normal() * 8)
			default:
				x[i] = float32(r.Normal() * 2)
			}
		}
		gy := make([]float32, n)
		for i := range gy {
			gy[i] = float32(r.Normal())
		}
		for _, grad := range []bool{false, true} {
			want := make([]float32, n)
			got := make([]float32, n+pad)
			for i := range got {
				got[i] = sentinel
			}
			switch {
			case n == 0:
			case grad:
				geluGradAVX2(&want[0], &x[0], &gy[0], n)
				geluGradAVX512(&got[0], &x[0], &gy[0], n)
			default:
				geluAVX2(&want[0], &x[0], n)
				geluAVX512(&got[0], &x[0], n)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("grad %v n %d: element %d (x = %v): AVX-512 %v, AVX2 %v", grad, n, i, x[i], got[i], want[i])
				}
			}
			for i := n; i < n+pad; i++ {
				if got[i] != sentinel {
					t.Fatalf("grad %v n %d: element %d past the end was written", grad, n, i)
				}
			}
		}
	}
}
