//go:build amd64 && !noasm

package tensor

import (
	"math"
	"os"

	"golang.org/x/sys/cpu"
)

// The AVX2+FMA kernels of mathf_amd64.s. Each processes n elements of d
// and its inputs (n may be any length >= 0, the last n%8 are handled with
// masked loads and stores); d may be an input. See mathf_amd64.s for the
// algorithms.

//go:noescape
func expAVX2(d, a *float32, n int)

//go:noescape
func sigmoidAVX2(d, a *float32, n int)

//go:noescape
func siluAVX2(d, a *float32, n int)

//go:noescape
func tanhAVX2(d, a *float32, n int)

//go:noescape
func geluAVX2(d, a *float32, n int)

//go:noescape
func geluGradAVX2(d, a, gy *float32, n int)

// geluAVX512 and geluGradAVX512 are geluAVX2 and geluGradAVX2 on 16 lanes,
// with the same bits (cpuHasAVX512).
//
//go:noescape
func geluAVX512(d, a *float32, n int)

//go:noescape
func geluGradAVX512(d, a, gy *float32, n int)

// gateResidualAVX2 sets o = x + gate·h, rounding the product and then the
// sum (GateResidual's loop); o may be h.
//
//go:noescape
func gateResidualAVX2(o, x, gate, h *float32, n int)

// gateResidualVec32SIMD is gateResidualAVX2 on slices of equal length.
func gateResidualVec32SIMD(o, x, g, h []float32) {
	if n := len(o); n > 0 {
		gateResidualAVX2(&o[0], &x[:n][0], &g[:n][0], &h[:n][0], n)
	}
}

// softmaxRowAVX512 is maskedSoftmaxRow for a float32 row with a key mask
// (n >= 1) in one call, with its bits (cpuHasAVX512).
//
//go:noescape
func softmaxRowAVX512(row, keep *float32, n int) (m float32, sum float64)

// softmaxRows4AVX512 is softmaxRowAVX512 on the four rows row + r*ld (r <
// 4) with one key mask, interleaved, with its bits: m[r] and sum[r] are
// row r's results. It returns false, having only masked the rows, when a
// row's maximum is -Inf; softmaxRowAVX512 then finishes each row.
//
//go:noescape
func softmaxRows4AVX512(row *float32, ld int, keep *float32, n int, m *[4]float32, sum *[4]float64) (ok bool)

//go:noescape
func siluGradAVX2(d, a, gy *float32, n int)

//go:noescape
func expSubAVX2(d, x *float32, n int, m float32) float64

//go:noescape
func sumExpSubAVX2(x *float32, n int, m float32) float64

//go:noescape
func addAVX2(d, a, b *float32, n int)

//go:noescape
func subAVX2(d, a, b *float32, n int)

//go:noescape
func mulAVX2(d, a, b *float32, n int)

//go:noescape
func addScaledAVX2(d, a, b *float32, n int, alpha float32)

//go:noescape
func scaleAVX2(d, a *float32, n int, s float32)

//go:noescape
func addScalarAVX2(d, a *float32, n int, s float32)

//go:noescape
func maskedMaxAVX2(row, keep *float32, n int) float32

//go:noescape
func reluAVX2(d, a *float32, n int)

//go:noescape
func reluGradAVX2(d, x, gy *float32, n int)

// reluVec32SIMD sets d[i] = a[i] where a[i] > 0, else 0.
func reluVec32SIMD(d, a []float32) {
	if len(d) > 0 {
		reluAVX2(&d[0], &a[:len(d)][0], len(d))
	}
}

// reluGradVec32SIMD sets d[i] = gy[i] where x[i] > 0, else 0.
func reluGradVec32SIMD(d, x, gy []float32) {
	if len(d) > 0 {
		reluGradAVX2(&d[0], &x[:len(d)][0], &gy[:len(d)][0], len(d))
	}
}

// scaleVec32SIMD sets d[i] = a[i]·s.
func scaleVec32SIMD(d, a []float32, s float32) {
	if len(d) > 0 {
		scaleAVX2(&d[0], &a[:len(d)][0], len(d), s)
	}
}

// addScalarVec32SIMD sets d[i] = a[i] + s.
func addScalarVec32SIMD(d, a []float32, s float32) {
	if len(d) > 0 {
		addScalarAVX2(&d[0], &a[:len(d)][0], len(d), s)
	}
}

