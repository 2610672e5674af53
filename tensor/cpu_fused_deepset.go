package tensor

// CPU implementation of the fused row-wise DeepSet (fused_deepset.go).
// Rows are split over threads. Each row's N×D block of pre-activations h
// (d innermost) is built in scratch memory, rounded as the Mul, Add and
// Add ops round, and goes through the vectorised GELU (or GELUGrad) in one
// call, rounded as those ops round; the small dot products and sums that
// follow accumulate in float64. The parameter gradients are summed per
// chunk of rows and the chunks added in order, so the results depend only
// on the shapes, not on the number of threads.

// deepSetCost is the forward's work per element of h, for runRows (the
// backward's is twice as much).
const deepSetCost = 12

// The parameter gradients a DeepSetScoresBackward call wants (job.n[3]).
const (
	deepSetWantWS = 1 << iota
	deepSetWantBS
	deepSetWantWO
	deepSetWantBO
)

func (cpuBackend) DeepSetScores(y, s, ctx, ws, bs, wo, bo *Tensor) {
	s, ctx = s.Contiguous(), ctx.Contiguous()
	ws, bs, wo, bo = ws.Contiguous(), bs.Contiguous(), wo.Contiguous(), bo.Contiguous()
	o := contigDst(y, false)
	n, d := s.shape[1], ctx.shape[1]
	j := getJob(pick(s.dtype, deepSetRange[float32], deepSetRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5], j.t[6] = o, s, ctx, ws, bs, wo, bo
	j.n[0], j.n[1] = n, d
	j.runRows(s.shape[0], deepSetCost*n*d)
	putJob(j)
	finishDst(y, o)
}

func deepSetRange[T float](j *job, lo, hi int) {
	y, s, ctx := contig[T](j.t[0]), contig[T](j.t[1]), contig[T](j.t[2])
	n, d := j.n[0], j.n[1]
	ws, bs, wo := contig[T](j.t[3])[:d], contig[T](j.t[4])[:d], contig[T](j.t[5])[:d]
	bo := float64(contig[T](j.t[6])[0])
	sp, h := scratchT[T](n * d)
	for r := lo; r < hi; r++ {
		deepSetPre(h, s[r*n:(r+1)*n], ctx[r*d:(r+1)*d], ws, bs)
		geluRow(h, h)
		yr := y[r*n : (r+1)*n]
		for i := range yr {
			yr[i] = T(bo + dot64(h[i*d:(i+1)*d], wo))
		}
	}
	putScratch(sp)
}

// deepSetPre sets the block h (len(s) rows of D = len(ws), d innermost)
// to (s[j]·ws + bs) + ctx, each operation rounded to T as the Mul, Add and
// Add ops round.
func deepSetPre[T float](h, s, ctx, ws, bs []T) {
	d := len(ws)
	for j, sv := range s {
		hj := h[j*d : (j+1)*d]
		w, b, c := ws[:len(hj)], bs[:len(hj)], ctx[:len(hj)]
		for k := range hj {
			hj[k] = T(T(sv*w[k])+b[k]) + c[k]
		}
	}
}

// outerRows sets the block x (len(a) rows of D = len(b), d innermost) to
// x[j, k] = a[j]·b[k], each product rounded to T.
func outerRows[T float](x, a, b []T) {
	d := len(b)
	for j, av := range a {
		xj := x[j*d : (j+1)*d]
		bj := b[:len(xj)]
		for k := range xj {
			xj[k] = av * bj[k]
		}
	}
}

// colDot64 adds Σ_j w[j]·x[j, k] to acc[k] in float64 (exact products for
// float32), j in order, for the block x of len(w) rows of D = len(acc)
// (d innermost). Four columns at a time keep their sums in registers.
func colDot64[T float](acc []float64, x, w []T) {
	d := len(acc)
	k := 0
	for ; k+4 <= d; k += 4 {
		a0, a1, a2, a3 := acc[k], acc[k+1], acc[k+2], acc[k+3]
		for j, wj := range w {
			xj := x[j*d+k : j*d+k+4]
			f := float64(wj)
			a0 += float64(xj[0]) * f
			a1 += float64(xj[1]) * f
			a2 += float64(xj[2]) * f
			a3 += float64(xj[3]) * f
		}
		acc[k], acc[k+1], acc[k+2], acc[k+3] = a0, a1, a2, a3
	}
	for ; k < d; k++ {
		a := acc[k]
		for j, wj := range w {
			a += float64(x[j*d+k]) * float64(wj)
		}
		acc[k] = a
	}
}

// dot64 returns Σ a[k]·b[k] in float64 (exact products for float32), in
// four interleaved partial sums added as (s0 + s1) + (s2 + s3).
func dot64[T float](a, b []T) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	k := 0
	for ; k+4 <= len(a); k += 4 {
		ak, bk := a[k:k+4:k+4], b[k:k+4:k+4]
		s0 += float64(ak[0]) * float64(bk[0])
		s1 += float64(ak[1]) * float64(bk[1])
		s2 += float64(ak[2]) * float64(bk[2])
		s3 += float64(ak[3]) * float64(bk[3])
	}
	for ; k < len(a); k++ {
		s0 += float64(a[k]) * float64(b[k])
	}
	return (s0 + s1) + (s2 + s3)
}

