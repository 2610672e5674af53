package tensor

import (
	"fmt"
	"slices"
)

// wantShape panics unless t has dtype dt and the given shape. It does not
// let shape escape, so callers may pass a slice literal without allocating.
func wantShape(name, what string, t *Tensor, dt DType, shape []int) {
	if t.dtype != dt {
		fail(ErrDType, name, "%s is %v, want %v", what, t.dtype, dt)
	}
	if !sameShape(t.shape, shape) {
		fail(ErrShape, name, "%s shape %v, want %v", what, t.shape, slices.Clone(shape))
	}
}

// LayerNorm normalises x over its last axis (size d):
//
//	mean = Σ x / d,  rstd = 1/√(Σ (x-mean)²/d + eps)
//	y = (x - mean)·rstd·gamma + beta
//
// gamma and beta have shape (d) and may be nil (1 and 0). mean and rstd have
// x's shape without the last axis and receive the statistics for
// LayerNormBackward; they may be nil when not needed. y has x's shape; nil
// allocates. y is returned.
func LayerNorm(y, mean, rstd, x, gamma, beta *Tensor, eps float64) *Tensor {
	const name = "LayerNorm"
	be := pickBackend(name, y, x, mean, rstd, gamma, beta)
	if len(x.shape) == 0 {
		fail(ErrShape, name, "x is a scalar")
	}
	d := x.shape[len(x.shape)-1]
	rows := x.shape[:len(x.shape)-1]
	if y == nil {
		y = EmptyOn(be, x.dtype, x.shape...)
	} else {
		wantShape(name, "y", y, x.dtype, x.shape)
	}
	for _, s := range [...]struct {
		t    *Tensor
		what string
	}{{mean, "mean"}, {rstd, "rstd"}} {
		if s.t != nil {
			wantShape(name, s.what, s.t, x.dtype, rows)
		}
	}
	for _, p := range [...]*Tensor{gamma, beta} {
		if p != nil && (p.dtype != x.dtype || len(p.shape) != 1 || p.shape[0] != d) {
			fail(ErrShape, name, "gamma/beta shape %v (%v) for x shape %v", p.shape, p.dtype, x.shape)
		}
	}
	if x.Size() > 0 {
		be.LayerNorm(y, mean, rstd, x, gamma, beta, eps)
	}
	return y
}

// LayerNormBackward computes the gradients of LayerNorm given the upstream
// gradient gy and the saved mean and rstd:
//
//	xhat = (x-mean)·rstd,  g = gy·gamma
//	dx = rstd·(g - mean(g) - xhat·mean(g·xhat))   (means over the last axis)
//	dgamma += Σ_rows gy·xhat,  dbeta += Σ_rows gy
//
// dx (nil allocates) is overwritten and returned; dgamma and dbeta
// accumulate and may be nil; gamma may be nil (all ones).
func LayerNormBackward(dx, dgamma, dbeta, gy, x, mean, rstd, gamma *Tensor) *Tensor {
	const name = "LayerNormBackward"
	be := pickBackend(name, dx, dgamma, dbeta, gy, x, mean, rstd, gamma)
	if len(x.shape) == 0 {
		fail(ErrShape, name, "x is a scalar")
	}
	d := x.shape[len(x.shape)-1]
	rows := x.shape[:len(x.shape)-1]
	wantShape(name, "gy", gy, x.dtype, x.shape)
	wantShape(name, "mean", mean, x.dtype, rows)
	wantShape(name, "rstd", rstd, x.dtype, rows)
	if dx == nil {
		dx = EmptyOn(be, x.dtype, x.shape...)
	} else {
		wantShape(name, "dx", dx, x.dtype, x.shape)
	}
	for _, p := range [...]*Tensor{dgamma, dbeta, gamma} {
		if p != nil {
			wantShape(name, "gamma/dgamma/dbeta", p, x.dtype, []int{d})
		}
	}
	if x.Size() > 0 {
		be.LayerNormBackward(dx, dgamma, dbeta, gy, x, mean, rstd, gamma)
	}
	return dx
}

func checkCE(name string, p, logits *Tensor, targets []int32, weight []float32) {
	if len(logits.shape) == 0 {
		fail(ErrShape, name, "logits is a scalar")
	}
	c := logits.shape[len(logits.shape)-1]
	rows := logits.Size() / max(c, 1)
	if c == 0 {
		rows = 0
		for _, d := range logits.shape[:len(logits.shape)-1] {
			rows *= d
		}
	}
	if p != nil {
		wantShape(name, "prob", p, logits.dtype, logits.shape)
	}
	if len(targets) != rows {
		fail(ErrShape, name, "%d targets for logits shape %v (%d rows)", len(targets), logits.shape, rows)
	}
	if weight != nil && len(weight) != rows {
		fail(ErrShape, name, "%d weights for logits shape %v (%d rows)", len(weight), logits.shape, rows)
	}
	for i, t := range targets {
		if (weight == nil || weight[i] != 0) && (t < 0 || int(t) >= c) {
			fail(ErrIndex, name, "target %d of row %d out of range [0, %d)", t, i, c)
		}
	}
}

// SoftmaxCrossEntropy computes the cross entropy of integer targets under
// the softmax of logits over the last axis (C classes):
//
//	loss = Σ_i w_i·(-log softmax(logits_i)[targets[i]])
//
// with w_i = weight[i] (nil means all 1; rows with weight 0 are skipped and
// their target is not checked). The row probabilities are written into prob
// (logits' shape; required by SoftmaxCrossEntropyBackward; nil when not
// needed). The sum is accumulated in float64 and returned, not averaged.
func SoftmaxCrossEntropy(prob, logits *Tensor, targets []int32, weight []float32) float64 {
	const name = "SoftmaxCrossEntropy"
	be := pickBackend(name, prob, logits)
	checkCE(name, prob, logits, targets, weight)
	if prob == nil {
		prob = NewOn(be, logits.dtype, logits.shape...)
	}
	if logits.Size() == 0 {
		return 0
	}
	return be.SoftmaxCrossEntropy(prob, logits, targets, weight)
}

