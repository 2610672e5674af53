package optim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"lgflow/tensor"
)

// AdamWConfig holds the hyper-parameters of AdamW. DefaultAdamWConfig
// gives the project's defaults.
type AdamWConfig struct {
	// LR is the learning rate; a Schedule usually overrides it every step
	// through SetLR. Default 2e-4 (both LG-VAE and LG-Flow runs).
	LR float64 `json:"lr"`
	// Beta1 and Beta2 are the decay rates of the first and second moment
	// estimates. Default (0.9, 0.95), the reference recipes' choice for both
	// models (docs/design.md, "Training recipes"); note that PyTorch's
	// default Beta2 is 0.999.
	Beta1 float64 `json:"beta1"`
	Beta2 float64 `json:"beta2"`
	// Eps is added to the denominator for stability. Default 1e-8 (as
	// PyTorch).
	Eps float64 `json:"eps"`
	// WeightDecay is the decoupled weight decay, applied only to Params
	// with Decay set. Default 1e-4 (the LG-VAE value; LG-Flow uses 1e-12
	// to 0.1 by dataset). PyTorch's default is 1e-2.
	WeightDecay float64 `json:"weight_decay"`
}

// DefaultAdamWConfig returns lr 2e-4, betas (0.9, 0.95), eps 1e-8 and
// weight decay 1e-4.
func DefaultAdamWConfig() AdamWConfig {
	return AdamWConfig{LR: 2e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 1e-4}
}

// Validate checks the ranges PyTorch checks: lr >= 0, 0 <= betas < 1,
// eps >= 0, weight decay >= 0, all finite.
func (c AdamWConfig) Validate() error {
	check := func(name string, v, lo, hi float64, hiOpen bool) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi || (hiOpen && v == hi) {
			r := "]"
			if hiOpen {
				r = ")"
			}
			return fmt.Errorf("optim: AdamW: %s = %v, want a value in [%v, %v%s", name, v, lo, hi, r)
		}
		return nil
	}
	inf := math.MaxFloat64
	for _, e := range []error{
		check("LR", c.LR, 0, inf, false),
		check("Beta1", c.Beta1, 0, 1, true),
		check("Beta2", c.Beta2, 0, 1, true),
		check("Eps", c.Eps, 0, inf, false),
		check("WeightDecay", c.WeightDecay, 0, inf, false),
	} {
		if e != nil {
			return e
		}
	}
	return nil
}

// AdamW is the Adam optimiser with decoupled weight decay (Loshchilov &
// Hutter), with the exact update of torch.optim.AdamW. For each parameter p
// with gradient g, at its t-th step (t counts from 1):
//
//	p ← p·(1 − lr·wd)                     (only if Param.Decay)
//	m ← β1·m + (1 − β1)·g
//	v ← β2·v + (1 − β2)·g²
//	p ← p − lr·(m/(1 − β1^t)) / (√(v/(1 − β2^t)) + eps)
//
// The state (t, m, v) is kept per parameter, in the parameter's dtype and
// on its backend; parameters with a nil Grad are skipped and their t does
// not advance. The update runs through tensor.AdamWStep, a fused kernel
// of the tensor's backend, once per run of parameters that are adjacent in
// memory with their gradients and state and share t and the weight decay
// (all of a flattened module's parameters, nn.Flatten, in one or two runs),
// otherwise once per parameter; the results are the same.
type AdamW struct {
	cfg    AdamWConfig
	params []Param
	m, v   []*tensor.Tensor
	t      []int
	order  []int // parameter indices in memory order (see memOrder)
}

// NewAdamW returns an AdamW optimiser for params (names unique and
// non-empty, values non-nil) with zero moment estimates. The Param slice is
// copied, but the tensors are shared: Step updates each Value in place
// and reads each Grad, so the caller keeps filling the same Grad tensors
// (or swaps them through Params).
func NewAdamW(params []Param, cfg AdamWConfig) (*AdamW, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkParams("AdamW", params); err != nil {
		return nil, err
	}
	o := &AdamW{cfg: cfg, params: slices.Clone(params), t: make([]int, len(params))}
	values := make([]*tensor.Tensor, len(params))
	for i, p := range params {
		values[i] = p.Value
	}
	// The moments are laid out like the parameters (flat if they are).
	o.m, o.v = mirrorZeros(values), mirrorZeros(values)
	o.order = memOrder(len(values), func(i int) *tensor.Tensor { return values[i] })
	return o, nil
}

// Config returns the current hyper-parameters (LR as last set).
func (o *AdamW) Config() AdamWConfig { return o.cfg }

// SetLR sets the learning rate used by the next Step calls.
func (o *AdamW) SetLR(lr float64) { o.cfg.LR = lr }

// LR returns the current learning rate.
func (o *AdamW) LR() float64 { return o.cfg.LR }

// Params returns the optimiser's parameters (its own slice: changing a
// Param's Grad field through it is how a caller swaps gradient tensors).
func (o *AdamW) Params() []Param { return o.params }

