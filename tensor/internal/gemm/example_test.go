package gemm_test

import (
	"fmt"

	"lgflow/tensor/internal/gemm"
)

// C = A*B for A (2x3) and B (3x2), row-major with tight row strides.
func ExampleSgemm() {
	a := []float32{
		1, 2, 3,
		4, 5, 6,
	}
	b := []float32{
		7, 8,
		9, 10,
		11, 12,
	}
	c := make([]float32, 2*2)
	gemm.Sgemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2)
	fmt.Println(c)
	// Output: [58 64 139 154]
}

// Accumulate C += 0.5 * A^T * B into the left 2x2 block of a 2x3 matrix:
// A is stored 3x2 (so op(A) = A^T is 2x3), and C is a view with ldc = 3.
func ExampleDgemm_transposedView() {
	a := []float64{
		1, 4,
		2, 5,
		3, 6,
	}
	b := []float64{
		7, 8,
		9, 10,
		11, 12,
	}
	c := []float64{
		1, 1, -1,
		1, 1, -1,
	}
	gemm.Dgemm(true, false, 2, 2, 3, 0.5, a, 2, b, 2, 1, c, 3)
	fmt.Println(c)
	// Output: [30 33 -1 70.5 78 -1]
}

// Kernel names the micro-kernel chosen for this CPU.
func ExampleKernel() {
	switch gemm.Kernel() {
	case "avx512", "avx2", "go":
		fmt.Println("ok")
	}
	// Output: ok
}
