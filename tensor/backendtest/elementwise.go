package backendtest

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"lgflow/tensor"
)

func testName(t *testing.T, s *suite) {
	if s.b.Name() == "" {
		t.Error("empty backend name")
	}
	x := s.on(tensor.FromFloat32([]float32{1, 2}))
	if x.Backend() != s.b || x.Storage().Backend() != s.b {
		t.Errorf("ToBackend gave a tensor of backend %q", x.Backend().Name())
	}
}

func testAlloc(t *testing.T, s *suite) {
	for _, dt := range dtypes {
		for _, shape := range [][]int{{}, {1}, {0}, {7}, {3, 0, 2}, {5, 13}, {2, 3, 5, 7}} {
			x := tensor.NewOn(s.b, dt, shape...)
			what := fmt.Sprintf("NewOn %v %v", dt, shape)
			if x.Storage().DType() != dt || x.Storage().Len() < x.Size() || !x.IsContiguous() {
				t.Errorf("%s: storage %v of %d elements", what, x.Storage().DType(), x.Storage().Len())
			}
			s.check(t, what, x, tensor.New(dt, shape...), tolFor(dt, kExact))
		}
		// Freed memory comes back zeroed (a caching allocator must clear
		// reused blocks).
		for i := range 12 {
			x := tensor.NewOn(s.b, dt, 1000+i%3)
			if m := tensor.MaxAbs(x); m != 0 {
				t.Fatalf("%v: allocation %d is not zero (max |x| = %v)", dt, i, m)
			}
			x.Fill(float64(i + 1))
			if i%3 == 2 {
				runtime.GC()
			}
		}
	}
}

func testAllocUninit(t *testing.T, s *suite) {
	r := tensor.NewRNG(31)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{}, {1}, {0}, {7}, {3, 0, 2}, {5, 13}, {2, 3, 5, 7}} {
			x := tensor.EmptyOn(s.b, dt, shape...)
			what := fmt.Sprintf("EmptyOn %v %v", dt, shape)
			if x.Backend() != s.b || x.DType() != dt || x.Storage().DType() != dt || x.Storage().Len() < x.Size() || !x.IsContiguous() {
				t.Errorf("%s: %v storage of %d elements on %s", what, x.Storage().DType(), x.Storage().Len(), x.Backend().Name())
				continue
			}
			// The contents are undefined but the memory is usable: what is
			// written reads back, whatever was there.
			want := rand(r, dt, -2, 2, shape...)
			tensor.Copy(x, want)
			s.check(t, what, x, want, tolFor(dt, kExact))
		}
		// Results that ops allocate (from EmptyOn) are written in full, also
		// when the backend hands out memory that held other values.
		for i := range 6 {
			junk := tensor.NewOn(s.b, dt, 64+i).Fill(math.NaN())
			tensor.Release(junk)
			x := rand(r, dt, -1, 1, 8, 8+i)
			gx := s.on(x)
			what := fmt.Sprintf("results after reuse %v %d", dt, i)
			s.check(t, what+" Clone", gx.T().Clone(), x.T().Clone(), tolFor(dt, kExact))
			s.check(t, what+" Add", tensor.Add(nil, gx, gx), tensor.Add(nil, x, x), tolFor(dt, kExact))
			s.check(t, what+" Sum", tensor.Sum(nil, gx, 1, false), tensor.Sum(nil, x, 1, false), tolFor(dt, kReduce))
			s.check(t, what+" MatMul", tensor.MatMul(nil, gx, gx, true, false), tensor.MatMul(nil, x, x, true, false), gemmTol(dt, 8))
		}
	}
}

func testRelease(t *testing.T, s *suite) {
	r := tensor.NewRNG(32)
	for _, dt := range dtypes {
		// Releasing storage (through any view of it, or an empty tensor)
		// leaves other tensors intact and the backend usable; repeated
		// allocate/release cycles reuse memory without mixing contents.
		keep := rand(r, dt, -1, 1, 33, 5)
		gk := s.on(keep)
		tensor.Release(tensor.NewOn(s.b, dt, 0), nil)
		for i := range 20 {
			x := rand(r, dt, -1, 1, 33, 5+i%4)
			gx := s.on(x)
			y := tensor.MulScalar(nil, gx, 2)
			s.check(t, fmt.Sprintf("Release %v cycle %d", dt, i), y, tensor.MulScalar(nil, x, 2), tolFor(dt, kExact))
			if i%2 == 0 {
				tensor.Release(gx.T(), y) // a view releases the whole storage
			} else {
				tensor.Release(gx, y.Slice(0, 1, 3))
			}
		}
		s.check(t, fmt.Sprintf("Release %v: a kept tensor", dt), gk, keep, tolFor(dt, kExact))
	}
}

