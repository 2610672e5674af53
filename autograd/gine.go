package autograd

import (
	"fmt"
	"math"

	"lgflow/tensor"
)

// GINEAggregate is the fused neighbourhood sum of GIN/GINE message passing:
//
//	out[i] = Σ_{k: dst[k]=i} ReLU(h[src[k]] + e[ek]),   ek = k, or eidx[k] if eidx != nil
//
// h is (nodes, F); e is (edges, F) dense edge terms, or (classes, F) a
// per-class table looked up with eidx, or nil (then out[i] = Σ h[src[k]],
// the plain GIN sum without ReLU). The (edges, F) messages are never
// materialised: the backward pass recomputes the ReLU masks. out has h's shape.
// On the CPU the op is fused and its work split across cores by feature
// columns; other backends compose it from IndexSelect, ReLU and ScatterAdd
// (materialising the messages).
func (tp *Tape) GINEAggregate(h, e *Var, src, dst, eidx []int32) *Var {
	tp.checkIn("GINEAggregate", h)
	if h.Rank() != 2 {
		panic(fmt.Sprintf("autograd.GINEAggregate: h must be (nodes, F), got %v", h.Shape()))
	}
	if len(src) != len(dst) {
		panic(fmt.Sprintf("autograd.GINEAggregate: %d sources and %d destinations", len(src), len(dst)))
	}
	nodes, f := h.Dim(0), h.Dim(1)
	if e != nil {
		tp.checkIn("GINEAggregate", e)
		if e == h {
			panic("autograd.GINEAggregate: h and e must be different Vars")
		}
		checkDType("GINEAggregate", h.Value, e.Value)
		if e.Rank() != 2 || e.Dim(1) != f {
			panic(fmt.Sprintf("autograd.GINEAggregate: edge term %v does not match h %v", e.Shape(), h.Shape()))
		}
		if eidx == nil && e.Dim(0) != len(src) {
			panic(fmt.Sprintf("autograd.GINEAggregate: edge term %v for %d edges", e.Shape(), len(src)))
		}
		if eidx != nil && len(eidx) != len(src) {
			panic(fmt.Sprintf("autograd.GINEAggregate: %d edge classes for %d edges", len(eidx), len(src)))
		}
	}
	checkIndex("GINEAggregate", src, nodes)
	checkIndex("GINEAggregate", dst, nodes)
	if e != nil && eidx != nil {
		checkIndex("GINEAggregate", eidx, e.Dim(0))
	}
	if h.Value.Backend() != tensor.CPU {
		return tp.gineComposed(h, e, src, dst, eidx, nodes)
	}
	hv := tp.contig(h.Value)
	var ev *tensor.Tensor
	if e != nil {
		ev = tp.contig(e.Value)
	}
	y := tp.zeros(h.Value, nodes, f)
	work := len(src) * f
	if y.DType() == tensor.Float32 {
		var ed []float32
		if ev != nil {
			ed = ev.Data32()
		}
		gineForward(y.Data32(), hv.Data32(), ed, src, dst, eidx, f, work)
	} else {
		var ed []float64
		if ev != nil {
			ed = ev.Data64()
		}
		gineForward(y.Data64(), hv.Data64(), ed, src, dst, eidx, f, work)
	}
	out, s := record(tp, y, tp.anyGrad(h, e, nil), gineKind)
	if s != nil {
		*s = gineSaved{h: h, e: e, hv: hv, ev: ev, src: src, dst: dst, eidx: eidx}
	}
	return out
}

// gineSaved is GINEAggregate's backward state (fused CPU path).
type gineSaved struct {
	h, e *Var // node features and edge terms (e may be nil), for their gradients
	// hv and ev are their contiguous values (ev nil without e), from which
	// the backward recomputes the ReLU masks.
	hv, ev         *tensor.Tensor
	src, dst, eidx []int32 // the edges, and each edge's row of e (nil: row k)
}

var gineKind = newSavedKind[gineSaved]()

