package flow

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"lgflow/autograd"
	"lgflow/dit"
	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/tensor"
	"lgflow/vae"
)

// TestFollowPath checks the training points of Config.PathLead against a
// step written out by hand, and that their targets give back the data.
func TestFollowPath(t *testing.T) {
	for _, target := range []Target{PredictX0, PredictVelocity} {
		for _, off := range []TimeOffsets{{}, {Step: 0.02, From: 0.5}} {
			t.Run(fmt.Sprintf("%s/%+v", target, off), func(t *testing.T) {
				cfg, err := Preset("tiny", 4)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Target, cfg.TimeMean, cfg.TimeStd = target, 2, 0.3
				cfg.PathLead, cfg.PathSteps = 0.1, 1
				path, err := dit.New(cfg.DiT, tensor.NewRNG(4))
				if err != nil {
					t.Fatal(err)
				}
				r := tensor.NewRNG(9)
				x1 := tensor.RandN(r, tensor.Float32, 3, 4, 4)
				mask := tensor.New(tensor.Float32, 3, 4)
				tensor.FillNormal(mask, r, 1, 0)
				mask.Set(0, 2, 3) // the last graph has three nodes
				mask3 := mask.Reshape(3, 4, 1)
				tensor.Mul(x1, x1, mask3)
				p := prepareBatch(cfg, x1, mask, tensor.NewRNG(2))
				straight := p.xt.Clone()
				x0 := p.noise(target, x1)

				// One Euler step by hand from lead earlier.
				s := make([]float64, 3)
				te := make([]float64, 3)
				for b, tb := range p.t {
					s[b] = tb - 0.1
					te[b] = s[b]
					if s[b] >= off.From {
						te[b] += off.Step
					}
				}
				xs := pathPoint(x1, x0, s)
				tp := autograd.NoGrad()
				pred := path.Forward(tp, autograd.NewConst(xs), te, mask, nil).Value.Clone()
				tp.Release()
				want := xs.Clone()
				for b := range 3 {
					for i := range 4 {
						for k := range 4 {
							pv := pred.At(b, i, k)
							v := pv
							if target == PredictX0 {
								v = (xs.At(b, i, k) - pv) / te[b]
							}
							want.Set((xs.At(b, i, k)+(p.t[b]-s[b])*v)*mask.At(b, i), b, i, k)
						}
					}
				}

				p.followPath(&Model{Cfg: cfg, Net: path}, cfg, off, x1)
				if d := tensor.MaxAbs(tensor.Sub(nil, p.xt, want)); d > 1e-5 {
					t.Errorf("training points %g from the hand-written step", d)
				}
				if d := tensor.MaxAbs(tensor.Sub(nil, p.xt, straight)); d < 1e-3 {
					t.Error("the training points are the straight path's")
				}
				base, coef := dataEstimate(target, p.xt, p.t)
				got := tensor.Add(nil, base, tensor.Mul(nil, p.target, coef))
				tensor.Mul(got, got, mask3)
				if d := tensor.MaxAbs(tensor.Sub(nil, got, x1)); d > 1e-4 {
					t.Errorf("the targets' data estimate is %g from the data", d)
				}
				if p.xt.At(2, 3, 0) != 0 || p.target.At(2, 3, 1) != 0 {
					t.Error("a padded token has a nonzero point or target")
				}
			})
		}
	}
}

// TestTrainPath trains a tiny flow on another's sampler states: it must
// need that flow, refuse one of another latent form, and train
// reproducibly to other weights than the straight path gives.
func TestTrainPath(t *testing.T) {
	ctx := context.Background()
	vc := vae.Config{K: 4, Latent: 4, PhiWidth: 8, Layers: 1, Width: 8, DeepSet: 4, EdgeClasses: 1,
		Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6}
	ae, err := vae.New(vc, 1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := vae.Prepare(ctx, datasets.Planar(8, 6, 1), vc, nil)
	if err != nil {
		t.Fatal(err)
	}
	lat, err := EncodeLatents(ctx, ae, data, 6, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Preset("tiny", 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Steps, cfg.BatchSize, cfg.TimeMean = 6, 4, 2
	path, err := Train(ctx, cfg, ae, data, lat, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	straight, err := Train(ctx, cfg, ae, data, lat, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.PathLead, cfg.PathSteps = 0.1, 2
	if _, err := Train(ctx, cfg, ae, data, lat, TrainOptions{}); err == nil || !strings.Contains(err.Error(), "TrainOptions.Path") {
		t.Errorf("training without the path flow: %v", err)
	}
	other := *path
	other.Cfg.Standardize = true
	if _, err := Train(ctx, cfg, ae, data, lat, TrainOptions{Path: &other}); err == nil || !strings.Contains(err.Error(), "latents") {
		t.Errorf("a path flow of another latent form: %v", err)
	}
	scaled := *path
	scaled.Scale *= 2
	if _, err := Train(ctx, cfg, ae, data, lat, TrainOptions{Path: &scaled}); err == nil || !strings.Contains(err.Error(), "scales the latents") {
		t.Errorf("a path flow of another latent scale: %v", err)
	}
	opts := TrainOptions{Path: path, PathOffsets: TimeOffsets{Step: 0.01, From: 0.5}}
	a, err := Train(ctx, cfg, ae, data, lat, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Train(ctx, cfg, ae, data, lat, opts)
	if err != nil {
		t.Fatal(err)
	}
	if nn.Fingerprint(a.Net) != nn.Fingerprint(b.Net) {
		t.Error("training on a path flow's states is not reproducible")
	}
	if nn.Fingerprint(a.Net) == nn.Fingerprint(straight.Net) {
		t.Error("training on a path flow's states gave the straight path's weights")
	}
}
