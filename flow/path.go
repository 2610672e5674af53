package flow

import (
	"errors"
	"fmt"

	"lgflow/autograd"
	"lgflow/tensor"
	"lgflow/vae"
)

// checkPath checks the frozen flow of Config.PathLead against the flow
// being trained: the same latent dimension, form and space (the scale is
// checked once Train knows it).
func checkPath(path *Model, cfg Config, ae *vae.Model, offsets TimeOffsets) error {
	switch {
	case path == nil || path.Net == nil:
		return errors.New("flow: PathLead needs the flow whose sampler makes the training points (TrainOptions.Path)")
	case path.Net.Cfg.Dim != cfg.DiT.Dim:
		return fmt.Errorf("flow: the path flow's latents have %d dimensions, this flow's %d", path.Net.Cfg.Dim, cfg.DiT.Dim)
	case path.Cfg.Standardize != cfg.Standardize:
		return fmt.Errorf("flow: the path flow works on %s latents, this flow on %s ones", latentForm(path.Cfg.Standardize), latentForm(cfg.Standardize))
	case path.VAE != nil && !sameLatentSpace(path.VAE, ae):
		return errors.New("flow: the path flow was trained in another LG-VAE's latent space")
	case !offsets.valid():
		return fmt.Errorf("flow: invalid path time offsets %+v", offsets)
	}
	return nil
}

// followPath replaces p's path points by the states the frozen flow
// path's Euler steps reach at p's times from the straight path's points
// cfg.PathLead earlier (cfg.PathSteps steps, the denoiser evaluated at
// times shifted by offsets.Step from offsets.From on, self-conditioned on
// its previous prediction), and p's targets by those that give back the
// data x1 from them under cfg.Target: for a noise prediction
// x̂0 = (x - t·x1)/(1-t), for a velocity (x1 - x)/(1-t). The path flow's
// own target and self-conditioning decide its steps. It runs on the CPU,
// without gradients, while the previous training step runs.
func (p *preparedBatch) followPath(path *Model, cfg Config, offsets TimeOffsets, x1 *tensor.Tensor) {
	B, N := x1.Dim(0), x1.Dim(1)
	mask3 := p.mask.Reshape(B, N, 1)
	// The noise of the straight path: x0 = (xt - t·x1)/(1-t).
	start := make([]float64, B)
	h := tensor.New(x1.DType(), B, 1, 1)
	for b, t := range p.t {
		start[b] = max(t-cfg.PathLead, 0.01)
		h.Set((t-start[b])/float64(cfg.PathSteps), b, 0, 0)
	}
	x0 := p.noise(cfg.Target, x1)
	x := pathPoint(x1, x0, start)
	tau := append([]float64(nil), start...)
	te := make([]float64, B)
	var sc *tensor.Tensor
	for range cfg.PathSteps {
		for b, t := range tau {
			te[b] = t
			if t >= offsets.From {
				te[b] = min(max(t+offsets.Step, 1e-3), 1-1e-3)
			}
		}
		tp := autograd.NoGrad()
		var scv *autograd.Var
		if sc != nil {
			scv = autograd.NewConst(sc)
		}
		pred := path.Net.Forward(tp, autograd.NewConst(x), te, p.mask, scv).Value.Clone()
		tp.Release()
		v := pred
		if path.Cfg.Target == PredictX0 {
			v = tensor.Sub(nil, x, pred) // (x - x̂0)/te
			tensor.Mul(v, v, perGraph(x.DType(), te, func(t float64) float64 { return 1 / t }))
		}
		tensor.Mul(v, v, h)
		tensor.Add(x, x, v)
		tensor.Mul(x, x, mask3)
		if path.Cfg.DiT.SelfCond {
			sc = pred
		}
		for b := range tau {
			tau[b] += h.At(b, 0, 0)
		}
	}
	p.xt = x
	// Targets that give back x1 from x at times t.
	inv := perGraph(x.DType(), p.t, func(t float64) float64 { return 1 / (1 - t) })
	if cfg.Target == PredictX0 {
		tx1 := tensor.Mul(nil, x1, perGraph(x.DType(), p.t, func(t float64) float64 { return t }))
		p.target = tensor.Mul(nil, tensor.Sub(nil, x, tx1), inv)
	} else {
		p.target = tensor.Mul(nil, tensor.Sub(nil, x1, x), inv)
	}
	tensor.Mul(p.target, p.target, mask3)
}

// noise returns the noise x0 of p's straight-path points from the data x1
// and the target.
func (p *preparedBatch) noise(target Target, x1 *tensor.Tensor) *tensor.Tensor {
	if target == PredictX0 {
		return p.target.Clone()
	}
	return tensor.Sub(nil, x1, p.target) // target = x1 - x0
}

// pathPoint returns x0 + t·(x1 - x0) with one time per graph.
func pathPoint(x1, x0 *tensor.Tensor, t []float64) *tensor.Tensor {
	x := tensor.Sub(nil, x1, x0)
	tensor.Mul(x, x, perGraph(x1.DType(), t, func(v float64) float64 { return v }))
	return tensor.Add(x, x, x0)
}

// perGraph returns f of each graph's time as a (B, 1, 1) tensor.
func perGraph(dt tensor.DType, t []float64, f func(float64) float64) *tensor.Tensor {
	c := tensor.New(dt, len(t), 1, 1)
	for b, v := range t {
		c.Set(f(v), b, 0, 0)
	}
	return c
}
