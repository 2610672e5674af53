package optim

import (
	"math"
	"testing"

	"lgflow/tensor"
)

// paramSet builds the same parameters twice: as separate tensors, and as
// views of one flat value tensor and one flat gradient tensor (the layout
// nn.Flatten makes), decayed matrices first.
func paramSet(dt tensor.DType, seed uint64) (sep, flat []Param) {
	shapes := [][]int{{7, 5}, {3, 1, 4}, {129, 3}, {5}, {1}, {300}}
	r := tensor.NewRNG(seed)
	n := 0
	for _, s := range shapes {
		k := 1
		for _, d := range s {
			k *= d
		}
		n += k
	}
	fv, fg := tensor.New(dt, n), tensor.New(dt, n)
	off := 0
	for i, s := range shapes {
		v := tensor.FillUniform(tensor.New(dt, s...), r, -1, 1)
		k := v.Size()
		name := string(rune('a' + i))
		decay := DefaultDecay(name, s)
		sep = append(sep, Param{Name: name, Value: v, Grad: tensor.New(dt, s...), Decay: decay})
		fvv := fv.Slice(0, off, off+k).Reshape(s...)
		tensor.Copy(fvv, v)
		flat = append(flat, Param{Name: name, Value: fvv, Grad: fg.Slice(0, off, off+k).Reshape(s...), Decay: decay})
		off += k
	}
	return sep, flat
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
		sep, flat := paramSet(dt, 5)
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
		// The optimisers' state is flat too: one run per tensor kind.
		for i := 1; i < len(flat); i++ {
			if !adjacent(optF.m[i-1], optF.m[i]) || !adjacent(optF.v[i-1], optF.v[i]) || !adjacent(emaF.shadow[i-1], emaF.shadow[i]) {
				t.Fatalf("%v: optimiser state of parameter %d is not adjacent to its predecessor's", dt, i)
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

// TestForRuns checks the run splitting that the flat updates rely on.
func TestForRuns(t *testing.T) {
	flat := tensor.New(tensor.Float32, 20)
	other := tensor.New(tensor.Float32, 20)
	ts := []*tensor.Tensor{
		flat.Slice(0, 0, 4),                     // run 1
		flat.Slice(0, 4, 10).Reshape(2, 3),      // run 1 (adjacent, reshaped)
		flat.Slice(0, 12, 14),                   // gap: run 2
		other.Slice(0, 14, 16),                  // other storage: run 3
		flat.Slice(0, 16, 20).Reshape(2, 2).T(), // not contiguous: run 4
		nil,                                     // skipped
		flat.Slice(0, 0, 2),                     // run 5
	}
	var got [][3]int
	forRuns(len(ts), func(i int) bool { return ts[i] == nil }, func(i, j int) bool { return adjacent(ts[i], ts[j]) },
		func(i int) int { return ts[i].Size() }, func(lo, hi, n int) { got = append(got, [3]int{lo, hi, n}) })
	want := [][3]int{{0, 2, 10}, {2, 3, 2}, {3, 4, 2}, {4, 5, 4}, {6, 7, 2}}
	if len(got) != len(want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("runs %v, want %v", got, want)
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
			_, flat := paramSet(dt, 3)
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