// maskedMax32SIMD sets row[j] = -Inf where keep[j] == 0 and returns the
// largest other element, NaNs skipped (-Inf when there is none).
func maskedMax32SIMD(row, keep []float32) float32 {
	if len(row) == 0 {
		return float32(math.Inf(-1))
	}
	return maskedMaxAVX2(&row[0], &keep[:len(row)][0], len(row))
}

// arithVec32SIMD sets d = a op b for op Add, Sub, Mul or AddScaled
// (d = a + alpha·b) with the AVX2 kernels and reports whether op is one of
// them. The results are those of the Go loops, bit for bit.
func arithVec32SIMD(op BinaryOp, d, a, b []float32, alpha float32) bool {
	if len(d) == 0 {
		return op == BinaryAdd || op == BinarySub || op == BinaryMul || op == BinaryAddScaled
	}
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case BinaryAdd:
		addAVX2(&d[0], &a[0], &b[0], len(d))
	case BinarySub:
		subAVX2(&d[0], &a[0], &b[0], len(d))
	case BinaryMul:
		mulAVX2(&d[0], &a[0], &b[0], len(d))
	case BinaryAddScaled:
		addScaledAVX2(&d[0], &a[0], &b[0], len(d), alpha)
	default:
		return false
	}
	return true
}

// cpuHasSIMD reports whether this CPU (and OS) can run the kernels.
var cpuHasSIMD = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// cpuHasAVX512 reports whether the AVX-512 forms of the GELU kernels and
// the fused softmax row can run; LGFLOW_MATHF=avx2 keeps the AVX2 kernels
// (the results are the same), LGFLOW_MATHF=go the Go loops.
var cpuHasAVX512 = cpuHasSIMD && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// useAVX512 reports whether the SIMD dispatchers (when useSIMD) take the
// AVX-512 forms.
var useAVX512 = cpuHasAVX512 && os.Getenv("LGFLOW_MATHF") != "avx2"

// The SIMD forms of the vector kernels of mathf_vec.go, callable only when
// cpuHasSIMD. Inputs are sliced to len(d) first (a shorter input panics).

func expVec32SIMD(d, a []float32) {
	if len(d) > 0 {
		a = a[:len(d)]
		expAVX2(&d[0], &a[0], len(d))
	}
}

func sigmoidVec32SIMD(d, a []float32) {
	if len(d) > 0 {
		a = a[:len(d)]
		sigmoidAVX2(&d[0], &a[0], len(d))
	}
}

func siluVec32SIMD(d, a []float32) {
	if len(d) > 0 {
		a = a[:len(d)]
		siluAVX2(&d[0], &a[0], len(d))
	}
}

func tanhVec32SIMD(d, a []float32) {
	if len(d) > 0 {
		a = a[:len(d)]
		tanhAVX2(&d[0], &a[0], len(d))
	}
}

func geluVec32SIMD(d, a []float32) {
	if len(d) > 0 {
		a = a[:len(d)]
		if useAVX512 {
			geluAVX512(&d[0], &a[0], len(d))
			return
		}
		geluAVX2(&d[0], &a[0], len(d))
	}
}

func geluGradVec32SIMD(d, a, gy []float32) {
	if len(d) > 0 {
		a, gy = a[:len(d)], gy[:len(d)]
		if useAVX512 {
			geluGradAVX512(&d[0], &a[0], &gy[0], len(d))
			return
		}
		geluGradAVX2(&d[0], &a[0], &gy[0], len(d))
	}
}

func siluGradVec32SIMD(d, a, gy []float32) {
	if len(d) > 0 {
		a, gy = a[:len(d)], gy[:len(d)]
		siluGradAVX2(&d[0], &a[0], &gy[0], len(d))
	}
}

func expSubVec32SIMD(d, x []float32, m float32) float64 {
	if len(d) == 0 {
		return 0
	}
	x = x[:len(d)]
	return expSubAVX2(&d[0], &x[0], len(d), m)
}

func sumExpSub32SIMD(x []float32, m float32) float64 {
	if len(x) == 0 {
		return 0
	}
	return sumExpSubAVX2(&x[0], len(x), m)
}

// simdBuilt reports whether the assembly kernels are compiled in.
const simdBuilt = true