func testUploadDownload(t *testing.T, s *suite) {
	r := tensor.NewRNG(1)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{}, {1}, {0}, {11}, {4, 9}, {2, 3, 17}} {
			x := rand(r, dt, -3, 3, shape...)
			y := s.on(x)
			what := fmt.Sprintf("%v %v", dt, shape)
			if !y.IsContiguous() {
				t.Errorf("%s: ToBackend result not contiguous", what)
			}
			s.check(t, what+" round trip", y, x, tolFor(dt, kExact))
			back := y.ToBackend(tensor.CPU)
			if back.Backend() != tensor.CPU {
				t.Fatalf("%s: ToBackend(CPU) gave backend %q", what, back.Backend().Name())
			}
			s.checkValues(t, what+" download", back, x, tolFor(dt, kExact))
			s.check(t, what+" clone on backend", y.ToBackend(s.b), x, tolFor(dt, kExact))
		}
		// A non-contiguous host source, then element access with offsets.
		x := rand(r, dt, -1, 1, 5, 6)
		y := s.on(x.T())
		s.check(t, "transposed source", y, x.T().Clone(), tolFor(dt, kExact))
		y.Set(42.5, 3, 2)
		if got := y.At(3, 2); got != 42.5 {
			t.Errorf("%v: At after Set = %v", dt, got)
		}
		if got, want := y.At(5, 4), x.At(4, 5); got != want {
			t.Errorf("%v: At(5, 4) = %v, want %v", dt, got, want)
		}
		v := y.Slice(0, 2, 3).Slice(1, 4, 5)
		if got, want := v.Item(), x.At(4, 2); got != want {
			t.Errorf("%v: Item of a 1×1 view = %v, want %v", dt, got, want)
		}
		if s.b != tensor.CPU {
			if !mustPanicBackend(func() { _ = y.Data32() }) || !mustPanicBackend(func() { _ = y.Data64() }) {
				t.Errorf("%v: Data32/Data64 of a %s tensor did not panic with ErrBackend", dt, s.b.Name())
			}
		}
	}
	// Host to device copies through tensor.Copy, into a strided destination.
	x := rand(r, tensor.Float32, -1, 1, 3, 4)
	d := s.stridedDst(tensor.Float32, 3, 4)
	tensor.Copy(d, x)
	s.check(t, "Copy host to strided device", d, x, tolFor(tensor.Float32, kExact))
	h := tensor.New(tensor.Float32, 3, 4)
	tensor.Copy(h, d)
	s.checkValues(t, "Copy strided device to host", h, x, tolFor(tensor.Float32, kExact))
}

func testFill(t *testing.T, s *suite) {
	for _, dt := range dtypes {
		for _, v := range []float64{0, 3.25, -1e-3, math.Inf(-1), math.NaN()} {
			x := tensor.NewOn(s.b, dt, 3, 7).Fill(v)
			s.check(t, fmt.Sprintf("%v Fill(%v)", dt, v), x, tensor.Full(dt, v, 3, 7), tolFor(dt, kExact))
		}
		// Strided views: only the viewed elements change.
		for _, v := range []float64{0, -2} {
			w := tensor.NewOn(s.b, dt, 4, 7).Fill(5)
			w.Slice(1, 2, 5).Fill(v)
			w.Slice(0, 3, 4).T().Fill(v + 1)
			want := tensor.Full(dt, 5, 4, 7)
			want.Slice(1, 2, 5).Fill(v)
			want.Slice(0, 3, 4).T().Fill(v + 1)
			s.check(t, fmt.Sprintf("%v strided Fill(%v)", dt, v), w, want, tolFor(dt, kExact))
		}
		z := tensor.NewOn(s.b, dt, 2, 2, 2).Fill(1).Zero()
		s.check(t, "Zero", z, tensor.New(dt, 2, 2, 2), tolFor(dt, kExact))
		sc := tensor.NewOn(s.b, dt).Fill(7)
		s.check(t, "scalar Fill", sc, tensor.Full(dt, 7), tolFor(dt, kExact))
	}
}

