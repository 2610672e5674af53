package flow

import (
	"context"
	"fmt"
	"testing"

	"lgflow/autograd"
	"lgflow/dit"
	"lgflow/tensor"
)

// TestTimeOffsets checks Sampler.Offsets against the steps written out by
// hand: on the grid 0.5, 0.7, 1 the first step's denoiser sees 0.5+Step
// (when From allows) and its velocity divides by that time, and the final
// step outputs the data estimate of the state taken at 0.7+Jump.
func TestTimeOffsets(t *testing.T) {
	cfg, err := Preset("", "tiny", 4)
	if err != nil {
		t.Fatal(err)
	}
	net, err := dit.New(cfg.DiT, tensor.NewRNG(5))
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{Cfg: cfg, Net: net, Scale: 1}
	r := tensor.NewRNG(8)
	x := tensor.RandN(r, tensor.Float32, 2, 3, 4)
	mask := tensor.New(tensor.Float32, 2, 3)
	tensor.FillNormal(mask, r, 1, 0) // all ones
	mask.Set(0, 1, 2)                // the second graph has two nodes
	tensor.Mul(x, x, mask.Reshape(2, 3, 1))
	pred := func(x *tensor.Tensor, te float64, sc *tensor.Tensor) *tensor.Tensor {
		tp := autograd.NoGrad()
		defer tp.Release()
		var scv *autograd.Var
		if sc != nil && cfg.DiT.SelfCond {
			scv = autograd.NewConst(sc)
		}
		return net.Forward(tp, autograd.NewConst(x), []float64{te, te}, mask, scv).Value.Clone()
	}
	// velocity at the denoiser's time te.
	velocity := func(x, p *tensor.Tensor, te float64) *tensor.Tensor {
		return tensor.MulScalar(nil, tensor.Sub(nil, x, p), 1/te)
	}
	grid := []float64{0.5, 0.7, 1}
	for _, off := range []TimeOffsets{{}, {Step: 0.1, From: 0.5, Jump: -0.2}, {Step: 0.1, From: 0.6, Jump: 0.25}, {Step: -0.3}, {Step: 0.1, From: 0.8, Jump: -0.5}} {
		t.Run(fmt.Sprintf("%+v", off), func(t *testing.T) {
			t0 := 0.5
			if 0.5 >= off.From {
				t0 += off.Step
			}
			p1 := pred(x, t0, nil)
			x1 := tensor.AddScaled(nil, x, velocity(x, p1, t0), 0.2)
			tensor.Mul(x1, x1, mask.Reshape(2, 3, 1))
			tj := 0.7
			if 0.7 >= off.From {
				tj += off.Jump
			}
			p2 := pred(x1, tj, p1)
			want := tensor.AddScaled(nil, x1, velocity(x1, p2, tj), 1-tj)
			tensor.Mul(want, want, mask.Reshape(2, 3, 1))

			got, err := solve(context.Background(), m, x.Clone(), mask, grid, settings{offsets: off})
			if err != nil {
				t.Fatal(err)
			}
			if d := tensor.MaxAbs(tensor.Sub(nil, got, want)); d != 0 {
				t.Errorf("solve differs from the hand-written steps by %g", d)
			}
		})
	}
	// A shifted time outside (0, 1) is an error, not a division by zero
	// or a time the denoiser was never trained on (the offsets from 0.8
	// above apply to no step of this grid).
	for _, off := range []TimeOffsets{{Step: -0.5}, {Jump: 0.3}, {Jump: -0.7}} {
		if _, err := solve(context.Background(), m, x.Clone(), mask, grid, settings{offsets: off}); err == nil {
			t.Errorf("offsets %+v accepted", off)
		}
	}
}
