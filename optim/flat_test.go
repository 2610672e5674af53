package optim

import (
	"math"
	"slices"
	"testing"

	"lgflow/tensor"
)

// paramSet builds the same parameters twice: as separate tensors, and as
// views of one flat value tensor and one flat gradient tensor laid out as
// nn.Flatten does, decayed matrices first (so not in the list's order).
// layout lists the flat parameters in memory order.
func paramSet(dt tensor.DType, seed uint64) (sep, flat []Param, layout []int) {
	shapes := [][]int{{7, 5}, {5}, {3, 1, 4}, {1}, {129, 3}, {300}}
	r := tensor.NewRNG(seed)
	n := 0
	for i, s := range shapes {
		k := 1
		for _, d := range s {
			k *= d
		}
		n += k
		sep = append(sep, Param{Name: string(rune('a' + i)), Value: tensor.FillUniform(tensor.New(dt, s...), r, -1, 1),
			Grad: tensor.New(dt, s...), Decay: DefaultDecay("", s)})
	}
	for _, decay := range []bool{true, false} {
		for i, p := range sep {
			if p.Decay == decay {
				layout = append(layout, i)
			}
		}
	}
	fv, fg := tensor.New(dt, n), tensor.New(dt, n)
	flat = make([]Param, len(sep))
	off := 0
	for _, i := range layout {
		p := sep[i]
		k, s := p.Value.Size(), p.Value.Shape()
		v := fv.Slice(0, off, off+k).Reshape(s...)
		tensor.Copy(v, p.Value)
		flat[i] = Param{Name: p.Name, Value: v, Grad: fg.Slice(0, off, off+k).Reshape(s...), Decay: p.Decay}
		off += k
	}
	return sep, flat, layout
}

func bitsEqual(t *testing.T, what string, a, b *tensor.Tensor) {
	t.Helper()
	x, y := a.Float64s(), b.Float64s()
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			t.Fatalf("%s: element %d: %v (flat) != %v (separate)", what, i, y[i], x[i])
		}
	}
}

// TestFlatMatchesSeparate checks that AdamW, the EMA, clipping and zeroing
// give bit-identical results on flat parameters (updated run by run) and on
// separate ones (updated one by one), including a step where a parameter
// has no gradient (its run is split) and a clipped step.
func TestFlatMatchesSeparate(t *testing.T) {
	cfg := AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
	ecfg := EMAConfig{Beta: 0.999, UpdateAfterStep: 1, UpdateEvery: 1, InvGamma: 1, Power: 2.0 / 3}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		sep, flat, layout := paramSet(dt, 5)
		optS, err := NewAdamW(sep, cfg)
		if err != nil {
			t.Fatal(err)
		}
		optF, _ := NewAdamW(flat, cfg)
		emaS, err := NewEMA(sep, ecfg)
		if err != nil {
			t.Fatal(err)
		}
		emaF, _ := NewEMA(flat, ecfg)
		// The optimisers' state is laid out like the parameters.
		for k := 1; k < len(layout); k++ {
			i, j := layout[k-1], layout[k]
			if !adjacent(optF.m[i], optF.m[j]) || !adjacent(optF.v[i], optF.v[j]) || !adjacent(emaF.shadow[i], emaF.shadow[j]) {
				t.Fatalf("%v: optimiser state of parameter %d does not follow that of %d", dt, j, i)
			}
		}
		r := tensor.NewRNG(9)
		for step := 1; step <= 5; step++ {
			ZeroGrad(sep)
			optF.ZeroGrad()
			for i := range sep {
				g := tensor.FillUniform(tensor.New(dt, sep[i].Value.Shape()...), r, -3, 3)
				tensor.Copy(sep[i].Grad, g)
				tensor.Copy(flat[i].Grad, g)
			}
			if step == 3 {
				// No gradient for one parameter this step.
				optS.Params()[2].Grad, optF.Params()[2].Grad = nil, nil
			}
			if step == 4 {
				optS.Params()[2].Grad, optF.Params()[2].Grad = sep[2].Grad, flat[2].Grad
			}
			if step == 2 || step == 4 {
				ns, nf := ClipGradNorm(sep, 0.5), ClipGradNorm(flat, 0.5)
				if ns != nf {
					t.Fatalf("%v: norms %v (separate) and %v (flat) differ", dt, ns, nf)
				}
			}
			optS.Step()
			optF.Step()
			emaS.Update(step)
			emaF.Update(step)
		}
		sdS, sdF := optS.StateDict(), optF.StateDict()
		for i := range sep {
			bitsEqual(t, dt.String()+" "+sep[i].Name+" value", sep[i].Value, flat[i].Value)
			bitsEqual(t, dt.String()+" "+sep[i].Name+" ema", emaS.Weights()[sep[i].Name], emaF.Weights()[sep[i].Name])
			for _, k := range []string{keyExpAvg, keyExpAvgSq, keyStep} {
				bitsEqual(t, dt.String()+" "+sep[i].Name+k, sdS[sep[i].Name+k], sdF[sep[i].Name+k])
			}
		}
		ZeroGrad(flat)
		for _, p := range flat {
			if m := tensor.MaxAbs(p.Grad); m != 0 {
				t.Errorf("%v: ZeroGrad left %v in %s", dt, m, p.Name)
			}
		}
	}
}

