package cuda

import (
	"unsafe"

	"lgflow/tensor"
)

// The diffusion transformer's fused ops (tensor/fused_dit.go), with the
// kernels of kernels/dit.cu and kernels/attention.cu.

// setStrides returns the two strides of an optional (G, D) per-set tensor.
func setStrides(t *tensor.Tensor) (int, int) {
	if t == nil {
		return 0, 0
	}
	s := t.Strides()
	return s[0], s[1]
}

// tmpList collects temporaries to free when an op returns.
type tmpList []*tensor.Tensor

// contig returns t or a contiguous copy recorded in l (nil stays nil).
func (l *tmpList) contig(b *Backend, t *tensor.Tensor) *tensor.Tensor {
	if t == nil {
		return nil
	}
	c, tmp := b.contig(t)
	if tmp {
		*l = append(*l, c)
	}
	return c
}

func (l tmpList) free(b *Backend) {
	for _, t := range l {
		b.free(t)
	}
}

// setGrid returns the block count along x of a kernel with one thread per
// column of d.
func setGrid(d int) int { return (d + threads - 1) / threads }

// LayerNormModulate normalises the rows of x and applies the adaLN
// modulation of their set (see tensor.LayerNormModulate): one block per
// row.
func (b *Backend) LayerNormModulate(y, mean, rstd, x, gamma, beta, shift, scale *tensor.Tensor, eps float64) {
	b.enter()
	defer b.exit()
	var tmps tmpList
	defer func() { tmps.free(b) }()
	x = tmps.contig(b, x)
	out := b.contigDst(y, false)
	var mo, ro *tensor.Tensor
	if mean != nil {
		mo = b.contigDst(mean, false)
	}
	if rstd != nil {
		ro = b.contigDst(rstd, false)
	}
	s := x.Shape()
	rows, d := s[0]*s[1], s[2]
	sh0, sh1 := setStrides(shift)
	sc0, sc1 := setStrides(scale)
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.optPtr(mo)).ptr(b.optPtr(ro)).ptr(b.dptr(x))
	b.args.ptr(b.optPtr(gamma)).i64(vecStride(gamma)).ptr(b.optPtr(beta)).i64(vecStride(beta))
	b.args.ptr(b.dptr(shift)).i64(sh0).i64(sh1).ptr(b.dptr(scale)).i64(sc0).i64(sc1)
	b.args.i64(rows).i64(s[1]).i64(d).f64(eps)
	b.launch(kLNMod, dtv(x.DType()), min(rows, 1<<20), 1, rowThreads(d, 256))
	b.finishDst(y, out)
	if mean != nil {
		b.finishDst(mean, mo)
	}
	if rstd != nil {
		b.finishDst(rstd, ro)
	}
}

// LayerNormModulateBackward computes dx (one block per row), then the
// per-set sums dshift, dscale and the per-set partials of dgamma and dbeta
// (one thread per column of a set), which add_param_grads sums in set
// order: deterministic.
func (b *Backend) LayerNormModulateBackward(dx, dgamma, dbeta, dshift, dscale, gy, x, mean, rstd, gamma, beta, scale *tensor.Tensor) {
	b.enter()
	defer b.exit()
	var tmps tmpList
	defer func() { tmps.free(b) }()
	x, gy, mean, rstd = tmps.contig(b, x), tmps.contig(b, gy), tmps.contig(b, mean), tmps.contig(b, rstd)
	out := b.contigDst(dx, false)
	s := x.Shape()
	g, r, d := s[0], s[1], s[2]
	rows := g * r
	v := dtv(x.DType())
	sc0, sc1 := setStrides(scale)
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.dptr(gy)).ptr(b.dptr(x)).ptr(b.dptr(mean)).ptr(b.dptr(rstd))
	b.args.ptr(b.optPtr(gamma)).i64(vecStride(gamma)).ptr(b.dptr(scale)).i64(sc0).i64(sc1)
	b.args.i64(rows).i64(r).i64(d)
	b.launch(kLNModBwd, v, min(rows, 1<<20), 1, rowThreads(d, 256))
	b.finishDst(dx, out)
	wantParams := dgamma != nil || dbeta != nil
	if dshift == nil && dscale == nil && !wantParams {
		return
	}
	var part *block
	var pp uintptr
	if wantParams {
		part = b.getBlock(uint64(2*d*g) * 8)
		defer b.alloc.putBlock(part)
		pp = part.ptr
	}
	ds0, ds1 := setStrides(dshift)
	dc0, dc1 := setStrides(dscale)
	b.args.reset()
	b.args.ptr(b.optPtr(dshift)).i64(ds0).i64(ds1).ptr(b.optPtr(dscale)).i64(dc0).i64(dc1).ptr(pp)
	b.args.ptr(b.dptr(gy)).ptr(b.dptr(x)).ptr(b.dptr(mean)).ptr(b.dptr(rstd))
	b.args.ptr(b.optPtr(gamma)).i64(vecStride(gamma)).ptr(b.optPtr(beta)).i64(vecStride(beta))
	b.args.ptr(b.dptr(scale)).i64(sc0).i64(sc1).i64(r).i64(d)
	b.launch(kLNModSets, v, setGrid(d), g, threads)
	if wantParams {
		b.args.reset()
		b.args.ptr(b.optPtr(dgamma)).i64(vecStride(dgamma)).ptr(b.optPtr(dbeta)).i64(vecStride(dbeta)).ptr(pp).i64(d).i64(g)
		b.launch(kAddParamGrads, v, setGrid(d), 1, threads)
	}
}

