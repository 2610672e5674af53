package flow

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"lgflow/dit"
	"lgflow/flow/cond"
	"lgflow/tensor"
)

// condBatch returns the denoiser's condition of the training graphs idx of
// c, each dropped (the null condition) with probability drop, drawn from r
// in order (one uniform draw per graph).
func condBatch(c *cond.Set, idx []int, drop float64, r *tensor.RNG) *dit.Cond {
	B := len(idx)
	dc := &dit.Cond{}
	if c.Labels != nil {
		dc.Class = make([]int, B)
	}
	if c.Props != nil {
		dc.Vec = make([]float64, 0, B*len(c.Schema.Properties))
		dc.Drop = make([]bool, B)
	}
	for b, i := range idx {
		dropped := r.Uniform() < drop
		if dc.Class != nil {
			dc.Class[b] = c.Labels[i]
			if dropped {
				dc.Class[b] = -1
			}
		}
		if dc.Vec != nil {
			dc.Vec = c.Schema.Standardize(dc.Vec, c.Props[i])
			dc.Drop[b] = dropped
		}
	}
	return dc
}

// ForCondition returns c configured for conditions of schema s: the
// denoiser's Classes and CondDim set to s's numbers of labels and
// properties (nil s: an unconditional denoiser).
func (c Config) ForCondition(s *cond.Schema) Config {
	c.DiT.Classes, c.DiT.CondDim = 0, 0
	if s != nil {
		c.DiT.Classes, c.DiT.CondDim = len(s.Labels), len(s.Properties)
	}
	return c
}

// checkSchema reports whether schema s fits the denoiser configuration d:
// none for an unconditional one, else as many labels as classes and
// properties as vector values.
func checkSchema(s *cond.Schema, d dit.Config) error {
	if s == nil {
		if d.Conditional() {
			return fmt.Errorf("a denoiser conditioned on %d classes and %d values without a condition schema", d.Classes, d.CondDim)
		}
		return nil
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if len(s.Labels) != d.Classes || len(s.Properties) != d.CondDim {
		return fmt.Errorf("a condition of %d labels and %d properties for a denoiser of %d classes and %d values (Config.ForCondition sets them)",
			len(s.Labels), len(s.Properties), d.Classes, d.CondDim)
	}
	return nil
}

// guidance is the classifier-free guidance of one batch (sample): each
// graph's condition for the denoiser (nil: unconditional sampling, one
// evaluation of the null condition per step) and the guidance scale w.
// both is cond followed by the null condition of every graph, for the two
// evaluations of a step batched in one pass (w not 0 or 1).
type guidance struct {
	cond, both *dit.Cond
	w          float64
}

// condPlan holds the denoiser's condition of every graph of a Sample call
// (nil: none).
type condPlan struct {
	class []int
	vec   []float64
	drop  []bool
	dim   int
	w     float64
}

// planConditions checks the conditions and guidance scale of a Sample of
// n graphs from m and encodes them for the denoiser: no condition samples
// unconditionally (the null condition of a conditional model, whatever
// w); one condition applies to every graph, or there is one per graph.
func planConditions(m *Model, conds []cond.Value, n int, w float64) (*condPlan, error) {
	if err := checkSchema(m.Cond, m.Net.Cfg); err != nil {
		return nil, fmt.Errorf("flow: the model's condition: %w", err)
	}
	switch {
	case !(w >= 0) || math.IsInf(w, 0):
		return nil, fmt.Errorf("flow: guidance scale must be finite and >= 0, got %g", w)
	case m.Cond == nil && len(conds) > 0:
		return nil, errors.New("flow: the model is unconditional: it takes no condition (WithCondition)")
	case m.Cond == nil && w != 1:
		return nil, fmt.Errorf("flow: the model is unconditional: a guidance scale (%g) needs a model trained with conditions", w)
	case len(conds) == 0:
		return nil, nil
	case len(conds) != 1 && len(conds) != n:
		return nil, fmt.Errorf("flow: %d conditions for %d graphs (want one for all, or one per graph)", len(conds), n)
	}
	s := m.Cond
	p := &condPlan{dim: len(s.Properties), w: w}
	for i, c := range conds {
		if err := s.Check(c); err != nil {
			if len(conds) > 1 {
				return nil, fmt.Errorf("%w (graph %d)", err, i)
			}
			return nil, err
		}
	}
	if len(s.Labels) > 0 {
		p.class = make([]int, n)
	}
	if p.dim > 0 {
		p.vec = make([]float64, 0, n*p.dim)
		p.drop = make([]bool, n)
	}
	for i := range n {
		c := conds[min(i, len(conds)-1)]
		if p.class != nil {
			p.class[i] = slices.Index(s.Labels, c.Label) // -1 for the null condition
		}
		if p.dim > 0 {
			if c.IsZero() {
				p.vec = append(p.vec, make([]float64, p.dim)...)
				p.drop[i] = true
			} else {
				p.vec = s.Standardize(p.vec, c.Props)
			}
		}
	}
	return p, nil
}

// batch returns the guidance of the graphs lo..hi-1.
func (p *condPlan) batch(lo, hi int) guidance {
	if p == nil || p.w == 0 {
		return guidance{} // unconditional
	}
	B := hi - lo
	c := &dit.Cond{}
	both := &dit.Cond{}
	if p.class != nil {
		c.Class = p.class[lo:hi]
		both.Class = append(slices.Clone(c.Class), slices.Repeat([]int{-1}, B)...)
	}
	if p.dim > 0 {
		c.Vec, c.Drop = p.vec[lo*p.dim:hi*p.dim], p.drop[lo:hi]
		both.Vec = append(slices.Clone(c.Vec), make([]float64, B*p.dim)...)
		both.Drop = append(slices.Clone(c.Drop), slices.Repeat([]bool{true}, B)...)
	}
	return guidance{cond: c, both: both, w: p.w}
}
