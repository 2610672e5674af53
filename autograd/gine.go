package autograd

import (
	"fmt"

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
// It is GINEAggregateIndexed over an index built for this call; a caller
// that aggregates over the same edges several times (the layers of a
// GNN) builds a tensor.EdgeIndex once and calls GINEAggregateIndexed, so
// that a GPU backend uploads the index once.
func (tp *Tape) GINEAggregate(h, e *Var, src, dst, eidx []int32) *Var {
	tp.checkIn("GINEAggregate", h)
	if h.Rank() != 2 {
		panic(fmt.Sprintf("autograd.GINEAggregate: h must be (nodes, F), got %v", h.Shape()))
	}
	classes := 0
	if e == nil {
		eidx = nil
	} else if eidx != nil {
		tp.checkIn("GINEAggregate", e)
		if e.Rank() != 2 {
			panic(fmt.Sprintf("autograd.GINEAggregate: edge term %v does not match h %v", e.Shape(), h.Shape()))
		}
		classes = e.Dim(0)
	}
	g, err := tensor.NewEdgeIndex(src, dst, eidx, h.Dim(0), classes)
	if err != nil {
		panic("autograd.GINEAggregate: " + err.Error())
	}
	if h.Value.Backend() != tensor.CPU {
		tp.OwnIndex(g)
	}
	return tp.gineAggregate("GINEAggregate", h, e, g)
}

// GINEAggregateIndexed is GINEAggregate over the edges of g: ek is
// g.Classes()[k] when g has classes (e then is the (g.NumClasses(), F)
// table), k otherwise (e the (g.Len(), F) dense edge terms); e may be nil
// (the plain sum). The index is checked once when it is built, not here,
// and a GPU backend keeps its copy of it between the layers and the
// backward pass (see OwnIndex for freeing it).
func (tp *Tape) GINEAggregateIndexed(h, e *Var, g *tensor.EdgeIndex) *Var {
	if g == nil {
		panic("autograd.GINEAggregateIndexed: nil EdgeIndex")
	}
	return tp.gineAggregate("GINEAggregateIndexed", h, e, g)
}

func (tp *Tape) gineAggregate(op string, h, e *Var, g *tensor.EdgeIndex) *Var {
	tp.checkIn(op, h)
	if h.Rank() != 2 || h.Dim(0) != g.Nodes() {
		panic(fmt.Sprintf("autograd.%s: h must be (nodes, F) for %d nodes, got %v", op, g.Nodes(), h.Shape()))
	}
	nodes, f := h.Dim(0), h.Dim(1)
	if e != nil {
		tp.checkIn(op, e)
		if e == h {
			panic(fmt.Sprintf("autograd.%s: h and e must be different Vars", op))
		}
		checkDType(op, h.Value, e.Value)
		rows := g.Len()
		if g.Classes() != nil {
			rows = g.NumClasses()
		}
		if e.Rank() != 2 || e.Dim(1) != f || e.Dim(0) != rows {
			panic(fmt.Sprintf("autograd.%s: edge term %v does not match h %v and %d edge rows", op, e.Shape(), h.Shape(), rows))
		}
	}
	hv := tp.contig(h.Value)
	var ev *tensor.Tensor
	if e != nil {
		ev = tp.contig(e.Value)
	}
	y := tp.alloc(h.Value, nodes, f) // overwritten
	tensor.GINEAggregate(y, hv, ev, g)
	out, s := record(tp, y, tp.anyGrad(h, e, nil), gineKind)
	if s != nil {
		*s = gineSaved{h: h, e: e, hv: hv, ev: ev, g: g}
	}
	return out
}

// OwnIndex makes the tape free the backends' copies of g (g.Release) when
// it is released, for an index built for this tape's computation (a
// batch's edges). It returns g.
func (tp *Tape) OwnIndex(g *tensor.EdgeIndex) *tensor.EdgeIndex {
	if g != nil {
		tp.idx = append(tp.idx, g)
	}
	return g
}

// gineSaved is GINEAggregate's backward state.
type gineSaved struct {
	h, e *Var // node features and edge terms (e may be nil), for their gradients
	// hv and ev are their contiguous values (ev nil without e), from which
	// the backward recomputes the ReLU masks.
	hv, ev *tensor.Tensor
	g      *tensor.EdgeIndex
}

var gineKind = newSavedKind[gineSaved]()

// backward: with g = dout[dst[k]] and mask = h[src[k]] + e[ek] > 0,
// dh[src[k]] += g ⊙ mask and de[ek] += g ⊙ mask.
func (s *gineSaved) backward(tp *Tape, out *Var) {
	h, e := s.h, s.e
	gy := tp.contig(out.Grad)
	var dh, de *tensor.Tensor
	if h.requiresGrad {
		dh = tp.gradZeroDst(h)
	}
	if e != nil && e.requiresGrad {
		de = tp.gradZeroDst(e)
	}
	tensor.GINEAggregateBackward(dh, de, gy, s.hv, s.ev, s.g)
	if dh != nil {
		tp.doneGrad(h)
	}
	if de != nil {
		tp.doneGrad(e)
	}
}
