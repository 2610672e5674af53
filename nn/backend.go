package nn

import (
	"fmt"

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
