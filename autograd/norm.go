package autograd

import (
	"fmt"
	"math"

	"lgflow/internal/parallel"
	"lgflow/tensor"
)

// LayerNorm normalises x over its last axis and applies the affine map:
//
//	y = (x − mean)·rstd ⊙ gamma + beta,   rstd = 1/√(var + eps)
//
// with the biased variance. gamma and beta are (D) or nil (no scale / no
// shift). One fused tensor kernel forward and one backward.
func (tp *Tape) LayerNorm(x, gamma, beta *Var, eps float64) *Var {
	tp.checkIn("LayerNorm", x)
	d := x.Dim(-1)
	var gv, bv *tensor.Tensor
	if gamma != nil {
		tp.checkIn("LayerNorm", gamma)
		if gamma.Rank() != 1 || gamma.Dim(0) != d {
			panic(fmt.Sprintf("autograd.LayerNorm: gamma %v for input %v", gamma.Shape(), x.Shape()))
		}
		gv = gamma.Value
	}
	if beta != nil {
		tp.checkIn("LayerNorm", beta)
		if beta.Rank() != 1 || beta.Dim(0) != d {
			panic(fmt.Sprintf("autograd.LayerNorm: beta %v for input %v", beta.Shape(), x.Shape()))
		}
		bv = beta.Value
	}
	if gamma != nil && gamma == beta {
		panic("autograd.LayerNorm: gamma and beta must be different Vars")
	}
	xs := x.Shape()
	xv := tp.contig(x.Value)
	y := tp.alloc(x.Value, xs...)
	mean := tp.alloc(x.Value, xs[:len(xs)-1]...)
	rstd := tp.alloc(x.Value, xs[:len(xs)-1]...)
	tensor.LayerNorm(y, mean, rstd, xv, gv, bv, eps)
	out, s := record(tp, y, tp.anyGrad(x, gamma, beta), layerNormKind)
	if s != nil {
		*s = layerNormSaved{x: x, gamma: gamma, beta: beta, xv: xv, mean: mean, rstd: rstd}
	}
	return out
}

// layerNormSaved is LayerNorm's backward state.
type layerNormSaved struct {
	x, gamma, beta *Var           // the inputs (gamma, beta may be nil), for their gradients
	xv             *tensor.Tensor // x's value, contiguous
	mean, rstd     *tensor.Tensor // per-row statistics of the forward (x's shape without the last axis)
}

var layerNormKind = newSavedKind[layerNormSaved]()

func (s *layerNormSaved) backward(tp *Tape, out *Var) {
	x, gamma, beta := s.x, s.gamma, s.beta
	var dx, dg, db, gv *tensor.Tensor
	// The kernel always computes dx; give it a pooled buffer even when x
	// needs no gradient.
	dx = tp.alloc(x.Value, x.Shape()...)
	if gamma != nil {
		gv = gamma.Value
		if gamma.requiresGrad {
			dg = tp.gradZeroDst(gamma)
		}
	}
	if beta != nil && beta.requiresGrad {
		db = tp.gradZeroDst(beta)
	}
	tensor.LayerNormBackward(dx, dg, db, tp.contig(out.Grad), s.xv, s.mean, s.rstd, gv)
	if dg != nil {
		tp.doneGrad(gamma)
	}
	if db != nil {
		tp.doneGrad(beta)
	}
	tp.addGrad(x, dx, true)
}

// BatchNorm normalises x with the statistics of the batch, channels last:
// for x of shape (..., C), per channel c over all R leading positions,
//
//	y = (x − mean_c)·rstd_c·gamma_c + beta_c,   rstd_c = 1/√(var_c + eps)
//
// with the biased variance var_c. It returns y and the batch mean and biased
// variance (C) for running statistics; those two tensors belong to the tape
// (valid until Release). gamma, beta are (C) or nil. CPU only.
func (tp *Tape) BatchNorm(x, gamma, beta *Var, eps float64) (y *Var, mean, variance *tensor.Tensor) {
	tp.checkIn("BatchNorm", x)
	c := x.Dim(-1)
	rows := x.Size() / c
	if rows == 0 {
		panic(fmt.Sprintf("autograd.BatchNorm: empty batch %v", x.Shape()))
	}
	for _, p := range []*Var{gamma, beta} {
		if p != nil {
			tp.checkIn("BatchNorm", p)
			if p.Rank() != 1 || p.Dim(0) != c {
				panic(fmt.Sprintf("autograd.BatchNorm: affine parameter %v for input %v", p.Shape(), x.Shape()))
			}
		}
	}
	if gamma != nil && gamma == beta {
		panic("autograd.BatchNorm: gamma and beta must be different Vars")
	}
	xv := tp.contig(x.Value)
	out := tp.alloc(x.Value, x.Shape()...)
	mean = tp.alloc(x.Value, c)
	variance = tp.alloc(x.Value, c)
	rstd := tp.alloc(x.Value, c)
	if xv.DType() == tensor.Float32 {
		var g, b []float32
		if gamma != nil {
			g = gamma.Value.Contiguous().Data32()
		}
		if beta != nil {
			b = beta.Value.Contiguous().Data32()
		}
		bnForward(out.Data32(), xv.Data32(), g, b, mean.Data32(), variance.Data32(), rstd.Data32(), rows, c, eps)
	} else {
		var g, b []float64
		if gamma != nil {
			g = gamma.Value.Contiguous().Data64()
		}
		if beta != nil {
			b = beta.Value.Contiguous().Data64()
		}
		bnForward(out.Data64(), xv.Data64(), g, b, mean.Data64(), variance.Data64(), rstd.Data64(), rows, c, eps)
	}
	y, s := record(tp, out, tp.anyGrad(x, gamma, beta), batchNormKind)
	if s != nil {
		*s = batchNormSaved{x: x, gamma: gamma, beta: beta, xv: xv, mean: mean, rstd: rstd}
	}
	return y, mean, variance
}

