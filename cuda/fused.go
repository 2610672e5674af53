package cuda

import (
	"unsafe"

	"lgflow/tensor"
)

// vecStride returns the element stride of an optional vector (0 for nil).
func vecStride(t *tensor.Tensor) int {
	if t == nil {
		return 0
	}
	return t.Strides()[0]
}

// LayerNorm normalises x over its last axis into y, saving mean and rstd
// when they are not nil (see tensor.LayerNorm). One block per row.
func (b *Backend) LayerNorm(y, mean, rstd, x, gamma, beta *tensor.Tensor, eps float64) {
	b.enter()
	defer b.exit()
	x, tmp := b.contig(x)
	if tmp {
		defer b.free(x)
	}
	out := b.contigDst(y, false)
	var mo, ro *tensor.Tensor
	if mean != nil {
		mo = b.contigDst(mean, false)
	}
	if rstd != nil {
		ro = b.contigDst(rstd, false)
	}
	d := x.Dim(-1)
	rows := x.Size() / max(d, 1)
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.optPtr(mo)).ptr(b.optPtr(ro)).ptr(b.dptr(x))
	b.args.ptr(b.optPtr(gamma)).i64(vecStride(gamma)).ptr(b.optPtr(beta)).i64(vecStride(beta))
	b.args.i64(rows).i64(d).f64(eps)
	b.launch(kLayerNorm, dtv(x.DType()), min(rows, 1<<20), 1, rowThreads(d, 256))
	b.finishDst(y, out)
	if mean != nil {
		b.finishDst(mean, mo)
	}
	if rstd != nil {
		b.finishDst(rstd, ro)
	}
}

// LayerNormBackward computes dx and accumulates dgamma and dbeta (when not
// nil) from the upstream gradient gy and the saved statistics (see
// tensor.LayerNormBackward). The parameter gradients are summed over row
// chunks in a fixed order, so they are deterministic.
func (b *Backend) LayerNormBackward(dx, dgamma, dbeta, gy, x, mean, rstd, gamma *tensor.Tensor) {
	b.enter()
	defer b.exit()
	var tmps []*tensor.Tensor
	defer func() {
		for _, t := range tmps {
			b.free(t)
		}
	}()
	cont := func(t *tensor.Tensor) *tensor.Tensor {
		c, tmp := b.contig(t)
		if tmp {
			tmps = append(tmps, c)
		}
		return c
	}
	x, gy, mean, rstd = cont(x), cont(gy), cont(mean), cont(rstd)
	out := b.contigDst(dx, false)
	d := x.Dim(-1)
	rows := x.Size() / max(d, 1)
	v := dtv(x.DType())
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.dptr(gy)).ptr(b.dptr(x)).ptr(b.dptr(mean)).ptr(b.dptr(rstd))
	b.args.ptr(b.optPtr(gamma)).i64(vecStride(gamma)).i64(rows).i64(d)
	b.launch(kLayerNormBwd, v, min(rows, 1<<20), 1, rowThreads(d, 256))
	b.finishDst(dx, out)
	if dgamma == nil && dbeta == nil {
		return
	}
	chunk := max(64, (rows+1023)/1024)
	nch := (rows + chunk - 1) / chunk
	part := b.getBlock(uint64(2*d*nch) * 8)
	defer b.alloc.putBlock(part)
	gx := (d + threads - 1) / threads
	b.args.reset()
	b.args.ptr(part.ptr).ptr(b.dptr(gy)).ptr(b.dptr(x)).ptr(b.dptr(mean)).ptr(b.dptr(rstd)).i64(rows).i64(d).i64(chunk)
	b.launch(kLayerNormParams, v, gx, nch, threads)
	b.args.reset()
	b.args.ptr(b.optPtr(dgamma)).i64(vecStride(dgamma)).ptr(b.optPtr(dbeta)).i64(vecStride(dbeta)).ptr(part.ptr).i64(d).i64(nch)
	b.launch(kAddParamGrads, v, gx, 1, threads)
}

// uploadTargets copies targets and (if not nil) weight into one device
// block: int32 targets, then float32 weights.
func (b *Backend) uploadTargets(targets []int32, weight []float32) (blk *block, pt, pw uintptr) {
	rows := len(targets)
	buf := b.int32Scratch(2 * rows)
	copy(buf, targets)
	if weight != nil {
		copy(buf[rows:], unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(weight))), rows))
	} else {
		buf = buf[:rows]
	}
	blk = b.uploadI32(buf)
	pt = blk.ptr
	if weight != nil {
		pw = blk.ptr + uintptr(rows*4)
	}
	return blk, pt, pw
}