func checkIndex(op string, idx []int32, n int) {
	for i, v := range idx {
		if v < 0 || int(v) >= n {
			panic(fmt.Sprintf("autograd.%s: index %d at position %d out of range [0, %d)", op, v, i, n))
		}
	}
}

// The ReLU is applied branch-free (multiplying by the inverted sign bit):
// with random signs a branch mispredicts half the time and runs ~3x slower.

func gineForward[T float](y, h, e []T, src, dst, eidx []int32, f, work int) {
	switch y := any(y).(type) {
	case []float32:
		h, e := any(h).([]float32), any(e).([]float32)
		parallelCols(f, work, func(lo, hi int) { gineForward32(y, h, e, src, dst, eidx, f, lo, hi) })
	case []float64:
		h, e := any(h).([]float64), any(e).([]float64)
		parallelCols(f, work, func(lo, hi int) { gineForward64(y, h, e, src, dst, eidx, f, lo, hi) })
	}
}

func gineForward32(y, h, e []float32, src, dst, eidx []int32, f, lo, hi int) {
	for k := range src {
		hs := h[int(src[k])*f+lo : int(src[k])*f+hi]
		yd := y[int(dst[k])*f+lo : int(dst[k])*f+hi]
		yd = yd[:len(hs)]
		if e == nil {
			for t, v := range hs {
				yd[t] += v
			}
			continue
		}
		ek := k
		if eidx != nil {
			ek = int(eidx[k])
		}
		es := e[ek*f+lo : ek*f+hi]
		es = es[:len(hs)]
		for t, v := range hs {
			m := v + es[t]
			yd[t] += m * float32(math.Float32bits(m)>>31^1)
		}
	}
}

func gineForward64(y, h, e []float64, src, dst, eidx []int32, f, lo, hi int) {
	for k := range src {
		hs := h[int(src[k])*f+lo : int(src[k])*f+hi]
		yd := y[int(dst[k])*f+lo : int(dst[k])*f+hi]
		yd = yd[:len(hs)]
		if e == nil {
			for t, v := range hs {
				yd[t] += v
			}
			continue
		}
		ek := k
		if eidx != nil {
			ek = int(eidx[k])
		}
		es := e[ek*f+lo : ek*f+hi]
		es = es[:len(hs)]
		for t, v := range hs {
			m := v + es[t]
			yd[t] += m * float64(math.Float64bits(m)>>63^1)
		}
	}
}

// backward: with g = dout[dst[k]] and mask = h[src[k]] + e[ek] > 0,
// dh[src[k]] += g ⊙ mask and de[ek] += g ⊙ mask.
func (s *gineSaved) backward(tp *Tape, out *Var) {
	h, e := s.h, s.e
	gy := tp.contig(out.Grad)
	f := h.Dim(1)
	var dh, de *tensor.Tensor
	if h.requiresGrad {
		dh = tp.gradZeroDst(h)
	}
	if e != nil && e.requiresGrad {
		de = tp.gradZeroDst(e)
	}
	work := len(s.src) * f
	if gy.DType() == tensor.Float32 {
		var ed, dhd, ded []float32
		if s.ev != nil {
			ed = s.ev.Data32()
		}
		if dh != nil {
			dhd = dh.Data32()
		}
		if de != nil {
			ded = de.Data32()
		}
		gineGrad(dhd, ded, gy.Data32(), s.hv.Data32(), ed, s.src, s.dst, s.eidx, f, work)
	} else {
		var ed, dhd, ded []float64
		if s.ev != nil {
			ed = s.ev.Data64()
		}
		if dh != nil {
			dhd = dh.Data64()
		}
		if de != nil {
			ded = de.Data64()
		}
		gineGrad(dhd, ded, gy.Data64(), s.hv.Data64(), ed, s.src, s.dst, s.eidx, f, work)
	}
	if dh != nil {
		tp.doneGrad(h)
	}
	if de != nil {
		tp.doneGrad(e)
	}
}

