package tensor

// Fused ops of the diffusion transformer (package dit): adaLN modulation of
// a layer norm, the gated residual, bias + GELU, and attention that keeps
// only the row log-sum-exp instead of the (B, H, N, N) probabilities.
//
// The modulation tensors (shift, scale, gate) hold one vector per set and
// broadcast over the set's tokens: x is (G, R, D) — G sets of R tokens of
// width D — and a modulation tensor is (G, D), possibly strided (a slice of
// the adaLN projection).

// checkSets panics unless x is (G, R, D) and every non-nil m is (G, D) of
// x's dtype. It returns G, R and D.
func checkSets(name string, x *Tensor, ms ...*Tensor) (g, r, d int) {
	if len(x.shape) != 3 {
		fail(ErrShape, name, "x shape %v, want (G, R, D)", x.shape)
	}
	g, r, d = x.shape[0], x.shape[1], x.shape[2]
	for _, m := range ms {
		if m != nil {
			wantShape(name, "shift/scale/gate", m, x.dtype, []int{g, d})
		}
	}
	return g, r, d
}

// wantVec panics unless the optional t is a vector (d) of dtype dt.
func wantVec(name, what string, t *Tensor, dt DType, d int) {
	if t != nil {
		wantShape(name, what, t, dt, []int{d})
	}
}

// LayerNormModulate is LayerNorm followed by adaLN modulation, per set g:
//
//	u = (x - mean)·rstd·gamma + beta          (LayerNorm over the last axis)
//	y[g, r, :] = u + u·scale[g, :] + shift[g, :]
//
// x is (G, R, D); shift and scale are (G, D) and broadcast over the R
// tokens of a set; gamma and beta are (D) or nil. mean and rstd (G, R)
// receive the row statistics for LayerNormModulateBackward (nil when not
// needed). y (nil allocates) has x's shape and is returned. The CPU backend
// rounds exactly as LayerNorm followed by Mul, Add and Add do.
func LayerNormModulate(y, mean, rstd, x, gamma, beta, shift, scale *Tensor, eps float64) *Tensor {
	const name = "LayerNormModulate"
	be := pickBackend(name, y, x, mean, rstd, gamma, beta, shift, scale)
	if shift == nil || scale == nil {
		fail(ErrShape, name, "shift and scale are required")
	}
	g, r, d := checkSets(name, x, shift, scale)
	if y == nil {
		y = EmptyOn(be, x.dtype, x.shape...)
	} else {
		wantShape(name, "y", y, x.dtype, x.shape)
	}
	for _, s := range [...]*Tensor{mean, rstd} {
		if s != nil {
			wantShape(name, "mean/rstd", s, x.dtype, []int{g, r})
		}
	}
	wantVec(name, "gamma", gamma, x.dtype, d)
	wantVec(name, "beta", beta, x.dtype, d)
	if x.Size() > 0 {
		be.LayerNormModulate(y, mean, rstd, x, gamma, beta, shift, scale, eps)
	}
	return y
}

// LayerNormModulateBackward computes the gradients of LayerNormModulate from
// the upstream gradient gy and the saved mean and rstd:
//
//	dshift[g] = Σ_r gy,  dscale[g] = Σ_r gy·u
//	gu = gy + gy·scale[g]
//	dx = LayerNormBackward of gu,  dgamma += Σ gu·xhat,  dbeta += Σ gu
//
// dx (nil allocates) is overwritten and returned. dshift and dscale (G, D)
// are overwritten and may be nil; dgamma and dbeta (D) accumulate, as in
// LayerNormBackward, and may be nil. gamma and beta are the forward's (nil
// for 1 and 0); scale is required.
func LayerNormModulateBackward(dx, dgamma, dbeta, dshift, dscale, gy, x, mean, rstd, gamma, beta, scale *Tensor) *Tensor {
	const name = "LayerNormModulateBackward"
	be := pickBackend(name, dx, dgamma, dbeta, dshift, dscale, gy, x, mean, rstd, gamma, beta, scale)
	if scale == nil || mean == nil || rstd == nil || gy == nil {
		fail(ErrShape, name, "gy, mean, rstd and scale are required")
	}
	g, r, d := checkSets(name, x, dshift, dscale, scale)
	wantShape(name, "gy", gy, x.dtype, x.shape)
	wantShape(name, "mean", mean, x.dtype, []int{g, r})
	wantShape(name, "rstd", rstd, x.dtype, []int{g, r})
	if dx == nil {
		dx = EmptyOn(be, x.dtype, x.shape...)
	} else {
		wantShape(name, "dx", dx, x.dtype, x.shape)
	}
	wantVec(name, "gamma", gamma, x.dtype, d)
	wantVec(name, "beta", beta, x.dtype, d)
	wantVec(name, "dgamma", dgamma, x.dtype, d)
	wantVec(name, "dbeta", dbeta, x.dtype, d)
	if x.Size() > 0 {
		be.LayerNormModulateBackward(dx, dgamma, dbeta, dshift, dscale, gy, x, mean, rstd, gamma, beta, scale)
	} else {
		// No tokens: the per-set sums are 0.
		for _, t := range [...]*Tensor{dshift, dscale} {
			if t != nil && t.Size() > 0 {
				be.Fill(t, 0)
			}
		}
	}
	return dx
}

