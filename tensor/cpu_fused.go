package tensor

import (
	"math"
	"unsafe"

	"lgflow/tensor/internal/gemm"
)

// ---- LayerNorm ----

func (cpuBackend) LayerNorm(y, mean, rstd, x, gamma, beta *Tensor, eps float64) {
	x = x.Contiguous()
	if gamma != nil {
		gamma = gamma.Contiguous()
	}
	if beta != nil {
		beta = beta.Contiguous()
	}
	out := contigDst(y, false)
	var mo, ro *Tensor
	if mean != nil {
		mo = contigDst(mean, false)
	}
	if rstd != nil {
		ro = contigDst(rstd, false)
	}
	d := x.shape[len(x.shape)-1]
	j := getJob(pick(x.dtype, layerNormRange[float32], layerNormRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5] = out, mo, ro, x, gamma, beta
	j.n[0] = d
	j.f[0] = eps
	j.runRows(x.Size()/max(d, 1), 4*d)
	putJob(j)
	finishDst(y, out)
	if mean != nil {
		finishDst(mean, mo)
	}
	if rstd != nil {
		finishDst(rstd, ro)
	}
}

// sumSquaredDev returns Σ (x - mu)² in float64 with four accumulators.
func sumSquaredDev[T float](x []T, mu float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	if is32[T]() && useSIMD {
		var acc [4]float64
		i = sumSqDev4SIMD(f32s(x), mu, &acc)
		s0, s1, s2, s3 = acc[0], acc[1], acc[2], acc[3]
	}
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		a, b, c, d := float64(v[0])-mu, float64(v[1])-mu, float64(v[2])-mu, float64(v[3])-mu
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		a := float64(x[i]) - mu
		s0 += a * a
	}
	return (s0 + s1) + (s2 + s3)
}

// optContig is contig for an optional tensor (nil gives nil).
func optContig[T float](t *Tensor) []T {
	if t == nil {
		return nil
	}
	return contig[T](t)
}

func layerNormRange[T float](j *job, lo, hi int) {
	y, x := contig[T](j.t[0]), contig[T](j.t[3])
	mean, rstd := optContig[T](j.t[1]), optContig[T](j.t[2])
	gamma, beta := optContig[T](j.t[4]), optContig[T](j.t[5])
	d := j.n[0]
	eps := j.f[0]
	four := is32[T]() && useSIMD && d%4 == 0 && d > 0
	var m4, s4 [4]float32 // the statistics of rows r4..r4+3
	r4 := -4
	for r := lo; r < hi; r++ {
		yr, xr := y[r*d:(r+1)*d], x[r*d:(r+1)*d]
		var m, s T
		if four && r >= r4+4 && r+4 <= hi {
			// Four rows' statistics at a time, with the bits of one.
			r4 = r
			m4, s4 = layerNormStats4(f32s(x[r*d:(r+4)*d]), d, eps)
		}
		if r < r4+4 {
			m, s = T(m4[r-r4]), T(s4[r-r4])
			layerNormAffine(yr, xr, gamma, beta, m, s)
		} else {
			m, s = layerNormRow(yr, xr, gamma, beta, eps)
		}
		if mean != nil {
			mean[r] = m
		}
		if rstd != nil {
			rstd[r] = s
		}
	}
}

// layerNormRow sets yr to the layer norm of the row xr with the optional
// affine parameters and returns the row's mean and rstd, rounded to T as
// the normalisation used them.
func layerNormRow[T float](yr, xr, gamma, beta []T, eps float64) (mean, rstd T) {
	m, s := layerNormStats(xr, eps)
	layerNormAffine(yr, xr, gamma, beta, m, s)
	return m, s
}

// layerNormStats returns the mean and 1/sqrt(variance + eps) of the row
// xr, computed in float64 and rounded to T.
func layerNormStats[T float](xr []T, eps float64) (mean, rstd T) {
	d := len(xr)
	mu := sumVec(xr) / float64(d)
	rs := 1 / math.Sqrt(sumSquaredDev(xr, mu)/float64(d)+eps)
	return T(mu), T(rs)
}