func testCopy(t *testing.T, s *suite) {
	r := tensor.NewRNG(2)
	for _, dt := range dtypes {
		cases := []struct{ src, dst []int }{
			{[]int{3, 4}, []int{3, 4}},
			{[]int{4}, []int{3, 4}},
			{[]int{3, 1}, []int{2, 3, 4}},
			{[]int{}, []int{5, 2}},
			{[]int{1, 1}, []int{1, 1}},
			{[]int{2, 1, 3}, []int{2, 5, 3}},
		}
		for _, c := range cases {
			x := rand(r, dt, -2, 2, c.src...)
			want := tensor.Copy(tensor.New(dt, c.dst...), x)
			for _, lay := range layouts {
				src := lay.make(s, x)
				if src == nil {
					continue
				}
				what := fmt.Sprintf("%v %v->%v %s", dt, c.src, c.dst, lay.name)
				s.check(t, what, tensor.Copy(tensor.NewOn(s.b, dt, c.dst...), src), want, tolFor(dt, kExact))
				s.check(t, what+" strided dst", tensor.Copy(s.stridedDst(dt, c.dst...), src), want, tolFor(dt, kExact))
			}
		}
		// Dtype conversion both ways, from views.
		other := tensor.Float64
		if dt == tensor.Float64 {
			other = tensor.Float32
		}
		x := rand(r, dt, -5, 5, 6, 5)
		want := x.T().To(other)
		for _, lay := range layouts {
			src := lay.make(s, x)
			s.check(t, fmt.Sprintf("%v To(%v) %s", dt, other, lay.name), src.T().To(other), want, tolFor(other, kExact))
		}
		// Clone, Contiguous, Reshape of a view, Concat and Split.
		y := s.on(x)
		s.check(t, "Contiguous of transpose", y.T().Contiguous(), x.T().Contiguous(), tolFor(dt, kExact))
		s.check(t, "Reshape of transpose", y.T().Reshape(10, 3), x.T().Reshape(10, 3), tolFor(dt, kExact))
		parts := tensor.Split(y, 1, 2, 3)
		cat := tensor.Concat(nil, 0, parts[1].T(), parts[0].T())
		wparts := tensor.Split(x, 1, 2, 3)
		s.check(t, "Concat of split views", cat, tensor.Concat(nil, 0, wparts[1].T(), wparts[0].T()), tolFor(dt, kExact))
	}
}

// unaryCase is a public unary op with its input range.
type unaryCase struct {
	name   string
	f      func(dst, a *tensor.Tensor) *tensor.Tensor
	lo, hi float64
	kind   int
}

var unaryCases = []unaryCase{
	{"Neg", tensor.Neg, -3, 3, kExact},
	{"Exp", tensor.Exp, -5, 5, kTrans},
	{"Log", tensor.Log, 0.05, 4, kTrans},
	{"Sqrt", tensor.Sqrt, 0, 4, kElem},
	{"Rsqrt", tensor.Rsqrt, 0.05, 4, kTrans},
	{"Square", tensor.Square, -3, 3, kExact},
	{"Abs", tensor.Abs, -3, 3, kExact},
	{"Tanh", tensor.Tanh, -4, 4, kTrans},
	{"Sigmoid", tensor.Sigmoid, -8, 8, kTrans},
	{"ReLU", tensor.ReLU, -2, 2, kExact},
	{"GELU", tensor.GELU, -3, 3, kTrans},
	{"SiLU", tensor.SiLU, -6, 6, kTrans},
	{"AddScalar", func(d, a *tensor.Tensor) *tensor.Tensor { return tensor.AddScalar(d, a, 1.5) }, -2, 2, kElem},
	{"MulScalar", func(d, a *tensor.Tensor) *tensor.Tensor { return tensor.MulScalar(d, a, -0.75) }, -2, 2, kElem},
	{"Clamp", func(d, a *tensor.Tensor) *tensor.Tensor { return tensor.Clamp(d, a, -0.5, 1) }, -2, 2, kExact},
	{"Pow3.3", func(d, a *tensor.Tensor) *tensor.Tensor { return tensor.Pow(d, a, 3.3) }, 0.1, 2, kTrans},
	{"Pow-0.7", func(d, a *tensor.Tensor) *tensor.Tensor { return tensor.Pow(d, a, -0.7) }, 0.1, 2, kTrans},
	{"Pow2", func(d, a *tensor.Tensor) *tensor.Tensor { return tensor.Pow(d, a, 2) }, -2, 2, kExact},
	{"Pow0.5", func(d, a *tensor.Tensor) *tensor.Tensor { return tensor.Pow(d, a, 0.5) }, 0.1, 2, kElem},
}

