//go:build amd64 && !noasm

package tensor

// The AVX2 kernels of the LayerNorm rows (norm_amd64.s), called through
// the wrappers below only when useSIMD. Each gives the bits of the Go
// loops it replaces; see norm_amd64.s for the length each needs.

//go:noescape
func sum4AVX2(x *float32, n int, acc *[4]float64)

//go:noescape
func sumSqDev4AVX2(x *float32, n int, mu float64, acc *[4]float64)

//go:noescape
func sum4x4AVX2(x *float32, ld, n int, acc *[16]float64)

//go:noescape
func sumSqDev4x4AVX2(x *float32, ld, n int, mu *[4]float64, acc *[16]float64)

//go:noescape
func lnScaleAVX2(y, x *float32, n int, m, s float32)

//go:noescape
func lnModAVX2(y, x, shift, scale *float32, n int, m, s float32)

//go:noescape
func lnModBackAVX2(gu, gy, scale *float32, ssh, ssc *float64, n int)

//go:noescape
func lnBackSums4AVX2(gr, x *float32, n int, mu float64, acc *[8]float64)

//go:noescape
func lnBackOutAVX2(out, gr, x *float32, n int, c0, c1, c2, m float32)

// sum4SIMD adds x[i] to acc[i%4] for the first len(x)&^3 elements and
// returns how many it took.
func sum4SIMD(x []float32, acc *[4]float64) int {
	n := len(x) &^ 3
	if n > 0 {
		sum4AVX2(&x[0], n, acc)
	}
	return n
}

// sum4x4SIMD is sum4SIMD on the four rows x[r*d:(r+1)*d] at once, row r
// into acc[4r:4r+4]; d % 4 == 0.
func sum4x4SIMD(x []float32, d int, acc *[16]float64) {
	if d > 0 {
		_ = x[4*d-1]
		sum4x4AVX2(&x[0], d, d, acc)
	}
}

// sumSqDev4x4SIMD is sumSqDev4SIMD on the four rows x[r*d:(r+1)*d] at
// once, row r about mu[r] into acc[4r:4r+4]; d % 4 == 0.
func sumSqDev4x4SIMD(x []float32, d int, mu *[4]float64, acc *[16]float64) {
	if d > 0 {
		_ = x[4*d-1]
		sumSqDev4x4AVX2(&x[0], d, d, mu, acc)
	}
}

// sumSqDev4SIMD adds (x[i]-mu)² to acc[i%4] for the first len(x)&^3
// elements and returns how many it took.
func sumSqDev4SIMD(x []float32, mu float64, acc *[4]float64) int {
	n := len(x) &^ 3
	if n > 0 {
		sumSqDev4AVX2(&x[0], n, mu, acc)
	}
	return n
}

// lnScaleSIMD sets y[i] = (x[i]-m)·s for the first len(y)&^7 elements and
// returns how many it set.
func lnScaleSIMD(y, x []float32, m, s float32) int {
	n := len(y) &^ 7
	if n > 0 {
		lnScaleAVX2(&y[0], &x[:n][0], n, m, s)
	}
	return n
}

// lnModSIMD sets y[i] = (u + u·scale[i]) + shift[i], u = (x[i]-m)·s, for
// the first len(y)&^7 elements and returns how many it set.
func lnModSIMD(y, x, shift, scale []float32, m, s float32) int {
	n := len(y) &^ 7
	if n > 0 {
		lnModAVX2(&y[0], &x[:n][0], &shift[:n][0], &scale[:n][0], n, m, s)
	}
	return n
}

// lnModBackSIMD runs the modulation's backward step (ssh += g, ssc +=
// g·u, gu = g + g·scale, with u = gu and g = gy) on the first len(gu)&^3
// elements and returns how many it took.
func lnModBackSIMD(gu, gy, scale []float32, ssh, ssc []float64) int {
	n := len(gu) &^ 3
	if n > 0 {
		lnModBackAVX2(&gu[0], &gy[:n][0], &scale[:n][0], &ssh[:n][0], &ssc[:n][0], n)
	}
	return n
}

// lnBackSums4SIMD adds g[i] to acc[i%4] and g[i]·(x[i]-mu) to
// acc[4+i%4] for the first len(g)&^3 elements and returns how many it
// took.
func lnBackSums4SIMD(g, x []float32, mu float64, acc *[8]float64) int {
	n := len(g) &^ 3
	if n > 0 {
		lnBackSums4AVX2(&g[0], &x[:n][0], n, mu, acc)
	}
	return n
}

// lnBackOutSIMD sets dx[i] = (c0·g[i] - c1) - (x[i]-m)·c2 for the first
// len(dx)&^7 elements and returns how many it set.
func lnBackOutSIMD(dx, g, x []float32, c0, c1, c2, m float32) int {
	n := len(dx) &^ 7
	if n > 0 {
		lnBackOutAVX2(&dx[0], &g[:n][0], &x[:n][0], n, c0, c1, c2, m)
	}
	return n
}