// SoftmaxCrossEntropyBackward sets dlogits = scale·w_i·(prob_i - onehot(t_i))
// row by row (0 for rows with weight 0): the gradient of scale times the
// loss of SoftmaxCrossEntropy. dlogits (nil allocates) is returned.
func SoftmaxCrossEntropyBackward(dlogits, prob *Tensor, targets []int32, weight []float32, scale float64) *Tensor {
	const name = "SoftmaxCrossEntropyBackward"
	be := pickBackend(name, dlogits, prob)
	checkCE(name, dlogits, prob, targets, weight)
	if dlogits == nil {
		dlogits = NewOn(be, prob.dtype, prob.shape...)
	}
	if prob.Size() > 0 {
		be.SoftmaxCrossEntropyBackward(dlogits, prob, targets, weight, scale)
	}
	return dlogits
}

func checkAttention(name string, q, k, v *Tensor) (b, h, n, dh int) {
	if len(q.shape) != 4 {
		fail(ErrShape, name, "q shape %v, want (B, H, N, Dh)", q.shape)
	}
	if !sameShape(q.shape, k.shape) || !sameShape(q.shape, v.shape) {
		fail(ErrShape, name, "q, k, v shapes %v, %v, %v differ", q.shape, k.shape, v.shape)
	}
	sameDType(name, q.dtype, k, v)
	return q.shape[0], q.shape[1], q.shape[2], q.shape[3]
}

// Attention computes scaled dot-product attention for every batch and head:
//
//	S = scale·q·kᵀ,  S[i, j] = -Inf where keyMask[b, j] == 0
//	probs = softmax(S) over j,  out = probs·v
//
// q, k, v and out are (B, H, N, Dh); keyMask is (B, N) with 1 for real
// tokens and 0 for padding (nil: all real); probs (B, H, N, N) receives the
// attention weights for AttentionBackward (nil when not needed). A query
// row whose keys are all masked gets probability 0 everywhere and output 0.
// out (nil allocates) is returned; scale is normally 1/√Dh.
func Attention(out, probs, q, k, v, keyMask *Tensor, scale float64) *Tensor {
	const name = "Attention"
	be := pickBackend(name, out, probs, q, k, v, keyMask)
	b, h, n, _ := checkAttention(name, q, k, v)
	if out == nil {
		out = NewOn(be, q.dtype, q.shape...)
	} else {
		wantShape(name, "out", out, q.dtype, q.shape)
	}
	if probs == nil {
		probs = NewOn(be, q.dtype, b, h, n, n)
	} else {
		wantShape(name, "probs", probs, q.dtype, []int{b, h, n, n})
	}
	if keyMask != nil {
		wantShape(name, "keyMask", keyMask, q.dtype, []int{b, n})
	}
	if q.Size() > 0 || probs.Size() > 0 {
		be.Attention(out, probs, q, k, v, keyMask, scale)
	}
	return out
}

// AttentionBackward computes the gradients of Attention from the upstream
// gradient gout and the saved probs P:
//
//	dv = Pᵀ·gout,  dP = gout·vᵀ,  dS = P∘(dP - rowsum(dP∘P))
//	dq = scale·dS·k,  dk = scale·dSᵀ·q
//
// dq, dk and dv are required and overwritten. Masked keys have P = 0 and so
// receive no gradient.
func AttentionBackward(dq, dk, dv, gout, q, k, v, probs *Tensor, scale float64) {
	const name = "AttentionBackward"
	be := pickBackend(name, dq, dk, dv, gout, q, k, v, probs)
	b, h, n, _ := checkAttention(name, q, k, v)
	for _, s := range [...]struct {
		t    *Tensor
		what string
	}{{dq, "dq"}, {dk, "dk"}, {dv, "dv"}, {gout, "gout"}} {
		if s.t == nil {
			fail(ErrShape, name, "%s is nil", s.what)
		}
		wantShape(name, s.what, s.t, q.dtype, q.shape)
	}
	wantShape(name, "probs", probs, q.dtype, []int{b, h, n, n})
	if q.Size() > 0 {
		be.AttentionBackward(dq, dk, dv, gout, q, k, v, probs, scale)
	}
}

// AdamWStep applies one AdamW update (decoupled weight decay, as in
// PyTorch's torch.optim.AdamW) in place, with step >= 1 the 1-based step
// count:
//
//	m = β1·m + (1-β1)·g,  v = β2·v + (1-β2)·g²
//	param = param·(1 - lr·wd) - lr/(1-β1^step) · m / (√v/√(1-β2^step) + eps)
//
// param, grad, m and v have the same shape and dtype; m and v are updated.
func AdamWStep(param, grad, m, v *Tensor, lr, beta1, beta2, eps, weightDecay float64, step int) {
	const name = "AdamWStep"
	be := pickBackend(name, param, grad, m, v)
	for _, t := range [...]*Tensor{grad, m, v} {
		wantShape(name, "grad/m/v", t, param.dtype, param.shape)
	}
	if step < 1 {
		panic(fmt.Errorf("tensor.AdamWStep: step %d, want >= 1: %w", step, ErrIndex))
	}
	if param.Size() > 0 {
		be.AdamWStep(param, grad, m, v, lr, beta1, beta2, eps, weightDecay, step)
	}
}