// GateResidual sets out = x + gate·h elementwise (see tensor.GateResidual).
func (b *Backend) GateResidual(out, x, gate, h *tensor.Tensor) {
	b.enter()
	defer b.exit()
	var tmps tmpList
	defer func() { tmps.free(b) }()
	keep := out == x
	x, h = tmps.contig(b, x), tmps.contig(b, h)
	o := b.contigDst(out, keep)
	if keep && o != out {
		x = o
	}
	s := x.Shape()
	n := x.Size()
	g0, g1 := setStrides(gate)
	b.args.reset()
	b.args.ptr(b.dptr(o)).ptr(b.dptr(x)).ptr(b.dptr(gate)).i64(g0).i64(g1).ptr(b.dptr(h)).i64(n).i64(s[1]).i64(s[2])
	b.launch(kGateRes, dtv(x.DType()), b.grid1(n), 1, threads)
	b.finishDst(out, o)
}

// GateResidualBackward sets dh = gy·gate and dgate = Σ_rows gy·h, one
// thread per column of a set (see tensor.GateResidualBackward).
func (b *Backend) GateResidualBackward(dh, dgate, gy, h, gate *tensor.Tensor) {
	b.enter()
	defer b.exit()
	var tmps tmpList
	defer func() { tmps.free(b) }()
	gy, h = tmps.contig(b, gy), tmps.contig(b, h)
	var odh *tensor.Tensor
	if dh != nil {
		odh = b.contigDst(dh, false)
	}
	s := h.Shape()
	dg0, dg1 := setStrides(dgate)
	g0, g1 := setStrides(gate)
	b.args.reset()
	b.args.ptr(b.optPtr(odh)).ptr(b.optPtr(dgate)).i64(dg0).i64(dg1).ptr(b.dptr(gy)).ptr(b.dptr(h))
	b.args.ptr(b.dptr(gate)).i64(g0).i64(g1).i64(s[1]).i64(s[2])
	b.launch(kGateResBwd, dtv(h.DType()), setGrid(s[2]), s[0], threads)
	if dh != nil {
		b.finishDst(dh, odh)
	}
}

// BiasGELU sets y = GELU(x + bias) elementwise (see tensor.BiasGELU).
// cuBLASLt's GELU_BIAS epilogue would fold this into the GEMM, but it uses
// the tanh approximation of GELU, not the erf form lgflow computes.
func (b *Backend) BiasGELU(y, x, bias *tensor.Tensor) {
	b.enter()
	defer b.exit()
	var tmps tmpList
	defer func() { tmps.free(b) }()
	x = tmps.contig(b, x)
	o := b.contigDst(y, false)
	n, d := x.Size(), x.Dim(-1)
	b.args.reset()
	b.args.ptr(b.dptr(o)).ptr(b.dptr(x)).ptr(b.optPtr(bias)).i64(vecStride(bias)).i64(n).i64(d)
	b.launch(kBiasGELU, dtv(x.DType()), b.grid1(n), 1, threads)
	b.finishDst(y, o)
}

