//go:build amd64 && !noasm

package gemm

// sAVX512f32 returns the float32 AVX-512 kernel, for benchmarks beside the
// bf16 one.
func sAVX512f32() *kernel[float32] { return sAVX512 }
