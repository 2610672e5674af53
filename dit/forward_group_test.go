package dit

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"lgflow/autograd"
	"lgflow/tensor"
)

// TestForwardNoGradGroups checks that a no-grad forward pass, which
// evaluates large batches a group of sets at a time and each block on a
// tape of its own, gives the result of one pass over the whole batch (a
// recording tape's) bit for bit; with one time for every set (a sampler's
// step) it also computes the conditioning once, which must not change the
// result either.
func TestForwardNoGradGroups(t *testing.T) {
	cases := []struct {
		name     string
		dt       tensor.DType
		B, N     int
		pad      bool // the last few tokens of most sets are padding
		selfCond bool
		sameTime bool // one time for every set
	}{
		{"float32, 3 groups, padded", tensor.Float32, 2*EvalTokens/64 + 8, 64, true, true, false},
		{"float64, 3 groups, padded", tensor.Float64, 2*EvalTokens/64 + 8, 64, true, true, false},
		{"no mask, no self-conditioning", tensor.Float32, EvalTokens/64 + 1, 64, false, false, false},
		{"a set per group", tensor.Float32, 3, EvalTokens + 5, true, true, false},
		{"one group", tensor.Float32, EvalTokens / 64, 64, true, true, false},
		{"float32, 3 groups, one time", tensor.Float32, 2*EvalTokens/64 + 8, 64, true, true, true},
		{"float64, 3 groups, one time", tensor.Float64, 2*EvalTokens/64 + 8, 64, true, true, true},
		{"one group, one time", tensor.Float32, EvalTokens / 64, 64, true, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if B, group := c.B, max(1, EvalTokens/c.N); B <= group && !strings.HasPrefix(c.name, "one group") {
				t.Fatalf("B = %d fits in one group of %d: nothing to compare", B, group)
			}
			m := tinyModel(t, c.dt)
			r := tensor.NewRNG(uint64(c.B))
			d := m.Cfg.Dim
			x := tensor.RandN(r, c.dt, c.B, c.N, d)
			var sc *autograd.Var
			if c.selfCond {
				sc = autograd.NewConst(tensor.RandN(r, c.dt, c.B, c.N, d))
			}
			var mask *tensor.Tensor
			if c.pad {
				mask = tensor.New(c.dt, c.B, c.N)
				for b := range c.B {
					for j := range c.N - b%4 {
						mask.Set(1, b, j)
					}
				}
			}
			ts := make([]float64, c.B)
			for i := range ts {
				ts[i] = float64(i+1) / float64(c.B+1)
				if c.sameTime {
					ts[i] = 0.37
				}
			}
			rec := autograd.NewTape()
			want := m.Forward(rec, autograd.NewConst(x), ts, mask, sc).Value
			// Groups run concurrently: one, two and three threads.
			for _, procs := range []int{1, 2, 3} {
				old := runtime.GOMAXPROCS(procs)
				ng := autograd.NoGrad()
				got := m.Forward(ng, autograd.NewConst(x), ts, mask, sc).Value
				runtime.GOMAXPROCS(old)
				if !slices.Equal(got.Shape(), want.Shape()) {
					t.Fatalf("shape %v, want %v", got.Shape(), want.Shape())
				}
				g, w := got.To(tensor.Float64).Data64(), want.To(tensor.Float64).Data64()
				nonzero := 0
				for i := range w {
					if math.Float64bits(g[i]) != math.Float64bits(w[i]) {
						t.Fatalf("%d threads: element %d: %v by groups, %v in one pass", procs, i, g[i], w[i])
					}
					if w[i] != 0 {
						nonzero++
					}
				}
				if nonzero == 0 {
					t.Error("the output is all zeros: the comparison is vacuous")
				}
				ng.Release()
			}
			rec.Release()
		})
	}
}

// TestForwardNoGradGroupPanic checks that a panic inside a group, which
// runs on a goroutine of its own, reaches Forward's caller (where flow's
// samplers recover device errors) instead of ending the program.
func TestForwardNoGradGroupPanic(t *testing.T) {
	m := tinyModel(t, tensor.Float32)
	B, N := 3*EvalTokens/64, 64
	r := tensor.NewRNG(5)
	x := tensor.RandN(r, tensor.Float32, B, N, m.Cfg.Dim)
	// A self-conditioning input with one feature too many: each group's
	// concatenation panics.
	bad := autograd.NewConst(tensor.RandN(r, tensor.Float32, B, N, m.Cfg.Dim+1))
	ts := make([]float64, B)
	defer func() {
		if p := recover(); p == nil {
			t.Fatal("Forward with a bad self-conditioning input did not panic")
		}
	}()
	ng := autograd.NoGrad()
	defer ng.Release()
	m.Forward(ng, autograd.NewConst(x), ts, nil, bad)
}
