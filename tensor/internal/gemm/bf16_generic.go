//go:build !amd64 || noasm

package gemm

// Without the assembly there is no bf16 kernel: the bf16 switch stays off.

var sBF16 *kernel[float32]

const cpuHasBF16 = false

// pairsBF16 does not exist without the assembly; nothing calls it, as the
// bf16 kernel is never chosen.
func pairsBF16(p []float32, w, kc, panels int) { panic("gemm: no bf16 conversion in this build") }

// pairsFromBF16 does not exist without the assembly either.
func pairsFromBF16(dst, src []float32, ld, w, kc int) {
	panic("gemm: no bf16 conversion in this build")
}
