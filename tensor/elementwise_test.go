package tensor

import (
	"fmt"
	"math"
	"testing"
)

type binCase struct {
	name string
	fn   func(dst, a, b *Tensor) *Tensor
	ref  func(x, y float64) float64
}

var binCases = []binCase{
	{"Add", Add, func(x, y float64) float64 { return x + y }},
	{"Sub", Sub, func(x, y float64) float64 { return x - y }},
	{"Mul", Mul, func(x, y float64) float64 { return x * y }},
	{"Div", Div, func(x, y float64) float64 { return x / y }},
	{"Maximum", Maximum, math.Max},
	{"Minimum", Minimum, math.Min},
	{"AddScaled", func(d, a, b *Tensor) *Tensor { return AddScaled(d, a, b, -0.75) }, func(x, y float64) float64 { return x - 0.75*y }},
	{"Lerp", func(d, a, b *Tensor) *Tensor { return Lerp(d, a, b, 0.25) }, func(x, y float64) float64 { return x + 0.25*(y-x) }},
}

var broadcastPairs = [][2][]int{
	{{3, 4}, {3, 4}},
	{{3, 4}, {4}},
	{{4}, {3, 4}},
	{{3, 1}, {1, 4}},
	{{7, 5}, {7, 1}},
	{{2, 3, 5}, {3, 1}},
	{{2, 1, 5}, {1, 3, 1}},
	{{1}, {7}},
	{{5}, {}},
	{{}, {}},
	{{13, 37}, {37}},
	{{0, 3}, {3}},
	{{1, 1, 1}, {1}},
}

func TestBinaryBroadcast(t *testing.T) {
	r := NewRNG(1)
	for _, dt := range dtypes {
		for _, pair := range broadcastPairs {
			a0, b0 := randT(r, dt, pair[0]...), randT(r, dt, pair[1]...)
			// Keep divisors away from 0.
			b0 = AddScalar(nil, Abs(nil, b0), 0.5)
			for la, a := range layouts(a0) {
				for lb, b := range layouts(b0) {
					for _, c := range binCases {
						name := fmt.Sprintf("%v/%s/%v(%s)%v(%s)", dt, c.name, pair[0], la, pair[1], lb)
						got := c.fn(nil, a, b)
						shape := broadcastShapes("test", a.shape, b.shape)
						var want []float64
						forEachIndex(shape, func(idx []int) {
							want = append(want, c.ref(a.At(bidx(a, idx)...), b.At(bidx(b, idx)...)))
						})
						assertClose(t, got, shape, want, tol(dt), name)
						// Into a preallocated non-contiguous dst.
						for ld, dst := range layouts(New(dt, shape...)) {
							c.fn(dst, a, b)
							assertClose(t, dst, shape, want, tol(dt), name+"/dst "+ld)
						}
					}
				}
			}
		}
	}
}

func TestBinaryInPlaceAndLarge(t *testing.T) {
	r := NewRNG(2)
	for _, dt := range dtypes {
		// Large enough to use the worker pool; odd sizes for ragged chunks.
		a := randT(r, dt, 331, 307)
		b := randT(r, dt, 307)
		want := make([]float64, 0, a.Size())
		forEachIndex(a.shape, func(idx []int) { want = append(want, a.At(idx...)*b.At(idx[1])) })
		Mul(a, a, b)
		assertClose(t, a, []int{331, 307}, want, tol(dt), "in-place Mul")
		// Per-row scalar broadcast through the pool.
		c := randT(r, dt, 331, 1)
		want = want[:0]
		forEachIndex(a.shape, func(idx []int) { want = append(want, a.At(idx...)-c.At(idx[0], 0)) })
		assertClose(t, Sub(nil, a, c), []int{331, 307}, want, tol(dt), "row scalar Sub")
		// Transposed operand through the pool.
		at := a.T()
		want = want[:0]
		forEachIndex(at.shape, func(idx []int) { want = append(want, at.At(idx...)+1) })
		assertClose(t, Add(nil, at, Full(dt, 1, 1)), at.shape, want, tol(dt), "transposed Add")
	}
}

type unCase struct {
	name string
	fn   func(dst, a *Tensor) *Tensor
	ref  func(x float64) float64
	pos  bool // needs a positive argument
}

func erfGELU(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }

var unCases = []unCase{
	{"Neg", Neg, func(x float64) float64 { return -x }, false},
	{"Exp", Exp, math.Exp, false},
	{"Log", Log, math.Log, true},
	{"Sqrt", Sqrt, math.Sqrt, true},
	{"Rsqrt", Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }, true},
	{"Square", Square, func(x float64) float64 { return x * x }, false},
	{"Abs", Abs, math.Abs, false},
	{"Tanh", Tanh, math.Tanh, false},
	{"Sigmoid", Sigmoid, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, false},
	{"ReLU", ReLU, func(x float64) float64 { return math.Max(x, 0) }, false},
	{"GELU", GELU, erfGELU, false},
	{"SiLU", SiLU, func(x float64) float64 { return x / (1 + math.Exp(-x)) }, false},
	{"AddScalar", func(d, a *Tensor) *Tensor { return AddScalar(d, a, 1.5) }, func(x float64) float64 { return x + 1.5 }, false},
	{"MulScalar", func(d, a *Tensor) *Tensor { return MulScalar(d, a, -3) }, func(x float64) float64 { return -3 * x }, false},
	{"Clamp", func(d, a *Tensor) *Tensor { return Clamp(d, a, -0.5, 1) }, func(x float64) float64 { return math.Min(math.Max(x, -0.5), 1) }, false},
	{"Pow", func(d, a *Tensor) *Tensor { return Pow(d, a, 1.7) }, func(x float64) float64 { return math.Pow(x, 1.7) }, true},
	{"Pow2", func(d, a *Tensor) *Tensor { return Pow(d, a, 2) }, func(x float64) float64 { return x * x }, false},
}

