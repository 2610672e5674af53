package autograd

import (
	"fmt"

	"lgflow/tensor"
)

// Indexing and message passing. Gather and ScatterAdd are each other's
// backward; indices are []int32 rows and are kept (not copied) until Release.

// rowShape returns shape with the first axis replaced by n.
func rowShape(shape []int, n int) []int {
	out := append([]int(nil), shape...)
	out[0] = n
	return out
}

// Gather returns the rows a[idx[i]] stacked: shape (len(idx), a.shape[1:]...).
func (tp *Tape) Gather(a *Var, idx []int32) *Var {
	tp.checkIn("Gather", a)
	if a.Rank() < 1 {
		panic("autograd.Gather: rank-0 input")
	}
	y := tensor.Gather(tp.alloc(a.Value, rowShape(a.Shape(), len(idx))...), a.Value, idx)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), gatherBackward)
	if n != nil {
		n.a, n.idx0 = a, idx
	}
	return out
}

func gatherBackward(tp *Tape, n *node) {
	if !n.a.requiresGrad {
		return
	}
	dst := tp.gradZeroDst(n.a)
	tensor.ScatterAdd(dst, n.out.Grad, n.idx0)
	tp.doneGrad(n.a)
}

// IndexSelect returns a with axis restricted to the entries idx (in order,
// repeats allowed).
func (tp *Tape) IndexSelect(a *Var, axis int, idx []int32) *Var {
	tp.checkIn("IndexSelect", a)
	ax := normAxis("IndexSelect", axis, a.Rank())
	if ax == 0 {
		return tp.Gather(a, idx)
	}
	shape := append([]int(nil), a.Shape()...)
	shape[ax] = len(idx)
	y := tensor.IndexSelect(tp.alloc(a.Value, shape...), a.Value, ax, idx)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), indexSelectBackward)
	if n != nil {
		n.a, n.i0, n.idx0 = a, ax, idx
	}
	return out
}

func indexSelectBackward(tp *Tape, n *node) {
	if !n.a.requiresGrad {
		return
	}
	shape := n.a.Shape()
	outer, inner := 1, 1
	for i := 0; i < n.i0; i++ {
		outer *= shape[i]
	}
	for i := n.i0 + 1; i < len(shape); i++ {
		inner *= shape[i]
	}
	g := tp.zeros(n.a.Value, shape...)
	gy := tp.contig(n.out.Grad)
	if g.DType() == tensor.Float32 {
		indexAddAxis(g.Data32(), gy.Data32(), n.idx0, outer, shape[n.i0], inner)
	} else {
		indexAddAxis(g.Data64(), gy.Data64(), n.idx0, outer, shape[n.i0], inner)
	}
	tp.addGrad(n.a, g, true)
}

// indexAddAxis does g[o, idx[i], :] += gy[o, i, :].
func indexAddAxis[T float](g, gy []T, idx []int32, outer, dim, inner int) {
	m := len(idx)
	for o := 0; o < outer; o++ {
		for i, j := range idx {
			src := gy[(o*m+i)*inner : (o*m+i+1)*inner]
			dst := g[(o*dim+int(j))*inner : (o*dim+int(j)+1)*inner]
			for t, v := range src {
				dst[t] += v
			}
		}
	}
}

// ScatterAdd returns the (n, src.shape[1:]...) tensor out with
// out[idx[i]] += src[i] (rows never indexed are 0).
func (tp *Tape) ScatterAdd(src *Var, idx []int32, n int) *Var {
	tp.checkIn("ScatterAdd", src)
	if src.Rank() < 1 || src.Dim(0) != len(idx) {
		panic(fmt.Sprintf("autograd.ScatterAdd: src %v has %d rows, idx has %d entries", src.Shape(), src.Dim(0), len(idx)))
	}
	y := tensor.ScatterAdd(tp.zeros(src.Value, rowShape(src.Shape(), n)...), src.Value, idx)
	out, nd := tp.out(y, tp.anyGrad(src, nil, nil), scatterAddBackward)
	if nd != nil {
		nd.a, nd.idx0 = src, idx
	}
	return out
}

func scatterAddBackward(tp *Tape, n *node) {
	if !n.a.requiresGrad {
		return
	}
	g := tensor.Gather(tp.alloc(n.a.Value, n.a.Shape()...), n.out.Grad, n.idx0)
	tp.addGrad(n.a, g, true)
}

// SegmentSum returns out (nseg, src.shape[1:]...) with out[s] = Σ_{i: seg[i]=s} src[i]
// (graph pooling; the same as ScatterAdd).
func (tp *Tape) SegmentSum(src *Var, seg []int32, nseg int) *Var {
	tp.checkIn("SegmentSum", src)
	if src.Rank() < 1 || src.Dim(0) != len(seg) {
		panic(fmt.Sprintf("autograd.SegmentSum: src %v has %d rows, seg has %d entries", src.Shape(), src.Dim(0), len(seg)))
	}
	y := tensor.SegmentSum(tp.alloc(src.Value, rowShape(src.Shape(), nseg)...), src.Value, seg, nseg)
	out, n := tp.out(y, tp.anyGrad(src, nil, nil), scatterAddBackward)
	if n != nil {
		n.a, n.idx0 = src, seg
	}
	return out
}

// SegmentMean returns the per-segment mean of the rows of src; empty
// segments give 0.
func (tp *Tape) SegmentMean(src *Var, seg []int32, nseg int) *Var {
	tp.checkIn("SegmentMean", src)
	if src.Rank() < 1 || src.Dim(0) != len(seg) {
		panic(fmt.Sprintf("autograd.SegmentMean: src %v has %d rows, seg has %d entries", src.Shape(), src.Dim(0), len(seg)))
	}
	y := tensor.SegmentMean(tp.alloc(src.Value, rowShape(src.Shape(), nseg)...), src.Value, seg, nseg)
	out, n := tp.out(y, tp.anyGrad(src, nil, nil), segmentMeanBackward)
	if n != nil {
		n.a, n.idx0, n.i0 = src, seg, nseg
	}
	return out
}

// d src[i] = gy[seg[i]] / count(seg[i]).
func segmentMeanBackward(tp *Tape, n *node) {
	if !n.a.requiresGrad {
		return
	}
	cnt := make([]int32, n.i0)
	for _, s := range n.idx0 {
		cnt[s]++
	}
	g := tp.alloc(n.a.Value, n.a.Shape()...)
	gy := tp.contig(n.out.Grad)
	width := n.a.Size() / max(n.a.Dim(0), 1)
	if g.DType() == tensor.Float32 {
		segMeanGrad(g.Data32(), gy.Data32(), n.idx0, cnt, width)
	} else {
		segMeanGrad(g.Data64(), gy.Data64(), n.idx0, cnt, width)
	}
	tp.addGrad(n.a, g, true)
}

func segMeanGrad[T float](g, gy []T, seg, cnt []int32, width int) {
	for i, s := range seg {
		inv := 1 / T(cnt[s])
		src := gy[int(s)*width : int(s+1)*width]
		dst := g[i*width : (i+1)*width]
		for t, v := range src {
			dst[t] = v * inv
		}
	}
}