// BiasGELUBackward sets dx = gy·GELU'(x + bias) and adds the column sums of
// dx into dbias (chunk partials summed in order: deterministic).
func (b *Backend) BiasGELUBackward(dx, dbias, gy, x, bias *tensor.Tensor) {
	b.enter()
	defer b.exit()
	var tmps tmpList
	defer func() { tmps.free(b) }()
	x, gy = tmps.contig(b, x), tmps.contig(b, gy)
	o := b.contigDst(dx, false)
	n, d := x.Size(), x.Dim(-1)
	v := dtv(x.DType())
	b.args.reset()
	b.args.ptr(b.dptr(o)).ptr(b.dptr(gy)).ptr(b.dptr(x)).ptr(b.optPtr(bias)).i64(vecStride(bias)).i64(n).i64(d)
	b.launch(kBiasGELUBwd, v, b.grid1(n), 1, threads)
	if dbias != nil && d > 0 {
		rows := n / d
		chunk := max(64, (rows+1023)/1024)
		nch := (rows + chunk - 1) / chunk
		part := b.getBlock(uint64(2*d*nch) * 8)
		defer b.alloc.putBlock(part)
		b.args.reset()
		b.args.ptr(part.ptr).ptr(b.dptr(o)).i64(rows).i64(d).i64(chunk)
		b.launch(kColPartials, v, setGrid(d), nch, threads)
		b.args.reset()
		b.args.ptr(b.dptr(dbias)).i64(vecStride(dbias)).ptr(0).i64(0).ptr(part.ptr).i64(d).i64(nch)
		b.launch(kAddParamGrads, v, setGrid(d), 1, threads)
	}
	b.finishDst(dx, o)
}

// attnStrides packs the strides of the attention operands in the order of
// the kernels' AttnStrides (q, k, v, out, gout, dq, dk, dv, lse, keyMask),
// nil operands as zeros.
func (a *kargs) attnStrides(ts ...*tensor.Tensor) *kargs {
	p := a.slots(40)
	vals := unsafe.Slice(p, 40)
	for i := range vals {
		vals[i] = 0
	}
	for i, t := range ts {
		if t == nil {
			continue
		}
		for j, s := range t.Strides() {
			vals[4*i+j] = uint64(int64(s))
		}
	}
	return a
}

// flashThreads is the block size of the attention kernels: one thread per
// token, a multiple of 32.
func flashThreads(n int) int { return rowThreads(n, tensor.FlashAttentionMaxTokens) }

// FlashAttention computes out and the row log-sum-exp lse of key-padding
// attention with one block per (batch, head) (see tensor.FlashAttention).
// q, k, v, out and lse may be strided views; they are used in place. A nil
// lse (not wanted) is written to scratch memory.
func (b *Backend) FlashAttention(out, lse, q, k, v, keyMask *tensor.Tensor, scale float64) {
	s := q.Shape()
	nb, h, n, dh := s[0], s[1], s[2], s[3]
	if nb*h == 0 || n == 0 {
		return
	}
	if lse == nil { // allocated before enter: allocation enters too
		lse = tensor.EmptyOn(b, q.DType(), nb, h, n)
	}
	b.enter()
	defer b.exit()
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.dptr(lse)).ptr(b.dptr(q)).ptr(b.dptr(k)).ptr(b.dptr(v)).ptr(b.optPtr(keyMask))
	b.args.attnStrides(q, k, v, out, nil, nil, nil, nil, lse, keyMask)
	b.args.i64(nb).i64(h).i64(n).i64(dh).f64(scale)
	b.launch(kFlashFwd, dtv(q.DType()), min(nb*h, 1<<20), 1, flashThreads(n))
}

// FlashAttentionBackward computes dq, dk and dv from gout, the forward's
// out and lse, recomputing the probabilities (see
// tensor.FlashAttentionBackward): one launch, one block per (batch, head).
func (b *Backend) FlashAttentionBackward(dq, dk, dv, gout, q, k, v, out, lse, keyMask *tensor.Tensor, scale float64) {
	b.enter()
	defer b.exit()
	s := q.Shape()
	nb, h, n, dh := s[0], s[1], s[2], s[3]
	if nb*h == 0 || n == 0 {
		return
	}
	b.args.reset()
	b.args.ptr(b.dptr(dq)).ptr(b.dptr(dk)).ptr(b.dptr(dv)).ptr(b.dptr(gout)).ptr(b.dptr(q)).ptr(b.dptr(k))
	b.args.ptr(b.dptr(v)).ptr(b.dptr(out)).ptr(b.dptr(lse)).ptr(b.optPtr(keyMask))
	b.args.attnStrides(q, k, v, out, gout, dq, dk, dv, lse, keyMask)
	b.args.i64(nb).i64(h).i64(n).i64(dh).f64(scale)
	b.launch(kFlashBwd, dtv(q.DType()), min(nb*h, 1<<20), 1, flashThreads(n))
}
