package tensor

import (
	"errors"
	"math"
	"strings"
	"testing"
)

var dtypes = []DType{Float32, Float64}

// tol returns a tolerance suited to dt.
func tol(dt DType) float64 {
	if dt == Float32 {
		return 2e-5
	}
	return 1e-12
}

// randT returns a random tensor with values in [-2, 2).
func randT(r *RNG, dt DType, shape ...int) *Tensor {
	return FillUniform(New(dt, shape...), r, -2, 2)
}

// forEachIndex calls f with every multi-index of shape in row-major order.
func forEachIndex(shape []int, f func(idx []int)) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	idx := make([]int, len(shape))
	for range n {
		f(idx)
		for i := len(shape) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
	}
}

// bidx maps an index of a broadcast result to t's index.
func bidx(t *Tensor, idx []int) []int {
	off := len(idx) - t.Rank()
	out := make([]int, t.Rank())
	for i := range out {
		if t.shape[i] != 1 {
			out[i] = idx[i+off]
		}
	}
	return out
}

// near reports |a-b| <= tol·max(1, |b|) (NaNs equal, equal infinities equal).
func near(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(b, 0) || math.IsInf(a, 0) {
		return a == b
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

// assertClose fails unless got has shape and values want (row-major).
func assertClose(t *testing.T, got *Tensor, shape []int, want []float64, tol float64, msg string) {
	t.Helper()
	if !sameShape(got.Shape(), shape) {
		t.Fatalf("%s: shape %v, want %v", msg, got.Shape(), shape)
	}
	g := got.Float64s()
	bad := 0
	for i := range want {
		if !near(g[i], want[i], tol) {
			if bad < 5 {
				t.Errorf("%s: element %d = %.9g, want %.9g", msg, i, g[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d elements differ", msg, bad, len(want))
	}
}

// mustPanic runs f and checks that it panics with an error wrapping kind
// whose message contains every fragment.
func mustPanic(t *testing.T, kind error, f func(), fragments ...string) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want %v", kind)
		}
		err, ok := r.(error)
		if !ok || !errors.Is(err, kind) {
			t.Fatalf("panic %v, want an error wrapping %v", r, kind)
		}
		for _, f := range fragments {
			if !strings.Contains(err.Error(), f) {
				t.Fatalf("panic message %q lacks %q", err, f)
			}
		}
	}()
	f()
}

// views returns t and some non-contiguous tensors with the same values and
// shape: a transposed copy transposed back, and a slice of a wider tensor.
func layouts(t *Tensor) map[string]*Tensor {
	out := map[string]*Tensor{"contiguous": t}
	if t.Rank() >= 2 {
		r := t.Rank()
		perm := make([]int, r)
		for i := range perm {
			perm[i] = i
		}
		perm[r-1], perm[r-2] = perm[r-2], perm[r-1]
		tt := t.Permute(perm...).Clone().Permute(perm...)
		out["transposed"] = tt
	}
	if t.Rank() >= 1 {
		shape := cloneInts(t.shape)
		shape[len(shape)-1] += 3
		w := New(t.dtype, shape...).Fill(99)
		s := w.Slice(-1, 1, 1+t.shape[len(t.shape)-1])
		Copy(s, t)
		out["sliced"] = s
	}
	return out
}