func testUnary(t *testing.T, s *suite) {
	r := tensor.NewRNG(3)
	shapes := [][]int{{}, {1}, {13}, {7, 5}, {2, 3, 11}}
	for _, dt := range dtypes {
		for _, c := range unaryCases {
			tl := tolFor(dt, c.kind)
			for _, shape := range shapes {
				x := rand(r, dt, c.lo, c.hi, shape...)
				want := c.f(nil, x)
				for _, lay := range layouts {
					a := lay.make(s, x)
					if a == nil {
						continue
					}
					what := fmt.Sprintf("%s %v %v %s", c.name, dt, shape, lay.name)
					s.check(t, what, c.f(nil, a), want, tl)
					if lay.name != "contiguous" {
						s.check(t, what+" strided dst", c.f(s.stridedDst(dt, shape...), a), want, tl)
					}
					c.f(a, a) // in place
					s.check(t, what+" in place", a, want, tl)
				}
			}
		}
		// A larger tensor, for multi-block launches.
		x := rand(r, dt, -3, 3, 301, 257)
		s.check(t, fmt.Sprintf("GELU %v large", dt), tensor.GELU(nil, s.on(x)), tensor.GELU(nil, x), tolFor(dt, kTrans))
	}
}

// binaryCase is a public binary op.
type binaryCase struct {
	name string
	f    func(dst, a, b *tensor.Tensor) *tensor.Tensor
	kind int
	grad bool // a derivative helper: equal shapes only
}

var binaryCases = []binaryCase{
	{"Add", tensor.Add, kExact, false},
	{"Sub", tensor.Sub, kExact, false},
	{"Mul", tensor.Mul, kExact, false},
	{"Div", tensor.Div, kElem, false},
	{"Maximum", tensor.Maximum, kExact, false},
	{"Minimum", tensor.Minimum, kExact, false},
	{"AddScaled", func(d, a, b *tensor.Tensor) *tensor.Tensor { return tensor.AddScaled(d, a, b, -0.3) }, kElem, false},
	{"ReLUGrad", tensor.ReLUGrad, kExact, true},
	{"GELUGrad", tensor.GELUGrad, kTrans, true},
	{"SiLUGrad", tensor.SiLUGrad, kTrans, true},
	{"SigmoidGradFromY", tensor.SigmoidGradFromY, kElem, true},
	{"TanhGradFromY", tensor.TanhGradFromY, kElem, true},
	{"Lerp", func(d, a, b *tensor.Tensor) *tensor.Tensor { return tensor.Lerp(d, a, b, 0.37) }, kElem, false},
}

func testBinary(t *testing.T, s *suite) {
	r := tensor.NewRNG(4)
	pairs := []struct{ a, b []int }{
		{[]int{}, []int{}},
		{[]int{1}, []int{1}},
		{[]int{4, 5}, []int{4, 5}},
		{[]int{4, 5}, []int{5}},
		{[]int{3, 1, 5}, []int{4, 1}},
		{[]int{1}, []int{6, 2}},
		{[]int{}, []int{3, 7}},
		{[]int{2, 3, 1, 4}, []int{3, 5, 1}},
	}
	for _, dt := range dtypes {
		for _, c := range binaryCases {
			tl := tolFor(dt, c.kind)
			for _, p := range pairs {
				if c.grad && !equalInts(p.a, p.b) {
					continue
				}
				x := rand(r, dt, -2, 2, p.a...)
				y := rand(r, dt, 0.5, 2, p.b...)
				tensor.Mul(y, y, signs(r, dt, p.b...)) // mixed signs, away from zero
				want := c.f(nil, x, y)
				for _, la := range layouts {
					for _, lb := range layouts[:2] {
						a, b := la.make(s, x), lb.make(s, y)
						if a == nil || b == nil {
							continue
						}
						what := fmt.Sprintf("%s %v %v,%v %s,%s", c.name, dt, p.a, p.b, la.name, lb.name)
						s.check(t, what, c.f(nil, a, b), want, tl)
						if equalInts(want.Shape(), p.a) {
							c.f(a, a, b) // in place into the first operand
							s.check(t, what+" in place", a, want, tl)
						}
					}
				}
				if len(want.Shape()) > 0 {
					s.check(t, fmt.Sprintf("%s %v %v,%v strided dst", c.name, dt, p.a, p.b),
						c.f(s.stridedDst(dt, want.Shape()...), s.on(x), s.on(y)), want, tl)
				}
			}
		}
		// NaN propagation of Maximum and Minimum.
		x := tensor.FromFloat64([]float64{1, math.NaN(), 3, -1}).To(dt)
		y := tensor.FromFloat64([]float64{math.NaN(), 2, 0, -2}).To(dt)
		s.check(t, "Maximum NaN", tensor.Maximum(nil, s.on(x), s.on(y)), tensor.Maximum(nil, x, y), tolFor(dt, kExact))
		s.check(t, "Minimum NaN", tensor.Minimum(nil, s.on(x), s.on(y)), tensor.Minimum(nil, x, y), tolFor(dt, kExact))
		// A large broadcast, for multi-block launches.
		a, b := rand(r, dt, -1, 1, 97, 1, 211), rand(r, dt, -1, 1, 33, 1)
		s.check(t, fmt.Sprintf("Mul %v large broadcast", dt), tensor.Mul(nil, s.on(a), s.on(b)), tensor.Mul(nil, a, b), tolFor(dt, kExact))
	}
}

