package tensor

import (
	"unsafe"
)

// CPU implementations of the diffusion transformer's fused ops
// (fused_dit.go). The elementwise fusions round exactly as the unfused ops
// they replace (LayerNorm then Mul, Add, Add; Mul then Add; Add then GELU),
// with every product converted to T so that no compiler fuses it into an
// FMA, and their per-set sums accumulate in float64 over the tokens in
// order, as SumTo does.

// optContigT returns t or a contiguous copy of it (nil stays nil).
func optContigT(t *Tensor) *Tensor {
	if t == nil {
		return nil
	}
	return t.Contiguous()
}

// setRows prepares a per-set (G, D) operand of the modulation kernels
// (shift, scale, gate) and returns it with its row stride: a view with
// contiguous rows, such as the (G, D) column block of an adaLN projection's
// (G, 6D) output, is read in place; anything else is copied.
func setRows(t *Tensor) (*Tensor, int) {
	if len(t.shape) == 2 && t.strides[0] >= 0 && (t.strides[1] == 1 || t.shape[1] <= 1) {
		return t, t.strides[0]
	}
	t = t.Contiguous()
	return t, t.shape[len(t.shape)-1]
}

// setRowsData returns the elements of a setRows operand from its first:
// row g (d values) is at [g*ld, g*ld+d).
func setRowsData[T float](t *Tensor) []T { return data[T](t)[t.offset:] }

// optDst is contigDst for an optional destination.
func optDst(t *Tensor, keep bool) *Tensor {
	if t == nil {
		return nil
	}
	return contigDst(t, keep)
}

// optFinish is finishDst for an optional destination.
func optFinish(dst, t *Tensor) {
	if dst != nil {
		finishDst(dst, t)
	}
}

// ---- LayerNorm + adaLN modulation ----

