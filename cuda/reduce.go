package cuda

import (
	"unsafe"

	"lgflow/tensor"
)

// rSumExp is the kernels' second pass of a log-sum-exp (reduce.cu R_SUMEXP).
const rSumExp = 6

// reduction describes a reduction of a into dst: the kept axes of a (with
// dst's and a's strides) and the reduced axes (with a's strides).
type reduction struct {
	outShape, outDst, outA []int
	redShape, redA         []int
}

// Reduce reduces a along axis into dst (ReduceSum, ReduceMean, ReduceMax or
// ReduceLogSumExp).
func (b *Backend) Reduce(op tensor.ReduceOp, dst, a *tensor.Tensor, axis int) {
	b.enter()
	defer b.exit()
	shape, as, ds := a.Shape(), a.Strides(), dst.Strides()
	keep := dst.Rank() == a.Rank()
	var r reduction
	for i := range shape {
		switch {
		case i == axis:
			r.redShape = append(r.redShape, shape[i])
			r.redA = append(r.redA, as[i])
		case keep || i < axis:
			r.outShape = append(r.outShape, shape[i])
			r.outDst = append(r.outDst, ds[i])
			r.outA = append(r.outA, as[i])
		default:
			r.outShape = append(r.outShape, shape[i])
			r.outDst = append(r.outDst, ds[i-1])
			r.outA = append(r.outA, as[i])
		}
	}
	b.reduce(int(op), dst, a, &r)
}

// SumTo sets dst to a summed over the axes along which dst broadcasts to a.
func (b *Backend) SumTo(dst, a *tensor.Tensor) {
	b.enter()
	defer b.exit()
	shape, as := a.Shape(), a.Strides()
	dshape, ds := dst.Shape(), dst.Strides()
	off := len(shape) - len(dshape)
	var r reduction
	for i := range shape {
		k := i - off
		if k < 0 || (dshape[k] == 1 && shape[i] != 1) {
			r.redShape = append(r.redShape, shape[i])
			r.redA = append(r.redA, as[i])
		} else {
			r.outShape = append(r.outShape, shape[i])
			r.outDst = append(r.outDst, ds[k])
			r.outA = append(r.outA, as[i])
		}
	}
	b.reduce(int(tensor.ReduceSum), dst, a, &r)
}

// reduce runs reduction r with kernel op code op (R_SUM, R_MEAN, R_MAX,
// R_LSE). Contiguous rows of at least 32 elements get one block per output;
// anything else one thread per output, with the reduced range split over
// several threads (and finished by a second kernel) when there are too few
// outputs to fill the GPU.
func (b *Backend) reduce(op int, dst, a *tensor.Tensor, r *reduction) {
	lo := stridedLayout(r.outShape, 2, &[maxOps][]int{r.outDst, r.outA})
	lr := stridedLayout(r.redShape, 1, &[maxOps][]int{r.redA})
	nout, K := int(lo.n), int(lr.n)
	if nout == 0 {
		return
	}
	v := dtv(dst.DType())
	pd, pa := b.dptr(dst), b.dptr(a)
	if K >= 32 && lr.nd == 1 && lr.str[0][0] == 1 {
		bx := rowThreads(K, 256)
		if K >= 16384 && nout < 2*b.dev.sms {
			bx = 1024
		}
		b.args.reset()
		b.args.i32(op).ptr(pd).ptr(pa).i64(K).lay(&lo)
		b.launch(kReduceRows, v, min(nout, 1<<20), 1, bx)
		return
	}
	if K == 0 {
		pa = 0
	}
	// Splits of the reduced range: enough threads to fill the GPU, at least
	// 64 elements each.
	target := b.dev.sms * 2048
	S := 1
	if nout < target && K >= 128 {
		S = min((target+nout-1)/nout, (K+63)/64, 1024)
	}
	var part *block
	if S > 1 {
		part = b.getBlock(uint64(S) * uint64(nout) * 16)
		defer b.alloc.putBlock(part)
	}
	gx := (nout + threads - 1) / threads
	pass := func(op int, outd, ref uintptr) {
		var pp uintptr
		if part != nil {
			pp = part.ptr
		}
		b.args.reset()
		b.args.i32(op).ptr(pd).ptr(pa).lay(&lo).lay(&lr).ptr(pp).ptr(outd).ptr(ref)
		b.launch(kReduceGen, v, gx, S, threads)
		if S > 1 {
			b.args.reset()
			b.args.i32(op).ptr(pd).lay(&lo).i64(K).i64(S).ptr(pp).ptr(outd).ptr(ref)
			b.launch(kReduceFin, v, gx, 1, threads)
		}
	}
	if op != int(tensor.ReduceLogSumExp) {
		pass(op, 0, 0)
		return
	}
	// log-sum-exp: the maximum into a double scratch, then the sum of
	// exp(x - max), finished as max + log(sum).
	mx := b.getBlock(uint64(nout) * 8)
	defer b.alloc.putBlock(mx)
	pass(int(tensor.ReduceMax), mx.ptr, 0)
	pass(rSumExp, 0, mx.ptr)
}

