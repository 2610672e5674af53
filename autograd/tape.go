package autograd

import (
	"fmt"
	"strconv"
	"strings"

	"lgflow/tensor"
)

// Tape records the operations of one forward pass so that Backward can
// propagate gradients through them in reverse order.
//
// A Tape has no global state: forward passes in different goroutines each use
// their own tape and may share parameters. One tape must not be used by two
// goroutines at once.
//
// Every value and gradient buffer a tape allocates comes from a package-level
// pool and goes back to it on Release, so a training loop that releases its
// tape after each step does not grow the heap. On another backend (a GPU)
// the buffers are the backend's, allocated without zeroing, and Release
// hands them back to it (tensor.Release: the GPU backend's caching
// allocator) instead of leaving them to the garbage collector. A no-grad tape (NoGrad)
// computes values but records nothing.
type Tape struct {
	noGrad   bool
	nodes    []node
	saved    []savedSlabber // by savedKind id: slabs of the ops' saved states (saved.go)
	slabs    [][]Var
	slab     int // index of the slab being filled
	slabPos  int // next free Var in slabs[slab]
	bufs     []poolBuf
	dev      []*tensor.Tensor    // buffers on other backends, released with the tape
	idx      []*tensor.EdgeIndex // edge indices whose device copies go with the tape (OwnIndex)
	backward bool                // Backward ran at least once
}

// TapeOption configures a Tape.
type TapeOption func(*Tape)

// WithNoGrad makes a tape record nothing: op results carry no graph and
// Backward panics. Use it for sampling and self-conditioning passes.
func WithNoGrad() TapeOption { return func(tp *Tape) { tp.noGrad = true } }

// NewTape returns an empty recording tape.
func NewTape(opts ...TapeOption) *Tape {
	tp := &Tape{}
	for _, o := range opts {
		o(tp)
	}
	return tp
}

// NoGrad returns a tape that records nothing (NewTape(WithNoGrad())).
func NoGrad() *Tape { return NewTape(WithNoGrad()) }

// Recording reports whether the tape records operations for Backward.
func (tp *Tape) Recording() bool { return !tp.noGrad }

// Len returns the number of recorded operations.
func (tp *Tape) Len() int { return len(tp.nodes) }

// node is one recorded operation: its output and its saved state, whose
// backward method propagates out.Grad to the op's inputs (see saved.go).
type node struct {
	out   *Var
	saved savedState
}

// newVar returns a fresh intermediate Var from the tape's slab.
func (tp *Tape) newVar() *Var {
	const slabSize = 256
	if tp.slab < len(tp.slabs) && tp.slabPos == len(tp.slabs[tp.slab]) {
		tp.slab++
		tp.slabPos = 0
	}
	if tp.slab == len(tp.slabs) {
		tp.slabs = append(tp.slabs, make([]Var, slabSize))
	}
	v := &tp.slabs[tp.slab][tp.slabPos]
	tp.slabPos++
	v.tape = tp
	return v
}

// checkIn panics if v cannot be an input of an op on tp: nil, or an
// intermediate of another tape that requires a gradient.
func (tp *Tape) checkIn(op string, v *Var) {
	if v == nil {
		panic("autograd." + op + ": nil input")
	}
	if v.Value == nil {
		panic("autograd." + op + ": input Var has no value (used after its tape was released?)")
	}
	if v.requiresGrad && !v.leaf && v.tape != tp {
		panic("autograd." + op + ": input is an intermediate of another tape (Detach it first)")
	}
}

// Backward computes the gradient of loss (a Var with one element) with
// respect to every Var it depends on, seeding dloss = 1. Parameter gradients
// accumulate into Grad; intermediate gradients are recomputed on each call.
func (tp *Tape) Backward(loss *Var) {
	if loss.Size() != 1 {
		panic(fmt.Sprintf("autograd.Backward: loss has shape %v, want a single element (use BackwardWith)", loss.Shape()))
	}
	seed := tp.alloc(loss.Value, loss.Shape()...)
	seed.Fill(1)
	tp.BackwardWith(loss, seed)
}

// BackwardWith propagates the upstream gradient gy (y's shape) back through
// the tape. gy is read, not modified, and must stay valid until Release.
func (tp *Tape) BackwardWith(y *Var, gy *tensor.Tensor) {
	if tp.noGrad {
		panic("autograd.Backward: tape was created with WithNoGrad")
	}
	if !sameShape(y.Shape(), gy.Shape()) {
		panic(fmt.Sprintf("autograd.BackwardWith: gradient shape %v does not match value shape %v", gy.Shape(), y.Shape()))
	}
	if !y.requiresGrad {
		return
	}
	if !y.leaf && y.tape != tp {
		panic("autograd.Backward: y was not produced by this tape")
	}
	if tp.backward {
		for i := range tp.nodes {
			tp.nodes[i].out.Grad = nil
			tp.nodes[i].out.gradShared = false
		}
	}
	tp.backward = true
	tp.addGrad(y, gy, false)
	for i := len(tp.nodes) - 1; i >= 0; i-- {
		n := &tp.nodes[i]
		if n.out.Grad == nil {
			continue
		}
		n.saved.backward(tp, n.out)
	}
}