//go:noescape
func lnAffineAVX2(y, x, gamma, beta *float32, n int, m, s float32)

//go:noescape
func lnModAffineAVX2(y, x, gamma, beta, shift, scale *float32, n int, m, s float32)

//go:noescape
func lnParamGradAVX2(gr, x *float32, dg, db *float64, n int, mu, rs float64)

//go:noescape
func lnBackSums4GammaAVX2(gr, x, gamma *float32, n int, mu float64, acc *[8]float64)

//go:noescape
func lnBackOutGammaAVX2(out, gr, x, gamma *float32, n int, c0, c1, c2, m float32)

// lnAffineSIMD sets y[i] = ((x[i]-m)·s)·gamma[i] + beta[i] for the first
// len(y)&^7 elements and returns how many it set.
func lnAffineSIMD(y, x, gamma, beta []float32, m, s float32) int {
	n := len(y) &^ 7
	if n > 0 {
		lnAffineAVX2(&y[0], &x[:n][0], &gamma[:n][0], &beta[:n][0], n, m, s)
	}
	return n
}

// lnModAffineSIMD is lnModSIMD with u = ((x[i]-m)·s)·gamma[i] + beta[i].
func lnModAffineSIMD(y, x, gamma, beta, shift, scale []float32, m, s float32) int {
	n := len(y) &^ 7
	if n > 0 {
		lnModAffineAVX2(&y[0], &x[:n][0], &gamma[:n][0], &beta[:n][0], &shift[:n][0], &scale[:n][0], n, m, s)
	}
	return n
}

// lnParamGradSIMD adds g·((x[i]-mu)·rs) to dg[i] and g to db[i], g =
// gr[i], for the first len(gr)&^3 elements and returns how many it took.
func lnParamGradSIMD(gr, x []float32, dg, db []float64, mu, rs float64) int {
	n := len(gr) &^ 3
	if n > 0 {
		lnParamGradAVX2(&gr[0], &x[:n][0], &dg[:n][0], &db[:n][0], n, mu, rs)
	}
	return n
}

// lnBackSums4GammaSIMD is lnBackSums4SIMD with g = gr[i]·gamma[i].
func lnBackSums4GammaSIMD(gr, x, gamma []float32, mu float64, acc *[8]float64) int {
	n := len(gr) &^ 3
	if n > 0 {
		lnBackSums4GammaAVX2(&gr[0], &x[:n][0], &gamma[:n][0], n, mu, acc)
	}
	return n
}

// lnBackOutGammaSIMD sets dx[i] = ((c0·gr[i])·gamma[i] - c1) -
// (x[i]-m)·c2 for the first len(dx)&^7 elements and returns how many it
// set.
func lnBackOutGammaSIMD(dx, gr, x, gamma []float32, c0, c1, c2, m float32) int {
	n := len(dx) &^ 7
	if n > 0 {
		lnBackOutGammaAVX2(&dx[0], &gr[:n][0], &x[:n][0], &gamma[:n][0], n, c0, c1, c2, m)
	}
	return n
}

//go:noescape
func mulAcc64AVX2(acc *float64, a, b *float32, n int)

//go:noescape
func adamWAVX2(p, grad, m, v *float32, n int, c *[8]float64)

// adamW32SIMD runs adamWRange's update on the first len(p)&^3 elements of
// the contiguous float32 slices p, g, m and v (of one length) with the
// constants c (see adamWAVX2), with its bits, and returns how many it
// updated.
func adamW32SIMD(p, g, m, v []float32, c *[8]float64) int {
	n := len(p) &^ 3
	if n > 0 {
		adamWAVX2(&p[0], &g[:n][0], &m[:n][0], &v[:n][0], n, c)
	}
	return n
}

//go:noescape
func colAcc64AVX2(acc *float64, x *float32, ld, rows, n int)

// colAcc64SIMD adds rows rows of x (row r at x[r*ld:]), as float64, to the
// first len(acc)&^3 elements of acc, row after row (each acc[i] with the
// bits of the scalar loop), and returns how many elements it took.
func colAcc64SIMD(acc []float64, x []float32, ld, rows int) int {
	n := len(acc) &^ 3
	if n > 0 && rows > 0 {
		_ = x[(rows-1)*ld+n-1]
		colAcc64AVX2(&acc[0], &x[0], ld, rows, n)
	}
	return n
}

// mulAcc64SIMD adds float64(a[i]·b[i]) (the product rounded to float32)
// to acc[i] for the first len(acc)&^3 elements and returns how many it
// took.
func mulAcc64SIMD(acc []float64, a, b []float32) int {
	n := len(acc) &^ 3
	if n > 0 {
		mulAcc64AVX2(&acc[0], &a[:n][0], &b[:n][0], n)
	}
	return n
}
