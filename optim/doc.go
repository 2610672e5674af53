// Package optim holds what trains lgflow models besides autograd: the AdamW
// optimiser with PyTorch's exact semantics, learning-rate schedules,
// gradient-norm clipping, a check for non-finite gradients, and an
// exponential moving average (EMA) of the weights with the warm-up rule of
// ema-pytorch.
//
// The package works on a slice of [Param], plain (name, value, gradient,
// weight-decay flag) records, so it depends only on package tensor; the
// training code converts autograd or nn parameters into Params once and
// keeps using the same tensors. Every tensor of a Param is updated in
// place. Optimiser and EMA state can be exported as named tensors
// (StateDict, Weights) and imported back, so that a run saved with package
// safetensors resumes exactly.
//
// A training step looks like
//
//	lr := sched.LR(step)           // step counts from 1
//	// ... forward, backward: fills every p.Grad ...
//	if err := optim.CheckFinite(params); err != nil {
//		return err                 // names the parameter with a NaN or Inf gradient
//	}
//	opt.SetLR(lr)
//	opt.Step()
//	ema.Update(step)
package optim