// geluGradRow sets d = gy·GELU'(a) as the GELUGrad op does (d may be gy).
func geluGradRow[T float](d, a, gy []T) {
	if is32[T]() {
		geluGradVec32(f32s(d), f32s(a), f32s(gy))
		return
	}
	for i := range d {
		d[i] = gy[i] * geluGradT(a[i])
	}
}

// colSums64 adds the rows rows of x (row r at x[r*len(acc):]) to acc, in
// float64, row after row.
func colSums64[T float](acc []float64, x []T, rows int) {
	d := len(acc)
	k := 0
	if is32[T]() && useSIMD {
		k = colAcc64SIMD(acc, f32s(x), d, rows)
	}
	if k == d {
		return
	}
	for r := range rows {
		xr := x[r*d+k : (r+1)*d]
		for i, v := range xr {
			acc[k+i] += float64(v)
		}
	}
}

func (cpuBackend) DeepSetScoresBackward(ds, dctx, dws, dbs, dwo, dbo, gy, s, ctx, ws, bs, wo *Tensor) {
	gy, s, ctx = gy.Contiguous(), s.Contiguous(), ctx.Contiguous()
	ws, bs, wo = ws.Contiguous(), bs.Contiguous(), wo.Contiguous()
	ods, odc := optDst(ds, false), optDst(dctx, false)
	r, n, d := s.shape[0], s.shape[1], ctx.shape[1]
	want := 0
	for i, t := range [...]*Tensor{dws, dbs, dwo, dbo} {
		if t != nil {
			want |= 1 << i
		}
	}
	j := getJob(pick(s.dtype, deepSetBackRange[float32], deepSetBackRange[float64]))
	j.t[0], j.t[1], j.t[2], j.t[3], j.t[4], j.t[5], j.t[6], j.t[7] = ods, odc, gy, s, ctx, ws, bs, wo
	cost := 2 * deepSetCost * n * d
	_, nch := chunking(r, max(1, parallelGrain/cost))
	// Per chunk: the partial sums of dws, dbs, dwo and dbo (3d+1) and a
	// row's dctx sums (d). The blocks of a row come from scratchT.
	width := 4*d + 1
	p := getScratch(width * nch)
	j.s64 = *p
	j.n[0], j.n[1], j.n[2], j.n[3] = n, d, width, want
	nc := j.runRows(r, cost)
	putJob(j)
	optFinish(ds, ods)
	optFinish(dctx, odc)
	if want != 0 {
		part := *p
		np := 3*d + 1
		for c := 1; c < nc; c++ {
			pc := part[c*width : c*width+np]
			for i, v := range pc {
				part[i] += v
			}
		}
		addParamGrad(dws, part[:d])
		addParamGrad(dbs, part[d:2*d])
		addParamGrad(dwo, part[2*d:3*d])
		addParamGrad(dbo, part[3*d:np])
	}
	putScratch(p)
}

func deepSetBackRange[T float](j *job, lo, hi int) {
	ds, dctx := optContig[T](j.t[0]), optContig[T](j.t[1])
	gy, s, ctx := contig[T](j.t[2]), contig[T](j.t[3]), contig[T](j.t[4])
	n, d, width, want := j.n[0], j.n[1], j.n[2], j.n[3]
	ws, bs, wo := contig[T](j.t[5])[:d], contig[T](j.t[6])[:d], contig[T](j.t[7])[:d]
	c := lo / j.chunk
	sc := j.s64[c*width : (c+1)*width]
	np := 3*d + 1
	part := sc[:np]
	clear(part)
	pws, pbs, pwo := part[:d], part[d:2*d], part[2*d:3*d]
	rowc := sc[np : np+d]
	// The blocks h, dh and, for dwo, GELU(h).
	nd, blocks := n*d, 2
	if want&deepSetWantWO != 0 {
		blocks = 3
	}
	sp, blk := scratchT[T](blocks * nd)
	h, dh := blk[:nd], blk[nd:2*nd]
	var gl []T
	if blocks == 3 {
		gl = blk[2*nd : 3*nd]
	}
	wantRowSums := dctx != nil || want&deepSetWantBS != 0
	for r := lo; r < hi; r++ {
		sr, gr := s[r*n:(r+1)*n], gy[r*n:(r+1)*n]
		deepSetPre(h, sr, ctx[r*d:(r+1)*d], ws, bs)
		// dh = (gy·wo)·GELU'(h), rounded as the read-out's gradient
		// (a product) and the GELUGrad op.
		outerRows(dh, gr, wo)
		geluGradRow(dh, h, dh)
		if ds != nil {
			dr := ds[r*n : (r+1)*n]
			for i := range dr {
				dr[i] = T(dot64(dh[i*d:(i+1)*d], ws))
			}
		}
		if want&deepSetWantWS != 0 {
			colDot64(pws, dh, sr)
		}
		if gl != nil {
			geluRow(gl, h)
			colDot64(pwo, gl, gr)
		}
		if wantRowSums {
			clear(rowc)
			colSums64(rowc, dh, n)
			if dctx != nil {
				dc := dctx[r*d : (r+1)*d]
				for k, v := range rowc {
					dc[k] = T(v)
				}
			}
			if want&deepSetWantBS != 0 {
				for k, v := range rowc {
					pbs[k] += v
				}
			}
		}
		if want&deepSetWantBO != 0 {
			for _, g := range gr {
				part[3*d] += float64(g)
			}
		}
	}
	putScratch(sp)
}
