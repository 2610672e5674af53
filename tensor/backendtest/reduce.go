package backendtest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"lgflow/tensor"
)

type reduceFn struct {
	name string
	f    func(dst, a *tensor.Tensor, axis int, keepdim bool) *tensor.Tensor
}

var reduceFns = []reduceFn{
	{"Sum", tensor.Sum}, {"Mean", tensor.Mean}, {"Max", tensor.Max}, {"LogSumExp", tensor.LogSumExp},
}

func testReduce(t *testing.T, s *suite) {
	r := tensor.NewRNG(8)
	// (Reducing an empty axis crashes the CPU backend (tensor.loop.seek divides
	// by zero), so no shape here has one.)
	shapes := [][]int{{1}, {13}, {5, 7, 3}, {2, 1, 37}, {3, 2000}, {1500, 3}}
	for _, dt := range dtypes {
		tl := tolFor(dt, kReduce)
		for _, fn := range reduceFns {
			for _, shape := range shapes {
				x := rand(r, dt, -3, 3, shape...)
				for axis := range shape {
					for _, keep := range []bool{false, true} {
						want := fn.f(nil, x, axis, keep)
						for _, lay := range layouts {
							a := lay.make(s, x)
							if a == nil {
								continue
							}
							what := fmt.Sprintf("%s %v %v axis %d keep %v %s", fn.name, dt, shape, axis, keep, lay.name)
							s.check(t, what, fn.f(nil, a, axis, keep), want, tl)
						}
						if len(want.Shape()) > 0 && want.Size() > 0 {
							what := fmt.Sprintf("%s %v %v axis %d keep %v strided dst", fn.name, dt, shape, axis, keep)
							s.check(t, what, fn.f(s.stridedDst(dt, want.Shape()...), s.on(x), axis, keep), want, tl)
						}
					}
				}
			}
			// Special values: a row with NaN among numbers, a row of -Inf.
			x := tensor.FromFloat64([]float64{1, math.NaN(), 3, -1, math.Inf(-1), math.Inf(-1), math.Inf(-1), math.Inf(-1)}, 2, 4).To(dt)
			if fn.name == "Max" || fn.name == "LogSumExp" {
				x.Set(2, 0, 1) // NaN handling differs between the CPU's strided and row paths
			}
			s.check(t, fmt.Sprintf("%s %v special values", fn.name, dt), fn.f(nil, s.on(x), 1, false), fn.f(nil, x, 1, false), tl)
		}
	}
}

func testReduceAll(t *testing.T, s *suite) {
	r := tensor.NewRNG(9)
	for _, dt := range dtypes {
		tl := tolFor(dt, kReduce)
		for _, shape := range [][]int{{}, {1}, {0}, {17}, {6, 9}, {3, 5, 7}, {100003}} {
			x := rand(r, dt, -2, 1, shape...)
			for _, lay := range layouts {
				a := lay.make(s, x)
				if a == nil {
					continue
				}
				what := fmt.Sprintf("%v %v %s", dt, shape, lay.name)
				checkScalar(t, "SumAll "+what, tensor.SumAll(a), tensor.SumAll(x), tl)
				checkScalar(t, "MaxAbs "+what, tensor.MaxAbs(a), tensor.MaxAbs(x), tolFor(dt, kExact))
				checkScalar(t, "Norm2Squared "+what, tensor.Norm2Squared(a), tensor.Norm2Squared(x), tl)
				if x.Size() > 0 {
					checkScalar(t, "MeanAll "+what, tensor.MeanAll(a), tensor.MeanAll(x), tl)
				}
			}
		}
		// A broadcast view (zero strides).
		x := rand(r, dt, -1, 1, 1, 7)
		checkScalar(t, fmt.Sprintf("SumAll %v expanded", dt), tensor.SumAll(s.on(x).Expand(5, 7)), tensor.SumAll(x.Expand(5, 7)), tl)
		checkScalar(t, fmt.Sprintf("MaxAbs %v NaN", dt), tensor.MaxAbs(s.on(tensor.FromFloat64([]float64{1, math.NaN(), -3}).To(dt))), math.NaN(), tl)
	}
}

func testArgmax(t *testing.T, s *suite) {
	r := tensor.NewRNG(10)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{1}, {9}, {4, 6}, {3, 1, 5}, {2, 70}, {300, 2}} {
			// Small integers, so that ties are frequent.
			x := randInts(r, dt, 4, shape...)
			for axis := range shape {
				want := tensor.Argmax(x, axis)
				for _, lay := range layouts {
					a := lay.make(s, x)
					if a == nil {
						continue
					}
					if got := tensor.Argmax(a, axis); !slices.Equal(got, want) {
						t.Errorf("Argmax %v %v axis %d %s = %v, want %v", dt, shape, axis, lay.name, got, want)
					}
				}
			}
		}
		x := tensor.FromFloat64([]float64{math.NaN(), 1, 5, 5, math.NaN(), math.NaN(), 2, math.Inf(-1), math.Inf(-1)}, 3, 3).To(dt)
		if got, want := tensor.Argmax(s.on(x), 1), tensor.Argmax(x, 1); !slices.Equal(got, want) {
			t.Errorf("Argmax %v special values = %v, want %v", dt, got, want)
		}
	}
}

