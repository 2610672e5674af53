package autograd_test

import (
	"testing"

	"lgflow/autograd"
	"lgflow/nn"
	"lgflow/tensor"
)

// block is a pre-LN transformer block: x + Attn(LN₁(x)), then + MLP(LN₂(x)).
type block struct {
	ln1, ln2 *nn.LayerNorm
	attn     *nn.MultiHeadSelfAttention
	mlp      *nn.MLP
}

func newBlock(r *tensor.RNG, e, heads int, mode autograd.MaskMode) *block {
	return &block{
		ln1:  nn.NewLayerNorm(e, 1e-5),
		ln2:  nn.NewLayerNorm(e, 1e-5),
		attn: nn.NewMultiHeadSelfAttention(r, e, heads, nn.WithNormalInit(0.02), nn.WithMaskMode(mode)),
		mlp:  nn.NewMLP(r, []int{e, 4 * e, e}, nn.WithActivation(nn.GELU), nn.WithNormalInit(0.02)),
	}
}

func (b *block) forward(tp *autograd.Tape, x *autograd.Var, mask *tensor.Tensor) *autograd.Var {
	x = tp.Add(x, b.attn.Forward(tp, b.ln1.Forward(tp, x), mask))
	return tp.Add(x, b.mlp.Forward(tp, b.ln2.Forward(tp, x)))
}

func (b *block) Params() []nn.Param {
	ps := nn.ParamsOf("ln1", b.ln1)
	ps = append(ps, nn.ParamsOf("ln2", b.ln2)...)
	ps = append(ps, nn.ParamsOf("attn", b.attn)...)
	return append(ps, nn.ParamsOf("mlp", b.mlp)...)
}

const (
	blkB, blkN, blkE, blkH = 64, 64, 128, 4
)

// blockFlops: forward GEMMs (qkv, out, two MLP layers, scores, P·V) ×3 for
// forward plus backward.
func blockFlops() float64 {
	rows := float64(blkB * blkN)
	lin := 2 * rows * (blkE*3*blkE + blkE*blkE + 2*blkE*4*blkE)
	att := 2 * 2 * float64(blkB*blkN*blkN*blkE)
	return 3 * (lin + att)
}

// BenchmarkTrainStepTransformerBlock: B=64, N=64, E=128, 4 heads, MLP 4×,
// forward + backward + SGD, with a token mask (a quarter of the tokens are
// padding). Baseline: the step's GEMMs alone, through tensor.Gemm.
func BenchmarkTrainStepTransformerBlock(b *testing.B) {
	r := tensor.NewRNG(1)
	x := autograd.NewConst(tensor.RandN(r, tensor.Float32, blkB, blkN, blkE))
	target := autograd.NewConst(tensor.RandN(r, tensor.Float32, blkB, blkN, blkE))
	mask := tensor.New(tensor.Float32, blkB, blkN)
	for i := 0; i < blkB; i++ {
		for j := 0; j < blkN*3/4; j++ {
			mask.Set(1, i, j)
		}
	}
	for _, mode := range []autograd.MaskMode{autograd.KeyPadding, autograd.SameGroup} {
		b.Run("autograd-"+mode.String(), func(b *testing.B) {
			blk := newBlock(r, blkE, blkH, mode)
			ps := blk.Params()
			tp := autograd.NewTape()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				y := blk.forward(tp, x, mask)
				tp.Backward(tp.MSE(y, target, nil))
				for _, p := range ps {
					tensor.AddScaled(p.V.Value, p.V.Value, p.V.Grad, -1e-3)
					p.V.Grad.Zero()
				}
				tp.Release()
			}
			b.ReportMetric(blockFlops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	b.Run("gemm-only-baseline", func(b *testing.B) {
		rows := blkB * blkN
		bh, dh := blkB*blkH, blkE/blkH
		type g struct {
			c, a, w *tensor.Tensor
			ta, tb  bool
		}
		mk := func(s ...int) *tensor.Tensor { return tensor.RandN(r, tensor.Float32, s...) }
		var gs []g
		for _, l := range [][2]int{{blkE, 3 * blkE}, {blkE, blkE}, {blkE, 4 * blkE}, {4 * blkE, blkE}} {
			in, out := l[0], l[1]
			x, w, y := mk(rows, in), mk(out, in), mk(rows, out)
			gs = append(gs, g{y, x, w, false, true}, g{x, y, w, false, false}, g{w, y, x, true, false})
		}
		q, k, s := mk(bh, blkN, dh), mk(bh, blkN, dh), mk(bh, blkN, blkN)
		gs = append(gs, g{s, q, k, false, true}, g{q, s, k, false, false}, g{k, s, q, true, false}) // scores
		gs = append(gs, g{q, s, k, false, false}, g{s, q, k, false, true}, g{k, s, q, true, false}) // P·V
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for _, x := range gs {
				tensor.Gemm(x.c, 1, x.a, x.w, x.ta, x.tb, 0)
			}
		}
		b.ReportMetric(blockFlops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