// GateResidual returns out = x + gate·h, the gated residual of an adaLN
// block: x and h are (G, R, D) and gate (G, D) broadcasts over the R tokens
// of a set. out (nil allocates) may be x itself. The CPU backend rounds
// exactly as Mul followed by Add do.
func GateResidual(out, x, gate, h *Tensor) *Tensor {
	const name = "GateResidual"
	be := pickBackend(name, out, x, gate, h)
	if gate == nil || h == nil {
		fail(ErrShape, name, "gate and h are required")
	}
	checkSets(name, x, gate)
	wantShape(name, "h", h, x.dtype, x.shape)
	if out == nil {
		out = EmptyOn(be, x.dtype, x.shape...)
	} else {
		wantShape(name, "out", out, x.dtype, x.shape)
	}
	if x.Size() > 0 {
		be.GateResidual(out, x, gate, h)
	}
	return out
}

// GateResidualBackward computes the gradients of GateResidual with respect
// to h and gate from the upstream gradient gy (x's gradient is gy itself):
//
//	dh = gy·gate[g],  dgate[g] = Σ_r gy·h
//
// Both are overwritten; either may be nil.
func GateResidualBackward(dh, dgate, gy, h, gate *Tensor) {
	const name = "GateResidualBackward"
	be := pickBackend(name, dh, dgate, gy, h, gate)
	if gy == nil || h == nil || gate == nil {
		fail(ErrShape, name, "gy, h and gate are required")
	}
	checkSets(name, h, gate, dgate)
	wantShape(name, "gy", gy, h.dtype, h.shape)
	if dh != nil {
		wantShape(name, "dh", dh, h.dtype, h.shape)
	}
	if dh == nil && dgate == nil {
		return
	}
	if h.Size() > 0 {
		be.GateResidualBackward(dh, dgate, gy, h, gate)
	} else if dgate != nil && dgate.Size() > 0 {
		be.Fill(dgate, 0)
	}
}

// BiasGELU returns y = GELU(x + bias) with the exact (erf) GELU: x is
// (..., D) and bias (D) broadcasts over the rows; bias may be nil (then y =
// GELU(x), rounded exactly as the GELU op). y (nil allocates) has x's shape.
func BiasGELU(y, x, bias *Tensor) *Tensor {
	const name = "BiasGELU"
	be := pickBackend(name, y, x, bias)
	if len(x.shape) == 0 {
		fail(ErrShape, name, "x is a scalar")
	}
	wantVec(name, "bias", bias, x.dtype, x.shape[len(x.shape)-1])
	if y == nil {
		y = EmptyOn(be, x.dtype, x.shape...)
	} else {
		wantShape(name, "y", y, x.dtype, x.shape)
	}
	if x.Size() > 0 {
		be.BiasGELU(y, x, bias)
	}
	return y
}

// BiasGELUBackward computes the gradients of BiasGELU from the upstream
// gradient gy:
//
//	dx = gy·GELU'(x + bias),  dbias += Σ_rows dx
//
// dx (nil allocates) is overwritten and returned; dbias (D) accumulates, as
// LayerNormBackward's parameter gradients do, and may be nil; bias may be nil.
func BiasGELUBackward(dx, dbias, gy, x, bias *Tensor) *Tensor {
	const name = "BiasGELUBackward"
	be := pickBackend(name, dx, dbias, gy, x, bias)
	if gy == nil {
		fail(ErrShape, name, "gy is required")
	}
	if len(x.shape) == 0 {
		fail(ErrShape, name, "x is a scalar")
	}
	d := x.shape[len(x.shape)-1]
	wantShape(name, "gy", gy, x.dtype, x.shape)
	wantVec(name, "bias", bias, x.dtype, d)
	wantVec(name, "dbias", dbias, x.dtype, d)
	if dx == nil {
		dx = EmptyOn(be, x.dtype, x.shape...)
	} else {
		wantShape(name, "dx", dx, x.dtype, x.shape)
	}
	if x.Size() > 0 {
		be.BiasGELUBackward(dx, dbias, gy, x, bias)
	}
	return dx
}

