package gemm

import "unsafe"

// The portable Go micro-kernels. They are compiled on every platform so
// that tests can compare them with the assembly ones.

var (
	sGo = &kernel[float32]{
		name: "go", mr: 2, nr: 4, mc: 128, kc: 256, nc: 4096, small: 16 * 16 * 16,
		fn: goKernel2x4[float32],
	}
	dGo = &kernel[float64]{
		name: "go", mr: 2, nr: 4, mc: 128, kc: 256, nc: 4096, small: 16 * 16 * 16,
		fn: goKernel2x4[float64],
	}
)

// goKernel2x4 computes C = alpha*A*B + beta*C for one 2x4 tile from packed
// panels a (kc x 2: column p at a[2p:2p+2]) and b (kc x 4: row p at
// b[4p:4p+4]); C[i][j] is c[i*ldc+j]. beta == 0 writes C without reading
// it; a non-nil bias gives C = alpha*A*B + bias, C not read. The tile is small so that its 8 accumulators and the 6 values loaded
// per step stay in the 15 float registers Go allocates on amd64. Every
// product is rounded before it is added, in every build (the conversions
// keep a compiler from fusing them, as GOAMD64=v3 otherwise does).
func goKernel2x4[T scalar](kc int, a, b, c *T, ldc int, alpha, beta T, bias *T) {
	ap := unsafe.Slice(a, 2*kc)
	bp := unsafe.Slice(b, 4*kc)
	var c00, c01, c02, c03 T
	var c10, c11, c12, c13 T
	for len(ap) >= 4 && len(bp) >= 8 { // two steps of p per iteration
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		a0, a1 := ap[0], ap[1]
		c00 += T(a0 * b0)
		c01 += T(a0 * b1)
		c02 += T(a0 * b2)
		c03 += T(a0 * b3)
		c10 += T(a1 * b0)
		c11 += T(a1 * b1)
		c12 += T(a1 * b2)
		c13 += T(a1 * b3)
		b0, b1, b2, b3 = bp[4], bp[5], bp[6], bp[7]
		a0, a1 = ap[2], ap[3]
		c00 += T(a0 * b0)
		c01 += T(a0 * b1)
		c02 += T(a0 * b2)
		c03 += T(a0 * b3)
		c10 += T(a1 * b0)
		c11 += T(a1 * b1)
		c12 += T(a1 * b2)
		c13 += T(a1 * b3)
		ap, bp = ap[4:], bp[8:]
	}
	if len(ap) >= 2 && len(bp) >= 4 { // odd kc
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		a0, a1 := ap[0], ap[1]
		c00 += T(a0 * b0)
		c01 += T(a0 * b1)
		c02 += T(a0 * b2)
		c03 += T(a0 * b3)
		c10 += T(a1 * b0)
		c11 += T(a1 * b1)
		c12 += T(a1 * b2)
		c13 += T(a1 * b3)
	}
	cs := unsafe.Slice(c, ldc+4)
	if bias != nil {
		bs := unsafe.Slice(bias, 4)
		storeBias4(cs[0:4:4], alpha, bs, c00, c01, c02, c03)
		storeBias4(cs[ldc:ldc+4:ldc+4], alpha, bs, c10, c11, c12, c13)
		return
	}
	store4(cs[0:4:4], alpha, beta, c00, c01, c02, c03)
	store4(cs[ldc:ldc+4:ldc+4], alpha, beta, c10, c11, c12, c13)
}

// storeBias4 writes row = alpha*(x0..x3) + bias, the operations of store4
// with beta = 1 on a row holding the bias.
func storeBias4[T scalar](row []T, alpha T, bias []T, x0, x1, x2, x3 T) {
	row, bias = row[:4:4], bias[:4:4]
	row[0] = T(alpha*x0) + bias[0]
	row[1] = T(alpha*x1) + bias[1]
	row[2] = T(alpha*x2) + bias[2]
	row[3] = T(alpha*x3) + bias[3]
}

// store4 writes row = alpha*(x0..x3) + beta*row, not reading row when beta == 0.
func store4[T scalar](row []T, alpha, beta, x0, x1, x2, x3 T) {
	row = row[:4:4]
	if beta == 0 {
		row[0] = alpha * x0
		row[1] = alpha * x1
		row[2] = alpha * x2
		row[3] = alpha * x3
		return
	}
	row[0] = T(alpha*x0) + T(beta*row[0])
	row[1] = T(alpha*x1) + T(beta*row[1])
	row[2] = T(alpha*x2) + T(beta*row[2])
	row[3] = T(alpha*x3) + T(beta*row[3])
}