func TestUnary(t *testing.T) {
	r := NewRNG(3)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{}, {1}, {5}, {3, 7}, {2, 3, 11}, {257, 131}} {
			x0 := FillUniform(New(dt, shape...), r, -6, 6)
			for lname, x := range layouts(x0) {
				for _, c := range unCases {
					in := x
					if c.pos {
						in = AddScalar(nil, Abs(nil, x), 1e-3)
					}
					var want []float64
					forEachIndex(shape, func(idx []int) { want = append(want, c.ref(in.At(idx...))) })
					name := fmt.Sprintf("%v/%s/%v/%s", dt, c.name, shape, lname)
					assertClose(t, c.fn(nil, in), shape, want, 4*tol(dt), name)
					// In place.
					cp := in.Clone()
					c.fn(cp, cp)
					assertClose(t, cp, shape, want, 4*tol(dt), name+"/inplace")
				}
			}
		}
	}
}

// TestActivationGrads checks the derivative helpers against central
// differences of the forward functions in float64.
func TestActivationGrads(t *testing.T) {
	r := NewRNG(4)
	x := FillUniform(New(Float64, 6, 9), r, -4, 4)
	gy := randT(r, Float64, 6, 9)
	cases := []struct {
		name string
		f    func(d, a *Tensor) *Tensor
		g    func(x, y, gy *Tensor) *Tensor
	}{
		{"ReLU", ReLU, func(x, y, gy *Tensor) *Tensor { return ReLUGrad(nil, x, gy) }},
		{"GELU", GELU, func(x, y, gy *Tensor) *Tensor { return GELUGrad(nil, x, gy) }},
		{"SiLU", SiLU, func(x, y, gy *Tensor) *Tensor { return SiLUGrad(nil, x, gy) }},
		{"Sigmoid", Sigmoid, func(x, y, gy *Tensor) *Tensor { return SigmoidGradFromY(nil, y, gy) }},
		{"Tanh", Tanh, func(x, y, gy *Tensor) *Tensor { return TanhGradFromY(nil, y, gy) }},
	}
	const h = 1e-6
	for _, c := range cases {
		y := c.f(nil, x)
		got := c.g(x, y, gy)
		var want []float64
		forEachIndex(x.shape, func(idx []int) {
			xv := x.At(idx...)
			p := c.f(nil, Scalar(Float64, xv+h)).Item()
			m := c.f(nil, Scalar(Float64, xv-h)).Item()
			want = append(want, gy.At(idx...)*(p-m)/(2*h))
		})
		assertClose(t, got, x.shape, want, 1e-7, c.name+"Grad")
		for _, dt := range []DType{Float32} {
			g32 := c.g(x.To(dt), y.To(dt), gy.To(dt))
			assertClose(t, g32, x.shape, want, 1e-4, c.name+"Grad/float32")
		}
	}
}

func TestWhereMaskedFill(t *testing.T) {
	r := NewRNG(5)
	for _, dt := range dtypes {
		cond := FromFloat64([]float64{1, 0, 0, 2, 0, 1}, 2, 3).To(dt)
		a := randT(r, dt, 2, 3)
		b := randT(r, dt, 3)
		got := Where(nil, cond, a, b)
		var want []float64
		forEachIndex([]int{2, 3}, func(idx []int) {
			if cond.At(idx...) != 0 {
				want = append(want, a.At(idx...))
			} else {
				want = append(want, b.At(idx[1]))
			}
		})
		assertClose(t, got, []int{2, 3}, want, 0, "Where")
		mask := FromFloat64([]float64{0, 1, 1}, 1, 3).To(dt)
		got = MaskedFill(nil, a, mask, -1e9)
		want = want[:0]
		forEachIndex([]int{2, 3}, func(idx []int) {
			if idx[1] > 0 {
				want = append(want, -1e9)
			} else {
				want = append(want, a.At(idx...))
			}
		})
		assertClose(t, got, []int{2, 3}, want, 1e-7, "MaskedFill")
		MaskedFill(a.T(), a.T(), mask.T(), 7) // in place on a transposed view
		if a.At(1, 1) != 7 || a.At(0, 0) != want[0] {
			t.Errorf("in-place MaskedFill on a view: %v", a)
		}
	}
}

func TestElementwiseShapeErrors(t *testing.T) {
	a, b := New(Float32, 3, 4), New(Float32, 5, 4)
	mustPanic(t, ErrShape, func() { Add(nil, a, b) }, "tensor.Add", "[3 4]", "[5 4]", "do not broadcast")
	mustPanic(t, ErrShape, func() { Mul(New(Float32, 4), a, New(Float32, 4)) }, "tensor.Mul", "dst shape [4]", "[3 4]")
	mustPanic(t, ErrShape, func() { Add(New(Float32, 2, 3, 4), a, a) }, "tensor.Add", "dst shape [2 3 4]")
	mustPanic(t, ErrDType, func() { Add(nil, a, New(Float64, 3, 4)) }, "tensor.Add")
	mustPanic(t, ErrShape, func() { Exp(New(Float32, 4, 3), a) }, "tensor.Exp")
	mustPanic(t, ErrShape, func() { ReLUGrad(nil, a, New(Float32, 4)) }, "tensor.ReLUGrad")
}