func (cpuBackend) LayerNormModulate(y, mean, rstd, x, gamma, beta, shift, scale *Tensor, eps float64) {
	x, gamma, beta = x.Contiguous(), optContigT(gamma), optContigT(beta)
	shift, ldShift := setRows(shift)
	scale, ldScale := setRows(scale)
	out, mo, ro := contigDst(y, false), optDst(mean, false), optDst(rstd, false)
	d := x.shape[2]
	j := getJob(pick(x.dtype, layerNormModRange[float32], layerNormModRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5], j.t[6], j.t[7] = out, mo, ro, x, gamma, beta, shift, scale
	j.n[0], j.n[1], j.n[2], j.n[3] = d, x.shape[1], ldShift, ldScale
	j.f[0] = eps
	j.runRows(x.shape[0]*x.shape[1], 6*d)
	putJob(j)
	finishDst(y, out)
	optFinish(mean, mo)
	optFinish(rstd, ro)
}

func layerNormModRange[T float](j *job, lo, hi int) {
	y, x := contig[T](j.t[0]), contig[T](j.t[3])
	mean, rstd := optContig[T](j.t[1]), optContig[T](j.t[2])
	gamma, beta := optContig[T](j.t[4]), optContig[T](j.t[5])
	shift, scale := setRowsData[T](j.t[6]), setRowsData[T](j.t[7])
	d, rows, ldShift, ldScale := j.n[0], j.n[1], j.n[2], j.n[3]
	eps := j.f[0]
	simd := (gamma == nil) == (beta == nil) && is32[T]() && useSIMD
	var m4, s4 [4]float32 // the statistics of rows r4..r4+3
	r4 := -4
	for r := lo; r < hi; r++ {
		yr, xr := y[r*d:(r+1)*d], x[r*d:(r+1)*d]
		g := r / rows
		sh, sc := shift[g*ldShift:g*ldShift+d], scale[g*ldScale:g*ldScale+d]
		var m, s T
		if simd {
			// One pass: normalise and modulate as the loops below do,
			// the last d%8 elements by those loops. The statistics come
			// four rows at a time where they can.
			if r >= r4+4 && r+4 <= hi && d%4 == 0 {
				r4 = r
				m4, s4 = layerNormStats4(f32s(x[r*d:(r+4)*d]), d, eps)
			}
			if r < r4+4 {
				m, s = T(m4[r-r4]), T(s4[r-r4])
			} else {
				m, s = layerNormStats(xr, eps)
			}
			var i int
			if gamma == nil {
				i = lnModSIMD(f32s(yr), f32s(xr), f32s(sh), f32s(sc), float32(m), float32(s))
			} else {
				i = lnModAffineSIMD(f32s(yr), f32s(xr), f32s(gamma), f32s(beta), f32s(sh), f32s(sc), float32(m), float32(s))
			}
			if i < d {
				layerNormAffine(yr[i:], xr[i:], from(gamma, i), from(beta, i), m, s)
				for ; i < d; i++ {
					u := yr[i]
					yr[i] = T(u+T(u*sc[i])) + sh[i]
				}
			}
		} else {
			m, s = layerNormRow(yr, xr, gamma, beta, eps)
			for i, u := range yr {
				yr[i] = T(u+T(u*sc[i])) + sh[i]
			}
		}
		if mean != nil {
			mean[r] = m
		}
		if rstd != nil {
			rstd[r] = s
		}
	}
}

func (cpuBackend) LayerNormModulateBackward(dx, dgamma, dbeta, dshift, dscale, gy, x, mean, rstd, gamma, beta, scale *Tensor) {
	x, gy, mean, rstd = x.Contiguous(), gy.Contiguous(), mean.Contiguous(), rstd.Contiguous()
	gamma, beta = optContigT(gamma), optContigT(beta)
	scale, ldScale := setRows(scale)
	out := contigDst(dx, false)
	g, rows, d := x.shape[0], x.shape[1], x.shape[2]
	j := getJob(pick(x.dtype, layerNormModBackRange[float32], layerNormModBackRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5], j.t[6], j.t[7] = out, gy, x, mean, rstd, gamma, beta, scale
	wantParams := dgamma != nil || dbeta != nil
	cost := 10 * rows * d
	_, nch := chunking(g, max(1, parallelGrain/max(cost, 1)))
	// Scratch: per chunk the dgamma and dbeta partials and a row of the
	// LayerNorm's upstream gradient (3d), then per set the dshift and
	// dscale sums (2d).
	width := 3 * d
	p := getScratch(width*nch + 2*d*g)
	j.s64 = *p
	j.b[0] = wantParams
	j.n[0], j.n[1], j.n[2], j.n[3], j.n[4] = d, rows, width, width*nch, ldScale
	nc := j.runRows(g, cost)
	putJob(j)
	finishDst(dx, out)
	part := *p
	if wantParams {
		for c := 1; c < nc; c++ {
			pc := part[c*width : c*width+2*d]
			for i := range 2 * d {
				part[i] += pc[i]
			}
		}
		addParamGrad(dgamma, part[:d])
		addParamGrad(dbeta, part[d:2*d])
	}
	sets := part[width*nch : width*nch+2*d*g]
	for k, dst := range [...]*Tensor{dshift, dscale} {
		if dst == nil {
			continue
		}
		o := contigDst(dst, false)
		if o.dtype == Float32 {
			setSums(contig[float32](o), sets, g, d, k)
		} else {
			setSums(contig[float64](o), sets, g, d, k)
		}
		finishDst(dst, o)
	}
	putScratch(p)
}

// setSums writes sums k (0 or 1) of the per-set pairs of float64 rows in
// sets (set g: sums 0 at [2gd, 2gd+d), sums 1 after them) into out (G, D).
func setSums[T float](out []T, sets []float64, g, d, k int) {
	for s := range g {
		src := sets[(2*s+k)*d : (2*s+k+1)*d]
		dst := out[s*d : (s+1)*d]
		for i, v := range src {
			dst[i] = T(v)
		}
	}
}

// asT views the start of a float64 scratch slice as n elements of T.
func asT[T float](s []float64, n int) []T {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s))[:n]
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(s))), len(s))[:n]
}

