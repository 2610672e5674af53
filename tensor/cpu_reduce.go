package tensor

import "math"

// Reductions run over two loops: j.l iterates the output positions
// (operands dst and a, a's strides on the kept axes) and j.l2 iterates the
// reduced positions (a's strides on the reduced axes). Partial sums are in
// float64.

// setupReduce prepares j.l and j.l2 for reducing a into dst, where dstStr[i]
// is dst's stride for a's axis i and red[i] marks reduced axes.
func setupReduce(j *job, dst, a *Tensor, dstStr *[maxDims]int, red *[maxDims]bool) {
	r := len(a.shape)
	var outShape, redShape [maxDims]int
	var s1, s2 [4][maxDims]int
	for i := range r {
		if red[i] {
			outShape[i], redShape[i] = 1, a.shape[i]
			s2[0][i] = a.strides[i]
		} else {
			outShape[i], redShape[i] = a.shape[i], 1
			s1[0][i], s1[1][i] = dstStr[i], a.strides[i]
		}
	}
	j.l.setupStrides(outShape[:r], 2, &s1, [4]int{dst.offset, a.offset})
	j.l2.setupStrides(redShape[:r], 1, &s2, [4]int{})
}

func checkRank(op string, t *Tensor) {
	if len(t.shape) > maxDims {
		fail(ErrShape, op, "rank %d of shape %v exceeds %d", len(t.shape), t.shape, maxDims)
	}
}

func (cpuBackend) Reduce(op ReduceOp, dst, a *Tensor, axis int) {
	checkRank("Reduce", a)
	var dstStr [maxDims]int
	var red [maxDims]bool
	keep := len(dst.shape) == len(a.shape)
	for i := range a.shape {
		switch {
		case i == axis:
			red[i] = true
		case keep || i < axis:
			dstStr[i] = dst.strides[i]
		default:
			dstStr[i] = dst.strides[i-1]
		}
	}
	cpuReduce(op, dst, a, &dstStr, &red)
}

func (cpuBackend) SumTo(dst, a *Tensor) {
	checkRank("SumTo", a)
	var dstStr [maxDims]int
	var red [maxDims]bool
	off := len(a.shape) - len(dst.shape)
	for i := range a.shape {
		k := i - off
		if k < 0 || (dst.shape[k] == 1 && a.shape[i] != 1) {
			red[i] = true
		} else if k >= 0 {
			dstStr[i] = dst.strides[k]
		}
	}
	cpuReduce(ReduceSum, dst, a, &dstStr, &red)
}

func cpuReduce(op ReduceOp, dst, a *Tensor, dstStr *[maxDims]int, red *[maxDims]bool) {
	j := getJob(nil)
	j.t[0], j.t[1] = dst, a
	j.op = uint8(op)
	setupReduce(j, dst, a, dstStr, red)
	nOut, nRed := j.l.size, j.l2.size
	if (op == ReduceSum || op == ReduceMean) && nOut <= 4096 && nRed >= 256 && nOut*nRed >= 4*parallelGrain {
		// Few outputs, long reductions: split the reduced range into chunks
		// with per-chunk partial sums, combined in chunk order.
		_, nch := chunking(nRed, max(64, parallelGrain/nOut))
		p := getScratch(nch * nOut)
		j.s64 = *p
		j.n[0] = nOut
		j.fn = pick(dst.dtype, reduceSplitRange[float32], reduceSplitRange[float64])
		nch = j.run(nRed, max(64, parallelGrain/nOut))
		part := *p
		for c := 1; c < nch; c++ {
			pc := part[c*nOut : (c+1)*nOut]
			for i := range pc {
				part[i] += pc[i]
			}
		}
		if op == ReduceMean {
			inv := 1 / float64(nRed)
			for i := range part[:nOut] {
				part[i] *= inv
			}
		}
		if dst.dtype == Float32 {
			scatterOut[float32](j, part[:nOut])
		} else {
			scatterOut[float64](j, part[:nOut])
		}
		putScratch(p)
		putJob(j)
		return
	}
	j.fn = pick(dst.dtype, reduceRange[float32], reduceRange[float64])
	grain := max(1, parallelGrain/max(nRed, 1))
	if !(j.l2.nd == 1 && j.l2.str[0][0] == 1) {
		grain = max(grain, 64) // column blocks: keep cache lines whole
	}
	j.run(nOut, grain)
	putJob(j)
}

