//go:build !amd64 || noasm

package tensor

// Without the assembly kernels only the Go code of mathf_vec.go runs; the
// SIMD entry points exist so that the dispatchers compile, and panic.

// cpuHasSIMD reports whether the SIMD kernels can run: never in this build.
const cpuHasSIMD = false

// cpuHasAVX512 and useAVX512: never in this build.
const cpuHasAVX512 = false

var useAVX512 = false

const errNoSIMD = "tensor: SIMD math kernels are not built (noasm or not amd64)"

func expVec32SIMD(d, a []float32)                       { panic(errNoSIMD) }
func sigmoidVec32SIMD(d, a []float32)                   { panic(errNoSIMD) }
func siluVec32SIMD(d, a []float32)                      { panic(errNoSIMD) }
func tanhVec32SIMD(d, a []float32)                      { panic(errNoSIMD) }
func geluVec32SIMD(d, a []float32)                      { panic(errNoSIMD) }
func geluGradVec32SIMD(d, a, gy []float32)              { panic(errNoSIMD) }
func siluGradVec32SIMD(d, a, gy []float32)              { panic(errNoSIMD) }
func expSubVec32SIMD(d, x []float32, m float32) float64 { panic(errNoSIMD) }
func sumExpSub32SIMD(x []float32, m float32) float64    { panic(errNoSIMD) }
func scaleVec32SIMD(d, a []float32, s float32)          { panic(errNoSIMD) }
func addScalarVec32SIMD(d, a []float32, s float32)      { panic(errNoSIMD) }
func maskedMax32SIMD(row, keep []float32) float32       { panic(errNoSIMD) }
func reluVec32SIMD(d, a []float32)                      { panic(errNoSIMD) }
func reluGradVec32SIMD(d, x, gy []float32)              { panic(errNoSIMD) }

func gateResidualVec32SIMD(o, x, g, h []float32) { panic(errNoSIMD) }

func softmaxRowAVX512(row, keep *float32, n int) (m float32, sum float64) { panic(errNoSIMD) }
func softmaxRows4AVX512(row *float32, ld int, keep *float32, n int, m *[4]float32, sum *[4]float64) bool {
	panic(errNoSIMD)
}
func arithVec32SIMD(op BinaryOp, d, a, b []float32, alpha float32) bool {
	panic(errNoSIMD)
}

// simdBuilt reports whether the assembly kernels are compiled in.
const simdBuilt = false

// The LayerNorm row kernels of norm_amd64.go.

func sum4SIMD(x []float32, acc *[4]float64) int                  { panic(errNoSIMD) }
func sumSqDev4SIMD(x []float32, mu float64, acc *[4]float64) int { panic(errNoSIMD) }
func sum4x4SIMD(x []float32, d int, acc *[16]float64)            { panic(errNoSIMD) }
func sumSqDev4x4SIMD(x []float32, d int, mu *[4]float64, acc *[16]float64) {
	panic(errNoSIMD)
}
func lnScaleSIMD(y, x []float32, m, s float32) int                    { panic(errNoSIMD) }
func lnModSIMD(y, x, shift, scale []float32, m, s float32) int        { panic(errNoSIMD) }
func lnModBackSIMD(gu, gy, scale []float32, ssh, ssc []float64) int   { panic(errNoSIMD) }
func lnBackSums4SIMD(g, x []float32, mu float64, acc *[8]float64) int { panic(errNoSIMD) }
func lnBackOutSIMD(dx, g, x []float32, c0, c1, c2, m float32) int     { panic(errNoSIMD) }
func lnAffineSIMD(y, x, gamma, beta []float32, m, s float32) int      { panic(errNoSIMD) }
func lnModAffineSIMD(y, x, gamma, beta, shift, scale []float32, m, s float32) int {
	panic(errNoSIMD)
}
func lnParamGradSIMD(gr, x []float32, dg, db []float64, mu, rs float64) int { panic(errNoSIMD) }
func lnBackSums4GammaSIMD(gr, x, gamma []float32, mu float64, acc *[8]float64) int {
	panic(errNoSIMD)
}
func lnBackOutGammaSIMD(dx, gr, x, gamma []float32, c0, c1, c2, m float32) int { panic(errNoSIMD) }
func adamW32SIMD(p, g, m, v []float32, c *[8]float64) int                      { panic(errNoSIMD) }
func colAcc64SIMD(acc []float64, x []float32, ld, rows int) int                { panic(errNoSIMD) }
func mulAcc64SIMD(acc []float64, a, b []float32) int                           { panic(errNoSIMD) }
