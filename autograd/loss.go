package autograd

import (
	"fmt"

	"lgflow/tensor"
)

// SoftmaxCrossEntropy returns the weighted mean cross-entropy of integer
// targets under softmax(logits), over the last axis:
//
//	L = Σ_i w_i·(−log softmax(logits_i)[t_i]) / Σ_i w_i
//
// logits is (..., C), flattened to R rows; targets has R entries in [0, C)
// (rows with w_i = 0 may hold any target); weight has R entries or is nil
// (all 1). If Σ w = 0 the loss is 0. One fused kernel forward and backward;
// the softmax probabilities are kept for the backward pass.
func (tp *Tape) SoftmaxCrossEntropy(logits *Var, targets []int32, weight []float32) *Var {
	tp.checkIn("SoftmaxCrossEntropy", logits)
	c := logits.Dim(-1)
	rows := logits.Size() / c
	if len(targets) != rows {
		panic(fmt.Sprintf("autograd.SoftmaxCrossEntropy: %d targets for logits %v (%d rows)", len(targets), logits.Shape(), rows))
	}
	if weight != nil && len(weight) != rows {
		panic(fmt.Sprintf("autograd.SoftmaxCrossEntropy: %d weights for %d rows", len(weight), rows))
	}
	wsum := float64(rows)
	if weight != nil {
		wsum = 0
		for _, w := range weight {
			wsum += float64(w)
		}
	}
	x := tp.contig(logits.Value).Reshape(rows, c)
	prob := tp.alloc(logits.Value, rows, c)
	total := tensor.SoftmaxCrossEntropy(prob, x, targets, weight)
	scale := 0.0
	if wsum != 0 {
		scale = 1 / wsum
	}
	y := tp.alloc(logits.Value)
	y.Fill(total * scale)
	out, s := record(tp, y, tp.anyGrad(logits, nil, nil), crossEntropyKind)
	if s != nil {
		*s = crossEntropySaved{logits: logits, probs: prob, targets: targets, weight: weight, scale: scale}
	}
	return out
}

// crossEntropySaved is SoftmaxCrossEntropy's backward state.
type crossEntropySaved struct {
	logits  *Var
	probs   *tensor.Tensor // softmax(logits) as (rows, C)
	targets []int32
	weight  []float32 // per-row weights, or nil (all 1)
	scale   float64   // 1/Σ weight (0 if Σ weight = 0): the loss is scale·Σ_rows
}

var crossEntropyKind = newSavedKind[crossEntropySaved]()

func (s *crossEntropySaved) backward(tp *Tape, out *Var) {
	logits := s.logits
	if !logits.requiresGrad {
		return
	}
	c := logits.Dim(-1)
	rows := logits.Size() / c
	g := tp.alloc(logits.Value, rows, c)
	tensor.SoftmaxCrossEntropyBackward(g, s.probs, s.targets, s.weight, s.scale*out.Grad.Item())
	tp.addGrad(logits, g.Reshape(logits.Shape()...), true)
}

// MSE returns the weighted mean squared error Σ w·(pred − target)² / Σ w,
// where weight (a constant, or nil for the plain mean) broadcasts to pred's
// shape and Σ w counts each weight once per position it covers. target may
// be a constant (NewConst) or a Var.
func (tp *Tape) MSE(pred, target *Var, weight *tensor.Tensor) *Var {
	se := tp.SquaredError(pred, target, weight)
	denom := float64(pred.Size())
	if weight != nil {
		denom = tensor.SumAll(weight) * float64(pred.Size()) / float64(weight.Size())
	}
	if denom == 0 {
		return tp.MulScalar(se, 0)
	}
	return tp.MulScalar(se, 1/denom)
}

// SquaredError returns Σ w·(pred − target)² (no normalisation); weight is a
// constant broadcasting to pred's shape, or nil (all 1).
func (tp *Tape) SquaredError(pred, target *Var, weight *tensor.Tensor) *Var {
	if !sameShape(pred.Shape(), target.Shape()) {
		panic(fmt.Sprintf("autograd.SquaredError: pred %v and target %v differ", pred.Shape(), target.Shape()))
	}
	sq := tp.Square(tp.Sub(pred, target))
	if weight != nil {
		sq = tp.Mul(sq, NewConst(weight))
	}
	return tp.SumAll(sq)
}

// GaussianKL returns the KL divergence of N(μ, diag e^{logvar}) from N(0, I),
// summed over the last axis and averaged over the rows:
//
//	mean over rows of ½·Σ (μ² + e^{logvar} − 1 − logvar).
func (tp *Tape) GaussianKL(mu, logvar *Var) *Var {
	if !sameShape(mu.Shape(), logvar.Shape()) {
		panic(fmt.Sprintf("autograd.GaussianKL: mu %v and logvar %v differ", mu.Shape(), logvar.Shape()))
	}
	t := tp.Sub(tp.Add(tp.Square(mu), tp.Exp(logvar)), logvar)
	rows := mu.Size() / max(mu.Dim(-1), 1)
	s := tp.SumAll(t)
	// ½·(Σ(...) − rows·d) / rows
	return tp.MulScalar(tp.AddScalar(s, -float64(mu.Size())), 0.5/float64(max(rows, 1)))
}
