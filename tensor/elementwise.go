package tensor

func binaryOp(name string, op BinaryOp, dst, a, b *Tensor, alpha float64) *Tensor {
	be := pickBackend(name, dst, a, b)
	sameDType(name, a.dtype, b)
	dst = elementwiseDst(name, be, dst, a.dtype, a, b)
	if dst.Size() > 0 {
		be.Binary(op, dst, a, b, alpha)
	}
	return dst
}

func unaryOp(name string, op UnaryOp, dst, a *Tensor, p0, p1 float64) *Tensor {
	be := pickBackend(name, dst, a)
	if dst == nil {
		dst = EmptyOn(be, a.dtype, a.shape...)
	} else {
		checkDst(name, dst, a.dtype, a.shape)
	}
	if dst.Size() > 0 {
		be.Unary(op, dst, a, p0, p1)
	}
	return dst
}

// Add sets dst = a + b elementwise with numpy broadcasting and returns dst.
// If dst is nil a new tensor of the broadcast shape is allocated; otherwise
// dst must have exactly that shape and the operands' dtype, and may be a or
// b itself (in-place update).
func Add(dst, a, b *Tensor) *Tensor { return binaryOp("Add", BinaryAdd, dst, a, b, 0) }

// Sub sets dst = a - b elementwise with broadcasting (see Add for dst).
func Sub(dst, a, b *Tensor) *Tensor { return binaryOp("Sub", BinarySub, dst, a, b, 0) }

// Mul sets dst = a · b elementwise with broadcasting (see Add for dst).
func Mul(dst, a, b *Tensor) *Tensor { return binaryOp("Mul", BinaryMul, dst, a, b, 0) }

// Div sets dst = a / b elementwise with broadcasting (see Add for dst).
func Div(dst, a, b *Tensor) *Tensor { return binaryOp("Div", BinaryDiv, dst, a, b, 0) }

// Maximum sets dst = max(a, b) elementwise with broadcasting (see Add for
// dst). If either element is NaN the result is NaN.
func Maximum(dst, a, b *Tensor) *Tensor { return binaryOp("Maximum", BinaryMax, dst, a, b, 0) }

// Minimum sets dst = min(a, b) elementwise with broadcasting (see Add for
// dst). If either element is NaN the result is NaN.
func Minimum(dst, a, b *Tensor) *Tensor { return binaryOp("Minimum", BinaryMin, dst, a, b, 0) }

// AddScaled sets dst = a + alpha·b elementwise with broadcasting (see Add
// for dst); it is the axpy of gradient accumulation.
func AddScaled(dst, a, b *Tensor, alpha float64) *Tensor {
	return binaryOp("AddScaled", BinaryAddScaled, dst, a, b, alpha)
}

// Lerp sets dst = a + w·(b - a) elementwise with broadcasting (see Add for
// dst): the linear interpolation of torch.lerp, the update of an
// exponential moving average.
func Lerp(dst, a, b *Tensor, w float64) *Tensor {
	return binaryOp("Lerp", BinaryLerp, dst, a, b, w)
}

// AddScalar sets dst = a + s elementwise. If dst is nil a new tensor is
// allocated; otherwise dst must have a's shape and dtype and may be a.
func AddScalar(dst, a *Tensor, s float64) *Tensor {
	return unaryOp("AddScalar", UnaryAffine, dst, a, 1, s)
}

// MulScalar sets dst = s · a elementwise (see AddScalar for dst).
func MulScalar(dst, a *Tensor, s float64) *Tensor {
	return unaryOp("MulScalar", UnaryAffine, dst, a, s, 0)
}

// Neg sets dst = -a (see AddScalar for dst).
func Neg(dst, a *Tensor) *Tensor { return unaryOp("Neg", UnaryNeg, dst, a, 0, 0) }

// Exp sets dst = e^a (see AddScalar for dst).
func Exp(dst, a *Tensor) *Tensor { return unaryOp("Exp", UnaryExp, dst, a, 0, 0) }

// Log sets dst = ln a (NaN for a < 0, -Inf for 0; see AddScalar for dst).
func Log(dst, a *Tensor) *Tensor { return unaryOp("Log", UnaryLog, dst, a, 0, 0) }

// Sqrt sets dst = √a (see AddScalar for dst).
func Sqrt(dst, a *Tensor) *Tensor { return unaryOp("Sqrt", UnarySqrt, dst, a, 0, 0) }

// Rsqrt sets dst = 1/√a (see AddScalar for dst).
func Rsqrt(dst, a *Tensor) *Tensor { return unaryOp("Rsqrt", UnaryRsqrt, dst, a, 0, 0) }

// Square sets dst = a² (see AddScalar for dst).
func Square(dst, a *Tensor) *Tensor { return unaryOp("Square", UnarySquare, dst, a, 0, 0) }

// Abs sets dst = |a| (see AddScalar for dst).
func Abs(dst, a *Tensor) *Tensor { return unaryOp("Abs", UnaryAbs, dst, a, 0, 0) }

