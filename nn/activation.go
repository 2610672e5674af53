package nn

import (
	"fmt"

	"lgflow/autograd"
)

// Activation names an elementwise nonlinearity.
type Activation uint8

// Activations. GELU is the exact (erf) form.
const (
	Identity Activation = iota
	ReLU
	GELU
	SiLU
	Tanh
	Sigmoid
)

// Apply returns the activation of x recorded on tp (Identity returns x).
func (a Activation) Apply(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	switch a {
	case Identity:
		return x
	case ReLU:
		return tp.ReLU(x)
	case GELU:
		return tp.GELU(x)
	case SiLU:
		return tp.SiLU(x)
	case Tanh:
		return tp.Tanh(x)
	case Sigmoid:
		return tp.Sigmoid(x)
	}
	panic(fmt.Sprintf("nn.Activation.Apply: unknown activation %d", uint8(a)))
}

// String returns the activation's name.
func (a Activation) String() string {
	switch a {
	case Identity:
		return "Identity"
	case ReLU:
		return "ReLU"
	case GELU:
		return "GELU"
	case SiLU:
		return "SiLU"
	case Tanh:
		return "Tanh"
	case Sigmoid:
		return "Sigmoid"
	}
	return fmt.Sprintf("Activation(%d)", uint8(a))
}