// Step applies one AdamW update to every parameter with a non-nil Grad.
// It panics if a gradient's shape or dtype differs from its parameter's.
func (o *AdamW) Step() {
	c := o.cfg
	ps := o.params
	for i, p := range ps {
		if p.Grad != nil {
			o.t[i]++
		}
	}
	forRuns(o.order, func(i int) bool { return ps[i].Grad == nil },
		func(i, j int) bool {
			return o.t[i] == o.t[j] && ps[i].Decay == ps[j].Decay && sameShape(ps[j].Value, ps[j].Grad) &&
				adjacent(ps[i].Value, ps[j].Value) && adjacent(ps[i].Grad, ps[j].Grad) &&
				adjacent(o.m[i], o.m[j]) && adjacent(o.v[i], o.v[j])
		},
		func(i int) int { return ps[i].Value.Size() },
		func(run []int, n int) {
			i := run[0]
			p := ps[i]
			wd := 0.0
			if p.Decay {
				wd = c.WeightDecay
			}
			if len(run) == 1 {
				tensor.AdamWStep(p.Value, p.Grad, o.m[i], o.v[i], c.LR, c.Beta1, c.Beta2, c.Eps, wd, o.t[i])
				return
			}
			tensor.AdamWStep(span(p.Value, n), span(p.Grad, n), span(o.m[i], n), span(o.v[i], n),
				c.LR, c.Beta1, c.Beta2, c.Eps, wd, o.t[i])
		})
}

// ZeroGrad sets every non-nil gradient to zero (see the function ZeroGrad).
func (o *AdamW) ZeroGrad() { ZeroGrad(o.params) }

// Steps returns the number of updates applied to the parameter called name
// (0 if there is none).
func (o *AdamW) Steps(name string) int {
	for i, p := range o.params {
		if p.Name == name {
			return o.t[i]
		}
	}
	return 0
}

// State dict key suffixes, as in PyTorch's optimizer state.
const (
	keyStep     = ".step"
	keyExpAvg   = ".exp_avg"
	keyExpAvgSq = ".exp_avg_sq"
)

// StateDict returns the optimiser state as named tensors, for each
// parameter NAME:
//
//	NAME.step        rank-0 Float64 tensor, the number of updates t
//	NAME.exp_avg     m, the parameter's shape and dtype
//	NAME.exp_avg_sq  v, the parameter's shape and dtype
//
// The moment tensors are the optimiser's own (not copies): save them before
// the next Step. Hyper-parameters are not included (save Config).
func (o *AdamW) StateDict() map[string]*tensor.Tensor {
	sd := make(map[string]*tensor.Tensor, 3*len(o.params))
	for i, p := range o.params {
		sd[p.Name+keyStep] = tensor.Scalar(tensor.Float64, float64(o.t[i]))
		sd[p.Name+keyExpAvg] = o.m[i]
		sd[p.Name+keyExpAvgSq] = o.v[i]
	}
	return sd
}

// LoadStateDict restores state saved by StateDict (possibly through a
// file), so that training resumes exactly. Every key must be present with
// the parameter's shape and dtype, the step a non-negative integer, and no
// other key may be present; otherwise nothing is changed and the error
// lists every problem. The values are copied (to the parameters' backend).
func (o *AdamW) LoadStateDict(sd map[string]*tensor.Tensor) error {
	var probs []string
	steps := make([]int, len(o.params))
	used := 0
	for i, p := range o.params {
		if st, ok := sd[p.Name+keyStep]; !ok || st == nil {
			probs = append(probs, fmt.Sprintf("missing %q", p.Name+keyStep))
		} else {
			used++
			s := math.NaN()
			if st.Size() == 1 {
				s = item(st)
			}
			if !(s >= 0 && s <= 1<<53 && s == math.Trunc(s)) {
				probs = append(probs, fmt.Sprintf("%q must hold one non-negative integer", p.Name+keyStep))
			} else {
				steps[i] = int(s)
			}
		}
		for _, k := range []string{keyExpAvg, keyExpAvgSq} {
			t, ok := sd[p.Name+k]
			if !ok || t == nil {
				probs = append(probs, fmt.Sprintf("missing %q", p.Name+k))
				continue
			}
			used++
			if !slices.Equal(t.Shape(), p.Value.Shape()) || t.DType() != p.Value.DType() {
				probs = append(probs, fmt.Sprintf("%q is %v %v, want %v %v", p.Name+k, t.DType(), t.Shape(), p.Value.DType(), p.Value.Shape()))
			}
		}
	}
	if used != len(sd) {
		for k := range sd {
			if !o.ownsKey(k) {
				probs = append(probs, fmt.Sprintf("unexpected %q", k))
			}
		}
	}
	if len(probs) > 0 {
		slices.Sort(probs)
		return fmt.Errorf("optim: AdamW.LoadStateDict: %s", strings.Join(probs, "; "))
	}
	for i, p := range o.params {
		o.t[i] = steps[i]
		copyInto(o.m[i], sd[p.Name+keyExpAvg])
		copyInto(o.v[i], sd[p.Name+keyExpAvgSq])
	}
	return nil
}

func (o *AdamW) ownsKey(k string) bool {
	for _, p := range o.params {
		if k == p.Name+keyStep || k == p.Name+keyExpAvg || k == p.Name+keyExpAvgSq {
			return true
		}
	}
	return false
}

// copyInto copies src into dst (same shape and dtype), moving it to dst's
// backend first if needed.
func copyInto(dst, src *tensor.Tensor) {
	if src.Backend() != dst.Backend() {
		src = src.ToBackend(dst.Backend())
	}
	tensor.Copy(dst, src)
}

// item returns the single element of t, wherever t lives.
func item(t *tensor.Tensor) float64 {
	if t.Backend() != tensor.CPU {
		t = t.ToBackend(tensor.CPU)
	}
	return t.Item()
}
