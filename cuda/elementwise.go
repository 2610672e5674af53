package cuda

import (
	"math"

	"lgflow/tensor"
)

// Fill sets every element of dst to v.
func (b *Backend) Fill(dst *tensor.Tensor, v float64) {
	b.enter()
	defer b.exit()
	b.fill(dst, v)
}

func (b *Backend) fill(dst *tensor.Tensor, v float64) {
	n := dst.Size()
	if n == 0 {
		return
	}
	if v == 0 && !math.Signbit(v) && dst.IsContiguous() {
		must(b.drv.check("cuMemsetD8Async", call(b.drv.cuMemsetD8Async, b.dptr(dst), 0, uintptr(n*dst.DType().Size()), b.stream)))
		return
	}
	l := elemLayout(dst.Shape(), dst)
	b.args.reset()
	b.args.ptr(b.dptr(dst)).f64(v).lay(&l)
	b.launch(kFill, dtv(dst.DType()), b.grid1(n), 1, threads)
}

// Copy sets dst = src elementwise with src broadcast to dst's shape,
// converting between float32 and float64.
func (b *Backend) Copy(dst, src *tensor.Tensor) {
	b.enter()
	defer b.exit()
	b.copy(dst, src)
}

func (b *Backend) copy(dst, src *tensor.Tensor) {
	n := dst.Size()
	if n == 0 {
		return
	}
	if dst.DType() == src.DType() && src.Size() == n && dst.IsContiguous() && src.IsContiguous() {
		if p, q := b.dptr(dst), b.dptr(src); p != q {
			must(b.drv.check("cuMemcpyDtoDAsync_v2", call(b.drv.cuMemcpyDtoDAsync, p, q, uintptr(n*dst.DType().Size()), b.stream)))
		}
		return
	}
	l := elemLayout(dst.Shape(), dst, src)
	b.args.reset()
	b.args.ptr(b.dptr(dst)).ptr(b.dptr(src)).lay(&l)
	b.launch(kCopy, dtv(dst.DType())*2+dtv(src.DType()), b.grid1(n), 1, threads)
}

// Unary sets dst = op(a) elementwise (p0, p1 as documented on
// tensor.UnaryOp).
func (b *Backend) Unary(op tensor.UnaryOp, dst, a *tensor.Tensor, p0, p1 float64) {
	b.enter()
	defer b.exit()
	b.unary(op, dst, a, p0, p1)
}

func (b *Backend) unary(op tensor.UnaryOp, dst, a *tensor.Tensor, p0, p1 float64) {
	n := dst.Size()
	if n == 0 {
		return
	}
	l := elemLayout(dst.Shape(), dst, a)
	b.args.reset()
	b.args.i32(int(op)).ptr(b.dptr(dst)).ptr(b.dptr(a)).f64(p0).f64(p1).lay(&l)
	b.launch(kUnary, dtv(dst.DType()), b.grid1(n), 1, threads)
}

// Binary sets dst = op(a, b) elementwise with a and b broadcast to dst's
// shape; dst may alias a or b.
func (b *Backend) Binary(op tensor.BinaryOp, dst, x, y *tensor.Tensor, alpha float64) {
	b.enter()
	defer b.exit()
	n := dst.Size()
	if n == 0 {
		return
	}
	l := elemLayout(dst.Shape(), dst, x, y)
	b.args.reset()
	b.args.i32(int(op)).ptr(b.dptr(dst)).ptr(b.dptr(x)).ptr(b.dptr(y)).f64(alpha).lay(&l)
	b.launch(kBinary, dtv(dst.DType()), b.grid1(n), 1, threads)
}

// Where sets dst = cond != 0 ? a : b elementwise with broadcasting.
func (b *Backend) Where(dst, cond, x, y *tensor.Tensor) {
	b.enter()
	defer b.exit()
	n := dst.Size()
	if n == 0 {
		return
	}
	l := elemLayout(dst.Shape(), dst, cond, x, y)
	b.args.reset()
	b.args.ptr(b.dptr(dst)).ptr(b.dptr(cond)).ptr(b.dptr(x)).ptr(b.dptr(y)).i32(0).f64(0).lay(&l)
	b.launch(kWhere, dtv(dst.DType()), b.grid1(n), 1, threads)
}

// MaskedFill sets dst = mask != 0 ? v : a elementwise, mask broadcast.
func (b *Backend) MaskedFill(dst, a, mask *tensor.Tensor, v float64) {
	b.enter()
	defer b.exit()
	n := dst.Size()
	if n == 0 {
		return
	}
	l := elemLayout(dst.Shape(), dst, mask, nil, a)
	b.args.reset()
	b.args.ptr(b.dptr(dst)).ptr(b.dptr(mask)).ptr(0).ptr(b.dptr(a)).i32(1).f64(v).lay(&l)
	b.launch(kWhere, dtv(dst.DType()), b.grid1(n), 1, threads)
}

// NonFinite sets flag (one element) to 1 if any element of a is NaN or
// infinite, without waiting for the result.
func (b *Backend) NonFinite(flag, a *tensor.Tensor) {
	b.enter()
	defer b.exit()
	n := a.Size()
	if n == 0 {
		return
	}
	l := elemLayout(a.Shape(), a)
	b.args.reset()
	b.args.ptr(b.dptr(flag)).ptr(b.dptr(a)).lay(&l)
	b.launch(kNonFinite, dtv(a.DType()), b.grid1(n), 1, threads)
}

// AdamWStep applies one AdamW update in place (see tensor.AdamWStep), in
// double precision per element.
func (b *Backend) AdamWStep(param, grad, m, v *tensor.Tensor, lr, beta1, beta2, eps, weightDecay float64, step int) {
	b.enter()
	defer b.exit()
	n := param.Size()
	if n == 0 {
		return
	}
	bc1 := 1 - math.Pow(beta1, float64(step))
	bc2 := 1 - math.Pow(beta2, float64(step))
	l := elemLayout(param.Shape(), param, grad, m, v)
	b.args.reset()
	b.args.ptr(b.dptr(param)).ptr(b.dptr(grad)).ptr(b.dptr(m)).ptr(b.dptr(v))
	b.args.f64(lr).f64(beta1).f64(beta2).f64(eps).f64(weightDecay).f64(1 / math.Sqrt(bc2)).f64(lr / bc1).lay(&l)
	b.launch(kAdamW, dtv(param.DType()), b.grid1(n), 1, threads)
}