func testSumTo(t *testing.T, s *suite) {
	r := tensor.NewRNG(11)
	for _, dt := range dtypes {
		tl := tolFor(dt, kReduce)
		cases := []struct{ a, dst []int }{
			{[]int{4, 3, 5}, []int{3, 1}},
			{[]int{4, 3, 5}, []int{1, 5}},
			{[]int{4, 3, 5}, []int{5}},
			{[]int{4, 3, 5}, []int{4, 1, 1}},
			{[]int{4, 3, 5}, []int{}},
			{[]int{4, 3, 5}, []int{4, 3, 5}},
			{[]int{2000, 33}, []int{33}},
			{[]int{33, 2000}, []int{33, 1}},
			{[]int{7, 1, 300}, []int{1, 1, 300}},
		}
		for _, c := range cases {
			x := rand(r, dt, -1, 1, c.a...)
			want := tensor.SumTo(tensor.New(dt, c.dst...), x)
			for _, lay := range layouts {
				a := lay.make(s, x)
				if a == nil {
					continue
				}
				what := fmt.Sprintf("SumTo %v %v->%v %s", dt, c.a, c.dst, lay.name)
				s.check(t, what, tensor.SumTo(tensor.NewOn(s.b, dt, c.dst...), a), want, tl)
			}
			if len(c.dst) > 0 {
				s.check(t, fmt.Sprintf("SumTo %v %v->%v strided dst", dt, c.a, c.dst),
					tensor.SumTo(s.stridedDst(dt, c.dst...), s.on(x)), want, tl)
			}
		}
	}
}

func testSoftmax(t *testing.T, s *suite) {
	r := tensor.NewRNG(12)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{1}, {4, 37}, {4, 5}, {3, 6, 2}, {2, 300}} {
			x := rand(r, dt, -6, 6, shape...)
			for axis := range shape {
				for _, log := range []bool{false, true} {
					f, fname := tensor.Softmax, "Softmax"
					if log {
						f, fname = tensor.LogSoftmax, "LogSoftmax"
					}
					want := f(nil, x, axis)
					tl := tolFor(dt, kSoftmax)
					if log {
						tl.atol *= 10
					}
					for _, lay := range layouts {
						a := lay.make(s, x)
						if a == nil {
							continue
						}
						what := fmt.Sprintf("%s %v %v axis %d %s", fname, dt, shape, axis, lay.name)
						s.check(t, what, f(nil, a, axis), want, tl)
						f(a, a, axis)
						s.check(t, what+" in place", a, want, tl)
					}
				}
			}
		}
		// Rows with -Inf entries, and a row that is all -Inf (NaN).
		inf := math.Inf(-1)
		x := tensor.FromFloat64([]float64{0, inf, 1, inf, inf, inf, inf, inf}, 2, 4).To(dt)
		s.check(t, fmt.Sprintf("Softmax %v -Inf", dt), tensor.Softmax(nil, s.on(x), 1), tensor.Softmax(nil, x, 1), tolFor(dt, kSoftmax))
	}
}

func testNonFinite(t *testing.T, s *suite) {
	r := tensor.NewRNG(33)
	nan, inf := math.NaN(), math.Inf(1)
	for _, dt := range dtypes {
		big := math.MaxFloat32
		if dt == tensor.Float64 {
			big = math.MaxFloat64
		}
		cases := []struct {
			name  string
			shape []int
			at    int // flat index of the special value, -1 for none
			v     float64
			want  float64
		}{
			{"finite", []int{5, 7}, -1, 0, 0},
			{"scalar NaN", []int{}, 0, nan, 1},
			{"NaN first", []int{300}, 0, nan, 1},
			{"+Inf last", []int{3, 1, 129}, 3*129 - 1, inf, 1},
			{"-Inf middle", []int{70000}, 41234, -inf, 1},
			{"largest finite", []int{4, 9}, 17, big, 0},
			{"-largest finite", []int{4, 9}, 5, -big, 0},
			{"large finite", []int{200001}, -1, 0, 0},
		}
		for _, c := range cases {
			x := rand(r, dt, -3, 3, c.shape...)
			v := x.Float64s()
			if c.at >= 0 {
				v[c.at] = c.v
			}
			tensor.Copy(x, tensor.FromFloat64(v).Reshape(c.shape...))
			for _, lay := range layouts {
				gx := lay.make(s, x)
				if gx == nil {
					continue
				}
				what := fmt.Sprintf("NonFinite %v %s %s", dt, c.name, lay.name)
				flag := tensor.NewOn(s.b, dt, 1)
				tensor.FlagNonFinite(flag, gx)
				if got := flag.Item(); got != c.want {
					t.Errorf("%s: flag %v, want %v", what, got, c.want)
				}
				// A set flag stays set; the flag may have any rank.
				set := tensor.NewOn(s.b, dt, 1, 1).Fill(1)
				tensor.FlagNonFinite(set, gx)
				if got := set.Item(); got != 1 {
					t.Errorf("%s: a set flag became %v", what, got)
				}
			}
		}
		// Flags accumulate over calls, and an empty tensor leaves them alone.
		flag := tensor.NewOn(s.b, dt)
		tensor.FlagNonFinite(flag, tensor.NewOn(s.b, dt, 0, 3))
		tensor.FlagNonFinite(flag, s.on(rand(r, dt, -1, 1, 10)))
		if got := flag.Item(); got != 0 {
			t.Errorf("NonFinite %v: flag %v after finite tensors, want 0", dt, got)
		}
		bad := tensor.FromFloat64([]float64{1, nan}).To(dt)
		tensor.FlagNonFinite(flag, s.on(bad))
		tensor.FlagNonFinite(flag, s.on(rand(r, dt, -1, 1, 10)))
		if got := flag.Item(); got != 1 {
			t.Errorf("NonFinite %v: flag %v after a NaN, want 1", dt, got)
		}
	}
}
