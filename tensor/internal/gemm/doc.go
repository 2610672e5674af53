// Package gemm implements dense general matrix multiplication for the tensor
// package:
//
//	C = alpha * op(A) * op(B) + beta * C
//
// in float32 (Sgemm) and float64 (Dgemm) on row-major matrices addressed by
// a row stride, where op(X) is X or its transpose.
//
// The design follows GotoBLAS/BLIS. C is computed in cache blocks: a kc x nc
// block of op(B) is packed into micro-panels of nr columns (shared by all
// workers, sized for the last-level cache), an mc x kc block of op(A) is
// packed into micro-panels of mr rows (one per worker, sized for L2), and an
// assembly micro-kernel multiplies one A micro-panel by one B micro-panel
// into an mr x nr tile of C held in vector registers. Transposes are absorbed
// by the packing routines, and tiles at the edges of C are computed into a
// padded buffer and merged, so the micro-kernels only ever see full tiles.
//
// Micro-kernels are chosen at run time (see Kernel):
//
//   - "avx512": 12x32 float32 tiles with AVX-512F. The tests run it
//     natively where the CPU has AVX-512 (the development machine, Zen 4
//     and Zen 5 EPYCs) and check its machine code with an emulator
//     elsewhere (TestEmulatedKernels).
//   - "avx2": 6x16 float32 tiles (and 6x8 float64 tiles) with AVX2 and FMA.
//   - "go": portable Go, used on other architectures, on CPUs without
//     AVX2+FMA, and when built with the noasm tag.
//
// The environment variable LGFLOW_GEMM (read once at start-up) may name a
// supported kernel ("avx2" or "go") to use instead of the best one.
//
// Large products are split over up to runtime.GOMAXPROCS(0) goroutines, the
// caller and the helper goroutines of lgflow/internal/parallel (shared with
// the tensor kernels), which take cache-block-sized tasks from shared
// counters. Tiny products (below about 10^3 multiply-adds with the
// assembly kernels, 16^3 with the Go one; measured crossovers) take a direct
// path with no packing. The float32 assembly kernels also have direct forms
// that read op(A) in place instead of from a packed panel, with the same
// bits: a row-major op(A) (a linear layer's forward pass, its input
// gradient: 1.00-1.08× the packed speed on one thread at the DiT's shapes,
// BenchmarkSgemmDirectA) and a transposed one (A stored k x m: a linear
// layer's weight gradient, where packing the tokens' gradients cost a third
// of the product: 1.4× the packed speed for 512 outputs over 4,096 tokens,
// BenchmarkSgemmLinear's dw); and small products (an attention head's) read
// a row-major op(B) in place as well instead of packing it. Packing buffers
// are reused across calls, so steady-state calls allocate nothing.
package gemm