// layerNormStats4 is layerNormStats of the four float32 rows
// x[r*d:(r+1)*d] with the SIMD kernels (d % 4 == 0): the same sums in the
// same order, the rows' addition chains interleaved.
func layerNormStats4(x []float32, d int, eps float64) (mean, rstd [4]float32) {
	var acc [16]float64
	sum4x4SIMD(x, d, &acc)
	var mu [4]float64
	for r := range mu {
		mu[r] = ((acc[4*r] + acc[4*r+1]) + (acc[4*r+2] + acc[4*r+3])) / float64(d)
	}
	acc = [16]float64{}
	sumSqDev4x4SIMD(x, d, &mu, &acc)
	for r := range mu {
		ss := (acc[4*r] + acc[4*r+1]) + (acc[4*r+2] + acc[4*r+3])
		mean[r], rstd[r] = float32(mu[r]), float32(1/math.Sqrt(ss/float64(d)+eps))
	}
	return mean, rstd
}

func (cpuBackend) LayerNormBackward(dx, dgamma, dbeta, gy, x, mean, rstd, gamma *Tensor) {
	x, gy, mean, rstd = x.Contiguous(), gy.Contiguous(), mean.Contiguous(), rstd.Contiguous()
	if gamma != nil {
		gamma = gamma.Contiguous()
	}
	out := contigDst(dx, false)
	d := x.shape[len(x.shape)-1]
	rows := x.Size() / max(d, 1)
	j := getJob(pick(x.dtype, layerNormBackRange[float32], layerNormBackRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4] = out, gy, x, mean, rstd
	j.t[5] = gamma
	j.n[0] = d
	wantParams := dgamma != nil || dbeta != nil
	var p *[]float64
	if wantParams {
		_, nch := chunking(rows, max(1, parallelGrain/(6*d)))
		p = getScratch(2 * d * nch)
		j.s64 = *p
	}
	nc := j.runRows(rows, 6*d)
	putJob(j)
	finishDst(dx, out)
	if wantParams {
		// Sum the per-chunk partials in chunk order (deterministic).
		part := *p
		for c := 1; c < nc; c++ {
			pc := part[c*2*d : (c+1)*2*d]
			for i := range 2 * d {
				part[i] += pc[i]
			}
		}
		addParamGrad(dgamma, part[:d])
		addParamGrad(dbeta, part[d:2*d])
		putScratch(p)
	}
}

// addParamGrad adds the float64 vector g into the vector t (if not nil).
func addParamGrad(t *Tensor, g []float64) {
	if t == nil {
		return
	}
	d := data[float32](t)
	if t.dtype == Float64 {
		d64 := data[float64](t)
		for i, v := range g {
			d64[t.offset+i*t.strides[0]] += v
		}
		return
	}
	for i, v := range g {
		d[t.offset+i*t.strides[0]] += float32(v)
	}
}

func layerNormBackRange[T float](j *job, lo, hi int) {
	dx, gy, x := contig[T](j.t[0]), contig[T](j.t[1]), contig[T](j.t[2])
	mean, rstd := contig[T](j.t[3]), contig[T](j.t[4])
	gamma := optContig[T](j.t[5])
	d := j.n[0]
	var dg, db []float64
	if j.s64 != nil {
		c := lo / j.chunk
		dg = j.s64[c*2*d : c*2*d+d]
		db = j.s64[c*2*d+d : (c+1)*2*d]
		clear(dg)
		clear(db)
	}
	for r := lo; r < hi; r++ {
		layerNormBackRow(dx[r*d:(r+1)*d], gy[r*d:(r+1)*d], x[r*d:(r+1)*d], gamma, mean[r], rstd[r], dg, db)
	}
}

// layerNormBackRow sets dr to the LayerNorm gradient of one row (upstream
// gradient gr, input xr, saved statistics mean and rstd) and, when dg is not
// nil, adds the row's parameter gradients Σ gy·xhat and Σ gy into dg and db.
func layerNormBackRow[T float](dr, gr, xr, gamma []T, mean, rstd T, dg, db []float64) {
	d := len(xr)
	gr, dr = gr[:d], dr[:d]
	mu, rs := float64(mean), float64(rstd)
	simd := is32[T]() && useSIMD
	if dg != nil {
		dg, db = dg[:d], db[:d]
		i := 0
		if simd {
			i = lnParamGradSIMD(f32s(gr), f32s(xr), dg, db, mu, rs)
		}
		for ; i < d; i++ {
			g := float64(gr[i])
			dg[i] += g * ((float64(xr[i]) - mu) * rs)
			db[i] += g
		}
	}
	// s1 = Σ g, s2 = Σ g·(x - mean) with g = gy·gamma, in four chains
	// each (element i in chain i%4; the last len%4 in chain 0).
	var s1, s2 [4]float64
	i := 0
	if simd {
		var acc [8]float64
		if gamma != nil {
			i = lnBackSums4GammaSIMD(f32s(gr), f32s(xr), f32s(gamma), mu, &acc)
		} else {
			i = lnBackSums4SIMD(f32s(gr), f32s(xr), mu, &acc)
		}
		copy(s1[:], acc[:4])
		copy(s2[:], acc[4:])
	}
	for ; i+4 <= d; i += 4 {
		for k := range 4 {
			g := float64(gr[i+k])
			if gamma != nil {
				g *= float64(gamma[i+k])
			}
			s1[k] += g
			s2[k] += g * (float64(xr[i+k]) - mu)
		}
	}
	for ; i < d; i++ {
		g := float64(gr[i])
		if gamma != nil {
			g *= float64(gamma[i])
		}
		s1[0] += g
		s2[0] += g * (float64(xr[i]) - mu)
	}
	sum1 := ((s1[0] + s1[1]) + (s1[2] + s1[3])) / float64(d)
	sum2 := ((s2[0] + s2[1]) + (s2[2] + s2[3])) * rs / float64(d)
	// dx = rs·(g - s1 - xhat·s2), in float32 for float32 tensors (each
	// product rounded to T, so that no compiler fuses it).
	c0, c1, c2 := T(rs), T(rs*sum1), T(rs*rs*sum2)
	m := T(mu)
	i = 0
	if gamma != nil {
		gm := gamma[:d]
		if simd {
			i = lnBackOutGammaSIMD(f32s(dr), f32s(gr), f32s(xr), f32s(gm), float32(c0), float32(c1), float32(c2), float32(m))
		}
		for ; i < d; i++ {
			dr[i] = T(T(c0*gr[i])*gm[i]) - c1 - T((xr[i]-m)*c2)
		}
		return
	}
	if simd {
		i = lnBackOutSIMD(f32s(dr), f32s(gr), f32s(xr), float32(c0), float32(c1), float32(c2), float32(m))
	}
	for ; i < d; i++ {
		dr[i] = T(c0*gr[i]) - c1 - T((xr[i]-m)*c2)
	}
}

// ---- Softmax cross entropy ----

func (cpuBackend) SoftmaxCrossEntropy(prob, logits *Tensor, targets []int32, weight []float32) float64 {
	logits = logits.Contiguous()
	out := contigDst(prob, false)
	c := logits.shape[len(logits.shape)-1]
	rows := len(targets)
	j := getJob(pick(logits.dtype, crossEntropyRange[float32], crossEntropyRange[float64]))
	j.t[0], j.t[1] = out, logits
	j.idx, j.w = targets, weight
	j.n[0] = c
	nc := j.runRows(rows, 4*c)
	loss := 0.0
	for i := range nc {
		loss += j.part[i]
	}
	putJob(j)
	finishDst(prob, out)
	return loss
}

func crossEntropyRange[T float](j *job, lo, hi int) {
	p, x := contig[T](j.t[0]), contig[T](j.t[1])
	c := j.n[0]
	loss := 0.0
	for r := lo; r < hi; r++ {
		xr, pr := x[r*c:(r+1)*c], p[r*c:(r+1)*c]
		m := maxVec(xr)
		s := expSub(pr, xr, m)
		inv := T(1 / s)
		for i := range pr {
			pr[i] *= inv
		}
		w := 1.0
		if j.w != nil {
			w = float64(j.w[r])
		}
		if w != 0 {
			t := j.idx[r]
			loss += w * (float64(m) + math.Log(s) - float64(xr[t]))
		}
	}
	j.part[lo/j.chunk] = loss
}

func (cpuBackend) SoftmaxCrossEntropyBackward(dlogits, prob *Tensor, targets []int32, weight []float32, scale float64) {
	prob = prob.Contiguous()
	out := contigDst(dlogits, false)
	c := prob.shape[len(prob.shape)-1]
	j := getJob(pick(prob.dtype, crossEntropyBackRange[float32], crossEntropyBackRange[float64]))
	j.t[0], j.t[1] = out, prob
	j.idx, j.w = targets, weight
	j.n[0] = c
	j.f[0] = scale
	j.runRows(len(targets), c)
	putJob(j)
	finishDst(dlogits, out)
}

func crossEntropyBackRange[T float](j *job, lo, hi int) {
	d, p := contig[T](j.t[0]), contig[T](j.t[1])
	c := j.n[0]
	for r := lo; r < hi; r++ {
		dr, pr := d[r*c:(r+1)*c], p[r*c:(r+1)*c]
		w := j.f[0]
		if j.w != nil {
			w *= float64(j.w[r])
		}
		if w == 0 {
			clear(dr)
			continue
		}
		s := T(w)
		for i := range dr {
			dr[i] = s * pr[i]
		}
		dr[j.idx[r]] -= s
	}
}

// ---- Attention ----

// headOK reports whether the (N, Dh) or (N, N) matrices of the (batch,
// head) pairs of the rank-4 tensor t can be passed to GEMM as they are
// (last stride 1, rows not overlapping).
func headOK(t *Tensor) bool {
	f, _, ok := matOf(t)
	return ok && !f
}

// headArgs returns t, or a contiguous copy if its heads do not fit GEMM.
func headArgs(t *Tensor) *Tensor {
	if headOK(t) {
		return t
	}
	return t.Clone()
}

// headDst is headArgs for a destination (see contigDst).
func headDst(t *Tensor, keep bool) *Tensor {
	if headOK(t) {
		return t
	}
	return contigDst(t, keep)
}

func (cpuBackend) Attention(out, probs, q, k, v, keyMask *Tensor, scale float64) {
	q, k, v = headArgs(q), headArgs(k), headArgs(v)
	if keyMask != nil && keyMask.strides[1] != 1 && keyMask.shape[1] > 1 {
		keyMask = keyMask.Clone()
	}
	o, p := headDst(out, false), headDst(probs, false)
	j := getJob(pick(q.dtype, attentionRange[float32], attentionRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5] = o, p, q, k, v, keyMask
	j.f[0] = scale
	b, h, n, dh := q.shape[0], q.shape[1], q.shape[2], q.shape[3]
	j.runRows(b*h, 2*n*n*dh+4*n*n)
	putJob(j)
	finishDst(out, o)
	finishDst(probs, p)
}

// headOff returns the offset of head (b, h) of t and its row stride.
func headOff(t *Tensor, bh, nh int) (off, ld int) {
	return t.offset + (bh/nh)*t.strides[0] + (bh%nh)*t.strides[1], t.strides[2]
}

func gemmT[T float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	var z T
	if unsafe.Sizeof(z) == 4 {
		gemm.Sgemm(transA, transB, m, n, k, float32(alpha), f32s(a), lda, f32s(b), ldb, float32(beta), f32s(c), ldc)
	} else {
		gemm.Dgemm(transA, transB, m, n, k, float64(alpha), f64s(a), lda, f64s(b), ldb, float64(beta), f64s(c), ldc)
	}
}

func attentionRange[T float](j *job, lo, hi int) {
	ot, pt, qt, kt, vt, mt := j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5]
	o, p, q, k, v := data[T](ot), data[T](pt), data[T](qt), data[T](kt), data[T](vt)
	var mask []T
	if mt != nil {
		mask = data[T](mt)
	}
	nh, n, dh := qt.shape[1], qt.shape[2], qt.shape[3]
	scale := T(j.f[0])
	for bh := lo; bh < hi; bh++ {
		oq, ldq := headOff(qt, bh, nh)
		ok, ldk := headOff(kt, bh, nh)
		ov, ldv := headOff(vt, bh, nh)
		oo, ldo := headOff(ot, bh, nh)
		op, ldp := headOff(pt, bh, nh)
		// S = scale·q·kᵀ into probs.
		gemmT(false, true, n, n, dh, scale, q[oq:], ldq, k[ok:], ldk, 0, p[op:], ldp)
		var keep []T
		if mask != nil {
			mo := mt.offset + (bh/nh)*mt.strides[0]
			keep = mask[mo : mo+n]
		}
		softmaxRows(p[op:], ldp, n, n, keep, nil)
		gemmT(false, false, n, dh, n, 1, p[op:], ldp, v[ov:], ldv, 0, o[oo:], ldo)
	}
}

// softmaxRows applies maskedSoftmaxRow to each of the rows (n entries at
// stride ld) of p with the one key mask keep, and, when lse is not nil,
// sets lse[i] to row i's log-sum-exp m + log(sum). Each row gets
// maskedSoftmaxRow's bits; where it would take its fused AVX-512 path, rows
// go four at a time through one call, whose interleaved operations hide
// the per-row latencies (an attention head's rows are short).
func softmaxRows[T float](p []T, ld, rows, n int, keep, lse []T) {
	i := 0
	if keep != nil && useSIMD && useAVX512 && is32[T]() && n >= 16 && rows >= 4 {
		var m [4]float32
		var s [4]float64
		kp := &f32s(keep)[:n][0]
		for ; i+4 <= rows; i += 4 {
			r := f32s(p[i*ld : (i+3)*ld+n])
			if !softmaxRows4AVX512(&r[0], ld, kp, n, &m, &s) {
				break // a row with nothing kept: the rest one row at a time
			}
			if lse != nil {
				for r := range 4 {
					lse[i+r] = T(float64(m[r]) + math.Log(s[r]))
				}
			}
		}
	}
	for ; i < rows; i++ {
		m, s := maskedSoftmaxRow(p[i*ld:i*ld+n], keep)
		if lse != nil {
			lse[i] = T(float64(m) + math.Log(s))
		}
	}
}

// maskedSoftmaxRow sets row = softmax(row) over the entries with keep != 0
// (all if keep is nil) and 0 elsewhere; a row with nothing kept is all 0.
// It returns the row maximum m and Σ exp(row - m) over the kept entries
// (-Inf and 0 for a row with nothing kept): log-sum-exp = m + log(sum).
func maskedSoftmaxRow[T float](row, keep []T) (m T, sum float64) {
	if keep != nil && useSIMD && useAVX512 && is32[T]() && len(row) >= 16 {
		// The same operations in one call (an attention head's rows are
		// short: the calls cost as much as the arithmetic).
		r := f32s(row)
		mm, s := softmaxRowAVX512(&r[0], &f32s(keep)[:len(row)][0], len(row))
		return T(mm), s
	}
	m = T(math.Inf(-1))
	simd := useSIMD && is32[T]() && len(row) >= 8
	switch {
	case keep == nil:
		m = maxVec(row)
	case simd:
		m = T(maskedMax32SIMD(f32s(row), f32s(keep)))
	default:
		keep = keep[:len(row)]
		for j, v := range row {
			if keep[j] == 0 {
				row[j] = T(math.Inf(-1))
			} else if v > m {
				m = v
			}
		}
	}
	if math.IsInf(float64(m), -1) {
		clear(row)
		return m, 0
	}
	sum = expSub(row, row, m)
	inv := T(1 / sum)
	if simd {
		scaleVec32SIMD(f32s(row), f32s(row), float32(inv))
		return m, sum
	}
	for j := range row {
		row[j] *= inv
	}
	return m, sum
}

func (cpuBackend) AttentionBackward(dq, dk, dv, gout, q, k, v, probs *Tensor, scale float64) {
	q, k, v, gout, probs = headArgs(q), headArgs(k), headArgs(v), headArgs(gout), headArgs(probs)
	oq, ok, ov := headDst(dq, false), headDst(dk, false), headDst(dv, false)
	j := getJob(pick(q.dtype, attentionBackRange[float32], attentionBackRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5], j.t[6], j.t[7] = oq, ok, ov, gout, q, k, v, probs
	j.f[0] = scale
	b, h, n, dh := q.shape[0], q.shape[1], q.shape[2], q.shape[3]
	j.runRows(b*h, 4*n*n*dh+4*n*n)
	putJob(j)
	finishDst(dq, oq)
	finishDst(dk, ok)
	finishDst(dv, ov)
}

func attentionBackRange[T float](j *job, lo, hi int) {
	tq, tk, tv, tg := j.t[4], j.t[5], j.t[6], j.t[3]
	dq, dk, dv := data[T](j.t[0]), data[T](j.t[1]), data[T](j.t[2])
	g, q, k, v, p := data[T](tg), data[T](tq), data[T](tk), data[T](tv), data[T](j.t[7])
	nh, n, dh := tq.shape[1], tq.shape[2], tq.shape[3]
	scale := T(j.f[0])
	sp, ds := scratchT[T](n * n)
	for bh := lo; bh < hi; bh++ {
		var a attnHead
		a.set(j.t[4], j.t[5], j.t[6], j.t[3], j.t[0], j.t[1], j.t[2], bh, nh)
		op, ldp := headOff(j.t[7], bh, nh)
		attnBackHead(&a, n, dh, scale, p[op:], ldp, ds, q, k, v, g, dq, dk, dv)
	}
	putScratch(sp)
}

// softmaxGradRows sets each row of ds (n×n) to P∘(dP - rowsum(dP∘P)), P
// the matching row of p (row stride ldp) and dP the row itself: the
// softmax's backward. Each row sum is taken in float64 in column order;
// four rows go at a time, so that their four sums' chains of additions
// overlap, with the bits of one row at a time. Every product is rounded
// before it is added (no fused multiply-add in any build).
func softmaxGradRows[T float](p []T, ldp int, ds []T, n int) {
	i := 0
	for ; i+4 <= n; i += 4 {
		p0, p1, p2, p3 := p[i*ldp:i*ldp+n], p[(i+1)*ldp:(i+1)*ldp+n], p[(i+2)*ldp:(i+2)*ldp+n], p[(i+3)*ldp:(i+3)*ldp+n]
		d0, d1, d2, d3 := ds[i*n:(i+1)*n], ds[(i+1)*n:(i+2)*n], ds[(i+2)*n:(i+3)*n], ds[(i+3)*n:(i+4)*n]
		var s0, s1, s2, s3 float64
		for jj := range d0 {
			s0 += float64(float64(d0[jj]) * float64(p0[jj]))
			s1 += float64(float64(d1[jj]) * float64(p1[jj]))
			s2 += float64(float64(d2[jj]) * float64(p2[jj]))
			s3 += float64(float64(d3[jj]) * float64(p3[jj]))
		}
		softmaxGradRow(p0, d0, T(s0))
		softmaxGradRow(p1, d1, T(s1))
		softmaxGradRow(p2, d2, T(s2))
		softmaxGradRow(p3, d3, T(s3))
	}
	for ; i < n; i++ {
		pr, dr := p[i*ldp:i*ldp+n], ds[i*n:(i+1)*n]
		s := 0.0
		for jj := range dr {
			s += float64(float64(dr[jj]) * float64(pr[jj]))
		}
		softmaxGradRow(pr, dr, T(s))
	}
}

// softmaxGradRow sets d[j] = p[j]·(d[j] - st) (len(p) == len(d)).
func softmaxGradRow[T float](p, d []T, st T) {
	if is32[T]() && useSIMD && len(d) >= 8 {
		// d - st is d + (-st) exactly.
		addScalarVec32SIMD(f32s(d), f32s(d), float32(-st))
		arithVec32SIMD(BinaryMul, f32s(d), f32s(p), f32s(d), 0)
		return
	}
	for j := range d {
		d[j] = p[j] * (d[j] - st)
	}
}

// attnHead holds the offsets and row strides of one (batch, head) pair of
// the operands of the attention backward.
type attnHead struct {
	oq, ldq, ok, ldk, ov, ldv, og, ldg int
	odq, lddq, odk, lddk, odv, lddv    int
}

func (a *attnHead) set(tq, tk, tv, tg, tdq, tdk, tdv *Tensor, bh, nh int) {
	a.oq, a.ldq = headOff(tq, bh, nh)
	a.ok, a.ldk = headOff(tk, bh, nh)
	a.ov, a.ldv = headOff(tv, bh, nh)
	a.og, a.ldg = headOff(tg, bh, nh)
	a.odq, a.lddq = headOff(tdq, bh, nh)
	a.odk, a.lddk = headOff(tdk, bh, nh)
	a.odv, a.lddv = headOff(tdv, bh, nh)
}

// attnBackHead computes the attention gradients of one head from its
// probabilities p (n×n, row stride ldp) with ds (n×n) as scratch.
func attnBackHead[T float](a *attnHead, n, dh int, scale T, p []T, ldp int, ds, q, k, v, g, dq, dk, dv []T) {
	// dv = Pᵀ·gout
	gemmT(true, false, n, dh, n, 1, p, ldp, g[a.og:], a.ldg, 0, dv[a.odv:], a.lddv)
	// dP = gout·vᵀ
	gemmT(false, true, n, n, dh, 1, g[a.og:], a.ldg, v[a.ov:], a.ldv, 0, ds, n)
	softmaxGradRows(p, ldp, ds, n)
	// dq = scale·dS·k,  dk = scale·dSᵀ·q
	gemmT(false, false, n, dh, n, scale, ds, n, k[a.ok:], a.ldk, 0, dq[a.odq:], a.lddq)
	gemmT(true, false, n, dh, n, scale, ds, n, q[a.oq:], a.ldq, 0, dk[a.odk:], a.lddk)
}

// ---- AdamW ----

func (cpuBackend) AdamWStep(param, grad, m, v *Tensor, lr, beta1, beta2, eps, weightDecay float64, step int) {
	j := getJob(pick(param.dtype, adamWRange[float32], adamWRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3] = param, grad, m, v
	bc1 := 1 - math.Pow(beta1, float64(step))
	bc2 := 1 - math.Pow(beta2, float64(step))
	j.f[0], j.f[1], j.f[2], j.f[3], j.f[4] = lr, beta1, beta2, eps, weightDecay
	j.f[5], j.f[6] = 1/math.Sqrt(bc2), lr/bc1
	j.l.setup(param.shape, param, grad, m, v)
	j.run(j.l.size, parallelGrain/4)
	putJob(j)
}

func adamWRange[T float](j *job, lo, hi int) {
	p, g, m, v := data[T](j.t[0]), data[T](j.t[1]), data[T](j.t[2]), data[T](j.t[3])
	lr, b1, b2, eps, wd, ibc2, stepSize := j.f[0], j.f[1], j.f[2], j.f[3], j.f[4], j.f[5], j.f[6]
	decay := T(1 - lr*wd)
	l := &j.l
	var c cursor
	l.seek(&c, lo)
	in := l.nd - 1
	s0, s1, s2, s3 := l.str[0][in], l.str[1][in], l.str[2][in], l.str[3][in]
	simd := is32[T]() && useSIMD && s0 == 1 && s1 == 1 && s2 == 1 && s3 == 1
	consts := [8]float64{b1, 1 - b1, b2, 1 - b2, stepSize, ibc2, eps, float64(decay)}
	for pos := lo; pos < hi; {
		n := min(l.dims[in]-c.idx[in], hi-pos)
		i0 := 0
		if simd {
			o0, o1, o2, o3 := c.off[0], c.off[1], c.off[2], c.off[3]
			i0 = adamW32SIMD(f32s(p[o0:o0+n]), f32s(g[o1:o1+n]), f32s(m[o2:o2+n]), f32s(v[o3:o3+n]), &consts)
		}
		for i := i0; i < n; i++ {
			ip, ig, im, iv := c.off[0]+i*s0, c.off[1]+i*s1, c.off[2]+i*s2, c.off[3]+i*s3
			// Every product rounded on its own (no fused multiply-add), as
			// adamWAVX2 does.
			gi := float64(g[ig])
			mi := float64(b1*float64(m[im])) + float64((1-b1)*gi)
			vi := float64(b2*float64(v[iv])) + float64(float64((1-b2)*gi)*gi)
			m[im], v[iv] = T(mi), T(vi)
			p[ip] = T(p[ip]*decay) - T(float64(stepSize*mi)/(float64(math.Sqrt(vi)*ibc2)+eps))
		}
		pos += n
		if pos < hi {
			l.advance(&c, n)
		}
	}
}
