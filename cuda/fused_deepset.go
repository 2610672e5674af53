package cuda

import "lgflow/tensor"

// The LG-VAE decoder's fused row-wise DeepSet (tensor/fused_deepset.go),
// with the kernels of kernels/deepset.cu. They use no atomics, so their
// results do not depend on SetDeterministic.

// deepSetMaxChunks bounds the number of row chunks of the backward's
// parameter partials (each chunk holds 3D + 1 doubles, summed in order).
const deepSetMaxChunks = 1024

// DeepSetScores sets y[r, j] = bo + Σ_d wo[d]·GELU(s[r, j]·ws[d] + bs[d] +
// ctx[r, d]), one thread per score (see tensor.DeepSetScores).
func (b *Backend) DeepSetScores(y, s, ctx, ws, bs, wo, bo *tensor.Tensor) {
	b.enter()
	defer b.exit()
	var tmps tmpList
	defer func() { tmps.free(b) }()
	s, ctx = tmps.contig(b, s), tmps.contig(b, ctx)
	o := b.contigDst(y, false)
	n, N, D := s.Size(), s.Dim(1), ctx.Dim(1)
	b.args.reset()
	b.args.ptr(b.dptr(o)).ptr(b.dptr(s)).ptr(b.dptr(ctx))
	b.args.ptr(b.dptr(ws)).i64(vecStride(ws)).ptr(b.dptr(bs)).i64(vecStride(bs)).ptr(b.dptr(wo)).i64(vecStride(wo))
	b.args.ptr(b.dptr(bo)).i64(n).i64(N).i64(D)
	b.launch(kDeepSetFwd, dtv(s.DType()), b.grid1(n), 1, threads)
	b.finishDst(y, o)
}

// DeepSetScoresBackward computes ds with one thread per score, dctx and
// the partial parameter gradients of chunks of rows with one thread per
// (chunk, column), and adds the partials, summed in chunk order, into the
// parameter gradients (see tensor.DeepSetScoresBackward).
func (b *Backend) DeepSetScoresBackward(ds, dctx, dws, dbs, dwo, dbo, gy, s, ctx, ws, bs, wo *tensor.Tensor) {
	b.enter()
	defer b.exit()
	var tmps tmpList
	defer func() { tmps.free(b) }()
	gy, s, ctx = tmps.contig(b, gy), tmps.contig(b, s), tmps.contig(b, ctx)
	R, N, D := s.Dim(0), s.Dim(1), ctx.Dim(1)
	n := R * N
	v := dtv(s.DType())
	vecArgs := func() {
		b.args.ptr(b.dptr(ws)).i64(vecStride(ws)).ptr(b.dptr(bs)).i64(vecStride(bs)).ptr(b.dptr(wo)).i64(vecStride(wo))
	}
	if ds != nil {
		o := b.contigDst(ds, false)
		b.args.reset()
		b.args.ptr(b.dptr(o)).ptr(b.dptr(gy)).ptr(b.dptr(s)).ptr(b.dptr(ctx))
		vecArgs()
		b.args.i64(n).i64(N).i64(D)
		b.launch(kDeepSetBwdDS, v, b.grid1(n), 1, threads)
		b.finishDst(ds, o)
	}
	wantParams := dws != nil || dbs != nil || dwo != nil || dbo != nil
	if dctx == nil && !wantParams {
		return
	}
	var odc *tensor.Tensor
	if dctx != nil {
		odc = b.contigDst(dctx, false)
	}
	chunk := (R + deepSetMaxChunks - 1) / deepSetMaxChunks
	nch := (R + chunk - 1) / chunk
	var pp uintptr
	if wantParams {
		part := b.getBlock(uint64(nch*(3*D+1)) * 8)
		defer b.alloc.putBlock(part)
		pp = part.ptr
	}
	wantWO := 0
	if dwo != nil {
		wantWO = 1
	}
	b.args.reset()
	b.args.ptr(b.optPtr(odc)).ptr(pp).ptr(b.dptr(gy)).ptr(b.dptr(s)).ptr(b.dptr(ctx))
	vecArgs()
	b.args.i64(R).i64(N).i64(D).i64(chunk).i64(nch).i64(wantWO)
	b.launch(kDeepSetBwdCols, v, b.grid1(nch*D), 1, threads)
	if dctx != nil {
		b.finishDst(dctx, odc)
	}
	if wantParams {
		b.args.reset()
		b.args.ptr(b.optPtr(dws)).i64(vecStride(dws)).ptr(b.optPtr(dbs)).i64(vecStride(dbs))
		b.args.ptr(b.optPtr(dwo)).i64(vecStride(dwo)).ptr(b.optPtr(dbo)).ptr(pp).i64(D).i64(nch)
		b.launch(kDeepSetParams, v, setGrid(3*D+1), 1, threads)
	}
}
