package tensor

// The LG-VAE decoder's row-wise DeepSet (package vae) as one op: for every
// score s[r, j] of a row r (node i of a graph and edge class, against every
// node j), a hidden vector of width D
//
//	h[r, j, :] = s[r, j]·ws + bs + ctx[r, :]
//
// goes through the exact GELU and a linear read-out to one logit. Composed
// from unfused ops this materialises several (R, N, D) tensors, forward and
// backward; the fused op keeps only (R, N) and (R, D) ones and recomputes h
// in the backward.

// checkDeepSet panics unless s is (R, N), ctx is (R, D) with D >= 1, the
// non-nil vectors (ws, bs, wo, ...) are (D) and every operand has s's
// dtype. It returns R, N and D.
func checkDeepSet(name string, s, ctx *Tensor, vecs ...*Tensor) (r, n, d int) {
	if s == nil || ctx == nil {
		fail(ErrShape, name, "s and ctx are required")
	}
	if len(s.shape) != 2 {
		fail(ErrShape, name, "s shape %v, want (R, N)", s.shape)
	}
	r, n = s.shape[0], s.shape[1]
	if len(ctx.shape) != 2 || ctx.shape[0] != r || ctx.shape[1] < 1 {
		fail(ErrShape, name, "ctx shape %v for s %v, want (%d, D) with D >= 1", ctx.shape, s.shape, r)
	}
	d = ctx.shape[1]
	wantShape(name, "ctx", ctx, s.dtype, ctx.shape)
	for _, v := range vecs {
		wantVec(name, "ws/bs/wo", v, s.dtype, d)
	}
	return r, n, d
}

// DeepSetScores computes the row-wise DeepSet read-out of the scores s:
//
//	y[r, j] = bo + Σ_d wo[d]·GELU(s[r, j]·ws[d] + bs[d] + ctx[r, d])
//
// with the exact (erf) GELU. s is (R, N), ctx (R, D) (the context vector of
// each row), ws, bs and wo are (D) and bo is (1); all are required. y (nil
// allocates) is (R, N) and is returned. The CPU backend rounds the
// pre-activation as Mul, Add and Add do ((s·ws + bs) + ctx) and the GELU as
// the GELU op, and sums the read-out in float64.
func DeepSetScores(y, s, ctx, ws, bs, wo, bo *Tensor) *Tensor {
	const name = "DeepSetScores"
	be := pickBackend(name, y, s, ctx, ws, bs, wo, bo)
	if ws == nil || bs == nil || wo == nil || bo == nil {
		fail(ErrShape, name, "ws, bs, wo and bo are required")
	}
	_, _, _ = checkDeepSet(name, s, ctx, ws, bs, wo)
	wantVec(name, "bo", bo, s.dtype, 1)
	if y == nil {
		y = EmptyOn(be, s.dtype, s.shape...)
	} else {
		wantShape(name, "y", y, s.dtype, s.shape)
	}
	if s.Size() > 0 {
		be.DeepSetScores(y, s, ctx, ws, bs, wo, bo)
	}
	return y
}

// DeepSetScoresBackward computes the gradients of DeepSetScores from the
// upstream gradient gy (R, N), recomputing h = s·ws + bs + ctx instead of
// reading it. With dh[r, j, d] = gy[r, j]·wo[d]·GELU'(h[r, j, d]):
//
//	ds[r, j] = Σ_d dh·ws[d],  dctx[r, d] = Σ_j dh
//	dws += Σ_{r,j} dh·s,  dbs += Σ_{r,j} dh
//	dwo += Σ_{r,j} gy·GELU(h),  dbo += Σ_{r,j} gy
//
// ds (R, N) and dctx (R, D) are overwritten; the parameter gradients dws,
// dbs, dwo (D) and dbo (1) accumulate, as LayerNormBackward's do. Any of
// the six may be nil when not needed. gy, s, ctx, ws, bs and wo are
// required (bo does not enter the gradients). Backends sum in float64 in
// an order that depends only on the shapes, so the results do not depend
// on the number of threads.
func DeepSetScoresBackward(ds, dctx, dws, dbs, dwo, dbo, gy, s, ctx, ws, bs, wo *Tensor) {
	const name = "DeepSetScoresBackward"
	be := pickBackend(name, ds, dctx, dws, dbs, dwo, dbo, gy, s, ctx, ws, bs, wo)
	if gy == nil || ws == nil || bs == nil || wo == nil {
		fail(ErrShape, name, "gy, ws, bs and wo are required")
	}
	r, _, d := checkDeepSet(name, s, ctx, ws, bs, wo, dws, dbs, dwo)
	wantVec(name, "dbo", dbo, s.dtype, 1)
	wantShape(name, "gy", gy, s.dtype, s.shape)
	if ds != nil {
		wantShape(name, "ds", ds, s.dtype, s.shape)
	}
	if dctx != nil {
		wantShape(name, "dctx", dctx, s.dtype, []int{r, d})
	}
	if ds == nil && dctx == nil && dws == nil && dbs == nil && dwo == nil && dbo == nil {
		return
	}
	if s.Size() > 0 {
		be.DeepSetScoresBackward(ds, dctx, dws, dbs, dwo, dbo, gy, s, ctx, ws, bs, wo)
	} else if dctx != nil && dctx.Size() > 0 {
		// Rows without scores: their context gradients are empty sums.
		be.Fill(dctx, 0)
	}
}
