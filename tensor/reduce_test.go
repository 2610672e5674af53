package tensor

import (
	"fmt"
	"math"
	"testing"
)

// refReduce reduces a along axis with f over the slice of values.
func refReduce(a *Tensor, axis int, keepdim bool, f func([]float64) float64) ([]int, []float64) {
	var shape []int
	for i, d := range a.shape {
		if i == axis {
			if keepdim {
				shape = append(shape, 1)
			}
			continue
		}
		shape = append(shape, d)
	}
	outer := append([]int(nil), a.shape...)
	outer[axis] = 1
	var out []float64
	forEachIndex(outer, func(idx []int) {
		vals := make([]float64, a.shape[axis])
		full := append([]int(nil), idx...)
		for k := range vals {
			full[axis] = k
			vals[k] = a.At(full...)
		}
		out = append(out, f(vals))
	})
	return shape, out
}

func refSum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func refMax(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

func refLSE(v []float64) float64 {
	m := refMax(v)
	s := 0.0
	for _, x := range v {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

func TestReduce(t *testing.T) {
	r := NewRNG(10)
	ops := []struct {
		name string
		fn   func(dst, a *Tensor, axis int, keep bool) *Tensor
		ref  func([]float64) float64
	}{
		{"Sum", Sum, refSum},
		{"Mean", Mean, func(v []float64) float64 { return refSum(v) / float64(len(v)) }},
		{"Max", Max, refMax},
		{"LogSumExp", LogSumExp, refLSE},
	}
	for _, dt := range dtypes {
		for _, shape := range [][]int{{1}, {7}, {3, 5}, {2, 3, 4}, {5, 1, 3}, {3, 300}, {300, 3}, {2, 129, 130}} {
			a0 := randT(r, dt, shape...)
			for lname, a := range layouts(a0) {
				for axis := range shape {
					for _, keep := range []bool{false, true} {
						for _, op := range ops {
							wshape, want := refReduce(a, axis, keep, op.ref)
							name := fmt.Sprintf("%v/%s/%v/%s/axis%d/keep%v", dt, op.name, shape, lname, axis, keep)
							assertClose(t, op.fn(nil, a, axis, keep), wshape, want, 4*tol(dt), name)
						}
					}
				}
			}
		}
	}
}

func TestReduceAll(t *testing.T) {
	r := NewRNG(11)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{}, {1}, {13}, {300, 301}} {
			for lname, a := range layouts(randT(r, dt, shape...)) {
				var s, s2, ma float64
				forEachIndex(shape, func(idx []int) {
					v := a.At(idx...)
					s += v
					s2 += v * v
					ma = math.Max(ma, math.Abs(v))
				})
				name := fmt.Sprintf("%v/%v/%s", dt, shape, lname)
				if got := SumAll(a); !near(got, s, 1e-9) {
					t.Errorf("%s SumAll = %v, want %v", name, got, s)
				}
				if got := MeanAll(a); !near(got, s/float64(a.Size()), 1e-9) {
					t.Errorf("%s MeanAll = %v", name, got)
				}
				if got := Norm2Squared(a); !near(got, s2, 1e-9) {
					t.Errorf("%s Norm2Squared = %v, want %v", name, got, s2)
				}
				if got := MaxAbs(a); got != ma {
					t.Errorf("%s MaxAbs = %v, want %v", name, got, ma)
				}
			}
		}
	}
	if SumAll(New(Float32, 0, 3)) != 0 || MaxAbs(New(Float64, 0)) != 0 {
		t.Error("empty reductions should be 0")
	}
}

// TestReduceSplit covers long reductions into few outputs, which split the
// reduced range over chunks.
func TestReduceSplit(t *testing.T) {
	r := NewRNG(14)
	for _, dt := range dtypes {
		a := randT(r, dt, 600, 300)
		for _, axis := range []int{0, 1} {
			_, want := refReduce(a, axis, false, refSum)
			assertClose(t, Sum(nil, a, axis, false), []int{300 + 300*axis}, want, 1e-5, fmt.Sprintf("%v Sum axis %d", dt, axis))
			_, want = refReduce(a.T(), axis, false, func(v []float64) float64 { return refSum(v) / float64(len(v)) })
			assertClose(t, Mean(nil, a.T(), axis, false), []int{600 - 300*axis}, want, 1e-5, fmt.Sprintf("%v Mean of transpose axis %d", dt, axis))
		}
		b := randT(r, dt, 3, 70000)
		_, want := refReduce(b, 1, true, refSum)
		assertClose(t, Sum(nil, b, 1, true), []int{3, 1}, want, 1e-5, fmt.Sprintf("%v long rows", dt))
	}
}

func TestArgmax(t *testing.T) {
	a := FromFloat64([]float64{1, 5, 5, 0, 2, -1, 7, 7, 3, 3, 3, 3}, 3, 4)
	if got := Argmax(a, 1); fmt.Sprint(got) != "[1 2 0]" {
		t.Errorf("Argmax axis 1 = %v", got)
	}
	if got := Argmax(a, 0); fmt.Sprint(got) != "[2 0 1 1]" {
		t.Errorf("Argmax axis 0 = %v", got)
	}
	if got := Argmax(a.T(), -1); fmt.Sprint(got) != "[2 0 1 1]" {
		t.Errorf("Argmax of transpose = %v", got)
	}
}

func TestSumTo(t *testing.T) {
	r := NewRNG(12)
	cases := [][2][]int{
		{{4, 5}, {5}},
		{{4, 5}, {1, 5}},
		{{4, 5}, {4, 1}},
		{{2, 3, 4}, {3, 1}},
		{{2, 3, 4}, {}},
		{{2, 3, 4}, {2, 1, 4}},
		{{3, 4}, {3, 4}},
		{{1000, 7}, {7}},
		{{3000, 50}, {50}},      // split reduction, column blocks
		{{5, 30000}, {5, 1}},    // split reduction, contiguous rows
		{{40, 70, 60}, {70, 1}}, // split reduction, two reduced axes
	}
	for _, dt := range dtypes {
		for _, c := range cases {
			for lname, a := range layouts(randT(r, dt, c[0]...)) {
				dst := New(dt, c[1]...)
				want := make([]float64, dst.Size())
				strides := rowMajorStrides(c[1])
				forEachIndex(c[0], func(idx []int) {
					p := 0
					for i, k := range bidx(dst, idx) {
						p += k * strides[i]
					}
					want[p] += a.At(idx...)
				})
				SumTo(dst, a)
				assertClose(t, dst, c[1], want, 1e-5, fmt.Sprintf("%v/%v->%v/%s", dt, c[0], c[1], lname))
			}
		}
	}
	mustPanic(t, ErrShape, func() { SumTo(New(Float32, 3), New(Float32, 4, 5)) }, "tensor.SumTo", "[3]", "[4 5]")
}

func TestSoftmax(t *testing.T) {
	r := NewRNG(13)
	for _, dt := range dtypes {
		for _, shape := range [][]int{{1}, {6}, {3, 7}, {4, 2, 5}} {
			for lname, a := range layouts(randT(r, dt, shape...)) {
				for axis := range shape {
					name := fmt.Sprintf("%v/%v/%s/axis%d", dt, shape, lname, axis)
					_, lse := refReduce(a, axis, true, refLSE)
					lseT := FromFloat64(lse, func() []int { s := cloneInts(shape); s[axis] = 1; return s }()...)
					var want, wantLog []float64
					forEachIndex(shape, func(idx []int) {
						x := a.At(idx...) - lseT.At(bidx(lseT, idx)...)
						wantLog = append(wantLog, x)
						want = append(want, math.Exp(x))
					})
					assertClose(t, Softmax(nil, a, axis), shape, want, 4*tol(dt), name)
					assertClose(t, LogSoftmax(nil, a, axis), shape, wantLog, 4*tol(dt), name+"/log")
				}
			}
		}
	}
	// Overflow safety.
	x := FromFloat32([]float32{1000, 1000, -1000}, 1, 3)
	assertClose(t, Softmax(nil, x, -1), []int{1, 3}, []float64{0.5, 0.5, 0}, 1e-7, "large logits")
}