// scatterOut writes the output values v (in output order) to dst through j.l.
func scatterOut[T float](j *job, v []float64) {
	d := data[T](j.t[0])
	l := &j.l
	var c cursor
	l.seek(&c, 0)
	in := l.nd - 1
	sd := l.str[0][in]
	for pos := 0; pos < l.size; {
		n := l.dims[in] - c.idx[in]
		for i := range n {
			d[c.off[0]+i*sd] = T(v[pos+i])
		}
		pos += n
		if pos < l.size {
			l.advance(&c, n)
		}
	}
}

// reduceSplitRange sums the reduced positions [lo, hi) of every output into
// the chunk's row of partial sums j.s64.
func reduceSplitRange[T float](j *job, lo, hi int) {
	a := data[T](j.t[1])
	l, l2 := &j.l, &j.l2
	nOut := j.n[0]
	part := j.s64[(lo/j.chunk)*nOut : (lo/j.chunk+1)*nOut]
	rowMode := l2.nd == 1 && l2.str[0][0] == 1
	var c cursor
	l.seek(&c, 0)
	in := l.nd - 1
	sa := l.str[1][in]
	var aux [blk]float64
	for pos := 0; pos < l.size; {
		n := l.dims[in] - c.idx[in]
		oa := c.off[1]
		if rowMode {
			for i := range n {
				b := oa + i*sa
				part[pos+i] = sumVec(a[b+lo : b+hi])
			}
		} else {
			for s := 0; s < n; s += blk {
				m := min(blk, n-s)
				reduceBlock(ReduceSum, part[pos+s:pos+s+m], aux[:m], a, oa+s*sa, sa, l2, lo, hi)
			}
		}
		pos += n
		if pos < l.size {
			l.advance(&c, n)
		}
	}
}