// ReduceAll reduces every element of a into a float64: ReduceSum,
// ReduceMaxAbs or ReduceSumSquares. It waits for the result.
func (b *Backend) ReduceAll(op tensor.ReduceOp, a *tensor.Tensor) float64 {
	n := a.Size()
	if n == 0 {
		return 0
	}
	b.enter()
	defer b.exit()
	l := elemLayout(a.Shape(), a)
	return b.reduceAll(int(op), b.dptr(a), dtv(a.DType()), &l)
}

// reduceAll reduces the elements at p (layout l, kernel variant v).
func (b *Backend) reduceAll(op int, p uintptr, v int, l *layout) float64 {
	n := int(l.n)
	nb := max(1, min((n+threads-1)/threads, 4*b.dev.sms, 1024))
	part := b.getBlock(uint64(nb) * 8)
	defer b.alloc.putBlock(part)
	b.args.reset()
	b.args.i32(op).ptr(p).lay(l).ptr(part.ptr)
	b.launch(kReduceAll, v, nb, 1, threads)
	host := make([]float64, nb)
	b.downloadF64(host, part.ptr)
	r := host[0]
	for _, x := range host[1:] {
		if op == int(tensor.ReduceMaxAbs) {
			r = max(r, x)
		} else {
			r += x
		}
	}
	return r
}

// Argmax writes into out the index along axis of the largest element of a
// for every position of the other axes (row-major); first on ties, NaNs
// ignored unless all are NaN (then 0). It waits for the result.
func (b *Backend) Argmax(out []int32, a *tensor.Tensor, axis int) {
	if len(out) == 0 {
		return
	}
	b.enter()
	defer b.exit()
	shape, as := a.Shape(), a.Strides()
	var oshape, ostr []int
	for i := range shape {
		if i != axis {
			oshape = append(oshape, shape[i])
			ostr = append(ostr, as[i])
		}
	}
	l := stridedLayout(oshape, 1, &[maxOps][]int{ostr})
	nout := int(l.n)
	dev := b.getBlock(uint64(nout) * 4)
	defer b.alloc.putBlock(dev)
	b.args.reset()
	b.args.ptr(b.dptr(a)).i64(shape[axis]).i64(as[axis]).lay(&l).ptr(dev.ptr)
	warps := threads / 32
	b.launch(kArgmax, dtv(a.DType()), max(1, min((nout+warps-1)/warps, b.maxGrid)), 1, threads)
	must(b.drv.check("cuMemcpyDtoHAsync_v2", call(b.drv.cuMemcpyDtoHAsync, uintptr(unsafe.Pointer(&out[0])), dev.ptr, uintptr(nout*4), b.stream)))
	must(b.sync())
}

// Softmax sets dst to softmax (log-softmax if log) of a along axis; dst may
// be a.
func (b *Backend) Softmax(dst, a *tensor.Tensor, axis int, log bool) {
	b.enter()
	defer b.exit()
	shape, as, ds := a.Shape(), a.Strides(), dst.Strides()
	var oshape, od, oa []int
	for i := range shape {
		if i != axis {
			oshape = append(oshape, shape[i])
			od = append(od, ds[i])
			oa = append(oa, as[i])
		}
	}
	l := stridedLayout(oshape, 2, &[maxOps][]int{od, oa})
	rows, K := int(l.n), shape[axis]
	kd, ka := ds[axis], as[axis]
	lg := 0
	if log {
		lg = 1
	}
	v := dtv(a.DType())
	b.args.reset()
	if K >= 32 && kd == 1 && ka == 1 {
		b.args.ptr(b.dptr(dst)).ptr(b.dptr(a)).i64(K).i32(lg).lay(&l)
		b.launch(kSoftmaxRows, v, min(rows, 1<<20), 1, rowThreads(K, 256))
		return
	}
	b.args.ptr(b.dptr(dst)).ptr(b.dptr(a)).i64(K).i64(kd).i64(ka).i32(lg).lay(&l)
	b.launch(kSoftmaxStrided, v, b.grid1(rows), 1, threads)
}