func layerNormModBackRange[T float](j *job, lo, hi int) {
	dx, gy, x := contig[T](j.t[0]), contig[T](j.t[1]), contig[T](j.t[2])
	mean, rstd := contig[T](j.t[3]), contig[T](j.t[4])
	gamma, beta, scale := optContig[T](j.t[5]), optContig[T](j.t[6]), setRowsData[T](j.t[7])
	d, rows, width, setsAt, ldScale := j.n[0], j.n[1], j.n[2], j.n[3], j.n[4]
	c := lo / j.chunk
	sc := j.s64[c*width : (c+1)*width]
	var dg, db []float64
	if j.b[0] {
		dg, db = sc[:d], sc[d:2*d]
		clear(dg)
		clear(db)
	}
	gu := asT[T](sc[2*d:3*d], d)
	for g := lo; g < hi; g++ {
		ssh := j.s64[setsAt+2*g*d : setsAt+(2*g+1)*d]
		ssc := j.s64[setsAt+(2*g+1)*d : setsAt+(2*g+2)*d]
		clear(ssh)
		clear(ssc)
		sg := scale[g*ldScale : g*ldScale+d]
		for r := g * rows; r < (g+1)*rows; r++ {
			xr, gr := x[r*d:(r+1)*d], gy[r*d:(r+1)*d]
			m, s := mean[r], rstd[r]
			// u as the forward computed it (layerNormRow's arithmetic with
			// the saved, already rounded statistics), then the
			// modulation's gradients.
			layerNormAffine(gu, xr, gamma, beta, m, s)
			i := 0
			if is32[T]() && useSIMD {
				i = lnModBackSIMD(f32s(gu), f32s(gr), f32s(sg), ssh, ssc)
			}
			for ; i < d; i++ {
				gi, u := gr[i], gu[i]
				ssh[i] += float64(gi)
				ssc[i] += float64(T(gi * u))
				gu[i] = gi + T(gi*sg[i])
			}
			layerNormBackRow(dx[r*d:(r+1)*d], gu, xr, gamma, m, s, dg, db)
		}
	}
}

// from returns v[i:], or nil for a nil v (an absent affine parameter).
func from[T float](v []T, i int) []T {
	if v == nil {
		return nil
	}
	return v[i:]
}

// layerNormAffine sets yr to (xr - m)·s·gamma + beta with the row
// statistics m and s (gamma and beta optional): the second half of
// layerNormRow, shared with the modulated LayerNorm so both round alike.
func layerNormAffine[T float](yr, xr, gamma, beta []T, m, s T) {
	d := len(xr)
	yr = yr[:d]
	switch {
	case gamma != nil && beta != nil:
		g, b := gamma[:d], beta[:d]
		i := 0
		if is32[T]() && useSIMD {
			i = lnAffineSIMD(f32s(yr), f32s(xr), f32s(g), f32s(b), float32(m), float32(s))
		}
		for ; i < d; i++ {
			yr[i] = T(T((xr[i]-m)*s)*g[i]) + b[i]
		}
	case gamma != nil:
		g := gamma[:d]
		for i := range yr {
			yr[i] = (xr[i] - m) * s * g[i]
		}
	default:
		i := 0
		if is32[T]() && useSIMD {
			i = lnScaleSIMD(f32s(yr), f32s(xr), float32(m), float32(s))
		}
		for ; i < d; i++ {
			yr[i] = (xr[i] - m) * s
		}
		if beta != nil {
			b := beta[:d]
			for i := range yr {
				yr[i] += b[i]
			}
		}
	}
}

// ---- gated residual ----

