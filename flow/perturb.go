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
// x_t = t·x1 + (1-t)·ε, with x1 = s·z and fresh noise ε, integrates from t
// to 1 with steps Euler steps and returns the result in the LG-VAE's space
// on the CPU. Of the sampler settings s it uses the final jump (0:
// DefaultFinalJump, when the jump's time is after t; 1: none), the time
// offsets and the experts (which name files of m's bundle or carry their
// model); the others are sampling's, not the path's.
//
// The result is what vae.TrainOptions.Perturb expects: a decoder fine-tuned
// on it learns to decode the latents this flow actually produces, with
// their errors, into the graphs they came from.
func (m *Model) EndpointPerturbation(tMin, tMax float64, steps int, s Sampler) (func(z *tensor.Tensor, sizes []int, r *tensor.RNG) (*tensor.Tensor, error), error) {
	o := settings{jumpAt: DefaultFinalJump}
	switch {
	case !(tMin > 0 && tMin <= tMax && tMax < 1):
		return nil, fmt.Errorf("flow: perturbation times must satisfy 0 < tMin <= tMax < 1, got [%g, %g]", tMin, tMax)
	case steps < 1:
		return nil, fmt.Errorf("flow: perturbation needs at least one step, got %d", steps)
	case m == nil || m.Net == nil:
		return nil, fmt.Errorf("flow: EndpointPerturbation needs a trained model")
	case s.GuidanceScale != nil:
		return nil, errors.New("flow: EndpointPerturbation moves latents unconditionally: it takes no guidance scale")
	}
	if err := s.apply(&o, m); err != nil {
		return nil, err
	}
	if err := checkExperts(m, o.experts); err != nil {
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
		tensor.MulScalar(x1, x1, m.Scale)
		tensor.Mul(x1, x1, mask.Reshape(B, N, 1))
		x := tensor.RandN(r, dt, B, N, d)
		tensor.MulScalar(x, x, 1-t)
		tensor.AddScaled(x, x, x1, t)
		tensor.Mul(x, x, mask.Reshape(B, N, 1))
		jump := 0.0
		if o.jumpAt > t && o.jumpAt < 1 && steps > 1 {
			jump = o.jumpAt
		}
		grid := timeGrid(t, steps, false, jump, 1, r)
		return solve(context.Background(), m, x.On(be), mask.On(be), grid, o)
	}, nil
}
