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
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), gatherKind)
	if s != nil {
		*s = gatherSaved{x: a, idx: idx}
	}
	return out
}

// gatherSaved is Gather's backward state: out[i] = x[idx[i]].
type gatherSaved struct {
	x   *Var
	idx []int32
}

var gatherKind = newSavedKind[gatherSaved]()

func (s *gatherSaved) backward(tp *Tape, out *Var) {
	if !s.x.requiresGrad {
		return
	}
	dst := tp.gradZeroDst(s.x)
	tensor.ScatterAdd(dst, out.Grad, s.idx)
	tp.doneGrad(s.x)
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
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), indexSelectKind)
	if s != nil {
		*s = indexSelectSaved{x: a, axis: ax, idx: idx}
	}
	return out
}

// indexSelectSaved is IndexSelect's backward state: out takes the entries
// idx of x along axis (non-negative, > 0).
type indexSelectSaved struct {
	x    *Var
	axis int
	idx  []int32
}

var indexSelectKind = newSavedKind[indexSelectSaved]()

func (s *indexSelectSaved) backward(tp *Tape, out *Var) {
	if !s.x.requiresGrad {
		return
	}
	shape := s.x.Shape()
	outer, inner := 1, 1
	for i := 0; i < s.axis; i++ {
		outer *= shape[i]
	}
	for i := s.axis + 1; i < len(shape); i++ {
		inner *= shape[i]
	}
	g := tp.zeros(s.x.Value, shape...)
	gy := tp.contig(out.Grad)
	if g.DType() == tensor.Float32 {
		indexAddAxis(g.Data32(), gy.Data32(), s.idx, outer, shape[s.axis], inner)
	} else {
		indexAddAxis(g.Data64(), gy.Data64(), s.idx, outer, shape[s.axis], inner)
	}
	tp.addGrad(s.x, g, true)
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
	out, s := record(tp, y, tp.anyGrad(src, nil, nil), scatterAddKind)
	if s != nil {
		*s = scatterAddSaved{src: src, idx: idx}
	}
	return out
}

// scatterAddSaved is the backward state of ScatterAdd and SegmentSum:
// out[idx[i]] += src[i].
type scatterAddSaved struct {
	src *Var
	idx []int32
}

var scatterAddKind = newSavedKind[scatterAddSaved]()

// backward: d src[i] = dout[idx[i]].
func (s *scatterAddSaved) backward(tp *Tape, out *Var) {
	if !s.src.requiresGrad {
		return
	}
	g := tensor.Gather(tp.alloc(s.src.Value, s.src.Shape()...), out.Grad, s.idx)
	tp.addGrad(s.src, g, true)
}

// SegmentSum returns out (nseg, src.shape[1:]...) with out[s] = Σ_{i: seg[i]=s} src[i]
// (graph pooling; the same as ScatterAdd).
func (tp *Tape) SegmentSum(src *Var, seg []int32, nseg int) *Var {
	tp.checkIn("SegmentSum", src)
	if src.Rank() < 1 || src.Dim(0) != len(seg) {
		panic(fmt.Sprintf("autograd.SegmentSum: src %v has %d rows, seg has %d entries", src.Shape(), src.Dim(0), len(seg)))
	}
	y := tensor.SegmentSum(tp.alloc(src.Value, rowShape(src.Shape(), nseg)...), src.Value, seg, nseg)
	out, s := record(tp, y, tp.anyGrad(src, nil, nil), scatterAddKind)
	if s != nil {
		*s = scatterAddSaved{src: src, idx: seg}
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
	out, s := record(tp, y, tp.anyGrad(src, nil, nil), segmentMeanKind)
	if s != nil {
		*s = segmentMeanSaved{src: src, seg: seg, segments: nseg}
	}
	return out
}

// segmentMeanSaved is SegmentMean's backward state: row i of src is in
// segment seg[i] of segments; the backward recounts the segment sizes.
type segmentMeanSaved struct {
	src      *Var
	seg      []int32
	segments int
}

var segmentMeanKind = newSavedKind[segmentMeanSaved]()

// backward: d src[i] = dout[seg[i]] / count(seg[i]).
func (s *segmentMeanSaved) backward(tp *Tape, out *Var) {
	src := s.src
	if !src.requiresGrad {
		return
	}
	cnt := make([]int32, s.segments)
	for _, sg := range s.seg {
		cnt[sg]++
	}
	g := tp.alloc(src.Value, src.Shape()...)
	gy := tp.contig(out.Grad)
	width := src.Size() / max(src.Dim(0), 1)
	if g.DType() == tensor.Float32 {
		segMeanGrad(g.Data32(), gy.Data32(), s.seg, cnt, width)
	} else {
		segMeanGrad(g.Data64(), gy.Data64(), s.seg, cnt, width)
	}
	tp.addGrad(src, g, true)
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
