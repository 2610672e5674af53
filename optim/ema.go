package optim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"lgflow/tensor"
)

// EMAConfig holds the parameters of the EMA warm-up schedule of
// ema-pytorch (lucidrains, v0.7.7), which LG-Flow uses (docs/design.md,
// "Training recipes").
type EMAConfig struct {
	// Beta caps the decay. Default 0.9999.
	Beta float64 `json:"beta"`
	// UpdateAfterStep: until this step (inclusive) the EMA weights are a
	// plain copy of the online weights. Default 1000 (ema-pytorch's
	// default is 100; LG-Flow sets 1000).
	UpdateAfterStep int `json:"update_after_step"`
	// UpdateEvery: the EMA is updated at steps 1, 1+UpdateEvery,
	// 1+2·UpdateEvery, ... Default 1, every step as in LG-Flow
	// (ema-pytorch's default is 10).
	UpdateEvery int `json:"update_every"`
	// InvGamma and Power shape the warm-up 1 − (1 + e/InvGamma)^(−Power).
	// Defaults 1 and 2/3 (decay 0.999 after about 31.6K steps past the
	// warm-up start, 0.9999 after about 1M).
	InvGamma float64 `json:"inv_gamma"`
	Power    float64 `json:"power"`
	// MinValue is the smallest decay used once warm-up has started.
	// Default 0.
	MinValue float64 `json:"min_value"`
}

// DefaultEMAConfig returns the LG-Flow settings: beta 0.9999, update after
// step 1000, every step, inv_gamma 1, power 2/3, min value 0.
func DefaultEMAConfig() EMAConfig {
	return EMAConfig{Beta: 0.9999, UpdateAfterStep: 1000, UpdateEvery: 1, InvGamma: 1, Power: 2.0 / 3, MinValue: 0}
}

// Validate checks 0 <= MinValue <= Beta <= 1, UpdateAfterStep >= 0,
// UpdateEvery >= 1, InvGamma > 0 and Power > 0, all finite.
func (c EMAConfig) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("optim: EMA: %s = %v, want %s", field, v, want)
	}
	switch {
	case !(c.Beta >= 0 && c.Beta <= 1):
		return bad("Beta", c.Beta, "a value in [0, 1]")
	case !(c.MinValue >= 0 && c.MinValue <= c.Beta):
		return bad("MinValue", c.MinValue, "a value in [0, Beta]")
	case c.UpdateAfterStep < 0:
		return bad("UpdateAfterStep", c.UpdateAfterStep, ">= 0")
	case c.UpdateEvery < 1:
		return bad("UpdateEvery", c.UpdateEvery, ">= 1")
	case !(c.InvGamma > 0) || math.IsInf(c.InvGamma, 0):
		return bad("InvGamma", c.InvGamma, "a finite value > 0")
	case !(c.Power > 0) || math.IsInf(c.Power, 0):
		return bad("Power", c.Power, "a finite value > 0")
	}
	return nil
}

// Decay returns the decay used by Update(step):
//
//	e = step − UpdateAfterStep − 1
//	decay = 0                                                if e <= 0
//	decay = clamp(1 − (1 + e/InvGamma)^(−Power), MinValue, Beta)   otherwise
//
// With the defaults, decay(1002) = 1 − 2^(−2/3) ≈ 0.370 and the cap 0.9999
// is reached at step 1 001 000. This is get_current_decay of ema-pytorch
// evaluated after its step counter has been incremented by the step-th
// call of update().
func (c EMAConfig) Decay(step int) float64 {
	e := float64(step - c.UpdateAfterStep - 1)
	if e <= 0 {
		return 0
	}
	d := 1 - math.Pow(1+e/c.InvGamma, -c.Power)
	return min(max(d, c.MinValue), c.Beta)
}

// EMA keeps an exponential moving average ("shadow") of a set of
// parameters: after the warm-up copy phase, each update sets
//
//	ema ← ema + (1 − decay)·(online − ema)
//
// with decay from EMAConfig.Decay. The shadow tensors have the online
// parameters' shapes, dtypes and backends.
type EMA struct {
	cfg    EMAConfig
	params []Param
	shadow []*tensor.Tensor
	order  []int // parameter indices in memory order (see memOrder)
}

// NewEMA returns an EMA of params (names unique and non-empty, values
// non-nil), whose shadow weights start as copies of the current values.
// The Param slice is copied; the Value tensors are shared and read at
// every Update (Grad and Decay are ignored).
func NewEMA(params []Param, cfg EMAConfig) (*EMA, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkParams("EMA", params); err != nil {
		return nil, err
	}
	e := &EMA{cfg: cfg, params: slices.Clone(params)}
	values := make([]*tensor.Tensor, len(params))
	for i, p := range params {
		values[i] = p.Value
	}
	// The shadow weights are laid out like the parameters (flat if they
	// are), so that an update is one pass per run of adjacent parameters.
	e.shadow = mirrorZeros(values)
	e.order = memOrder(len(values), func(i int) *tensor.Tensor { return values[i] })
	e.runs(func(s, x *tensor.Tensor) { tensor.Copy(s, x) })
	return e, nil
}

// runs calls fn(shadow, online) for each run of parameters adjacent in
// memory together with their shadows (one pair per parameter if none are).
func (e *EMA) runs(fn func(s, x *tensor.Tensor)) {
	ps := e.params
	forRuns(e.order, nil,
		func(i, j int) bool {
			return adjacent(ps[i].Value, ps[j].Value) && adjacent(e.shadow[i], e.shadow[j]) && sameShape(ps[j].Value, e.shadow[j])
		},
		func(i int) int { return ps[i].Value.Size() },
		func(run []int, n int) {
			i := run[0]
			if len(run) == 1 {
				fn(e.shadow[i], ps[i].Value)
				return
			}
			fn(span(e.shadow[i], n), span(ps[i].Value, n))
		})
}

