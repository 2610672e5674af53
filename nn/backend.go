package nn

import (
	"fmt"
	"sort"

	"lgflow/autograd"
	"lgflow/tensor"
)

// ToBackend moves every parameter of m to backend b (tensor.CPU, or a
// registered accelerator such as cuda's) in place: each parameter's Var
// gets its value copied to b and its gradient dropped. Build the optimiser
// after moving, so that its state lives on b too. Modules with buffers
// (BatchNorm running statistics) hold their buffers outside their Vars and
// cannot be moved this way; ToBackend returns an error for them and
// changes nothing. Moving a module to where it already is does nothing.
func ToBackend(m Module, b tensor.Backend) error {
	if b == nil {
		return fmt.Errorf("nn: ToBackend: nil backend")
	}
	moving := false
	for _, p := range m.Params() {
		moving = moving || p.V.Value.Backend() != b
	}
	if !moving {
		return nil
	}
	if bs := BuffersOf("", m); len(bs) > 0 {
		return fmt.Errorf("nn: ToBackend: the module has buffers (%s, ...), which cannot be moved", bs[0].Name)
	}
	for _, p := range m.Params() {
		if p.V.Value.Backend() == b {
			continue
		}
		p.V.Value = p.V.Value.ToBackend(b)
		p.V.Grad = nil
	}
	return nil
}

// Flatten packs the parameters of m, in place, into one flat tensor per
// backend and dtype: every parameter's Var keeps its values but becomes a
// view of the flat tensor, and gets a zero gradient that is a view of a
// second flat tensor laid out the same way (an existing gradient is
// dropped). Parameters are packed in the order of m.Params(), stably
// sorted by group(name, shape) (nil: one group), so that parameters an
// optimiser treats alike (weight decay on matrices only: group by
// optim.DefaultDecay) form one run.
//
// Optimisers built afterwards (optim.NewAdamW, optim.NewEMA) lay out their
// state the same way and update each run with one kernel launch instead of
// one per parameter, with the same results. Call Flatten after ToBackend
// and before building the optimiser; state dicts, checkpoints and
// LoadStateDict work as before (the tensors are views). Buffers are left
// alone. A Var that appears under two names is an error, and m is then
// unchanged.
func Flatten(m Module, group func(name string, shape []int) int) error {
	ps := m.Params()
	seen := make(map[*autograd.Var]string, len(ps))
	for _, p := range ps {
		if other, ok := seen[p.V]; ok {
			return fmt.Errorf("nn: Flatten: parameters %q and %q share one Var", other, p.Name)
		}
		seen[p.V] = p.Name
	}
	keys := make([]int, len(ps))
	if group != nil {
		for i, p := range ps {
			keys[i] = group(p.Name, p.V.Shape())
		}
	}
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return keys[order[a]] < keys[order[b]] })
	if flatAlready(ps, order) {
		return nil
	}
	// One flat value and gradient per backend and dtype, in first-use order.
	type class struct {
		be tensor.Backend
		dt tensor.DType
	}
	var classes []class
	members := map[class][]int{}
	for _, i := range order {
		v := ps[i].V.Value
		c := class{v.Backend(), v.DType()}
		if _, ok := members[c]; !ok {
			classes = append(classes, c)
		}
		members[c] = append(members[c], i)
	}
	for _, c := range classes {
		n := 0
		for _, i := range members[c] {
			n += ps[i].V.Value.Size()
		}
		value := tensor.EmptyOn(c.be, c.dt, n)
		grad := tensor.NewOn(c.be, c.dt, n)
		off := 0
		for _, i := range members[c] {
			v := ps[i].V
			k := v.Value.Size()
			shape := v.Value.Shape()
			dst := value.Slice(0, off, off+k).Reshape(shape...)
			tensor.Copy(dst, v.Value)
			v.Value = dst
			v.Grad = grad.Slice(0, off, off+k).Reshape(shape...)
			off += k
		}
	}
	return nil
}

// flatAlready reports whether the parameters, taken in order, are already
// packed as Flatten packs them: values and gradients adjacent views of
// their flat tensors wherever backend and dtype do not change.
func flatAlready(ps []Param, order []int) bool {
	adjacent := func(a, b *tensor.Tensor) bool {
		return a != nil && b != nil && a.Storage() == b.Storage() && a.IsContiguous() && b.IsContiguous() &&
			b.Offset() == a.Offset()+a.Size()
	}
	type class struct {
		be tensor.Backend
		dt tensor.DType
	}
	last := map[class]*autograd.Var{}
	for _, i := range order {
		v := ps[i].V
		if v.Grad == nil || v.Grad.Storage() == v.Value.Storage() {
			return false
		}
		c := class{v.Value.Backend(), v.Value.DType()}
		if u := last[c]; u != nil && (!adjacent(u.Value, v.Value) || !adjacent(u.Grad, v.Grad)) {
			return false
		}
		last[c] = v
	}
	return len(order) > 0
}