func (cpuBackend) GateResidual(out, x, gate, h *Tensor) {
	x, h = x.Contiguous(), h.Contiguous()
	gate, ldGate := setRows(gate)
	o := contigDst(out, false)
	d := x.shape[2]
	j := getJob(pick(x.dtype, gateResidualRange[float32], gateResidualRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3] = o, x, gate, h
	j.n[0], j.n[1], j.n[2] = d, x.shape[1], ldGate
	j.runRows(x.shape[0]*x.shape[1], d)
	putJob(j)
	finishDst(out, o)
}

func gateResidualRange[T float](j *job, lo, hi int) {
	o, x, gate, h := contig[T](j.t[0]), contig[T](j.t[1]), setRowsData[T](j.t[2]), contig[T](j.t[3])
	d, rows, ldGate := j.n[0], j.n[1], j.n[2]
	simd := is32[T]() && useSIMD
	for r := lo; r < hi; r++ {
		g := r / rows
		or, xr, hr, gt := o[r*d:(r+1)*d], x[r*d:(r+1)*d], h[r*d:(r+1)*d], gate[g*ldGate:g*ldGate+d]
		if simd {
			// The loop's two roundings, in one pass.
			gateResidualVec32SIMD(f32s(or), f32s(xr), f32s(gt), f32s(hr))
			continue
		}
		for i := range or {
			or[i] = xr[i] + T(gt[i]*hr[i])
		}
	}
}

func (cpuBackend) GateResidualBackward(dh, dgate, gy, h, gate *Tensor) {
	gy, h = gy.Contiguous(), h.Contiguous()
	gate, ldGate := setRows(gate)
	odh, odg := optDst(dh, false), optDst(dgate, false)
	g, rows, d := h.shape[0], h.shape[1], h.shape[2]
	j := getJob(pick(h.dtype, gateResidualBackRange[float32], gateResidualBackRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4] = odh, odg, gy, h, gate
	j.n[0], j.n[1], j.n[2] = d, rows, ldGate
	cost := 3 * rows * d
	_, nch := chunking(g, max(1, parallelGrain/max(cost, 1)))
	p := getScratch(d * nch)
	j.s64 = *p
	j.runRows(g, cost)
	putJob(j)
	putScratch(p)
	optFinish(dh, odh)
	optFinish(dgate, odg)
}

func gateResidualBackRange[T float](j *job, lo, hi int) {
	dh, dgate := optContig[T](j.t[0]), optContig[T](j.t[1])
	gy, h, gate := contig[T](j.t[2]), contig[T](j.t[3]), setRowsData[T](j.t[4])
	d, rows, ldGate := j.n[0], j.n[1], j.n[2]
	c := lo / j.chunk
	acc := j.s64[c*d : (c+1)*d]
	simd := is32[T]() && useSIMD
	for g := lo; g < hi; g++ {
		gt := gate[g*ldGate : g*ldGate+d]
		clear(acc)
		for r := g * rows; r < (g+1)*rows; r++ {
			gr, hr := gy[r*d:(r+1)*d], h[r*d:(r+1)*d]
			if dh != nil {
				dr := dh[r*d : (r+1)*d]
				if simd {
					arithVec32SIMD(BinaryMul, f32s(dr), f32s(gr), f32s(gt), 0)
				} else {
					for i := range dr {
						dr[i] = T(gr[i] * gt[i])
					}
				}
			}
			if dgate != nil {
				i := 0
				if simd {
					i = mulAcc64SIMD(acc, f32s(gr), f32s(hr))
				}
				for ; i < d; i++ {
					acc[i] += float64(T(gr[i] * hr[i]))
				}
			}
		}
		if dgate != nil {
			out := dgate[g*d : (g+1)*d]
			for i, v := range acc {
				out[i] = T(v)
			}
		}
	}
}

// ---- bias + GELU ----

func (cpuBackend) BiasGELU(y, x, bias *Tensor) {
	x, bias = x.Contiguous(), optContigT(bias)
	o := contigDst(y, false)
	d := x.shape[len(x.shape)-1]
	j := getJob(pick(x.dtype, biasGELURange[float32], biasGELURange[float64]))
	j.t[0], j.t[1], j.t[2] = o, x, bias
	j.n[0] = d
	j.runRows(x.Size()/max(d, 1), 8*d)
	putJob(j)
	finishDst(y, o)
}

func biasGELURange[T float](j *job, lo, hi int) {
	y, x, bias := contig[T](j.t[0]), contig[T](j.t[1]), optContig[T](j.t[2])
	d := j.n[0]
	for r := lo; r < hi; r++ {
		yr, xr := y[r*d:(r+1)*d], x[r*d:(r+1)*d]
		if bias != nil {
			b := bias[:d]
			for i := range yr {
				yr[i] = xr[i] + b[i]
			}
			xr = yr
		}
		geluRow(yr, xr)
	}
}

// geluRow sets d = GELU(a) as the GELU op does (d may be a).
func geluRow[T float](d, a []T) {
	if is32[T]() {
		geluVec32(f32s(d), f32s(a))
		return
	}
	for i := range d {
		d[i] = geluT(a[i])
	}
}

func (cpuBackend) BiasGELUBackward(dx, dbias, gy, x, bias *Tensor) {
	x, gy, bias = x.Contiguous(), gy.Contiguous(), optContigT(bias)
	o := contigDst(dx, false)
	d := x.shape[len(x.shape)-1]
	rows := x.Size() / max(d, 1)
	j := getJob(pick(x.dtype, biasGELUBackRange[float32], biasGELUBackRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3] = o, gy, x, bias
	j.n[0] = d
	j.b[0] = dbias != nil
	_, nch := chunking(rows, max(1, parallelGrain/(8*max(d, 1))))
	// Per chunk: a row of x + bias (as T) and the dbias partial sums.
	p := getScratch(2 * d * nch)
	j.s64 = *p
	nc := j.runRows(rows, 8*d)
	putJob(j)
	finishDst(dx, o)
	if dbias != nil {
		part := *p
		for c := 1; c < nc; c++ {
			pc := part[c*2*d+d : (c+1)*2*d]
			for i := range d {
				part[d+i] += pc[i]
			}
		}
		addParamGrad(dbias, part[d:2*d])
	}
	putScratch(p)
}

func biasGELUBackRange[T float](j *job, lo, hi int) {
	dx, gy, x, bias := contig[T](j.t[0]), contig[T](j.t[1]), contig[T](j.t[2]), optContig[T](j.t[3])
	d := j.n[0]
	c := lo / j.chunk
	sc := j.s64[c*2*d : (c+1)*2*d]
	u := asT[T](sc[:d], d)
	db := sc[d : 2*d]
	clear(db)
	for r := lo; r < hi; r++ {
		dr, gr, xr := dx[r*d:(r+1)*d], gy[r*d:(r+1)*d], x[r*d:(r+1)*d]
		if bias != nil {
			b := bias[:d]
			for i := range u {
				u[i] = xr[i] + b[i]
			}
			xr = u
		}
		if is32[T]() {
			geluGradVec32(f32s(dr), f32s(xr), f32s(gr))
		} else {
			for i := range dr {
				dr[i] = gr[i] * geluGradT(xr[i])
			}
		}
		if j.b[0] {
			for i, v := range dr {
				db[i] += float64(v)
			}
		}
	}
}

// ---- attention with the log-sum-exp ----

func (cpuBackend) FlashAttention(out, lse, q, k, v, keyMask *Tensor, scale float64) {
	q, k, v = headArgs(q), headArgs(k), headArgs(v)
	if keyMask != nil && keyMask.strides[1] != 1 && keyMask.shape[1] > 1 {
		keyMask = keyMask.Clone()
	}
	o := headDst(out, false)
	var l *Tensor
	if lse != nil {
		l = contigDst(lse, false)
	}
	j := getJob(pick(q.dtype, flashRange[float32], flashRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5] = o, l, q, k, v, keyMask
	j.f[0] = scale
	b, h, n, dh := q.shape[0], q.shape[1], q.shape[2], q.shape[3]
	j.runRows(b*h, 2*n*n*dh+4*n*n)
	putJob(j)
	finishDst(out, o)
	if lse != nil {
		finishDst(lse, l)
	}
}

// flashRange is attentionRange with the probabilities of a head in scratch
// and the row log-sum-exp written out instead (unless j.t[1] is nil).
func flashRange[T float](j *job, lo, hi int) {
	ot, lt, qt, kt, vt, mt := j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5]
	o, q, k, v := data[T](ot), data[T](qt), data[T](kt), data[T](vt)
	var l []T
	if lt != nil {
		l = contig[T](lt)
	}
	var mask []T
	if mt != nil {
		mask = data[T](mt)
	}
	nh, n, dh := qt.shape[1], qt.shape[2], qt.shape[3]
	scale := T(j.f[0])
	sp, p := scratchT[T](n * n)
	for bh := lo; bh < hi; bh++ {
		oq, ldq := headOff(qt, bh, nh)
		ok, ldk := headOff(kt, bh, nh)
		ov, ldv := headOff(vt, bh, nh)
		oo, ldo := headOff(ot, bh, nh)
		gemmT(false, true, n, n, dh, scale, q[oq:], ldq, k[ok:], ldk, 0, p, n)
		var keep []T
		if mask != nil {
			mo := mt.offset + (bh/nh)*mt.strides[0]
			keep = mask[mo : mo+n]
		}
		var lse []T
		if l != nil {
			lse = l[bh*n : (bh+1)*n]
		}
		softmaxRows(p, n, n, n, keep, lse)
		gemmT(false, false, n, dh, n, 1, p, n, v[ov:], ldv, 0, o[oo:], ldo)
	}
	putScratch(sp)
}

func (cpuBackend) FlashAttentionBackward(dq, dk, dv, gout, q, k, v, out, lse, keyMask *Tensor, scale float64) {
	q, k, v, gout = headArgs(q), headArgs(k), headArgs(v), headArgs(gout)
	if keyMask != nil && keyMask.strides[1] != 1 && keyMask.shape[1] > 1 {
		keyMask = keyMask.Clone()
	}
	oq, ok, ov := headDst(dq, false), headDst(dk, false), headDst(dv, false)
	j := getJob(pick(q.dtype, flashBackRange[float32], flashBackRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5], j.t[6], j.t[7] = oq, ok, ov, gout, q, k, v, keyMask
	j.f[0] = scale
	b, h, n, dh := q.shape[0], q.shape[1], q.shape[2], q.shape[3]
	j.runRows(b*h, 6*n*n*dh+8*n*n)
	putJob(j)
	finishDst(dq, oq)
	finishDst(dk, ok)
	finishDst(dv, ov)
}

// flashBackRange recomputes each head's probabilities exactly as flashRange
// (and attentionRange) did, then runs attentionBackRange's arithmetic.
func flashBackRange[T float](j *job, lo, hi int) {
	tq, tk, tv, tg, mt := j.t[4], j.t[5], j.t[6], j.t[3], j.t[7]
	dq, dk, dv := data[T](j.t[0]), data[T](j.t[1]), data[T](j.t[2])
	g, q, k, v := data[T](tg), data[T](tq), data[T](tk), data[T](tv)
	var mask []T
	if mt != nil {
		mask = data[T](mt)
	}
	nh, n, dh := tq.shape[1], tq.shape[2], tq.shape[3]
	scale := T(j.f[0])
	sp, buf := scratchT[T](2 * n * n)
	p, ds := buf[:n*n], buf[n*n:]
	for bh := lo; bh < hi; bh++ {
		var a attnHead
		a.set(tq, tk, tv, tg, j.t[0], j.t[1], j.t[2], bh, nh)
		gemmT(false, true, n, n, dh, scale, q[a.oq:], a.ldq, k[a.ok:], a.ldk, 0, p, n)
		var keep []T
		if mask != nil {
			mo := mt.offset + (bh/nh)*mt.strides[0]
			keep = mask[mo : mo+n]
		}
		softmaxRows(p, n, n, n, keep, nil)
		attnBackHead(&a, n, dh, scale, p, n, ds, q, k, v, g, dq, dk, dv)
	}
	putScratch(sp)
}
