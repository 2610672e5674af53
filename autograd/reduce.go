package autograd

import (
	"fmt"

	"lgflow/tensor"
)

// float is the element type of CPU kernels written in this package.
type float interface{ ~float32 | ~float64 }

// normAxis resolves a possibly negative axis, panicking if out of range.
func normAxis(op string, axis, rank int) int {
	if axis < 0 {
		axis += rank
	}
	if axis < 0 || axis >= rank {
		panic(fmt.Sprintf("autograd.%s: axis %d out of range for rank %d", op, axis, rank))
	}
	return axis
}

// reducedShape returns shape with axis removed (or set to 1 if keepdim).
func reducedShape(shape []int, axis int, keepdim bool) []int {
	out := make([]int, 0, len(shape))
	for i, d := range shape {
		if i == axis {
			if keepdim {
				out = append(out, 1)
			}
			continue
		}
		out = append(out, d)
	}
	return out
}

// keepShape returns shape with axis set to 1.
func keepShape(shape []int, axis int) []int {
	out := append([]int(nil), shape...)
	out[axis] = 1
	return out
}

// Sum returns the sum of a along axis (removed unless keepdim).
func (tp *Tape) Sum(a *Var, axis int, keepdim bool) *Var {
	tp.checkIn("Sum", a)
	ax := normAxis("Sum", axis, a.Rank())
	y := tensor.Sum(tp.alloc(a.Value, reducedShape(a.Shape(), ax, keepdim)...), a.Value, ax, keepdim)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), sumBackward)
	if n != nil {
		n.a, n.i0, n.f0 = a, ax, 1
	}
	return out
}

// Mean returns the mean of a along axis (removed unless keepdim).
func (tp *Tape) Mean(a *Var, axis int, keepdim bool) *Var {
	tp.checkIn("Mean", a)
	ax := normAxis("Mean", axis, a.Rank())
	y := tensor.Mean(tp.alloc(a.Value, reducedShape(a.Shape(), ax, keepdim)...), a.Value, ax, keepdim)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), sumBackward)
	if n != nil {
		n.a, n.i0, n.f0 = a, ax, 1/float64(a.Dim(ax))
	}
	return out
}

// sumBackward broadcasts f0·gy back along axis i0.
func sumBackward(tp *Tape, n *node) {
	if !n.a.requiresGrad {
		return
	}
	gy := n.out.Grad.Reshape(keepShape(n.a.Shape(), n.i0)...).Expand(n.a.Shape()...)
	g := tp.alloc(n.a.Value, n.a.Shape()...)
	if n.f0 == 1 {
		tensor.Copy(g, gy)
	} else {
		tensor.MulScalar(g, gy, n.f0)
	}
	tp.addGrad(n.a, g, true)
}

// SumAll returns the sum of all elements of a as a rank-0 Var.
func (tp *Tape) SumAll(a *Var) *Var {
	tp.checkIn("SumAll", a)
	y := tp.alloc(a.Value)
	if onDevice(y) {
		tensor.SumTo(y, a.Value) // no wait for the device
	} else {
		y.Fill(tensor.SumAll(a.Value))
	}
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), sumAllBackward)
	if n != nil {
		n.a, n.f0 = a, 1
	}
	return out
}

// MeanAll returns the mean of all elements of a as a rank-0 Var.
func (tp *Tape) MeanAll(a *Var) *Var {
	tp.checkIn("MeanAll", a)
	y := tp.alloc(a.Value)
	if onDevice(y) {
		tensor.MulScalar(y, tensor.SumTo(y, a.Value), 1/float64(a.Size()))
	} else {
		y.Fill(tensor.MeanAll(a.Value))
	}
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), sumAllBackward)
	if n != nil {
		n.a, n.f0 = a, 1/float64(a.Size())
	}
	return out
}

func sumAllBackward(tp *Tape, n *node) {
	if !n.a.requiresGrad {
		return
	}
	g := tp.alloc(n.a.Value, n.a.Shape()...)
	if onDevice(g) {
		tensor.Copy(g, n.out.Grad) // broadcast, without a wait for the device
		if n.f0 != 1 {
			tensor.MulScalar(g, g, n.f0)
		}
	} else {
		g.Fill(n.out.Grad.Item() * n.f0)
	}
	tp.addGrad(n.a, g, true)
}

// Max returns the maximum of a along axis. The gradient goes to the first
// maximal element of each reduced slice.
func (tp *Tape) Max(a *Var, axis int, keepdim bool) *Var {
	tp.checkIn("Max", a)
	ax := normAxis("Max", axis, a.Rank())
	y := tensor.Max(tp.alloc(a.Value, reducedShape(a.Shape(), ax, keepdim)...), a.Value, ax, keepdim)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), maxBackward)
	if n != nil {
		n.a, n.i0 = a, ax
		n.idx0 = tensor.Argmax(a.Value, ax)
	}
	return out
}

func maxBackward(tp *Tape, n *node) {
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
		maxGrad(g.Data32(), gy.Data32(), n.idx0, outer, shape[n.i0], inner)
	} else {
		maxGrad(g.Data64(), gy.Data64(), n.idx0, outer, shape[n.i0], inner)
	}
	tp.addGrad(n.a, g, true)
}

func maxGrad[T float](g, gy []T, arg []int32, outer, dim, inner int) {
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			r := o*inner + i
			g[(o*dim+int(arg[r]))*inner+i] = gy[r]
		}
	}
}

// Softmax returns exp(a)/Σ exp(a) along axis.
func (tp *Tape) Softmax(a *Var, axis int) *Var {
	tp.checkIn("Softmax", a)
	ax := normAxis("Softmax", axis, a.Rank())
	y := tensor.Softmax(tp.alloc(a.Value, a.Shape()...), a.Value, ax)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), softmaxBackward)
	if n != nil {
		n.a, n.i0 = a, ax
	}
	return out
}

// da = y ⊙ (gy − Σ_axis gy ⊙ y).
func softmaxBackward(tp *Tape, n *node) {
	y, gy := n.out.Value, n.out.Grad
	g := tensor.Mul(tp.gradBuf(n), gy, y)
	s := tensor.Sum(tp.alloc(y, keepShape(y.Shape(), n.i0)...), g, n.i0, true)
	tensor.Sub(g, gy, s)
	tensor.Mul(g, g, y)
	tp.addGrad(n.a, g, true)
}

// LogSoftmax returns a − log Σ exp(a) along axis.
func (tp *Tape) LogSoftmax(a *Var, axis int) *Var {
	tp.checkIn("LogSoftmax", a)
	ax := normAxis("LogSoftmax", axis, a.Rank())
	y := tensor.LogSoftmax(tp.alloc(a.Value, a.Shape()...), a.Value, ax)
	out, n := tp.out(y, tp.anyGrad(a, nil, nil), logSoftmaxBackward)
	if n != nil {
		n.a, n.i0 = a, ax
	}
	return out
}

// da = gy − exp(y) ⊙ Σ_axis gy.
func logSoftmaxBackward(tp *Tape, n *node) {
	y, gy := n.out.Value, n.out.Grad
	s := tensor.Sum(tp.alloc(y, keepShape(y.Shape(), n.i0)...), gy, n.i0, true)
	g := tensor.Exp(tp.gradBuf(n), y)
	tensor.Mul(g, g, s)
	tensor.Sub(g, gy, g)
	tp.addGrad(n.a, g, true)
}