// SoftmaxCrossEntropy writes the row softmax of logits into prob and returns
// Σ_i w_i·(-log prob_i[t_i]) accumulated in float64. It waits for the
// result.
func (b *Backend) SoftmaxCrossEntropy(prob, logits *tensor.Tensor, targets []int32, weight []float32) float64 {
	b.enter()
	defer b.exit()
	rows := len(targets)
	if rows == 0 {
		return 0
	}
	logits, tmp := b.contig(logits)
	if tmp {
		defer b.free(logits)
	}
	out := b.contigDst(prob, false)
	c := logits.Dim(-1)
	tb, pt, pw := b.uploadTargets(targets, weight)
	defer b.alloc.putBlock(tb)
	loss := b.getBlock(uint64(rows) * 8)
	defer b.alloc.putBlock(loss)
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.dptr(logits)).ptr(pt).ptr(pw).i64(rows).i64(c).ptr(loss.ptr)
	b.launch(kCEFwd, dtv(logits.DType()), min(rows, 1<<20), 1, rowThreads(c, 256))
	b.finishDst(prob, out)
	l := stridedLayout([]int{rows}, 1, &[maxOps][]int{{1}})
	return b.reduceAll(int(tensor.ReduceSum), loss.ptr, 1, &l)
}

// SoftmaxCrossEntropyBackward sets dlogits = scale·w_i·(prob_i - onehot(t_i))
// row by row.
func (b *Backend) SoftmaxCrossEntropyBackward(dlogits, prob *tensor.Tensor, targets []int32, weight []float32, scale float64) {
	b.enter()
	defer b.exit()
	n := prob.Size()
	if n == 0 {
		return
	}
	prob, tmp := b.contig(prob)
	if tmp {
		defer b.free(prob)
	}
	out := b.contigDst(dlogits, false)
	tb, pt, pw := b.uploadTargets(targets, weight)
	b.args.reset()
	b.args.ptr(b.dptr(out)).ptr(b.dptr(prob)).ptr(pt).ptr(pw).i64(prob.Dim(-1)).i64(n).f64(scale)
	b.launch(kCEBwd, dtv(prob.DType()), b.grid1(n), 1, threads)
	b.alloc.putBlock(tb)
	b.finishDst(dlogits, out)
}

// Attention computes probs = softmax(scale·q·kᵀ, keys masked by keyMask)
// and out = probs·v with two cuBLAS batched products around a masked
// softmax kernel (see tensor.Attention). q, k, v and out may be permuted
// views; they are used in place.
func (b *Backend) Attention(out, probs, q, k, v, keyMask *tensor.Tensor, scale float64) {
	b.enter()
	defer b.exit()
	s := q.Shape()
	nb, h, n := s[0], s[1], s[2]
	p := b.contigDst(probs, false)
	b.gemm(p, scale, q, k, false, true, 0)
	rows := nb * h * n
	if rows > 0 && n > 0 {
		var ms0, ms1 int
		if keyMask != nil {
			ms0, ms1 = keyMask.Strides()[0], keyMask.Strides()[1]
		}
		b.args.reset()
		b.args.ptr(b.dptr(p)).ptr(b.optPtr(keyMask)).i64(ms0).i64(ms1).i64(h).i64(n).i64(rows)
		b.launch(kAttnSoftmax, dtv(q.DType()), min(rows, 1<<20), 1, rowThreads(n, 256))
	}
	b.gemm(out, 1, p, v, false, false, 0)
	b.finishDst(probs, p)
}

// AttentionBackward computes dq, dk and dv from the upstream gradient gout
// and the saved probs (see tensor.AttentionBackward): four cuBLAS batched
// products and the softmax backward kernel, with one (B, H, N, N) scratch.
func (b *Backend) AttentionBackward(dq, dk, dv, gout, q, k, v, probs *tensor.Tensor, scale float64) {
	b.enter()
	defer b.exit()
	s := q.Shape()
	nb, h, n := s[0], s[1], s[2]
	p, tmp := b.contig(probs)
	if tmp {
		defer b.free(p)
	}
	ds := b.newTensor(q.DType(), nb, h, n, n)
	defer b.free(ds)
	b.gemm(dv, 1, p, gout, true, false, 0)
	b.gemm(ds, 1, gout, v, false, true, 0)
	if rows := nb * h * n; rows > 0 && n > 0 {
		b.args.reset()
		b.args.ptr(b.dptr(ds)).ptr(b.dptr(p)).i64(n).i64(rows)
		b.launch(kAttnDSoftmax, dtv(q.DType()), min(rows, 1<<20), 1, rowThreads(n, 256))
	}
	b.gemm(dq, scale, ds, k, false, false, 0)
	b.gemm(dk, scale, ds, q, true, false, 0)
}