// Tanh sets dst = tanh a (see AddScalar for dst).
func Tanh(dst, a *Tensor) *Tensor { return unaryOp("Tanh", UnaryTanh, dst, a, 0, 0) }

// Sigmoid sets dst = 1/(1+e^-a) (see AddScalar for dst).
func Sigmoid(dst, a *Tensor) *Tensor { return unaryOp("Sigmoid", UnarySigmoid, dst, a, 0, 0) }

// ReLU sets dst = max(a, 0) (see AddScalar for dst).
func ReLU(dst, a *Tensor) *Tensor { return unaryOp("ReLU", UnaryReLU, dst, a, 0, 0) }

// GELU sets dst = a·Φ(a) = a/2·(1 + erf(a/√2)), the exact (not tanh
// approximated) Gaussian error linear unit (see AddScalar for dst).
func GELU(dst, a *Tensor) *Tensor { return unaryOp("GELU", UnaryGELU, dst, a, 0, 0) }

// SiLU sets dst = a·sigmoid(a) (swish; see AddScalar for dst).
func SiLU(dst, a *Tensor) *Tensor { return unaryOp("SiLU", UnarySiLU, dst, a, 0, 0) }

// Clamp sets dst = min(max(a, lo), hi) (see AddScalar for dst).
func Clamp(dst, a *Tensor, lo, hi float64) *Tensor {
	return unaryOp("Clamp", UnaryClamp, dst, a, lo, hi)
}

// Pow sets dst = a^p (math.Pow semantics; see AddScalar for dst).
func Pow(dst, a *Tensor, p float64) *Tensor { return unaryOp("Pow", UnaryPow, dst, a, p, 0) }

func gradOp(name string, op BinaryOp, dst, x, gy *Tensor) *Tensor {
	be := pickBackend(name, dst, x, gy)
	sameDType(name, x.dtype, gy)
	if !sameShape(x.shape, gy.shape) {
		fail(ErrShape, name, "shapes %v and %v differ", x.shape, gy.shape)
	}
	if dst == nil {
		dst = EmptyOn(be, x.dtype, x.shape...)
	} else {
		checkDst(name, dst, x.dtype, x.shape)
	}
	if dst.Size() > 0 {
		be.Binary(op, dst, x, gy, 0)
	}
	return dst
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

// ReLUGrad sets dst = gy·[x > 0], the gradient of ReLU at x given the
// upstream gradient gy (same shapes; dst as for AddScalar, may alias gy).
func ReLUGrad(dst, x, gy *Tensor) *Tensor { return gradOp("ReLUGrad", BinaryReLUGrad, dst, x, gy) }

// GELUGrad sets dst = gy·(Φ(x) + x·φ(x)), the gradient of the exact GELU
// (φ the standard normal density, Φ its distribution function).
func GELUGrad(dst, x, gy *Tensor) *Tensor { return gradOp("GELUGrad", BinaryGELUGrad, dst, x, gy) }

// SiLUGrad sets dst = gy·s·(1 + x·(1-s)) with s = sigmoid(x).
func SiLUGrad(dst, x, gy *Tensor) *Tensor { return gradOp("SiLUGrad", BinarySiLUGrad, dst, x, gy) }

// SigmoidGradFromY sets dst = gy·y·(1-y) where y = sigmoid(x) is the
// forward output.
func SigmoidGradFromY(dst, y, gy *Tensor) *Tensor {
	return gradOp("SigmoidGradFromY", BinarySigmoidGradY, dst, y, gy)
}

// TanhGradFromY sets dst = gy·(1-y²) where y = tanh(x) is the forward output.
func TanhGradFromY(dst, y, gy *Tensor) *Tensor {
	return gradOp("TanhGradFromY", BinaryTanhGradY, dst, y, gy)
}

// Where sets dst = cond != 0 ? a : b elementwise, with cond, a and b
// broadcast together (see Add for dst). cond has the same dtype as a and b.
func Where(dst, cond, a, b *Tensor) *Tensor {
	be := pickBackend("Where", dst, cond, a, b)
	sameDType("Where", a.dtype, b, cond)
	dst = elementwiseDst("Where", be, dst, a.dtype, cond, a, b)
	if dst.Size() > 0 {
		be.Where(dst, cond, a, b)
	}
	return dst
}

// MaskedFill sets dst = mask != 0 ? v : a elementwise; mask (same dtype as
// a) broadcasts to a's shape, and dst has a's shape (nil allocates; dst may
// be a).
func MaskedFill(dst, a, mask *Tensor, v float64) *Tensor {
	be := pickBackend("MaskedFill", dst, a, mask)
	sameDType("MaskedFill", a.dtype, mask)
	if !broadcastsTo(mask.shape, a.shape) {
		fail(ErrShape, "MaskedFill", "mask shape %v does not broadcast to %v", mask.shape, a.shape)
	}
	if dst == nil {
		dst = EmptyOn(be, a.dtype, a.shape...)
	} else {
		checkDst("MaskedFill", dst, a.dtype, a.shape)
	}
	if dst.Size() > 0 {
		be.MaskedFill(dst, a, mask, v)
	}
	return dst
}
