package flow

import (
	"fmt"
	"math"

	"lgflow/tensor"
)

// toFlow maps latents z (B, N, d) of the LG-VAE's space to the flow's
// space in place: x = s·z, or with Config.Standardize x = (z - mean)/std
// per dimension. Rows where mask (B, N) is 0 are set to zero. z is on the
// CPU.
func (m *Model) toFlow(z, mask *tensor.Tensor) {
	B, N, d := z.Dim(0), z.Dim(1), z.Dim(2)
	if m.Mean == nil {
		tensor.MulScalar(z, z, m.Scale)
		tensor.Mul(z, z, mask.Reshape(B, N, 1))
		return
	}
	shift, inv := m.perDim(d, z.DType(), true)
	tensor.Sub(z, z, shift)
	tensor.Mul(z, z, inv)
	tensor.Mul(z, z, mask.Reshape(B, N, 1))
}

// fromFlow is the inverse of toFlow: z = x/s, or z = x·std + mean per
// dimension, with masked rows set to zero. x may be on any backend.
func (m *Model) fromFlow(x, mask *tensor.Tensor) {
	B, N, d := x.Dim(0), x.Dim(1), x.Dim(2)
	if m.Mean == nil {
		tensor.MulScalar(x, x, 1/m.Scale)
		return
	}
	mul, shift := m.perDim(d, x.DType(), false)
	tensor.Mul(x, x, mul.On(x.Backend()))
	tensor.Add(x, x, shift.On(x.Backend()))
	tensor.Mul(x, x, mask.On(x.Backend()).Reshape(B, N, 1))
}

// perDim returns (1, 1, d) rows of the standardisation: (mean, 1/std) for
// the forward map, (std, mean) for the inverse.
func (m *Model) perDim(d int, dt tensor.DType, forward bool) (a, b *tensor.Tensor) {
	x, y := make([]float64, d), make([]float64, d)
	for k := range d {
		if forward {
			x[k], y[k] = m.Mean[k], 1/m.Std[k]
		} else {
			x[k], y[k] = m.Std[k], m.Mean[k]
		}
	}
	return tensor.FromFloat64(x, 1, 1, d).To(dt), tensor.FromFloat64(y, 1, 1, d).To(dt)
}

// checkNorm validates the per-dimension statistics of a model with
// Config.Standardize against the latent width d.
func (m *Model) checkNorm(d int) error {
	if !m.Cfg.Standardize {
		if m.Mean != nil || m.Std != nil {
			return fmt.Errorf("per-dimension latent statistics in a model without Standardize")
		}
		return nil
	}
	if len(m.Mean) != d || len(m.Std) != d {
		return fmt.Errorf("per-dimension latent statistics of length %d and %d for %d dimensions", len(m.Mean), len(m.Std), d)
	}
	for k := range d {
		if math.IsNaN(m.Mean[k]) || math.IsInf(m.Mean[k], 0) || !(m.Std[k] > 0) || math.IsInf(m.Std[k], 0) {
			return fmt.Errorf("latent dimension %d: mean %g, std %g", k, m.Mean[k], m.Std[k])
		}
	}
	return nil
}

// latentStats returns the per-dimension mean and standard deviation of the
// posterior means of all training graphs (Config.Standardize).
func (l *Latents) latentStats() (mean, std []float64) {
	d := l.Mu[0].Dim(1)
	mean, std = make([]float64, d), make([]float64, d)
	sq := make([]float64, d)
	n := 0
	for _, mu := range l.Mu {
		v := mu.To(tensor.Float64).Data64()
		for i := range mu.Dim(0) {
			for k := range d {
				x := v[i*d+k]
				mean[k] += x
				sq[k] += x * x
			}
			n++
		}
	}
	for k := range d {
		mean[k] /= float64(n)
		std[k] = math.Sqrt(max(sq[k]/float64(n)-mean[k]*mean[k], 0))
		if std[k] == 0 {
			std[k] = 1
		}
	}
	return mean, std
}
