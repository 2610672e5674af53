package tensor

import "math"

// reducedDst validates or allocates the destination of a reduction of a
// along axis.
func reducedDst(name string, be Backend, dst, a *Tensor, axis int, keepdim bool) *Tensor {
	if dst == nil {
		shape := make([]int, 0, len(a.shape))
		for i, d := range a.shape {
			if i == axis {
				if keepdim {
					shape = append(shape, 1)
				}
				continue
			}
			shape = append(shape, d)
		}
		return EmptyOn(be, a.dtype, shape...)
	}
	if dst.dtype != a.dtype {
		fail(ErrDType, name, "dst is %v, operand is %v", dst.dtype, a.dtype)
	}
	ok := true
	if keepdim {
		ok = len(dst.shape) == len(a.shape)
		for i := 0; ok && i < len(a.shape); i++ {
			if i == axis {
				ok = dst.shape[i] == 1
			} else {
				ok = dst.shape[i] == a.shape[i]
			}
		}
	} else {
		ok = len(dst.shape) == len(a.shape)-1
		for i := 0; ok && i < len(dst.shape); i++ {
			k := i
			if i >= axis {
				k++
			}
			ok = dst.shape[i] == a.shape[k]
		}
	}
	if !ok {
		fail(ErrShape, name, "dst shape %v for reducing %v along axis %d (keepdim %v)", dst.shape, a.shape, axis, keepdim)
	}
	return dst
}

func reduceOp(name string, op ReduceOp, dst, a *Tensor, axis int, keepdim bool) *Tensor {
	be := pickBackend(name, dst, a)
	axis = a.axis(name, axis)
	dst = reducedDst(name, be, dst, a, axis, keepdim)
	if dst.Size() == 0 {
		return dst
	}
	if a.shape[axis] == 0 {
		// An empty axis reduces to the operation's identity, as numpy:
		// sum 0, mean NaN, max and log-sum-exp -Inf.
		switch op {
		case ReduceSum:
			be.Fill(dst, 0)
		case ReduceMean:
			be.Fill(dst, math.NaN())
		default:
			be.Fill(dst, math.Inf(-1))
		}
		return dst
	}
	be.Reduce(op, dst, a, axis)
	return dst
}

// Sum sets dst to the sum of a along axis (negative counts from the end) and
// returns it. dst has a's shape without axis, or with it set to 1 if
// keepdim; nil allocates. Float32 sums accumulate in float64.
func Sum(dst, a *Tensor, axis int, keepdim bool) *Tensor {
	return reduceOp("Sum", ReduceSum, dst, a, axis, keepdim)
}

// Mean sets dst to the mean of a along axis (see Sum for dst).
func Mean(dst, a *Tensor, axis int, keepdim bool) *Tensor {
	return reduceOp("Mean", ReduceMean, dst, a, axis, keepdim)
}

// Max sets dst to the maximum of a along axis (see Sum for dst). NaNs are
// ignored unless every element is NaN.
func Max(dst, a *Tensor, axis int, keepdim bool) *Tensor {
	return reduceOp("Max", ReduceMax, dst, a, axis, keepdim)
}

// LogSumExp sets dst = log Σ exp(a) along axis, computed as
// m + log Σ exp(a-m) with m the maximum so it never overflows (see Sum for
// dst). A slice that is all -Inf gives -Inf.
func LogSumExp(dst, a *Tensor, axis int, keepdim bool) *Tensor {
	return reduceOp("LogSumExp", ReduceLogSumExp, dst, a, axis, keepdim)
}

// SumAll returns the sum of all elements of a, accumulated in float64.
func SumAll(a *Tensor) float64 { return a.backend().ReduceAll(ReduceSum, a) }

// MeanAll returns the mean of all elements of a (NaN if a is empty).
func MeanAll(a *Tensor) float64 { return SumAll(a) / float64(a.Size()) }

// MaxAbs returns max |a| over all elements (0 if a is empty).
func MaxAbs(a *Tensor) float64 { return a.backend().ReduceAll(ReduceMaxAbs, a) }

// FlagNonFinite sets flag to 1 if any element of a is NaN or infinite and
// leaves it unchanged otherwise (Backend.NonFinite). flag is a tensor of
// one element (any rank) with a's dtype on a's backend. Unlike a check
// through SumAll it does not wait for a GPU: a training loop flags every
// step's gradients and reads flag (Item) once in a while.
func FlagNonFinite(flag, a *Tensor) {
	be := pickBackend("FlagNonFinite", flag, a)
	sameDType("FlagNonFinite", a.dtype, flag)
	if flag.Size() != 1 {
		fail(ErrShape, "FlagNonFinite", "flag shape %v, want one element", flag.shape)
	}
	if a.Size() > 0 {
		be.NonFinite(flag, a)
	}
}

// Norm2Squared returns Σ a², accumulated in float64.
func Norm2Squared(a *Tensor) float64 { return a.backend().ReduceAll(ReduceSumSquares, a) }

// Argmax returns, for every position of a's other axes in row-major order,
// the index along axis of the largest element (the first one on ties).
func Argmax(a *Tensor, axis int) []int32 {
	axis = a.axis("Argmax", axis)
	n := a.shape[axis]
	if n == 0 {
		fail(ErrShape, "Argmax", "empty axis %d of shape %v", axis, a.shape)
	}
	out := make([]int32, a.Size()/n)
	if len(out) > 0 {
		a.backend().Argmax(out, a, axis)
	}
	return out
}

// SumTo sets dst to a summed down to dst's shape — the reverse of
// broadcasting dst's shape to a's, as needed for the gradient of a
// broadcast operand — and returns dst (which is required).
func SumTo(dst, a *Tensor) *Tensor {
	be := pickBackend("SumTo", dst, a)
	sameDType("SumTo", a.dtype, dst)
	if !broadcastsTo(dst.shape, a.shape) {
		fail(ErrShape, "SumTo", "dst shape %v does not broadcast to %v", dst.shape, a.shape)
	}
	if dst.Size() > 0 {
		be.SumTo(dst, a)
	}
	return dst
}

func softmaxOp(name string, dst, a *Tensor, axis int, log bool) *Tensor {
	be := pickBackend(name, dst, a)
	axis = a.axis(name, axis)
	if dst == nil {
		dst = EmptyOn(be, a.dtype, a.shape...)
	} else {
		checkDst(name, dst, a.dtype, a.shape)
	}
	if dst.Size() > 0 {
		be.Softmax(dst, a, axis, log)
	}
	return dst
}

// Softmax sets dst = exp(a - max) / Σ exp(a - max) along axis and returns it
// (nil dst allocates; dst may be a).
func Softmax(dst, a *Tensor, axis int) *Tensor { return softmaxOp("Softmax", dst, a, axis, false) }

// LogSoftmax sets dst = a - LogSumExp(a) along axis (see Softmax for dst).
func LogSoftmax(dst, a *Tensor, axis int) *Tensor {
	return softmaxOp("LogSoftmax", dst, a, axis, true)
}
