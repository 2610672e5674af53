package optim

import (
	"fmt"
	"math"

	"lgflow/tensor"
)

// Param is one trainable tensor as the optimiser sees it.
type Param struct {
	// Name identifies the parameter in state dicts and error messages
	// (for example "encoder.layers.0.weight"); names must be unique.
	Name string
	// Value is updated in place by optimisers.
	Value *tensor.Tensor
	// Grad is the gradient of the loss with respect to Value (same shape
	// and dtype), or nil when the parameter got no gradient this step, in
	// which case optimisers leave it alone (as PyTorch does).
	Grad *tensor.Tensor
	// Decay says whether weight decay applies (see DefaultDecay).
	Decay bool
}

// DefaultDecay is the project's rule for which parameters get weight decay
// (nanoGPT's, as in the reference; docs/design.md, "Training recipes"):
// those with rank >= 2 (weight matrices, embeddings, 2-D vectors such as
// the eps vector), but not biases and normalisation scales and shifts
// (rank 1) or scalars. name is unused; it is there so callers can swap in
// a rule that looks at names.
func DefaultDecay(name string, shape []int) bool { return len(shape) >= 2 }

// NonFiniteError reports a NaN or infinite gradient element.
type NonFiniteError struct {
	// Param is the name of the parameter whose gradient is not finite.
	Param string
	// Index is the flat row-major index of the first such element, or -1
	// when the gradient is on a backend that cannot say where.
	Index int
	// Value is that element (NaN, +Inf or -Inf).
	Value float64
	// Shape is the gradient's shape.
	Shape []int
}

// Error names the parameter, the element and its value.
func (e *NonFiniteError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("optim: gradient of %q (shape %v) is not finite", e.Param, e.Shape)
	}
	return fmt.Sprintf("optim: gradient of %q (shape %v) has %v at flat index %d", e.Param, e.Shape, e.Value, e.Index)
}

// CheckFinite returns a *NonFiniteError naming the first parameter (in
// slice order) whose gradient holds a NaN or an infinity, or nil if every
// gradient is finite. Nil gradients are skipped. A training loop calls it
// after the backward pass to stop with a clear error instead of silently
// turning the weights into NaN. It reads the gradients only.
func CheckFinite(params []Param) error {
	for _, p := range params {
		if p.Grad == nil {
			continue
		}
		// A float64 sum of the elements is finite if and only if they all
		// are (NaN and Inf propagate; +Inf + -Inf is NaN), barring
		// overflow of float64 values near its maximum, which the exact
		// scan below then clears.
		if s := tensor.SumAll(p.Grad); !math.IsNaN(s) && !math.IsInf(s, 0) {
			continue
		}
		g := p.Grad
		if g.Backend() != tensor.CPU {
			g = g.ToBackend(tensor.CPU)
		}
		g = g.Contiguous()
		idx, v := -1, 0.0
		if g.DType() == tensor.Float32 {
			for i, x := range g.Data32() {
				if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
					idx, v = i, f
					break
				}
			}
		} else {
			for i, x := range g.Data64() {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					idx, v = i, x
					break
				}
			}
		}
		if idx >= 0 {
			return &NonFiniteError{Param: p.Name, Index: idx, Value: v, Shape: p.Grad.Shape()}
		}
	}
	return nil
}

// checkParams validates a parameter list for NewAdamW and NewEMA.
func checkParams(who string, params []Param) error {
	seen := make(map[string]bool, len(params))
	for i, p := range params {
		switch {
		case p.Name == "":
			return fmt.Errorf("optim: %s: parameter %d has an empty name", who, i)
		case seen[p.Name]:
			return fmt.Errorf("optim: %s: parameter name %q appears twice", who, p.Name)
		case p.Value == nil:
			return fmt.Errorf("optim: %s: parameter %q has a nil Value", who, p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}