// FlashAttentionMaxTokens and FlashAttentionMaxHeadDim bound the sizes that
// FlashAttention and FlashAttentionBackward accept on every backend: N
// tokens per set and Dh per head (a GPU kernel keeps a head's rows in one
// block and a row's accumulators in registers). Larger attention goes
// through Attention and AttentionBackward.
const (
	FlashAttentionMaxTokens  = 128
	FlashAttentionMaxHeadDim = 64
)

// FlashAttentionFits reports whether FlashAttention accepts n tokens of
// head dimension dh.
func FlashAttentionFits(n, dh int) bool {
	return n <= FlashAttentionMaxTokens && dh <= FlashAttentionMaxHeadDim
}

func checkFlash(name string, q, k, v *Tensor) (b, h, n, dh int) {
	b, h, n, dh = checkAttention(name, q, k, v)
	if !FlashAttentionFits(n, dh) {
		fail(ErrShape, name, "N %d, Dh %d: at most %d tokens of at most %d per head", n, dh,
			FlashAttentionMaxTokens, FlashAttentionMaxHeadDim)
	}
	return b, h, n, dh
}

// FlashAttention computes the same out as Attention (scaled dot-product
// attention with a key-padding mask) without the (B, H, N, N)
// probabilities: it saves only the log-sum-exp of each score row,
//
//	lse[b, h, i] = log Σ_{j kept} exp(scale·q_i·k_j)
//
// (-Inf for a row whose keys are all masked, whose output is 0), from which
// FlashAttentionBackward recomputes the probabilities. q, k, v and out are
// (B, H, N, Dh) with N <= FlashAttentionMaxTokens and Dh <=
// FlashAttentionMaxHeadDim; keyMask is (B, N) (nil: all real); lse is
// (B, H, N), or nil when only out is wanted (sampling: the CPU backend then
// skips the logarithms). out (nil allocates) is returned. The CPU backend
// computes out exactly as Attention does.
func FlashAttention(out, lse, q, k, v, keyMask *Tensor, scale float64) *Tensor {
	const name = "FlashAttention"
	be := pickBackend(name, out, lse, q, k, v, keyMask)
	b, h, n, _ := checkFlash(name, q, k, v)
	if out == nil {
		out = NewOn(be, q.dtype, q.shape...)
	} else {
		wantShape(name, "out", out, q.dtype, q.shape)
	}
	if lse != nil {
		wantShape(name, "lse", lse, q.dtype, []int{b, h, n})
	}
	if keyMask != nil {
		wantShape(name, "keyMask", keyMask, q.dtype, []int{b, n})
	}
	if q.Size() > 0 {
		be.FlashAttention(out, lse, q, k, v, keyMask, scale)
	}
	return out
}

// FlashAttentionBackward computes the gradients of FlashAttention from the
// upstream gradient gout, the forward's out and lse and the same keyMask,
// recomputing the probabilities P = exp(scale·q·kᵀ - lse) (0 at masked
// keys) instead of reading them:
//
//	dv = Pᵀ·gout,  dP = gout·vᵀ,  dS = P∘(dP - rowsum(dP∘P))
//	dq = scale·dS·k,  dk = scale·dSᵀ·q
//
// (a GPU backend takes rowsum(dP∘P) as the equal gout_i·out_i). dq, dk and
// dv are required and overwritten. A row whose keys are all masked
// contributes nothing. The CPU backend recomputes the softmax exactly
// as the forward did, so its gradients equal AttentionBackward's.
func FlashAttentionBackward(dq, dk, dv, gout, q, k, v, out, lse, keyMask *Tensor, scale float64) {
	const name = "FlashAttentionBackward"
	be := pickBackend(name, dq, dk, dv, gout, q, k, v, out, lse, keyMask)
	b, h, n, _ := checkFlash(name, q, k, v)
	for _, s := range [...]struct {
		t    *Tensor
		what string
	}{{dq, "dq"}, {dk, "dk"}, {dv, "dv"}, {gout, "gout"}, {out, "out"}} {
		if s.t == nil {
			fail(ErrShape, name, "%s is nil", s.what)
		}
		wantShape(name, s.what, s.t, q.dtype, q.shape)
	}
	if lse == nil {
		fail(ErrShape, name, "lse is nil")
	}
	wantShape(name, "lse", lse, q.dtype, []int{b, h, n})
	if keyMask != nil {
		wantShape(name, "keyMask", keyMask, q.dtype, []int{b, n})
	}
	if q.Size() > 0 {
		be.FlashAttentionBackward(dq, dk, dv, gout, q, k, v, out, lse, keyMask, scale)
	}
}
