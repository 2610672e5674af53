package tensor

import "slices"

// pickBackend returns the backend of dst, or of the first input when dst is
// nil, and panics if any non-nil operand lives elsewhere.
func pickBackend(op string, dst *Tensor, ins ...*Tensor) Backend {
	var be Backend
	if dst != nil {
		be = dst.st.Backend()
	}
	for _, t := range ins {
		if t == nil {
			continue
		}
		tb := t.st.Backend()
		if be == nil {
			be = tb
		} else if tb != be {
			fail(ErrBackend, op, "operands on backends %q and %q", be.Name(), tb.Name())
		}
	}
	if be == nil {
		fail(ErrShape, op, "no tensor operands")
	}
	return be
}

// sameDType panics unless every non-nil tensor has dtype dt.
func sameDType(op string, dt DType, ts ...*Tensor) {
	for _, t := range ts {
		if t != nil && t.dtype != dt {
			fail(ErrDType, op, "operands of dtypes %v and %v", dt, t.dtype)
		}
	}
}

// broadcastShapes returns the numpy broadcast of shapes a and b.
func broadcastShapes(op string, a, b []int) []int {
	r := max(len(a), len(b))
	out := make([]int, r)
	for i := range r {
		da, db := 1, 1
		if k := i - (r - len(a)); k >= 0 {
			da = a[k]
		}
		if k := i - (r - len(b)); k >= 0 {
			db = b[k]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			fail(ErrShape, op, "shapes %v and %v do not broadcast", a, b)
		}
	}
	return out
}

// broadcastsTo reports whether shape s broadcasts to shape to.
func broadcastsTo(s, to []int) bool {
	if len(s) > len(to) {
		return false
	}
	off := len(to) - len(s)
	for i, d := range s {
		if d != 1 && d != to[off+i] {
			return false
		}
	}
	return true
}

// checkDst panics unless dst has the given shape and dtype.
func checkDst(op string, dst *Tensor, dt DType, shape []int) {
	if dst.dtype != dt {
		fail(ErrDType, op, "dst is %v, operands are %v", dst.dtype, dt)
	}
	if !slices.Equal(dst.shape, shape) {
		fail(ErrShape, op, "dst shape %v, want %v", dst.shape, shape)
	}
}

// checkBroadcastDst panics unless the broadcast of the operand shapes is
// exactly dst's shape. It allocates nothing when the shapes fit.
func checkBroadcastDst(op string, dst *Tensor, ins ...*Tensor) {
	r := len(dst.shape)
	for _, t := range ins {
		if !broadcastsTo(t.shape, dst.shape) {
			if len(ins) == 2 {
				broadcastShapes(op, ins[0].shape, ins[1].shape) // panics if they do not broadcast
			}
			fail(ErrShape, op, "shape %v does not broadcast to dst shape %v", t.shape, dst.shape)
		}
	}
	// Every dst dimension must be produced by some operand (no dst dimension
	// larger than all inputs' dimensions).
	for i := range r {
		d := dst.shape[i]
		ok := false
		for _, t := range ins {
			k := i - (r - len(t.shape))
			if (k >= 0 && t.shape[k] == d) || (d == 1) {
				ok = true
				break
			}
		}
		if !ok {
			var want []int
			for _, t := range ins {
				want = broadcastShapes(op, want, t.shape)
			}
			fail(ErrShape, op, "dst shape %v, want %v", dst.shape, want)
		}
	}
}

// elementwiseDst returns dst after validating it, or a new tensor of the
// broadcast shape of the inputs on backend be.
func elementwiseDst(op string, be Backend, dst *Tensor, dt DType, ins ...*Tensor) *Tensor {
	if dst != nil {
		if dst.dtype != dt {
			fail(ErrDType, op, "dst is %v, operands are %v", dst.dtype, dt)
		}
		checkBroadcastDst(op, dst, ins...)
		return dst
	}
	var shape []int
	for i, t := range ins {
		if i == 0 {
			shape = t.shape
		} else {
			shape = broadcastShapes(op, shape, t.shape)
		}
	}
	return EmptyOn(be, dt, shape...)
}
