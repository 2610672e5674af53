package autograd

import "lgflow/tensor"

// Saved state of recorded ops.
//
// Each op declares a small struct type, named after it (matMulSaved,
// attentionSaved, ...), holding by name what its backward pass needs, and
// gives it the method
//
//	backward(tp *Tape, out *Var)
//
// which propagates out.Grad (the gradient of the op's result out) to the
// inputs named in the struct. The states live in per-type slabs on the tape
// (savedSlab), reused after Release like the tape's Vars, so recording an op
// allocates nothing. An op records itself with
//
//	out, s := record(tp, y, tp.anyGrad(x, w, nil), linearKind)
//	if s != nil {
//		*s = linearSaved{x: x, w: w, ...}
//	}

// savedState is the saved state of one recorded op.
type savedState interface {
	// backward adds the op's contribution to the gradients of its inputs,
	// given out, the op's result, whose Grad is set.
	backward(tp *Tape, out *Var)
}

// savedKind names the tape slab that holds saved states of type S. Each
// state type has one, a package-level variable made by newSavedKind.
type savedKind[S any] struct{ id int }

// nSavedKinds is the number of savedKinds made so far (at package init).
var nSavedKinds int

// newSavedKind returns a new kind for states of type S. Call it only from
// package-level variable initialisers.
func newSavedKind[S any]() savedKind[S] {
	nSavedKinds++
	return savedKind[S]{id: nSavedKinds - 1}
}

// savedSlabber is a savedSlab of any state type.
type savedSlabber interface {
	// reset zeroes the states handed out (dropping their references to
	// Vars, tensors and index slices) and makes them available again.
	reset()
}

// savedSlab hands out states of type S from chunks that are kept and reused
// after reset, so that a tape reused across steps stops allocating.
// Pointers it returns stay valid until reset.
type savedSlab[S any] struct {
	chunks [][]S
	chunk  int // index of the chunk being filled
	pos    int // next free state in chunks[chunk]
}

// next returns a zeroed state.
func (sl *savedSlab[S]) next() *S {
	if sl.chunk < len(sl.chunks) && sl.pos == len(sl.chunks[sl.chunk]) {
		sl.chunk++
		sl.pos = 0
	}
	if sl.chunk == len(sl.chunks) {
		// 8, 16, ..., 256 states: an op used once per step costs little.
		sl.chunks = append(sl.chunks, make([]S, 8<<min(sl.chunk, 5)))
	}
	s := &sl.chunks[sl.chunk][sl.pos]
	sl.pos++
	return s
}

func (sl *savedSlab[S]) reset() {
	for c := 0; c <= sl.chunk && c < len(sl.chunks); c++ {
		n := len(sl.chunks[c])
		if c == sl.chunk {
			n = sl.pos
		}
		clear(sl.chunks[c][:n])
	}
	sl.chunk, sl.pos = 0, 0
}

// savedSlabOf returns tp's slab for states of kind k, creating it on first use.
func savedSlabOf[S any](tp *Tape, k savedKind[S]) *savedSlab[S] {
	if k.id >= len(tp.saved) {
		tp.saved = append(tp.saved, make([]savedSlabber, nSavedKinds-len(tp.saved))...)
	}
	sl, ok := tp.saved[k.id].(*savedSlab[S])
	if !ok {
		sl = new(savedSlab[S])
		tp.saved[k.id] = sl
	}
	return sl
}

// record wraps val as the result of an op. When grad is true (and the tape
// records) the op is recorded and a zeroed state of kind k is returned, which
// the op fills in with what its backward needs; otherwise the state is nil.
func record[S any, P interface {
	*S
	savedState
}](tp *Tape, val *tensor.Tensor, grad bool, k savedKind[S]) (*Var, *S) {
	v := tp.newVar()
	v.Value = val
	if !grad || tp.noGrad {
		return v, nil
	}
	v.requiresGrad = true
	s := savedSlabOf(tp, k).next()
	tp.nodes = append(tp.nodes, node{out: v, saved: P(s)})
	return v, s
}

// releaseSaved zeroes and recycles every saved state of tp.
func (tp *Tape) releaseSaved() {
	for _, sl := range tp.saved {
		if sl != nil {
			sl.reset()
		}
	}
}

// unarySaved is the state of a one-input op whose backward needs only the
// input x, the result and its gradient (the elementwise unary ops, the
// reshapes, Expand, AddScalar, Contiguous): grad is the op's backward rule.
type unarySaved struct {
	x    *Var
	grad func(tp *Tape, x, out *Var)
}

var unaryKind = newSavedKind[unarySaved]()

func (s *unarySaved) backward(tp *Tape, out *Var) { s.grad(tp, s.x, out) }

// recordUnary records y = op(x) with backward rule grad.
func (tp *Tape) recordUnary(y *tensor.Tensor, x *Var, grad func(tp *Tape, x, out *Var)) *Var {
	out, s := record(tp, y, tp.anyGrad(x, nil, nil), unaryKind)
	if s != nil {
		*s = unarySaved{x: x, grad: grad}
	}
	return out
}

// binarySaved is the state of an elementwise op of two broadcasting inputs
// (Add, Sub, Mul, Div): grad is the op's backward rule.
type binarySaved struct {
	lhs, rhs *Var
	grad     func(tp *Tape, lhs, rhs, out *Var)
}

var binaryKind = newSavedKind[binarySaved]()

func (s *binarySaved) backward(tp *Tape, out *Var) { s.grad(tp, s.lhs, s.rhs, out) }

// recordBinary records y = lhs op rhs with backward rule grad.
func (tp *Tape) recordBinary(y *tensor.Tensor, lhs, rhs *Var, grad func(tp *Tape, lhs, rhs, out *Var)) *Var {
	out, s := record(tp, y, tp.anyGrad(lhs, rhs, nil), binaryKind)
	if s != nil {
		*s = binarySaved{lhs: lhs, rhs: rhs, grad: grad}
	}
	return out
}
