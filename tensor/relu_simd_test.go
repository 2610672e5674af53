package tensor

import (
	"math"
	"testing"
)

// TestReLUSIMD checks the ReLU kernels against the Go loops, bit for bit,
// on every length up to two vectors and a tail, with the special values
// (-0, NaN, ±Inf, the smallest subnormals) among random ones.
func TestReLUSIMD(t *testing.T) {
	if !cpuHasSIMD {
		t.Skip("no SIMD kernels on this CPU or build")
	}
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1, -1}
	r := NewRNG(7)
	for n := 0; n <= 37; n++ {
		x, gy := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], gy[i] = float32(r.Normal()), float32(r.Normal())
			if i%3 == 0 {
				x[i] = special[(i/3+n)%len(special)]
			}
		}
		got, want := make([]float32, n), make([]float32, n)
		reluVec32SIMD(got, x)
		for i, v := range x {
			if v > 0 {
				want[i] = v
			}
		}
		gotG, wantG := make([]float32, n), make([]float32, n)
		reluGradVec32SIMD(gotG, x, gy)
		for i, v := range x {
			if v > 0 {
				wantG[i] = gy[i]
			}
		}
		for i := range x {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("n=%d: relu(%g) = %g, want %g", n, x[i], got[i], want[i])
			}
			if math.Float32bits(gotG[i]) != math.Float32bits(wantG[i]) {
				t.Errorf("n=%d: relu'(%g)·%g = %g, want %g", n, x[i], gy[i], gotG[i], wantG[i])
			}
		}
	}
	// In place, as the tape's gradient buffers use it.
	x := []float32{-2, 3, float32(math.NaN()), -0.5, 4, 5, -6, 7, 8, -9}
	reluVec32SIMD(x, x)
	for i, want := range []float32{0, 3, 0, 0, 4, 5, 0, 7, 8, 0} {
		if x[i] != want {
			t.Errorf("in place: x[%d] = %g, want %g", i, x[i], want)
		}
	}
}

// TestGELUFlushKeepsCallerState checks that the GELU kernels, which flush
// denormals for their call, leave the caller's floating-point state as it
// was: Go code after them still produces denormals.
func TestGELUFlushKeepsCallerState(t *testing.T) {
	if !cpuHasSIMD {
		t.Skip("no SIMD kernels on this CPU or build")
	}
	x := []float32{-13.5, -14, 1e-40, 2, -1, 0, 3, -20, -13.2}
	d, g := make([]float32, len(x)), []float32{1, 1, 1, 1, 1, 1, 1, 1, 1}
	geluVec32SIMD(d, x)
	geluGradVec32SIMD(d, x, g)
	tiny := []float32{1e-38}
	if y := tiny[0] * 0.5; y == 0 {
		t.Error("the GELU kernels left MXCSR flushing denormals")
	}
}