// reduceRange reduces the outputs [lo, hi).
func reduceRange[T float](j *job, lo, hi int) {
	d, a := data[T](j.t[0]), data[T](j.t[1])
	op := ReduceOp(j.op)
	l, l2 := &j.l, &j.l2
	rowMode := l2.nd == 1 && l2.str[0][0] == 1
	K := l2.size
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	sd, sa := l.str[0][in], l.str[1][in]
	var acc, aux [blk]float64
	for pos := lo; pos < hi; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		od, oa := c.off[0], c.off[1]
		if rowMode {
			for i := range n {
				row := a[oa+i*sa : oa+i*sa+K]
				d[od+i*sd] = T(reduceRow(op, row))
			}
		} else {
			for s := 0; s < n; s += blk {
				m := min(blk, n-s)
				reduceBlock(op, acc[:m], aux[:m], a, oa+s*sa, sa, l2, 0, K)
				if op == ReduceMean {
					inv := 1 / float64(K)
					for i := range m {
						acc[i] *= inv
					}
				}
				for i := range m {
					d[od+(s+i)*sd] = T(acc[i])
				}
			}
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
}

// reduceRow reduces a contiguous row.
func reduceRow[T float](op ReduceOp, x []T) float64 {
	switch op {
	case ReduceSum:
		return sumVec(x)
	case ReduceMean:
		return sumVec(x) / float64(len(x))
	case ReduceMax:
		return float64(maxVec(x))
	case ReduceLogSumExp:
		m := maxVec(x)
		if math.IsInf(float64(m), 0) || m != m {
			return float64(m)
		}
		return float64(m) + math.Log(sumExpShifted(x, m))
	}
	panic("tensor: unknown reduction " + op.String())
}

// sumExpShifted returns Σ exp(x - m) in float64.
func sumExpShifted[T float](x []T, m T) float64 {
	if is32[T]() {
		return sumExpSub32(f32s(x), float32(m))
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(float64(v - m))
	}
	return s
}

// sumVec returns Σ x in float64 with four accumulators.
func sumVec[T float](x []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	if is32[T]() && useSIMD {
		var acc [4]float64
		i = sum4SIMD(f32s(x), &acc)
		s0, s1, s2, s3 = acc[0], acc[1], acc[2], acc[3]
	}
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		s0 += float64(v[0])
		s1 += float64(v[1])
		s2 += float64(v[2])
		s3 += float64(v[3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// maxVec returns max x ignoring NaNs (NaN if all are NaN, -Inf if empty).
func maxVec[T float](x []T) T {
	m := T(math.Inf(-1))
	nan := len(x) > 0
	for _, v := range x {
		if v > m {
			m = v
		}
		if v == v {
			nan = false
		}
	}
	if nan {
		return T(math.NaN())
	}
	return m
}

// reduceBlock reduces len(acc) outputs, whose reduced elements are
// a[base + i·sa + r] for the offsets r of the reduced positions [rlo, rhi)
// of l2, into acc (aux is scratch of the same length). Mean is left as a
// sum.
func reduceBlock[T float](op ReduceOp, acc, aux []float64, a []T, base, sa int, l2 *loop, rlo, rhi int) {
	m := len(acc)
	aux = aux[:m]
	in := l2.nd - 1
	rs := l2.str[0][in]
	var c cursor
	switch op {
	case ReduceSum, ReduceMean:
		clear(acc)
		l2.seek(&c, rlo)
		for pos := rlo; pos < rhi; {
			n := min(l2.dims[in]-c.idx[in], rhi-pos)
			b0 := base + c.off[0]
			switch {
			case sa == 1:
				i0 := 0
				if is32[T]() && useSIMD && n > 0 {
					// Column blocks held in registers over the run of rows,
					// each sum in row order as below.
					i0 = colAcc64SIMD(acc, f32s(a[b0:]), rs, n)
				}
				if i0 < m {
					for r := range n {
						row := a[b0+r*rs+i0 : b0+r*rs+m]
						for i, v := range row {
							acc[i0+i] += float64(v)
						}
					}
				}
			default:
				for r := range n {
					b := b0 + r*rs
					for i := range acc {
						acc[i] += float64(a[b+i*sa])
					}
				}
			}
			pos += n
			if pos < rhi {
				l2.advance(&c, n)
			}
		}
	case ReduceMax, ReduceLogSumExp:
		// Pass 1: maximum, counting non-NaN elements in aux.
		for i := range acc {
			acc[i] = math.Inf(-1)
		}
		clear(aux)
		l2.seek(&c, rlo)
		for pos := rlo; pos < rhi; {
			n := min(l2.dims[in]-c.idx[in], rhi-pos)
			for r := range n {
				b := base + c.off[0] + r*rs
				for i := range acc {
					v := float64(a[b+i*sa])
					if v > acc[i] {
						acc[i] = v
					}
					if v == v {
						aux[i] = 1
					}
				}
			}
			pos += n
			if pos < rhi {
				l2.advance(&c, n)
			}
		}
		for i := range acc {
			if aux[i] == 0 && rhi > rlo {
				acc[i] = math.NaN()
			}
		}
		if op == ReduceMax {
			return
		}
		// Pass 2: Σ exp(x - max) into aux.
		clear(aux)
		l2.seek(&c, rlo)
		for pos := rlo; pos < rhi; {
			n := min(l2.dims[in]-c.idx[in], rhi-pos)
			for r := range n {
				b := base + c.off[0] + r*rs
				for i := range acc {
					if mx := acc[i]; !math.IsInf(mx, 0) && mx == mx {
						aux[i] += math.Exp(float64(a[b+i*sa]) - mx)
					}
				}
			}
			pos += n
			if pos < rhi {
				l2.advance(&c, n)
			}
		}
		for i := range acc {
			if mx := acc[i]; !math.IsInf(mx, 0) && mx == mx {
				acc[i] = mx + math.Log(aux[i])
			}
		}
	default:
		panic("tensor: unknown reduction " + op.String())
	}
}

func (cpuBackend) ReduceAll(op ReduceOp, a *Tensor) float64 {
	if a.Size() == 0 {
		return 0
	}
	j := getJob(pick(a.dtype, reduceAllRange[float32], reduceAllRange[float64]))
	j.t[0] = a
	j.op = uint8(op)
	j.l.setup(a.shape, a)
	nc := j.run(j.l.size, parallelGrain)
	r := j.part[0]
	for c := 1; c < nc; c++ {
		if op == ReduceMaxAbs {
			r = max(r, j.part[c])
		} else {
			r += j.part[c]
		}
	}
	putJob(j)
	return r
}

func (cpuBackend) NonFinite(flag, a *Tensor) {
	j := getJob(pick(a.dtype, nonFiniteRange[float32], nonFiniteRange[float64]))
	j.t[0] = a
	j.l.setup(a.shape, a)
	nc := j.run(j.l.size, parallelGrain)
	bad := false
	for c := range nc {
		bad = bad || j.part[c] != 0
	}
	putJob(j)
	if bad {
		CPU.Fill(flag, 1)
	}
}

// nonFiniteRange sets the chunk's partial result to 1 if it holds a NaN or
// an infinity, else 0.
func nonFiniteRange[T float](j *job, lo, hi int) {
	a := data[T](j.t[0])
	l := &j.l
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	sa := l.str[0][in]
	r := 0.0
	for pos := lo; pos < hi && r == 0; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		oa := c.off[0]
		for i := range n {
			// x - x is 0 for finite x and NaN for NaN and ±Inf.
			if x := a[oa+i*sa]; x-x != 0 {
				r = 1
				break
			}
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
	j.part[lo/j.chunk] = r
}

func reduceAllRange[T float](j *job, lo, hi int) {
	a := data[T](j.t[0])
	op := ReduceOp(j.op)
	l := &j.l
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	sa := l.str[0][in]
	r := 0.0
	for pos := lo; pos < hi; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		oa := c.off[0]
		switch {
		case op == ReduceSum && sa == 1:
			r += sumVec(a[oa : oa+n])
		case op == ReduceSumSquares && sa == 1:
			r += sumSquares(a[oa : oa+n])
		default:
			for i := range n {
				v := float64(a[oa+i*sa])
				switch op {
				case ReduceSum:
					r += v
				case ReduceSumSquares:
					r += v * v
				case ReduceMaxAbs:
					r = max(r, math.Abs(v))
				}
			}
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
	j.part[lo/j.chunk] = r
}

func sumSquares[T float](x []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		a, b, c, d := float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		v := float64(x[i])
		s0 += v * v
	}
	return (s0 + s1) + (s2 + s3)
}

func (cpuBackend) Argmax(out []int32, a *Tensor, axis int) {
	checkRank("Argmax", a)
	j := getJob(pick(a.dtype, argmaxRange[float32], argmaxRange[float64]))
	var dstStr [maxDims]int
	var red [maxDims]bool
	red[axis] = true
	// Output positions are numbered row-major: give dst contiguous strides.
	n := 1
	for i := len(a.shape) - 1; i >= 0; i-- {
		if i != axis {
			dstStr[i] = n
			n *= a.shape[i]
		}
	}
	j.t[0] = a
	j.idx = out
	setupReduce(j, &Tensor{}, a, &dstStr, &red)
	j.runRows(j.l.size, j.l2.size)
	putJob(j)
}

func argmaxRange[T float](j *job, lo, hi int) {
	a := data[T](j.t[0])
	out := j.idx
	l, l2 := &j.l, &j.l2
	K, ka := l2.size, l2.str[0][l2.nd-1]
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	for pos := lo; pos < hi; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		for i := range n {
			b := c.off[1] + i*l.str[1][in]
			best, bi := a[b], 0
			for k := 1; k < K; k++ {
				if v := a[b+k*ka]; v > best || (best != best && v == v) {
					best, bi = v, k
				}
			}
			out[c.off[0]+i*l.str[0][in]] = int32(bi)
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
}

func (cpuBackend) Softmax(dst, a *Tensor, axis int, log bool) {
	checkRank("Softmax", a)
	j := getJob(pick(a.dtype, softmaxRange[float32], softmaxRange[float64]))
	var dstStr [maxDims]int
	var red [maxDims]bool
	red[axis] = true
	copy(dstStr[:], dst.strides)
	j.t[0], j.t[1] = dst, a
	j.b[0] = log
	j.n[0], j.n[1] = dst.strides[axis], a.strides[axis]
	setupReduce(j, dst, a, &dstStr, &red)
	j.runRows(j.l.size, 4*a.shape[axis])
	putJob(j)
}

func softmaxRange[T float](j *job, lo, hi int) {
	d, a := data[T](j.t[0]), data[T](j.t[1])
	log := j.b[0]
	kd, ka := j.n[0], j.n[1]
	l := &j.l
	K := j.l2.size
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	for pos := lo; pos < hi; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		for i := range n {
			od, oa := c.off[0]+i*l.str[0][in], c.off[1]+i*l.str[1][in]
			if kd == 1 && ka == 1 {
				softmaxRow(d[od:od+K], a[oa:oa+K], log)
			} else {
				softmaxStrided(d[od:], a[oa:], K, kd, ka, log)
			}
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
}

// softmaxRow sets d = softmax(x) (or log-softmax); d may be x. A row with
// no finite maximum (all -Inf, or empty) becomes NaN; a NaN element makes
// the row NaN.
func softmaxRow[T float](d, x []T, log bool) {
	x = x[:len(d)]
	m := maxVec(x)
	if math.IsInf(float64(m), -1) || m != m {
		for i := range d {
			d[i] = T(math.NaN())
		}
		return
	}
	if log {
		lse := m + T(math.Log(sumExpShifted(x, m)))
		for i := range d {
			d[i] = x[i] - lse
		}
		return
	}
	inv := T(1 / expSub(d, x, m))
	for i := range d {
		d[i] *= inv
	}
}

// expSub sets d[i] = exp(x[i] - m) for m >= max x and returns Σ d[i]
// (accumulated in float64). d may be x.
func expSub[T float](d, x []T, m T) float64 {
	x = x[:len(d)]
	if is32[T]() {
		// -Inf (masked) entries give 0; NaN propagates.
		return expSubVec32(f32s(d), f32s(x), float32(m))
	}
	s := 0.0
	for i := range d {
		v := math.Exp(float64(x[i] - m))
		d[i] = T(v)
		s += v
	}
	return s
}

func softmaxStrided[T float](d, x []T, K, kd, ka int, log bool) {
	m := T(math.Inf(-1))
	for k := range K {
		if v := x[k*ka]; v > m {
			m = v
		}
	}
	if math.IsInf(float64(m), -1) {
		for k := range K {
			d[k*kd] = T(math.NaN())
		}
		return
	}
	s := 0.0
	for k := range K {
		s += math.Exp(float64(x[k*ka] - m))
	}
	if log {
		lse := m + T(math.Log(s))
		for k := range K {
			d[k*kd] = x[k*ka] - lse
		}
		return
	}
	inv := 1 / s
	for k := range K {
		d[k*kd] = T(math.Exp(float64(x[k*ka]-m)) * inv)
	}
}
