package nn

import (
	"fmt"
	"math"
	"strconv"

	"lgflow/autograd"
	"lgflow/tensor"
)

// Linear is the affine layer y = x·Wᵀ + b with W of shape (Out, In) (PyTorch
// layout) and b of shape (Out) or nil. Parameter names: "weight", "bias".
type Linear struct {
	W, B    *autograd.Var
	In, Out int
}

// NewLinear returns a Linear layer in → out initialised from r: by default as
// PyTorch does (W and b uniform in ±1/√in, i.e. kaiming-uniform with
// a = √5), or with WithNormalInit(std) W ~ N(0, std²) and b = 0. Options:
// WithBias, WithDType, WithNormalInit.
func NewLinear(r *tensor.RNG, in, out int, opts ...Option) *Linear {
	o := buildOptions(opts)
	return newLinear(r, in, out, o)
}

func newLinear(r *tensor.RNG, in, out int, o options) *Linear {
	if in <= 0 || out <= 0 {
		panic(fmt.Sprintf("nn.NewLinear: sizes in=%d out=%d must be positive", in, out))
	}
	w := tensor.New(o.dtype, out, in)
	var b *tensor.Tensor
	if o.bias {
		b = tensor.New(o.dtype, out)
	}
	if o.normalInit {
		tensor.FillNormal(w, r, 0, o.std)
	} else {
		bound := 1 / math.Sqrt(float64(in))
		tensor.FillUniform(w, r, -bound, bound)
		if b != nil {
			tensor.FillUniform(b, r, -bound, bound)
		}
	}
	l := &Linear{W: autograd.NewParam(w), In: in, Out: out}
	if b != nil {
		l.B = autograd.NewParam(b)
	}
	return l
}

// Forward returns x·Wᵀ + b for x of shape (..., In); the result is (..., Out).
func (l *Linear) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	return tp.Linear(x, l.W, l.B)
}

// Params returns "weight" and, if present, "bias".
func (l *Linear) Params() []Param {
	ps := []Param{{"weight", l.W}}
	if l.B != nil {
		ps = append(ps, Param{"bias", l.B})
	}
	return ps
}

// MLP is a stack of Linear layers with an activation between consecutive
// layers (not after the last). Parameter names: "0.weight", "0.bias",
// "1.weight", ... (one index per Linear).
type MLP struct {
	Layers []*Linear
	Act    Activation
}

// NewMLP returns an MLP with layer widths widths[0] → widths[1] → ... (at
// least two widths). The activation is ReLU unless WithActivation says
// otherwise; the other options apply to every Linear.
func NewMLP(r *tensor.RNG, widths []int, opts ...Option) *MLP {
	o := buildOptions(opts)
	if !o.actSet {
		o.act = ReLU
	}
	return newMLP(r, widths, o)
}

func newMLP(r *tensor.RNG, widths []int, o options) *MLP {
	if len(widths) < 2 {
		panic(fmt.Sprintf("nn.NewMLP: need at least two widths, got %v", widths))
	}
	m := &MLP{Act: o.act}
	for i := 0; i+1 < len(widths); i++ {
		m.Layers = append(m.Layers, newLinear(r, widths[i], widths[i+1], o))
	}
	return m
}

// Forward applies the layers to x (..., widths[0]).
func (m *MLP) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	for i, l := range m.Layers {
		if i > 0 {
			x = m.Act.Apply(tp, x)
		}
		x = l.Forward(tp, x)
	}
	return x
}

// Params returns the layers' parameters prefixed by their index.
func (m *MLP) Params() []Param {
	var ps []Param
	for i, l := range m.Layers {
		ps = append(ps, ParamsOf(strconv.Itoa(i), l)...)
	}
	return ps
}

// Embedding is a lookup table of Num vectors of width Dim. Parameter name:
// "weight" (Num, Dim).
type Embedding struct {
	W        *autograd.Var
	Num, Dim int
}

// NewEmbedding returns an Embedding with weights ~ N(0, 1) (PyTorch's
// default) or N(0, std²) with WithNormalInit(std). Options: WithDType,
// WithNormalInit.
func NewEmbedding(r *tensor.RNG, num, dim int, opts ...Option) *Embedding {
	o := buildOptions(opts)
	if num <= 0 || dim <= 0 {
		panic(fmt.Sprintf("nn.NewEmbedding: sizes num=%d dim=%d must be positive", num, dim))
	}
	std := 1.0
	if o.normalInit {
		std = o.std
	}
	w := tensor.FillNormal(tensor.New(o.dtype, num, dim), r, 0, std)
	return &Embedding{W: autograd.NewParam(w), Num: num, Dim: dim}
}

// Forward returns the rows W[idx[i]]: shape (len(idx), Dim). idx is kept by
// the tape until Release.
func (e *Embedding) Forward(tp *autograd.Tape, idx []int32) *autograd.Var {
	return tp.Gather(e.W, idx)
}

// Params returns "weight".
func (e *Embedding) Params() []Param { return []Param{{"weight", e.W}} }
