package vae

import (
	"fmt"

	"lgflow/autograd"
	"lgflow/nn"
	"lgflow/tensor"
)

// refiner is the decoder's latent refinement network (Config.Refine): a
// small pre-LayerNorm transformer over the nodes of each graph whose
// output is added to the latents, z' = z + Out(Blocks(In(z))). Out starts
// at zero, so a refiner added to a trained decoder changes nothing until it
// is trained. Padding tokens attend only to padding (autograd.SameGroup),
// so a graph's refined latents do not depend on its padding.
type refiner struct {
	in     *nn.Linear // d -> W
	blocks []refineBlock
	norm   *nn.LayerNorm
	out    *nn.Linear // W -> d, zero-initialised
}

// refineBlock is x += Attn(LN1(x)); x += MLP(LN2(x)).
type refineBlock struct {
	ln1  *nn.LayerNorm
	attn *nn.MultiHeadSelfAttention
	ln2  *nn.LayerNorm
	mlp  *nn.MLP
}

func newRefiner(r *tensor.RNG, cfg Config, opts ...nn.Option) *refiner {
	W, d := cfg.RefineWidth, cfg.Latent
	f := &refiner{in: nn.NewLinear(r, d, W, opts...), norm: nn.NewLayerNorm(W, 1e-5, opts...), out: nn.NewLinear(r, W, d, opts...)}
	for range cfg.Refine {
		f.blocks = append(f.blocks, refineBlock{
			ln1:  nn.NewLayerNorm(W, 1e-5, opts...),
			attn: nn.NewMultiHeadSelfAttention(r, W, cfg.RefineHeads, append(opts, nn.WithMaskMode(autograd.SameGroup))...),
			ln2:  nn.NewLayerNorm(W, 1e-5, opts...),
			mlp:  nn.NewMLP(r, []int{W, 2 * W, W}, append(opts, nn.WithActivation(nn.GELU))...),
		})
	}
	f.out.W.Value.Zero()
	if f.out.B != nil {
		f.out.B.Value.Zero()
	}
	return f
}

// Forward refines padded latents z (B, N, d) of graphs with the given node
// counts; padding rows of the result are zero.
func (f *refiner) Forward(tp *autograd.Tape, z *autograd.Var, sizes []int) *autograd.Var {
	B, N := z.Dim(0), z.Dim(1)
	mask := tensor.New(z.DType(), B, N)
	for g, k := range sizes {
		for j := range k {
			mask.Set(1, g, j)
		}
	}
	mask = mask.On(z.Value.Backend())
	x := f.in.Forward(tp, z)
	for _, b := range f.blocks {
		x = tp.Add(x, b.attn.Forward(tp, b.ln1.Forward(tp, x), mask))
		x = tp.Add(x, b.mlp.Forward(tp, b.ln2.Forward(tp, x)))
	}
	dz := f.out.Forward(tp, f.norm.Forward(tp, x))
	dz = tp.Mul(dz, autograd.NewConst(mask.Reshape(B, N, 1)))
	return tp.Add(z, dz)
}

// Params returns "in.*", "blocks.<i>.{ln1,attn,ln2,mlp}.*", "norm.*" and "out.*".
func (f *refiner) Params() []nn.Param {
	ps := nn.ParamsOf("in", f.in)
	for i, b := range f.blocks {
		p := fmt.Sprintf("blocks.%d.", i)
		ps = append(ps, nn.ParamsOf(p+"ln1", b.ln1)...)
		ps = append(ps, nn.ParamsOf(p+"attn", b.attn)...)
		ps = append(ps, nn.ParamsOf(p+"ln2", b.ln2)...)
		ps = append(ps, nn.ParamsOf(p+"mlp", b.mlp)...)
	}
	ps = append(ps, nn.ParamsOf("norm", f.norm)...)
	return append(ps, nn.ParamsOf("out", f.out)...)
}