// TestForRuns checks the memory order and the run splitting that the flat
// updates rely on.
func TestForRuns(t *testing.T) {
	flat := tensor.New(tensor.Float32, 20)
	other := tensor.New(tensor.Float32, 20)
	ts := []*tensor.Tensor{
		flat.Slice(0, 4, 10).Reshape(2, 3),      // run 1 (after 2, reshaped)
		flat.Slice(0, 12, 14),                   // gap: run 2
		flat.Slice(0, 0, 4),                     // run 1
		other.Slice(0, 14, 16),                  // other storage: run 4
		flat.Slice(0, 16, 20).Reshape(2, 2).T(), // not contiguous: run 3
		nil,                                     // skipped
		other.Slice(0, 16, 17),                  // run 4
	}
	order := memOrder(len(ts), func(i int) *tensor.Tensor { return ts[i] })
	if want := []int{2, 0, 1, 4, 3, 6, 5}; !slices.Equal(order, want) {
		t.Fatalf("memory order %v, want %v", order, want)
	}
	var got [][]int
	forRuns(order, func(i int) bool { return ts[i] == nil }, func(i, j int) bool { return adjacent(ts[i], ts[j]) },
		func(i int) int { return ts[i].Size() }, func(run []int, n int) { got = append(got, append(slices.Clone(run), n)) })
	want := [][]int{{2, 0, 10}, {1, 2}, {4, 4}, {3, 6, 3}}
	if len(got) != len(want) {
		t.Fatalf("runs %v, want %v (each: indices, size)", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("runs %v, want %v (each: indices, size)", got, want)
		}
	}
}

// TestNonFiniteCheck checks that the device-side check flags a NaN or an
// infinity in any gradient, accumulates over calls and clears on Read.
func TestNonFiniteCheck(t *testing.T) {
	cases := []struct {
		name string
		bad  float64
		at   int // parameter index, -1 for none
		want bool
	}{
		{"finite", 0, -1, false},
		{"NaN in the first", math.NaN(), 0, true},
		{"+Inf in the last", math.Inf(1), 5, true},
		{"-Inf in the middle", math.Inf(-1), 3, true},
	}
	for _, c := range cases {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			_, flat, _ := paramSet(dt, 3)
			for _, p := range flat {
				tensor.FillUniform(p.Grad, tensor.NewRNG(1), -1, 1)
			}
			if c.at >= 0 {
				g := flat[c.at].Grad
				g.Reshape(g.Size()).Set(c.bad, g.Size()-1)
			}
			var chk NonFiniteCheck
			chk.AddGrads(flat)
			chk.Add(tensor.Scalar(dt, 1))
			if got := chk.Read(); got != c.want {
				t.Errorf("%s %v: Read() = %v, want %v", c.name, dt, got, c.want)
			}
			if chk.Read() {
				t.Errorf("%s %v: the flag was not cleared by Read", c.name, dt)
			}
		}
	}
}
