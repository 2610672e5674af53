package tensor

import "math"

// blk is the block length of the gather/compute/scatter path for strided
// operands.
const blk = 256

// unaryGrain returns the parallel grain of a unary op: expensive functions
// split into smaller chunks.
func unaryGrain(op UnaryOp) int {
	switch op {
	case UnaryNeg, UnarySquare, UnaryAbs, UnaryReLU, UnaryAffine, UnaryClamp:
		return elementGrain
	}
	return parallelGrain / 8
}

func (cpuBackend) Unary(op UnaryOp, dst, a *Tensor, p0, p1 float64) {
	j := getJob(pick(dst.dtype, unaryRange[float32], unaryRange[float64]))
	j.t[0], j.t[1] = dst, a
	j.op = uint8(op)
	j.f[0], j.f[1] = p0, p1
	j.l.setup(dst.shape, dst, a)
	j.run(j.l.size, unaryGrain(op))
	putJob(j)
}

func unaryRange[T float](j *job, lo, hi int) {
	d, a := data[T](j.t[0]), data[T](j.t[1])
	op, p0, p1 := UnaryOp(j.op), j.f[0], j.f[1]
	l := &j.l
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	sd, sa := l.str[0][in], l.str[1][in]
	var bd, ba [blk]T
	for pos := lo; pos < hi; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		od, oa := c.off[0], c.off[1]
		if sd == 1 && sa == 1 {
			unaryVec(op, d[od:od+n], a[oa:oa+n], p0, p1)
		} else {
			for s := 0; s < n; s += blk {
				m := min(blk, n-s)
				for i := range m {
					ba[i] = a[oa+(s+i)*sa]
				}
				unaryVec(op, bd[:m], ba[:m], p0, p1)
				for i := range m {
					d[od+(s+i)*sd] = bd[i]
				}
			}
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
}

// reluVec sets d[i] = a[i] where a[i] > 0, else 0.
func reluVec[T float](d, a []T) {
	if useSIMD && is32[T]() {
		reluVec32SIMD(f32s(d), f32s(a))
		return
	}
	for i := range d {
		if x := a[i]; x > 0 {
			d[i] = x
		} else {
			d[i] = 0
		}
	}
}

// unaryVec sets d[i] = op(a[i]); d and a have equal length and may be the
// same slice.
func unaryVec[T float](op UnaryOp, d, a []T, p0, p1 float64) {
	a = a[:len(d)]
	switch op {
	case UnaryNeg:
		for i := range d {
			d[i] = -a[i]
		}
	case UnaryExp:
		expVec(d, a)
	case UnaryLog:
		for i := range d {
			d[i] = T(math.Log(float64(a[i])))
		}
	case UnarySqrt:
		for i := range d {
			d[i] = T(math.Sqrt(float64(a[i])))
		}
	case UnaryRsqrt:
		for i := range d {
			d[i] = T(1 / math.Sqrt(float64(a[i])))
		}
	case UnarySquare:
		for i := range d {
			d[i] = a[i] * a[i]
		}
	case UnaryAbs:
		for i := range d {
			d[i] = T(math.Abs(float64(a[i])))
		}
	case UnaryTanh:
		if is32[T]() {
			tanhVec32(f32s(d), f32s(a))
			return
		}
		for i := range d {
			d[i] = tanhT(a[i])
		}
	case UnarySigmoid:
		if is32[T]() {
			sigmoidVec32(f32s(d), f32s(a))
			return
		}
		for i := range d {
			d[i] = sigmoidT(a[i])
		}
	case UnaryReLU:
		reluVec(d, a)
	case UnaryGELU:
		if is32[T]() {
			geluVec32(f32s(d), f32s(a))
			return
		}
		for i := range d {
			d[i] = geluT(a[i])
		}
	case UnarySiLU:
		if is32[T]() {
			siluVec32(f32s(d), f32s(a))
			return
		}
		for i := range d {
			x := a[i]
			d[i] = x * sigmoidT(x)
		}
	case UnaryAffine:
		s, b := T(p0), T(p1)
		switch {
		case s == 1:
			for i := range d {
				d[i] = a[i] + b
			}
		case b == 0:
			for i := range d {
				d[i] = s * a[i]
			}
		default:
			for i := range d {
				d[i] = s*a[i] + b
			}
		}
	case UnaryClamp:
		lo, hi := T(p0), T(p1)
		for i := range d {
			x := a[i]
			if x < lo {
				x = lo
			}
			if x > hi {
				x = hi
			}
			d[i] = x
		}
	case UnaryPow:
		switch p0 {
		case 2:
			for i := range d {
				d[i] = a[i] * a[i]
			}
		case 0.5:
			for i := range d {
				d[i] = T(math.Sqrt(float64(a[i])))
			}
		default:
			for i := range d {
				d[i] = T(math.Pow(float64(a[i]), p0))
			}
		}
	default:
		panic("tensor: unknown unary op " + op.String())
	}
}

// binaryGrain is unaryGrain for binary ops.
func binaryGrain(op BinaryOp) int {
	switch op {
	case BinaryGELUGrad, BinarySiLUGrad:
		return parallelGrain / 8
	}
	return elementGrain
}

func (cpuBackend) Binary(op BinaryOp, dst, a, b *Tensor, alpha float64) {
	j := getJob(pick(dst.dtype, binaryRange[float32], binaryRange[float64]))
	j.t[0], j.t[1], j.t[2] = dst, a, b
	j.op = uint8(op)
	j.f[0] = alpha
	j.l.setup(dst.shape, dst, a, b)
	j.run(j.l.size, binaryGrain(op))
	putJob(j)
}

func binaryRange[T float](j *job, lo, hi int) {
	d, a, b := data[T](j.t[0]), data[T](j.t[1]), data[T](j.t[2])
	op, alpha := BinaryOp(j.op), T(j.f[0])
	l := &j.l
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	sd, sa, sb := l.str[0][in], l.str[1][in], l.str[2][in]
	for pos := lo; pos < hi; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		od, oa, ob := c.off[0], c.off[1], c.off[2]
		switch {
		case sd == 1 && sa == 1 && sb == 1:
			binaryVec(op, d[od:od+n], a[oa:oa+n], b[ob:ob+n], alpha)
		case sd == 1 && sa == 1 && sb == 0 && binaryVecScalar(op, d[od:od+n], a[oa:oa+n], b[ob], alpha):
		default:
			binaryStrided(op, d[od:], a[oa:], b[ob:], n, sd, sa, sb, alpha)
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
}

// binaryStrided gathers strided operands into blocks, computes, and
// scatters the result.
func binaryStrided[T float](op BinaryOp, d, a, b []T, n, sd, sa, sb int, alpha T) {
	var bd, ba, bb [blk]T
	for s := 0; s < n; s += blk {
		m := min(blk, n-s)
		for i := range m {
			ba[i] = a[(s+i)*sa]
		}
		for i := range m {
			bb[i] = b[(s+i)*sb]
		}
		if sd == 1 {
			binaryVec(op, d[s:s+m], ba[:m], bb[:m], alpha)
			continue
		}
		binaryVec(op, bd[:m], ba[:m], bb[:m], alpha)
		for i := range m {
			d[(s+i)*sd] = bd[i]
		}
	}
}

// binaryVecScalar handles the per-row-scalar broadcast d = op(a, y) for the
// common ops and reports whether it did.
func binaryVecScalar[T float](op BinaryOp, d, a []T, y, alpha T) bool {
	if useSIMD && len(d) >= 8 && is32[T]() {
		switch op {
		case BinaryMul:
			scaleVec32SIMD(f32s(d), f32s(a), float32(y))
			return true
		case BinaryAdd:
			addScalarVec32SIMD(f32s(d), f32s(a), float32(y))
			return true
		}
	}
	a = a[:len(d)]
	switch op {
	case BinaryAdd:
		for i := range d {
			d[i] = a[i] + y
		}
	case BinarySub:
		for i := range d {
			d[i] = a[i] - y
		}
	case BinaryMul:
		for i := range d {
			d[i] = a[i] * y
		}
	case BinaryDiv:
		for i := range d {
			d[i] = a[i] / y
		}
	case BinaryAddScaled:
		y *= alpha
		for i := range d {
			d[i] = a[i] + y
		}
	default:
		return false
	}
	return true
}

// binaryVec sets d[i] = op(a[i], b[i]); the slices have equal length and d
// may be a or b.
func binaryVec[T float](op BinaryOp, d, a, b []T, alpha T) {
	if useSIMD && len(d) >= 8 && is32[T]() && arithVec32SIMD(op, f32s(d), f32s(a), f32s(b), float32(alpha)) {
		return
	}
	a, b = a[:len(d)], b[:len(d)]
	switch op {
	case BinaryAdd:
		for i := range d {
			d[i] = a[i] + b[i]
		}
	case BinarySub:
		for i := range d {
			d[i] = a[i] - b[i]
		}
	case BinaryMul:
		for i := range d {
			d[i] = a[i] * b[i]
		}
	case BinaryDiv:
		for i := range d {
			d[i] = a[i] / b[i]
		}
	case BinaryMax:
		for i := range d {
			x, y := a[i], b[i]
			if x != x || y != y {
				d[i] = x + y // NaN
			} else if x > y {
				d[i] = x
			} else {
				d[i] = y
			}
		}
	case BinaryMin:
		for i := range d {
			x, y := a[i], b[i]
			if x != x || y != y {
				d[i] = x + y
			} else if x < y {
				d[i] = x
			} else {
				d[i] = y
			}
		}
	case BinaryAddScaled:
		for i := range d {
			d[i] = a[i] + T(alpha*b[i]) // two roundings, as the vector kernel, in every build
		}
	case BinaryReLUGrad:
		if useSIMD && is32[T]() {
			reluGradVec32SIMD(f32s(d), f32s(a), f32s(b))
			return
		}
		for i := range d {
			if a[i] > 0 {
				d[i] = b[i]
			} else {
				d[i] = 0
			}
		}
	case BinaryGELUGrad:
		if is32[T]() {
			geluGradVec32(f32s(d), f32s(a), f32s(b))
			return
		}
		for i := range d {
			d[i] = b[i] * geluGradT(a[i])
		}
	case BinarySiLUGrad:
		if is32[T]() {
			siluGradVec32(f32s(d), f32s(a), f32s(b))
			return
		}
		for i := range d {
			x := a[i]
			s := sigmoidT(x)
			d[i] = b[i] * s * (1 + x*(1-s))
		}
	case BinarySigmoidGradY:
		for i := range d {
			y := a[i]
			d[i] = b[i] * y * (1 - y)
		}
	case BinaryTanhGradY:
		for i := range d {
			y := a[i]
			d[i] = b[i] * (1 - y*y)
		}
	case BinaryLerp:
		for i := range d {
			x := a[i]
			d[i] = x + alpha*(b[i]-x)
		}
	default:
		panic("tensor: unknown binary op " + op.String())
	}
}

func (cpuBackend) Where(dst, cond, a, b *Tensor) {
	j := getJob(pick(dst.dtype, whereRange[float32], whereRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3] = dst, cond, a, b
	j.b[0] = false
	j.l.setup(dst.shape, dst, cond, a, b)
	j.run(j.l.size, elementGrain)
	putJob(j)
}

func (cpuBackend) MaskedFill(dst, a, mask *Tensor, v float64) {
	j := getJob(pick(dst.dtype, whereRange[float32], whereRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3] = dst, mask, nil, a
	j.b[0] = true
	j.f[0] = v
	j.l.setup(dst.shape, dst, mask, nil, a)
	j.run(j.l.size, elementGrain)
	putJob(j)
}

// whereRange computes dst = cond ? a : b; with j.b[0] set, a is the scalar
// j.f[0] (MaskedFill).
func whereRange[T float](j *job, lo, hi int) {
	d, cnd, b := data[T](j.t[0]), data[T](j.t[1]), data[T](j.t[3])
	var a []T
	scalar := j.b[0]
	v := T(j.f[0])
	if !scalar {
		a = data[T](j.t[2])
	}
	l := &j.l
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	sd, sc, sa, sb := l.str[0][in], l.str[1][in], l.str[2][in], l.str[3][in]
	for pos := lo; pos < hi; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		od, oc, oa, ob := c.off[0], c.off[1], c.off[2], c.off[3]
		for i := range n {
			var x T
			if cnd[oc+i*sc] != 0 {
				if scalar {
					x = v
				} else {
					x = a[oa+i*sa]
				}
			} else {
				x = b[ob+i*sb]
			}
			d[od+i*sd] = x
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
}