// batchNormSaved is BatchNorm's backward state.
type batchNormSaved struct {
	x, gamma, beta *Var           // the inputs (gamma, beta may be nil), for their gradients
	xv             *tensor.Tensor // x's value, contiguous
	mean, rstd     *tensor.Tensor // per-channel batch statistics of the forward (C)
}

var batchNormKind = newSavedKind[batchNormSaved]()

func bnForward[T float](y, x, gamma, beta, mean, variance, rstd []T, rows, c int, eps float64) {
	parallel.Cols(c, rows*c, func(lo, hi int) {
		w := hi - lo
		acc := make([]float64, 2*w)
		s, q := acc[:w], acc[w:]
		for r := 0; r < rows; r++ {
			for j, v := range x[r*c+lo : r*c+hi] {
				s[j] += float64(v)
			}
		}
		for j := range s {
			s[j] /= float64(rows)
		}
		for r := 0; r < rows; r++ {
			for j, v := range x[r*c+lo : r*c+hi] {
				d := float64(v) - s[j]
				q[j] += d * d
			}
		}
		for j := range s {
			v := q[j] / float64(rows)
			mean[lo+j] = T(s[j])
			variance[lo+j] = T(v)
			rs := 1 / math.Sqrt(v+eps)
			rstd[lo+j] = T(rs)
			q[j] = rs
		}
		for r := 0; r < rows; r++ {
			xr, yr := x[r*c+lo:r*c+hi], y[r*c+lo:r*c+hi]
			for j, v := range xr {
				z := (float64(v) - s[j]) * q[j]
				if gamma != nil {
					z *= float64(gamma[lo+j])
				}
				if beta != nil {
					z += float64(beta[lo+j])
				}
				yr[j] = T(z)
			}
		}
	})
}

// backward, with x̂ = (x − mean)·rstd, S1 = Σ_rows gy, S2 = Σ_rows gy·x̂:
//
//	dbeta = S1, dgamma = S2, dx = gamma·rstd·(gy − S1/R − x̂·S2/R).
func (s *batchNormSaved) backward(tp *Tape, out *Var) {
	x, gamma, beta := s.x, s.gamma, s.beta
	c := x.Dim(-1)
	rows := x.Size() / c
	gy := tp.contig(out.Grad)
	var dx, dg, db *tensor.Tensor
	if x.requiresGrad {
		dx = tp.alloc(x.Value, x.Shape()...)
	}
	if gamma != nil && gamma.requiresGrad {
		dg = tp.gradZeroDst(gamma)
	}
	if beta != nil && beta.requiresGrad {
		db = tp.gradZeroDst(beta)
	}
	if gy.DType() == tensor.Float32 {
		var g, dxd, dgd, dbd []float32
		if gamma != nil {
			g = gamma.Value.Contiguous().Data32()
		}
		if dx != nil {
			dxd = dx.Data32()
		}
		if dg != nil {
			dgd = dg.Data32()
		}
		if db != nil {
			dbd = db.Data32()
		}
		bnBackward(dxd, dgd, dbd, gy.Data32(), s.xv.Data32(), g, s.mean.Data32(), s.rstd.Data32(), rows, c)
	} else {
		var g, dxd, dgd, dbd []float64
		if gamma != nil {
			g = gamma.Value.Contiguous().Data64()
		}
		if dx != nil {
			dxd = dx.Data64()
		}
		if dg != nil {
			dgd = dg.Data64()
		}
		if db != nil {
			dbd = db.Data64()
		}
		bnBackward(dxd, dgd, dbd, gy.Data64(), s.xv.Data64(), g, s.mean.Data64(), s.rstd.Data64(), rows, c)
	}
	if dg != nil {
		tp.doneGrad(gamma)
	}
	if db != nil {
		tp.doneGrad(beta)
	}
	if dx != nil {
		tp.addGrad(x, dx, true)
	}
}

func bnBackward[T float](dx, dgamma, dbeta, gy, x, gamma, mean, rstd []T, rows, c int) {
	parallel.Cols(c, rows*c, func(lo, hi int) {
		w := hi - lo
		acc := make([]float64, 2*w)
		s1, s2 := acc[:w], acc[w:]
		for r := 0; r < rows; r++ {
			xr, gr := x[r*c+lo:r*c+hi], gy[r*c+lo:r*c+hi]
			for j, g := range gr {
				s1[j] += float64(g)
				s2[j] += float64(g) * (float64(xr[j]) - float64(mean[lo+j])) * float64(rstd[lo+j])
			}
		}
		for j := range s1 {
			if dbeta != nil {
				dbeta[lo+j] += T(s1[j])
			}
			if dgamma != nil {
				dgamma[lo+j] += T(s2[j])
			}
		}
		if dx == nil {
			return
		}
		inv := 1 / float64(rows)
		for r := 0; r < rows; r++ {
			xr, gr, dr := x[r*c+lo:r*c+hi], gy[r*c+lo:r*c+hi], dx[r*c+lo:r*c+hi]
			for j, g := range gr {
				rs := float64(rstd[lo+j])
				xh := (float64(xr[j]) - float64(mean[lo+j])) * rs
				k := rs
				if gamma != nil {
					k *= float64(gamma[lo+j])
				}
				dr[j] = T(k * (float64(g) - s1[j]*inv - xh*s2[j]*inv))
			}
		}
	})
}
