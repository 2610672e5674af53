package autograd

import (
	"sync"

	"lgflow/tensor"
)

// Var is a node of a computation graph: a forward value and, after a
// backward pass, the gradient of the loss with respect to that value.
//
// Vars come in three kinds:
//   - parameters (NewParam): trainable leaves, created once and reused by any
//     number of tapes; their Grad accumulates across Backward calls until
//     ZeroGrad;
//   - constants (NewConst, Detach): leaves that never receive a gradient;
//   - intermediates: results of Tape ops. Their Value and Grad live in
//     buffers owned by the tape, recycled by Tape.Release, after which the
//     Var must not be used.
type Var struct {
	// Value is the forward value. It must not be modified while a tape that
	// used it may still run Backward.
	Value *tensor.Tensor
	// Grad is the gradient of the loss with respect to Value, nil until one
	// arrives. For parameters it accumulates across Backward calls; for
	// intermediates it may share memory with the gradient of another Var
	// (treat it as read-only).
	Grad *tensor.Tensor

	requiresGrad bool
	leaf         bool
	gradShared   bool // Grad aliases a tensor this Var does not own (copy before writing)
	tape         *Tape
	mu           sync.Mutex // guards Grad of leaves shared by concurrent tapes
}

// NewParam returns a trainable leaf wrapping t (not copied). Parameters are
// created once and shared by every tape; Backward accumulates into Grad.
func NewParam(t *tensor.Tensor) *Var {
	if t == nil {
		panic("autograd.NewParam: nil tensor")
	}
	return &Var{Value: t, requiresGrad: true, leaf: true}
}

// NewConst returns a constant leaf wrapping t (not copied): gradients never
// flow into it, and it may be used by any tape.
func NewConst(t *tensor.Tensor) *Var {
	if t == nil {
		panic("autograd.NewConst: nil tensor")
	}
	return &Var{Value: t, leaf: true}
}

// RequiresGrad reports whether gradients flow into v.
func (v *Var) RequiresGrad() bool { return v.requiresGrad }

// IsLeaf reports whether v is a parameter or constant (not an op result).
func (v *Var) IsLeaf() bool { return v.leaf }

// Shape returns the shape of v.Value (do not modify).
func (v *Var) Shape() []int { return v.Value.Shape() }

// Dim returns the size of axis i of v.Value (negative i counts from the end).
func (v *Var) Dim(i int) int { return v.Value.Dim(i) }

// Rank returns the number of axes of v.Value.
func (v *Var) Rank() int { return v.Value.Rank() }

// Size returns the number of elements of v.Value.
func (v *Var) Size() int { return v.Value.Size() }

// DType returns the element type of v.Value.
func (v *Var) DType() tensor.DType { return v.Value.DType() }

// Item returns the single element of a size-1 Var.
func (v *Var) Item() float64 { return v.Value.Item() }

// ZeroGrad sets v.Grad to zero in place, keeping its buffer; it does nothing
// when v.Grad is nil.
func (v *Var) ZeroGrad() {
	v.mu.Lock()
	if v.Grad != nil {
		v.Grad.Zero()
	}
	v.mu.Unlock()
}

// Freeze makes the parameter v a constant leaf: from then on no tape sends
// it a gradient, and ops skip the work of computing one. Every model that
// shares v sees the change, so freeze the parameters of a copy of one's
// own (vae.Model.Frozen). Freeze does nothing to an intermediate Var.
func (v *Var) Freeze() {
	if v.leaf {
		v.requiresGrad = false
	}
}

// Detach returns a constant Var sharing v.Value: a value that gradients do
// not flow back through. The value is still owned by v's tape (if any), so it
// becomes invalid when that tape is released.
func (v *Var) Detach() *Var {
	return &Var{Value: v.Value, leaf: true}
}

// String returns a short description (shape, dtype, kind).
func (v *Var) String() string {
	kind := "intermediate"
	switch {
	case v.leaf && v.requiresGrad:
		kind = "param"
	case v.leaf:
		kind = "const"
	}
	return "Var(" + kind + " " + v.Value.DType().String() + " " + shapeString(v.Value.Shape()) + ")"
}
