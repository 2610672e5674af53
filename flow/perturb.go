package flow

import (
	"context"
	"errors"
	"fmt"

	"lgflow/tensor"
)

// EndpointPerturbation returns a function that moves clean latents to where
// this model's sampler takes them from partway along the path. For padded
// latents z (B, N, d) in the LG-VAE's space, graphs of the given sizes, it
// draws one time t uniformly from [tMin, tMax], forms the path's state
// x_t = t·x1 + (1-t)·ε, with x1 the flow's view of z (s·z, or z
// standardised) and fresh noise ε, integrates from t to 1 with steps Euler
// steps (the sampler's options apply: WithFinalJump ends with one step from
// the jump time to 1 when the jump time is after t) and returns the result
// in the LG-VAE's space on the CPU.
//
// The result is what vae.TrainOptions.Perturb expects: a decoder fine-tuned
// on it learns to decode the latents this flow actually produces, with
// their errors, into the graphs they came from.
func (m *Model) EndpointPerturbation(tMin, tMax float64, steps int, opts ...SampleOption) (func(z *tensor.Tensor, sizes []int, r *tensor.RNG) (*tensor.Tensor, error), error) {
	o := sampleOptions{method: Euler, temp: 1}
	for _, f := range opts {
		f(&o)
	}
	switch {
	case !(tMin > 0 && tMin <= tMax && tMax < 1):
		return nil, fmt.Errorf("flow: perturbation times must satisfy 0 < tMin <= tMax < 1, got [%g, %g]", tMin, tMax)
	case steps < 1:
		return nil, fmt.Errorf("flow: perturbation needs at least one step, got %d", steps)
	case !(o.eta >= 0 && o.eta <= 1) || o.eta > 0 && o.method != Euler:
		return nil, fmt.Errorf("flow: stochasticity %g with method %q", o.eta, o.method)
	case m == nil || m.Net == nil:
		return nil, fmt.Errorf("flow: EndpointPerturbation needs a trained model")
	case o.guide != nil && o.method != Euler:
		return nil, fmt.Errorf("flow: guidance needs the Euler method, not %q", o.method)
	case len(o.conds) > 0 || o.cfgW != 0:
		return nil, errors.New("flow: EndpointPerturbation moves latents unconditionally: it takes no condition or guidance scale")
	}
	if err := o.checkDenoisers(m); err != nil {
		return nil, err
	}
	return func(z *tensor.Tensor, sizes []int, r *tensor.RNG) (*tensor.Tensor, error) {
		if z.Rank() != 3 || z.Dim(0) != len(sizes) || z.Dim(2) != m.Cfg.DiT.Dim {
			return nil, fmt.Errorf("flow: latents of shape %v for %d graphs, want (B, N, %d)", z.Shape(), len(sizes), m.Cfg.DiT.Dim)
		}
		B, N, d := z.Dim(0), z.Dim(1), z.Dim(2)
		dt, be := m.Net.Params()[0].V.DType(), m.Net.Backend()
		mask := tokenMask(dt, sizes, N)
		t := tMin + (tMax-tMin)*r.Uniform()
		x1 := z.To(dt).Clone()
		m.toFlow(x1, mask)
		x := tensor.RandN(r, dt, B, N, d)
		tensor.MulScalar(x, x, 1-t)
		tensor.AddScaled(x, x, x1, t)
		tensor.Mul(x, x, mask.Reshape(B, N, 1))
		jump := 0.0
		if o.jumpAt > t && steps > 1 {
			jump = o.jumpAt
		}
		grid := timeGrid(t, steps, false, jump, 1, r)
		return solve(context.Background(), m, x.On(be), mask.On(be), grid, o, r)
	}, nil
}