// Config returns the EMA's configuration.
func (e *EMA) Config() EMAConfig { return e.cfg }

// Update folds the current online weights into the EMA. step is the number
// of optimiser steps taken so far, counting the one just taken (1 after the
// first Step), so calling Update(step) after every optimiser step
// reproduces ema-pytorch's update() called after every step:
//
//   - steps that are not 1 + k·UpdateEvery do nothing;
//   - while step <= UpdateAfterStep the EMA is a plain copy;
//   - afterwards it moves towards the online weights with Decay(step).
//
// It returns the decay used (0 for a copy, NaN when nothing was done).
func (e *EMA) Update(step int) float64 {
	if step < 1 || (step-1)%e.cfg.UpdateEvery != 0 {
		return math.NaN()
	}
	d := 0.0
	if step > e.cfg.UpdateAfterStep {
		d = e.cfg.Decay(step)
	}
	e.runs(func(s, x *tensor.Tensor) {
		if d == 0 {
			tensor.Copy(s, x)
			return
		}
		lerp(s, x, 1-d)
	})
	return d
}

// Weights returns the EMA weights by parameter name. The tensors are the
// EMA's own (not copies): they change at the next Update. Saving them with
// package safetensors gives a file loadable as the model itself.
func (e *EMA) Weights() map[string]*tensor.Tensor {
	w := make(map[string]*tensor.Tensor, len(e.params))
	for i, p := range e.params {
		w[p.Name] = e.shadow[i]
	}
	return w
}

// LoadWeights restores EMA weights saved from Weights. Every parameter must
// be present with its shape and dtype and no other name may be; otherwise
// nothing changes and the error lists every problem. Values are copied.
func (e *EMA) LoadWeights(w map[string]*tensor.Tensor) error {
	var probs []string
	names := make(map[string]bool, len(e.params))
	for _, p := range e.params {
		names[p.Name] = true
		t, ok := w[p.Name]
		switch {
		case !ok || t == nil:
			probs = append(probs, fmt.Sprintf("missing %q", p.Name))
		case !slices.Equal(t.Shape(), p.Value.Shape()) || t.DType() != p.Value.DType():
			probs = append(probs, fmt.Sprintf("%q is %v %v, want %v %v", p.Name, t.DType(), t.Shape(), p.Value.DType(), p.Value.Shape()))
		}
	}
	for k := range w {
		if !names[k] {
			probs = append(probs, fmt.Sprintf("unexpected %q", k))
		}
	}
	if len(probs) > 0 {
		slices.Sort(probs)
		return fmt.Errorf("optim: EMA.LoadWeights: %s", strings.Join(probs, "; "))
	}
	for i, p := range e.params {
		copyInto(e.shadow[i], w[p.Name])
	}
	return nil
}

// CopyTo copies the EMA weights into the Values of dst, matched by name
// (for evaluating with the EMA weights in a second model). Every name of
// dst must be one of the EMA's with the same shape and dtype; otherwise
// nothing is copied and an error lists the problems.
func (e *EMA) CopyTo(dst []Param) error {
	idx := make(map[string]int, len(e.params))
	for i, p := range e.params {
		idx[p.Name] = i
	}
	var probs []string
	for _, p := range dst {
		i, ok := idx[p.Name]
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("%q is not in the EMA", p.Name))
		case p.Value == nil:
			probs = append(probs, fmt.Sprintf("%q has a nil Value", p.Name))
		case !slices.Equal(p.Value.Shape(), e.shadow[i].Shape()) || p.Value.DType() != e.shadow[i].DType():
			probs = append(probs, fmt.Sprintf("%q is %v %v, the EMA's is %v %v", p.Name, p.Value.DType(), p.Value.Shape(), e.shadow[i].DType(), e.shadow[i].Shape()))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("optim: EMA.CopyTo: %s", strings.Join(probs, "; "))
	}
	for _, p := range dst {
		copyInto(p.Value, e.shadow[idx[p.Name]])
	}
	return nil
}

// lerp sets s ← s + w·(x − s) elementwise (torch.lerp_), in one pass over
// contiguous CPU tensors, or with tensor.Lerp (one kernel) otherwise.
func lerp(s, x *tensor.Tensor, w float64) {
	if s.Backend() != tensor.CPU || x.Backend() != tensor.CPU || !s.IsContiguous() || !x.IsContiguous() {
		tensor.Lerp(s, s, x, w)
		return
	}
	if !slices.Equal(s.Shape(), x.Shape()) || s.DType() != x.DType() {
		panic(fmt.Sprintf("optim: EMA: shadow is %v %v but parameter is %v %v", s.DType(), s.Shape(), x.DType(), x.Shape()))
	}
	if s.DType() == tensor.Float32 {
		sd, xd, w32 := s.Data32(), x.Data32(), float32(w)
		parallelFor(len(sd), func(lo, hi int) {
			a, b := sd[lo:hi], xd[lo:hi]
			for i := range a {
				a[i] += w32 * (b[i] - a[i])
			}
		})
		return
	}
	sd, xd := s.Data64(), x.Data64()
	parallelFor(len(sd), func(lo, hi int) {
		a, b := sd[lo:hi], xd[lo:hi]
		for i := range a {
			a[i] += w * (b[i] - a[i])
		}
	})
}