func testWhere(t *testing.T, s *suite) {
	r := tensor.NewRNG(5)
	for _, dt := range dtypes {
		cases := []struct{ c, a, b []int }{
			{[]int{4, 5}, []int{4, 5}, []int{4, 5}},
			{[]int{4, 1}, []int{5}, []int{4, 5}},
			{[]int{3, 1, 6}, []int{1}, []int{2, 1}},
			{[]int{}, []int{3}, []int{3}},
		}
		for _, c := range cases {
			cond := mask01(r, dt, 0.5, c.c...)
			x, y := rand(r, dt, -2, 2, c.a...), rand(r, dt, -2, 2, c.b...)
			want := tensor.Where(nil, cond, x, y)
			for _, lay := range layouts {
				cc, a := lay.make(s, cond), lay.make(s, x)
				if cc == nil || a == nil {
					continue
				}
				what := fmt.Sprintf("Where %v %v %v %v %s", dt, c.c, c.a, c.b, lay.name)
				s.check(t, what, tensor.Where(nil, cc, a, s.on(y)), want, tolFor(dt, kExact))
			}
		}
	}
}

func testMaskedFill(t *testing.T, s *suite) {
	r := tensor.NewRNG(6)
	for _, dt := range dtypes {
		for _, c := range []struct{ a, m []int }{{[]int{3, 4, 5}, []int{3, 1, 5}}, {[]int{6, 7}, []int{7}}, {[]int{4}, []int{}}} {
			x := rand(r, dt, -2, 2, c.a...)
			mask := mask01(r, dt, 0.5, c.m...)
			for _, v := range []float64{math.Inf(-1), 0.5} {
				want := tensor.MaskedFill(nil, x, mask, v)
				for _, lay := range layouts {
					a := lay.make(s, x)
					if a == nil {
						continue
					}
					what := fmt.Sprintf("MaskedFill %v %v %v v=%v %s", dt, c.a, c.m, v, lay.name)
					s.check(t, what, tensor.MaskedFill(nil, a, s.on(mask), v), want, tolFor(dt, kExact))
					tensor.MaskedFill(a, a, s.on(mask), v)
					s.check(t, what+" in place", a, want, tolFor(dt, kExact))
				}
			}
		}
	}
}

func testAdamW(t *testing.T, s *suite) {
	r := tensor.NewRNG(7)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{1}, {7, 13}, {3, 1, 129}} {
			p, m, v := rand(r, dt, -1, 1, shape...), tensor.New(dt, shape...), tensor.New(dt, shape...)
			gp, gm, gv := s.on(p), s.on(m), s.on(v)
			if len(shape) >= 2 {
				gp = s.on(p.T()).T() // a strided parameter
			}
			for step := 1; step <= 3; step++ {
				g := rand(r, dt, -0.5, 0.5, shape...)
				tensor.AdamWStep(p, g, m, v, 1e-2, 0.9, 0.999, 1e-8, 0.1, step)
				tensor.AdamWStep(gp, s.on(g), gm, gv, 1e-2, 0.9, 0.999, 1e-8, 0.1, step)
			}
			tl := tolFor(dt, kElem)
			tl.rtol *= 10
			what := fmt.Sprintf("AdamW %v %v", dt, shape)
			s.check(t, what+" param", gp, p, tl)
			s.check(t, what+" m", gm, m, tl)
			s.check(t, what+" v", gv, v, tl)
		}
	}
}
