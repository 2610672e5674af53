package tensor

import (
	"math"
	"testing"
)

// TestReduceEmptyAxis checks reductions along an axis of length 0: they give
// the operation's identity (numpy's answers) instead of panicking.
func TestReduceEmptyAxis(t *testing.T) {
	a := New(Float32, 4, 0, 3)
	for _, tc := range []struct {
		name string
		f    func(dst, a *Tensor, axis int, keepdim bool) *Tensor
		want float64
	}{
		{"Sum", Sum, 0},
		{"Mean", Mean, math.NaN()},
		{"Max", Max, math.Inf(-1)},
		{"LogSumExp", LogSumExp, math.Inf(-1)},
	} {
		got := tc.f(nil, a, 1, false)
		if s := got.Shape(); len(s) != 2 || s[0] != 4 || s[1] != 3 {
			t.Fatalf("%s: shape %v, want [4 3]", tc.name, s)
		}
		for _, v := range got.Data32() {
			if !(float64(v) == tc.want || math.IsNaN(tc.want) && math.IsNaN(float64(v))) {
				t.Fatalf("%s: element %v, want %v", tc.name, v, tc.want)
			}
		}
	}
}
