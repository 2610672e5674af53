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
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), sumKind)
	if s != nil {
		*s = sumSaved{x: a, axis: ax, scale: 1}
	}
	return out
}

// Mean returns the mean of a along axis (removed unless keepdim).
func (tp *Tape) Mean(a *Var, axis int, keepdim bool) *Var {
	tp.checkIn("Mean", a)
	ax := normAxis("Mean", axis, a.Rank())
	y := tensor.Mean(tp.alloc(a.Value, reducedShape(a.Shape(), ax, keepdim)...), a.Value, ax, keepdim)
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), sumKind)
	if s != nil {
		*s = sumSaved{x: a, axis: ax, scale: 1 / float64(a.Dim(ax))}
	}
	return out
}

// sumSaved is the backward state of Sum and Mean: out = scale·Σ_axis x
// (scale 1 for Sum, 1/size for Mean).
type sumSaved struct {
	x     *Var
	axis  int
	scale float64
}

var sumKind = newSavedKind[sumSaved]()

// backward broadcasts scale·dout back along axis.
func (s *sumSaved) backward(tp *Tape, out *Var) {
	x := s.x
	if !x.requiresGrad {
		return
	}
	gy := out.Grad.Reshape(keepShape(x.Shape(), s.axis)...).Expand(x.Shape()...)
	g := tp.alloc(x.Value, x.Shape()...)
	if s.scale == 1 {
		tensor.Copy(g, gy)
	} else {
		tensor.MulScalar(g, gy, s.scale)
	}
	tp.addGrad(x, g, true)
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
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), sumAllKind)
	if s != nil {
		*s = sumAllSaved{x: a, scale: 1}
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
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), sumAllKind)
	if s != nil {
		*s = sumAllSaved{x: a, scale: 1 / float64(a.Size())}
	}
	return out
}

// sumAllSaved is the backward state of SumAll and MeanAll: out = scale·Σ x
// (scale 1 for SumAll, 1/size for MeanAll).
type sumAllSaved struct {
	x     *Var
	scale float64
}

var sumAllKind = newSavedKind[sumAllSaved]()

func (s *sumAllSaved) backward(tp *Tape, out *Var) {
	x := s.x
	if !x.requiresGrad {
		return
	}
	g := tp.alloc(x.Value, x.Shape()...)
	if onDevice(g) {
		tensor.Copy(g, out.Grad) // broadcast, without a wait for the device
		if s.scale != 1 {
			tensor.MulScalar(g, g, s.scale)
		}
	} else {
		g.Fill(out.Grad.Item() * s.scale)
	}
	tp.addGrad(x, g, true)
}

// Max returns the maximum of a along axis. The gradient goes to the first
// maximal element of each reduced slice.
func (tp *Tape) Max(a *Var, axis int, keepdim bool) *Var {
	tp.checkIn("Max", a)
	ax := normAxis("Max", axis, a.Rank())
	y := tensor.Max(tp.alloc(a.Value, reducedShape(a.Shape(), ax, keepdim)...), a.Value, ax, keepdim)
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), maxKind)
	if s != nil {
		*s = maxSaved{x: a, axis: ax, argmax: tensor.Argmax(a.Value, ax)}
	}
	return out
}

// maxSaved is Max's backward state: argmax holds, for each reduced slice,
// the index along axis of its first maximum, which gets the gradient.
type maxSaved struct {
	x      *Var
	axis   int
	argmax []int32
}

var maxKind = newSavedKind[maxSaved]()

func (s *maxSaved) backward(tp *Tape, out *Var) {
	x := s.x
	if !x.requiresGrad {
		return
	}
	shape := x.Shape()
	outer, inner := 1, 1
	for i := 0; i < s.axis; i++ {
		outer *= shape[i]
	}
	for i := s.axis + 1; i < len(shape); i++ {
		inner *= shape[i]
	}
	g := tp.zeros(x.Value, shape...)
	gy := tp.contig(out.Grad)
	if g.DType() == tensor.Float32 {
		maxGrad(g.Data32(), gy.Data32(), s.argmax, outer, shape[s.axis], inner)
	} else {
		maxGrad(g.Data64(), gy.Data64(), s.argmax, outer, shape[s.axis], inner)
	}
	tp.addGrad(x, g, true)
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
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), softmaxKind)
	if s != nil {
		*s = softmaxSaved{x: a, axis: ax}
	}
	return out
}

// softmaxSaved is Softmax's backward state (the backward reads the result).
type softmaxSaved struct {
	x    *Var
	axis int
}

var softmaxKind = newSavedKind[softmaxSaved]()

// dx = y ⊙ (gy − Σ_axis gy ⊙ y).
func (s *softmaxSaved) backward(tp *Tape, out *Var) {
	y, gy := out.Value, out.Grad
	g := tensor.Mul(tp.gradBuf(out), gy, y)
	sum := tensor.Sum(tp.alloc(y, keepShape(y.Shape(), s.axis)...), g, s.axis, true)
	tensor.Sub(g, gy, sum)
	tensor.Mul(g, g, y)
	tp.addGrad(s.x, g, true)
}

// LogSoftmax returns a − log Σ exp(a) along axis.
func (tp *Tape) LogSoftmax(a *Var, axis int) *Var {
	tp.checkIn("LogSoftmax", a)
	ax := normAxis("LogSoftmax", axis, a.Rank())
	y := tensor.LogSoftmax(tp.alloc(a.Value, a.Shape()...), a.Value, ax)
	out, s := record(tp, y, tp.anyGrad(a, nil, nil), logSoftmaxKind)
	if s != nil {
		*s = logSoftmaxSaved{x: a, axis: ax}
	}
	return out
}

// logSoftmaxSaved is LogSoftmax's backward state (the backward reads the
// result).
type logSoftmaxSaved struct {
	x    *Var
	axis int
}

var logSoftmaxKind = newSavedKind[logSoftmaxSaved]()

// dx = gy − exp(y) ⊙ Σ_axis gy.
func (s *logSoftmaxSaved) backward(tp *Tape, out *Var) {
	y, gy := out.Value, out.Grad
	sum := tensor.Sum(tp.alloc(y, keepShape(y.Shape(), s.axis)...), gy, s.axis, true)
	g := tensor.Exp(tp.gradBuf(out), y)
	tensor.Mul(g, g, sum)
	tensor.Sub(g, gy, g)
	tp.addGrad(s.x, g, true)
}
