package nn

import (
	"math"
	"testing"

	"lgflow/autograd"
	"lgflow/tensor"
)

func TestGraphNormValues(t *testing.T) {
	// Two graphs: rows 0-2 and rows 3-4; channel 1 is constant in graph 0.
	seg, err := NewSegments([]int32{0, 0, 0, 1, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	gn := NewGraphNorm(2, f64)
	x := c64([]float64{1, 7, 3, 7, 5, 7, -1, 2, 1, 6}, 5, 2)
	tp := autograd.NoGrad()
	defer tp.Release()
	s0 := 1 / math.Sqrt(8.0/3+1e-5) // graph 0, channel 0: mean 3, var 8/3
	s1 := 1 / math.Sqrt(1+1e-5)     // graph 1, channel 0: mean 0, var 1
	s2 := 1 / math.Sqrt(4+1e-5)     // graph 1, channel 1: mean 4, var 4
	assertClose(t, "alpha 1", values(gn.Forward(tp, x, seg)),
		[]float64{-2 * s0, 0, 0, 0, 2 * s0, 0, -s1, -2 * s2, s1, 2 * s2}, 1e-12)

	// alpha 0.5 keeps half the mean: graph 0, channel 1 has x − 3.5 = 3.5
	// everywhere (variance 12.25); gamma and beta then scale and shift.
	setData(gn.Alpha, 1, 0.5)
	setData(gn.Gamma, 2, 1)
	setData(gn.Beta, 0, 10)
	got := values(gn.Forward(tp, x, seg))
	want1 := 10 + 3.5/math.Sqrt(12.25+1e-5)
	if math.Abs(got[1]-want1) > 1e-12 || math.Abs(got[0]+4*s0) > 1e-12 {
		t.Fatalf("alpha 0.5: got %v, want [%g %g ...]", got[:2], -4*s0, want1)
	}
}

// TestGraphNormBatchIndependent: a graph's output does not depend on the
// other graphs of its batch.
func TestGraphNormBatchIndependent(t *testing.T) {
	r := tensor.NewRNG(3)
	gn := NewGraphNorm(4, f64)
	setData(gn.Alpha, 0.3, 0.9, 1.2, -0.5)
	a := tensor.RandN(r, tensor.Float64, 6, 4)
	b := tensor.RandN(r, tensor.Float64, 3, 4)
	tp := autograd.NoGrad()
	defer tp.Release()
	alone, _ := NewSegments([]int32{0, 0, 0, 0, 0, 0}, 1)
	both, _ := NewSegments([]int32{0, 0, 0, 1, 1, 1, 1, 1, 1}, 2)
	ya := values(gn.Forward(tp, autograd.NewConst(a), alone))
	yb := values(gn.Forward(tp, autograd.NewConst(tensor.Concat(nil, 0, b, a)), both))
	assertClose(t, "batched", yb[3*4:], ya, 1e-12)
}

func TestGraphNormGrad(t *testing.T) {
	r := tensor.NewRNG(5)
	seg, _ := NewSegments([]int32{0, 0, 0, 0, 1, 2, 2, 2, 2}, 3) // a one-node graph in the middle
	gn := NewGraphNorm(3, f64)
	for _, p := range gn.Params() {
		tensor.AddScaled(p.V.Value, p.V.Value, tensor.RandN(r, tensor.Float64, 3), 0.3)
	}
	x := autograd.NewParam(tensor.RandN(r, tensor.Float64, 9, 3))
	w := tensor.RandN(r, tensor.Float64, 9, 3)
	f := func(tp *autograd.Tape) *autograd.Var {
		return tp.SumAll(tp.Mul(gn.Forward(tp, x, seg), autograd.NewConst(w)))
	}
	params := []*autograd.Var{x, gn.Gamma, gn.Beta, gn.Alpha}
	if err := autograd.CheckGrad(f, params, 1e-6, 1e-5); err != nil {
		t.Fatal(err)
	}
}

func TestNewSegmentsErrors(t *testing.T) {
	for _, tc := range []struct {
		of []int32
		n  int
	}{{[]int32{0, 1}, 1}, {[]int32{-1}, 2}, {nil, -1}} {
		if _, err := NewSegments(tc.of, tc.n); err == nil {
			t.Errorf("NewSegments(%v, %d): no error", tc.of, tc.n)
		}
	}
	s, err := NewSegments([]int32{0, 0, 2}, 3) // graph 1 is empty
	if err != nil || s.N != 3 || len(s.Of) != 3 {
		t.Fatalf("NewSegments with an empty graph: %+v, %v", s, err)
	}
	if got := s.inv.Float64s(); got[0] != 0.5 || got[1] != 0 || got[2] != 1 {
		t.Errorf("inverse sizes %v, want [0.5 0 1]", got)
	}
}
