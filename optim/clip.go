package optim

import (
	"math"

	"lgflow/tensor"
)

// ClipGradNorm scales all gradients together so that their global L2 norm
// is at most maxNorm, as torch.nn.utils.clip_grad_norm_ does, and returns
// the norm before clipping:
//
//	total = sqrt(Σ_params Σ_i g_i²)      (accumulated in float64)
//	if maxNorm/(total + 1e-6) < 1:  g ← g · maxNorm/(total + 1e-6)
//
// Nil gradients are skipped. If total is NaN or infinite the gradients are
// left unchanged (PyTorch would fill them with NaN) and the non-finite
// total is returned, so the caller can stop or skip the step; CheckFinite
// says which parameter is at fault. The gradients are scaled in place.
func ClipGradNorm(params []Param, maxNorm float64) float64 {
	total := GradNorm(params)
	if math.IsNaN(total) || math.IsInf(total, 0) {
		return total
	}
	coef := maxNorm / (total + 1e-6)
	if coef < 1 {
		gradRuns(params, func(g *tensor.Tensor) { tensor.MulScalar(g, g, coef) })
	}
	return total
}

// GradNorm returns the global L2 norm of the non-nil gradients,
// sqrt(Σ_params Σ_i g_i²), accumulated in float64. It reads the gradients
// only. On the CPU the squares are summed parameter by parameter; on
// another backend (a GPU, where each sum is a wait for the device) once per
// run of adjacent gradients (see nn.Flatten), which sums in another order.
func GradNorm(params []Param) float64 {
	var ss float64
	for _, p := range params {
		if p.Grad != nil && p.Grad.Backend() != tensor.CPU {
			gradRuns(params, func(g *tensor.Tensor) { ss += tensor.Norm2Squared(g) })
			return math.Sqrt(ss)
		}
	}
	for _, p := range params {
		if p.Grad != nil {
			ss += tensor.Norm2Squared(p.Grad)
		}
	}
	return math.Sqrt(ss)
}
