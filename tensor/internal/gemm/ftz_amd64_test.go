//go:build amd64 && !noasm

package gemm

import (
	"math"
	"testing"
)

// TestKernelsFlushDenormals checks that the assembly float32 kernels treat
// denormal operands as zero and flush denormal results to zero, and that
// the caller's floating-point state is unchanged afterwards (Go code
// after the call still produces denormals).
func TestKernelsFlushDenormals(t *testing.T) {
	if Kernel() == "go" {
		t.Skip("no assembly kernel on this CPU")
	}
	const m, n, k = 64, 64, 64 // above the small-product threshold
	denormal := float32(1e-39)
	for _, tc := range []struct {
		name string
		a, b float32
	}{
		{"denormal operand", denormal, 1},
		{"denormal product", 1e-20, 1e-20},
	} {
		a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
		for i := range a {
			a[i] = tc.a
		}
		for i := range b {
			b[i] = tc.b
		}
		Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		for i, v := range c {
			if v != 0 {
				t.Fatalf("%s: C[%d] = %g, want 0 (flushed)", tc.name, i, v)
			}
		}
	}
	// The same sums of normal numbers are untouched.
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = 1e-18
	}
	for i := range b {
		b[i] = 1e-18
	}
	Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
	if want := float32(k) * 1e-36; math.Abs(float64(c[0]-want)) > 1e-6*float64(want) {
		t.Errorf("normal results: C[0] = %g, want %g", c[0], want)
	}
	x := []float32{denormal}
	if y := x[0] * 0.5; y == 0 {
		t.Error("the caller's MXCSR was left flushing denormals")
	}
}