// Release returns every buffer the tape allocated (values and gradients of
// the Vars it created) to the pool and empties the tape so that it can be
// reused. Vars created by the tape must not be used afterwards: Clone any
// value you keep. In particular, results of a no-grad tape that feed another
// tape (self-conditioning) must not be released before that tape is done
// with them. Parameters and constants are not affected.
func (tp *Tape) Release() {
	clear(tp.nodes)
	tp.nodes = tp.nodes[:0]
	tp.releaseSaved()
	for s := 0; s <= tp.slab && s < len(tp.slabs); s++ {
		n := len(tp.slabs[s])
		if s == tp.slab {
			n = tp.slabPos
		}
		for i := 0; i < n; i++ {
			v := &tp.slabs[s][i]
			v.Value, v.Grad, v.tape = nil, nil, nil
			v.requiresGrad, v.leaf, v.gradShared = false, false, false
		}
	}
	tp.slab, tp.slabPos = 0, 0
	for i := range tp.bufs {
		tp.bufs[i].put()
	}
	clear(tp.bufs)
	tp.bufs = tp.bufs[:0]
	tensor.Release(tp.dev...)
	clear(tp.dev)
	tp.dev = tp.dev[:0]
	for _, g := range tp.idx {
		g.Release()
	}
	clear(tp.idx)
	tp.idx = tp.idx[:0]
	tp.backward = false
}

// allocDevice returns an uninitialised contiguous tensor on backend be
// (not the CPU) that Release hands back to be.
func (tp *Tape) allocDevice(be tensor.Backend, dt tensor.DType, shape []int) *tensor.Tensor {
	t := tensor.EmptyOn(be, dt, shape...)
	tp.dev = append(tp.dev, t)
	return t
}

// onDevice reports whether t lives on a backend other than the CPU, where
// reading a value to the host (Item, tensor.SumAll) waits for the device:
// ops then keep scalars on the device instead.
func onDevice(t *tensor.Tensor) bool { return t.Backend() != tensor.CPU }

// Own makes t, a tensor the caller allocated for this tape's computation
// (a batch uploaded to a GPU, a constant), go back to its backend when the
// tape is released, like the tape's own buffers; t must not be used after
// Release. CPU tensors are left to the garbage collector. It returns t.
func (tp *Tape) Own(t *tensor.Tensor) *tensor.Tensor {
	if t != nil && t.Backend() != tensor.CPU {
		tp.dev = append(tp.dev, t)
	}
	return t
}

// addGrad adds g to v's gradient. If owned, g is a tape buffer nobody else
// uses and may be adopted as v.Grad; otherwise it is shared and copied before
// any in-place accumulation.
func (tp *Tape) addGrad(v *Var, g *tensor.Tensor, owned bool) {
	if !v.requiresGrad {
		return
	}
	if v.leaf {
		v.mu.Lock()
		if v.Grad == nil {
			v.Grad = v.Value.NewLike()
			tensor.Copy(v.Grad, g)
		} else {
			tensor.Add(v.Grad, v.Grad, g)
		}
		v.mu.Unlock()
		return
	}
	if v.Grad == nil {
		v.Grad = g
		v.gradShared = !owned
		return
	}
	if v.gradShared {
		dst := tp.alloc(v.Value, v.Value.Shape()...)
		tensor.Add(dst, v.Grad, g)
		v.Grad = dst
		v.gradShared = false
		return
	}
	tensor.Add(v.Grad, v.Grad, g)
}

// gradDst returns a contiguous buffer that an op may accumulate v's gradient
// into with a beta: when beta is 0 the buffer holds garbage and must be
// overwritten, when 1 it holds the gradient so far. Callers must call
// doneGrad(v) afterwards (it unlocks the mutex of a parameter).
func (tp *Tape) gradDst(v *Var) (dst *tensor.Tensor, beta float64) {
	if v.leaf {
		v.mu.Lock()
		if v.Grad == nil {
			v.Grad = v.Value.NewLike()
		}
		return v.Grad, 1
	}
	if v.Grad == nil {
		v.Grad = tp.alloc(v.Value, v.Value.Shape()...)
		v.gradShared = false
		return v.Grad, 0
	}
	if v.gradShared || !v.Grad.IsContiguous() {
		dst := tp.alloc(v.Value, v.Value.Shape()...)
		tensor.Copy(dst, v.Grad)
		v.Grad = dst
		v.gradShared = false
	}
	return v.Grad, 1
}

// gradZeroDst is gradDst for ops that can only accumulate (+=): the returned
// buffer holds the gradient so far, zeros if none.
func (tp *Tape) gradZeroDst(v *Var) *tensor.Tensor {
	dst, beta := tp.gradDst(v)
	if beta == 0 {
		dst.Zero()
	}
	return dst
}

// doneGrad ends a gradDst/gradZeroDst section.
func (tp *Tape) doneGrad(v *Var) {
	if v.leaf {
		v.mu.Unlock()
	}
}

// anyGrad reports whether the tape records and any of the Vars needs a gradient.
func (tp *Tape) anyGrad(a, b, c *Var) bool {
	if tp.noGrad {
		return false
	}
	return (a != nil && a.requiresGrad) || (b != nil && b.requiresGrad) || (c != nil && c.requiresGrad)
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func shapeString(s []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}