func gineGrad[T float](dh, de, gy, h, e []T, src, dst, eidx []int32, f, work int) {
	switch gy := any(gy).(type) {
	case []float32:
		dh, de, h, e := any(dh).([]float32), any(de).([]float32), any(h).([]float32), any(e).([]float32)
		parallelCols(f, work, func(lo, hi int) { gineGrad32(dh, de, gy, h, e, src, dst, eidx, f, lo, hi) })
	case []float64:
		dh, de, h, e := any(dh).([]float64), any(de).([]float64), any(h).([]float64), any(e).([]float64)
		parallelCols(f, work, func(lo, hi int) { gineGrad64(dh, de, gy, h, e, src, dst, eidx, f, lo, hi) })
	}
}

func gineGrad32(dh, de, gy, h, e []float32, src, dst, eidx []int32, f, lo, hi int) {
	for k := range src {
		g := gy[int(dst[k])*f+lo : int(dst[k])*f+hi]
		var dhs, des []float32
		if dh != nil {
			dhs = dh[int(src[k])*f+lo : int(src[k])*f+hi]
		}
		if e == nil {
			for t, v := range g {
				dhs[t] += v
			}
			continue
		}
		ek := k
		if eidx != nil {
			ek = int(eidx[k])
		}
		hs := h[int(src[k])*f+lo : int(src[k])*f+hi]
		es := e[ek*f+lo : ek*f+hi]
		hs, es = hs[:len(g)], es[:len(g)]
		if de != nil {
			des = de[ek*f+lo : ek*f+hi]
		}
		switch {
		case dhs != nil && des != nil:
			dhs, des = dhs[:len(g)], des[:len(g)]
			for t, v := range g {
				m := v * float32(math.Float32bits(hs[t]+es[t])>>31^1)
				dhs[t] += m
				des[t] += m
			}
		case dhs != nil:
			dhs = dhs[:len(g)]
			for t, v := range g {
				dhs[t] += v * float32(math.Float32bits(hs[t]+es[t])>>31^1)
			}
		case des != nil:
			des = des[:len(g)]
			for t, v := range g {
				des[t] += v * float32(math.Float32bits(hs[t]+es[t])>>31^1)
			}
		}
	}
}

func gineGrad64(dh, de, gy, h, e []float64, src, dst, eidx []int32, f, lo, hi int) {
	for k := range src {
		g := gy[int(dst[k])*f+lo : int(dst[k])*f+hi]
		var dhs, des []float64
		if dh != nil {
			dhs = dh[int(src[k])*f+lo : int(src[k])*f+hi]
		}
		if e == nil {
			for t, v := range g {
				dhs[t] += v
			}
			continue
		}
		ek := k
		if eidx != nil {
			ek = int(eidx[k])
		}
		hs := h[int(src[k])*f+lo : int(src[k])*f+hi]
		es := e[ek*f+lo : ek*f+hi]
		hs, es = hs[:len(g)], es[:len(g)]
		if de != nil {
			des = de[ek*f+lo : ek*f+hi]
		}
		switch {
		case dhs != nil && des != nil:
			dhs, des = dhs[:len(g)], des[:len(g)]
			for t, v := range g {
				m := v * float64(math.Float64bits(hs[t]+es[t])>>63^1)
				dhs[t] += m
				des[t] += m
			}
		case dhs != nil:
			dhs = dhs[:len(g)]
			for t, v := range g {
				dhs[t] += v * float64(math.Float64bits(hs[t]+es[t])>>63^1)
			}
		case des != nil:
			des = des[:len(g)]
			for t, v := range g {
				des[t] += v * float64(math.Float64bits(hs[t]+es[t])>>63^1)
			}
		}
	}
}

// gineComposed is GINEAggregate from backend-generic ops, for backends
// without the fused CPU kernel.
func (tp *Tape) gineComposed(h, e *Var, src, dst, eidx []int32, nodes int) *Var {
	msg := tp.IndexSelect(h, 0, src)
	if e != nil {
		et := e
		if eidx != nil {
			et = tp.IndexSelect(e, 0, eidx)
		}
		msg = tp.ReLU(tp.Add(msg, et))
	}
	return tp.ScatterAdd(msg, dst, nodes)
}
