package nn

import (
	"fmt"
	"math"

	"lgflow/autograd"
	"lgflow/tensor"
)

// MultiHeadSelfAttention is multi-head self-attention with one fused q/k/v
// projection: for x (B, N, E),
//
//	[q k v] = x·W_qkvᵀ + b_qkv,  split into Heads heads of width E/Heads,
//	o_h = softmax(q_h·k_hᵀ/√(E/Heads) + mask)·v_h,   y = concat(o_h)·W_outᵀ + b_out.
//
// The q/k/v rows of QKV.W are laid out as PyTorch's in_proj_weight (q first,
// then k, then v; heads contiguous within each). Parameter names: "qkv.*",
// "out.*".
type MultiHeadSelfAttention struct {
	QKV, Out *Linear
	Heads    int
	Mode     autograd.MaskMode
}

// NewMultiHeadSelfAttention returns the layer for width embed split into
// heads heads (embed must be divisible by heads). Options: WithBias,
// WithDType, WithNormalInit, WithMaskMode.
func NewMultiHeadSelfAttention(r *tensor.RNG, embed, heads int, opts ...Option) *MultiHeadSelfAttention {
	o := buildOptions(opts)
	if heads <= 0 || embed%heads != 0 {
		panic(fmt.Sprintf("nn.NewMultiHeadSelfAttention: embed %d not divisible by %d heads", embed, heads))
	}
	return &MultiHeadSelfAttention{
		QKV:   newLinear(r, embed, 3*embed, o),
		Out:   newLinear(r, embed, embed, o),
		Heads: heads,
		Mode:  o.maskMode,
	}
}

// Forward attends over the tokens of x (B, N, E). mask is nil (all tokens
// real), a (B, N) token mask with 1 for real tokens read according to Mode,
// or a (B, N, N) matrix of allowed query→key pairs. The result is (B, N, E).
func (a *MultiHeadSelfAttention) Forward(tp *autograd.Tape, x *autograd.Var, mask *tensor.Tensor) *autograd.Var {
	if x.Rank() != 3 {
		panic(fmt.Sprintf("nn.MultiHeadSelfAttention: input %v, want (B, N, E)", x.Shape()))
	}
	b, n, e := x.Dim(0), x.Dim(1), x.Dim(2)
	h := a.Heads
	dh := e / h
	qkv := a.QKV.Forward(tp, x)           // (B, N, 3E)
	qkv = tp.Reshape(qkv, b, n, 3, h, dh) // (B, N, 3, H, Dh)
	qkv = tp.Permute(qkv, 2, 0, 3, 1, 4)  // (3, B, H, N, Dh) view
	parts := tp.Split(qkv, 0, 1, 1, 1)    // strided views, not copies
	q, k, v := tp.Squeeze(parts[0], 0), tp.Squeeze(parts[1], 0), tp.Squeeze(parts[2], 0)
	o := tp.Attention(q, k, v, mask, a.Mode, 1/math.Sqrt(float64(dh))) // (B, H, N, Dh)
	// Attention's output is stored token-major, so this is normally a
	// view; Contiguous copies only when it is not.
	o = tp.Contiguous(tp.Permute(o, 0, 2, 1, 3)) // (B, N, H, Dh)
	return a.Out.Forward(tp, tp.Reshape(o, b, n, e))
}

// Params returns "qkv.*" and "out.*".
func (a *MultiHeadSelfAttention) Params() []Param {
	return append(ParamsOf("qkv", a.QKV), ParamsOf("out", a.Out)...)
}
