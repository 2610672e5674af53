package optim

import (
	"fmt"
	"math"
)

// Schedule gives the learning rate to use at an optimiser step. Steps are
// counted from 1 (the first call to Step is step 1), as in the reference
// training loops.
type Schedule interface {
	LR(step int) float64
}

// Constant is a schedule that always returns the same learning rate. The
// reference LG-Flow recipe uses Constant(2e-4) (docs/design.md, "Training
// recipes").
type Constant float64

// LR returns float64(c) for every step.
func (c Constant) LR(step int) float64 { return float64(c) }

// WarmupCosine is the nanoGPT schedule of the LG-VAE recipes
// (docs/design.md, "Training recipes"):
//
//	lr(s) = Peak*s/Warmup                                   for s < Warmup
//	lr(s) = Min + (Peak-Min) * (1 + cos(pi*r))/2,
//	        r = (s-Warmup)/(DecaySteps-Warmup)              for Warmup <= s <= DecaySteps
//	lr(s) = Min                                             for s > DecaySteps
//
// so the rate rises linearly to Peak at s = Warmup, follows half a cosine
// down to Min at s = DecaySteps and stays there. With Warmup = 0 there is
// no warmup; with DecaySteps <= Warmup the rate drops to Min after warmup.
type WarmupCosine struct {
	// Peak is the rate reached at the end of warmup (lr).
	Peak float64
	// Min is the final rate (min_lr).
	Min float64
	// Warmup is the number of linear warmup steps (warmup_iters).
	Warmup int
	// DecaySteps is the step at which the cosine reaches Min
	// (lr_decay_iters; the training length in the reference configs).
	DecaySteps int
}

// LR returns the learning rate at step (counted from 1).
func (w WarmupCosine) LR(step int) float64 {
	if step < w.Warmup {
		return w.Peak * float64(step) / float64(w.Warmup)
	}
	if step >= w.DecaySteps {
		return w.Min
	}
	r := float64(step-w.Warmup) / float64(w.DecaySteps-w.Warmup)
	return w.Min + 0.5*(1+math.Cos(math.Pi*r))*(w.Peak-w.Min)
}

// Validate reports a configuration that cannot be meant: negative or
// non-finite rates, Min > Peak, or negative step counts.
func (w WarmupCosine) Validate() error {
	switch {
	case !(w.Peak >= 0) || math.IsInf(w.Peak, 0):
		return fmt.Errorf("optim: WarmupCosine: Peak = %v, want a finite rate >= 0", w.Peak)
	case !(w.Min >= 0) || w.Min > w.Peak:
		return fmt.Errorf("optim: WarmupCosine: Min = %v, want 0 <= Min <= Peak (%v)", w.Min, w.Peak)
	case w.Warmup < 0 || w.DecaySteps < 0:
		return fmt.Errorf("optim: WarmupCosine: Warmup = %d and DecaySteps = %d, want both >= 0", w.Warmup, w.DecaySteps)
	}
	return nil
}

// StableDecay is the decay phase of a warmup-stable-decay recipe: the rate
// stays at Peak and then falls linearly over the last Decay steps of a run
// of Steps steps,
//
//	lr(s) = Peak                              for s <= Steps-Decay
//	lr(s) = Peak * (Steps-s+1)/Decay          for Steps-Decay < s <= Steps
//	lr(s) = 0                                 for s > Steps
//
// so the last step still moves the weights (by Peak/Decay). A run trained
// at a constant rate can be resumed under it to anneal, while its
// constant-rate state stays available to continue from. Decay = 0 is the
// constant schedule.
type StableDecay struct {
	// Peak is the constant rate before the decay.
	Peak float64
	// Steps is the last step of the run.
	Steps int
	// Decay is the number of final steps over which the rate falls.
	Decay int
}

// LR returns the learning rate at step (counted from 1).
func (d StableDecay) LR(step int) float64 {
	switch {
	case d.Decay <= 0 || step <= d.Steps-d.Decay:
		return d.Peak
	case step > d.Steps:
		return 0
	}
	return d.Peak * float64(d.Steps-step+1) / float64(d.Decay)
}

// Validate reports a configuration that cannot be meant: a negative or
// non-finite rate, negative step counts, or a decay longer than the run.
func (d StableDecay) Validate() error {
	switch {
	case !(d.Peak >= 0) || math.IsInf(d.Peak, 0):
		return fmt.Errorf("optim: StableDecay: Peak = %v, want a finite rate >= 0", d.Peak)
	case d.Steps < 0 || d.Decay < 0:
		return fmt.Errorf("optim: StableDecay: Steps = %d and Decay = %d, want both >= 0", d.Steps, d.Decay)
	case d.Decay > d.Steps:
		return fmt.Errorf("optim: StableDecay: Decay = %d is longer than the run (%d steps)", d.Decay, d.Steps)
	}
	return nil
}
