package autograd

import (
	"testing"

	"lgflow/tensor"
)

// randParam returns a float64 parameter with N(0,1) entries.
func randParam(r *tensor.RNG, shape ...int) *Var {
	return NewParam(tensor.RandN(r, tensor.Float64, shape...))
}

// posParam returns a float64 parameter with entries in [0.5, 1.5).
func posParam(r *tensor.RNG, shape ...int) *Var {
	return NewParam(tensor.FillUniform(tensor.New(tensor.Float64, shape...), r, 0.5, 1.5))
}

// awayParam returns entries with |x| in [0.2, 1.2) (away from kinks at 0).
func awayParam(r *tensor.RNG, shape ...int) *Var {
	t := tensor.New(tensor.Float64, shape...)
	d := t.Data64()
	for i := range d {
		v := 0.2 + r.Uniform()
		if r.Uniform() < 0.5 {
			v = -v
		}
		d[i] = v
	}
	return NewParam(t)
}

// mustIndex returns tensor.NewEdgeIndex's index, panicking on an error.
func mustIndex(src, dst, eidx []int32, nodes, classes int) *tensor.EdgeIndex {
	g, err := tensor.NewEdgeIndex(src, dst, eidx, nodes, classes)
	if err != nil {
		panic(err)
	}
	return g
}

type gradCase struct {
	name  string
	build func(r *tensor.RNG) (params []*Var, f func(tp *Tape) *Var)
}

func f64(data []float64, shape ...int) *tensor.Tensor { return tensor.FromFloat64(data, shape...) }

var gradCases = []gradCase{
	{"Add", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 3, 4), randParam(r, 3, 4)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.Add(a, b) }
	}},
	{"AddBroadcastRow", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 2, 3, 4), randParam(r, 4)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.Add(a, b) }
	}},
	{"AddBroadcastBoth", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 3, 1), randParam(r, 1, 4)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.Add(a, b) }
	}},
	{"AddSelf", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 4)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Mul(tp.Add(a, a), a) }
	}},
	{"Sub", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 3, 4), randParam(r, 3, 1)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.Sub(a, b) }
	}},
	{"Mul", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 2, 3, 4), randParam(r, 3, 1)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.Mul(a, b) }
	}},
	{"Div", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 3, 4), posParam(r, 4)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.Div(a, b) }
	}},
	{"AddScalar", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 5)
		return []*Var{a}, func(tp *Tape) *Var { return tp.AddScalar(a, 2.5) }
	}},
	{"MulScalar", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 5)
		return []*Var{a}, func(tp *Tape) *Var { return tp.MulScalar(a, -1.5) }
	}},
	{"Neg", unaryCase(randParam, (*Tape).Neg)},
	{"Exp", unaryCase(randParam, (*Tape).Exp)},
	{"Log", unaryCase(posParam, (*Tape).Log)},
	{"Sqrt", unaryCase(posParam, (*Tape).Sqrt)},
	{"Square", unaryCase(randParam, (*Tape).Square)},
	{"Abs", unaryCase(awayParam, (*Tape).Abs)},
	{"Tanh", unaryCase(randParam, (*Tape).Tanh)},
	{"Sigmoid", unaryCase(randParam, (*Tape).Sigmoid)},
	{"ReLU", unaryCase(awayParam, (*Tape).ReLU)},
	{"GELU", unaryCase(randParam, (*Tape).GELU)},
	{"SiLU", unaryCase(randParam, (*Tape).SiLU)},
	{"Clamp", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := NewParam(f64([]float64{-2, -0.3, 0.1, 0.7, 1.9, -1.1}, 2, 3))
		return []*Var{a}, func(tp *Tape) *Var { return tp.Clamp(a, -0.5, 1) }
	}},
	{"Pow", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := posParam(r, 2, 3)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Pow(a, 1.5) }
	}},
	{"SumAxis0", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 4)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Sum(a, 0, false) }
	}},
	{"SumAxis1Keep", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 2, 3, 4)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Sum(a, 1, true) }
	}},
	{"Mean", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 2, 3, 4)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Mean(a, -1, false) }
	}},
	{"Max", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 5)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Max(a, 1, false) }
	}},
	{"SumAll", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 5)
		return []*Var{a}, func(tp *Tape) *Var { return tp.SumAll(tp.Square(a)) }
	}},
	{"MeanAll", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 5)
		return []*Var{a}, func(tp *Tape) *Var { return tp.MeanAll(tp.Square(a)) }
	}},
	{"Softmax", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 5)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Softmax(a, -1) }
	}},
	{"SoftmaxAxis0", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 5)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Softmax(a, 0) }
	}},
	{"LogSoftmax", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 2, 3, 5)
		return []*Var{a}, func(tp *Tape) *Var { return tp.LogSoftmax(a, 1) }
	}},
	{"MatMul", matmulCase(false, false)},
	{"MatMulTA", matmulCase(true, false)},
	{"MatMulTB", matmulCase(false, true)},
	{"MatMulTATB", matmulCase(true, true)},
	{"MatMulBatched", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 2, 3, 4), randParam(r, 2, 5, 4)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.MatMul(a, b, false, true) }
	}},
	{"MatMulBatchedTA", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 2, 4, 3), randParam(r, 2, 4, 5)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.MatMul(a, b, true, false) }
	}},
	{"MatMulSharedB", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 2, 3, 4), randParam(r, 4, 5)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.MatMul(a, b, false, false) }
	}},
	{"MatMulTransposedView", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 4, 3), randParam(r, 4, 5)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.MatMul(tp.Transpose(a, 0, 1), b, false, false) }
	}},
	{"Linear", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		x, w, b := randParam(r, 2, 3, 4), randParam(r, 5, 4), randParam(r, 5)
		return []*Var{x, w, b}, func(tp *Tape) *Var { return tp.Linear(x, w, b) }
	}},
	{"LinearNoBiasShared", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		x, w := randParam(r, 3, 4), randParam(r, 4, 4)
		return []*Var{x, w}, func(tp *Tape) *Var { return tp.Linear(tp.Linear(x, w, nil), w, nil) }
	}},
	{"Reshape", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 2, 6)
		return []*Var{a}, func(tp *Tape) *Var {
			return tp.Mul(tp.Reshape(a, 3, 4), NewConst(tensor.RandN(tensor.NewRNG(1), tensor.Float64, 3, 4)))
		}
	}},
	{"Transpose", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 2, 3, 4)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Exp(tp.Transpose(a, 0, 2)) }
	}},
	{"Permute", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 2, 3, 4)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Square(tp.Permute(a, 1, 2, 0)) }
	}},
	{"SliceTwice", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 6)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Mul(tp.Slice(a, 1, 0, 3), tp.Slice(a, 1, 2, 5)) }
	}},
	{"Split", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 4, 5)
		return []*Var{a}, func(tp *Tape) *Var {
			p := tp.Split(a, 0, 1, 3)
			return tp.Add(p[0], tp.Square(p[1]))
		}
	}},
	{"Concat", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 2, 3), randParam(r, 2, 2)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.Square(tp.Concat(1, a, b, a)) }
	}},
	{"Expand", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 1)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Square(tp.Expand(a, 2, 3, 4)) }
	}},
	{"UnsqueezeSqueeze", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 4)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Exp(tp.Squeeze(tp.Unsqueeze(tp.Unsqueeze(a, 1), 0), 0)) }
	}},
	{"Contiguous", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 4)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Square(tp.Contiguous(tp.Transpose(a, 0, 1))) }
	}},
	{"Gather", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 4, 3)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Gather(a, []int32{3, 0, 3, 1}) }
	}},
	{"IndexSelectAxis1", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 2, 4, 3)
		return []*Var{a}, func(tp *Tape) *Var { return tp.IndexSelect(a, 1, []int32{2, 2, 0}) }
	}},
	{"ScatterAdd", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 5, 3)
		return []*Var{a}, func(tp *Tape) *Var { return tp.ScatterAdd(a, []int32{1, 3, 1, 0, 1}, 4) }
	}},
	{"SegmentSum", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 5, 3)
		return []*Var{a}, func(tp *Tape) *Var { return tp.SegmentSum(a, []int32{0, 0, 2, 2, 2}, 3) }
	}},
	{"SegmentMean", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 5, 3)
		return []*Var{a}, func(tp *Tape) *Var { return tp.SegmentMean(a, []int32{0, 0, 2, 2, 2}, 3) }
	}},
	{"GINEAggregateDense", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		h, e := awayParam(r, 4, 3), awayParam(r, 5, 3)
		src, dst := []int32{0, 1, 2, 3, 1}, []int32{1, 0, 1, 2, 3}
		return []*Var{h, e}, func(tp *Tape) *Var { return tp.GINEAggregate(h, e, src, dst, nil) }
	}},
	{"GINEAggregateClasses", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		h, e := awayParam(r, 4, 3), awayParam(r, 2, 3)
		src, dst, cls := []int32{0, 1, 2, 3, 1}, []int32{1, 0, 1, 2, 3}, []int32{1, 1, 0, 1, 0}
		return []*Var{h, e}, func(tp *Tape) *Var { return tp.GINEAggregate(h, e, src, dst, cls) }
	}},
	// The indexed path: an isolated node (4), a repeated edge and a self
	// loop, the index flipped (messages along Dst -> Src).
	{"GINEAggregateIndexedClasses", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		h, e := awayParam(r, 5, 3), awayParam(r, 2, 3)
		g := mustIndex([]int32{0, 1, 2, 3, 1, 1, 2}, []int32{1, 0, 1, 2, 3, 3, 2}, []int32{1, 1, 0, 1, 0, 0, 1}, 5, 2)
		return []*Var{h, e}, func(tp *Tape) *Var {
			return tp.Add(tp.GINEAggregateIndexed(h, e, g), tp.GINEAggregateIndexed(h, e, g.Flip()))
		}
	}},
	{"GINEAggregateIndexedDense", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		h, e := awayParam(r, 5, 3), awayParam(r, 7, 3)
		g := mustIndex([]int32{0, 1, 2, 3, 1, 1, 2}, []int32{1, 0, 1, 2, 3, 3, 2}, nil, 5, 0)
		return []*Var{h, e}, func(tp *Tape) *Var { return tp.GINEAggregateIndexed(h, e, g.Flip()) }
	}},
	{"GINAggregateIndexed", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		h := randParam(r, 5, 3)
		g := mustIndex([]int32{0, 1, 2, 3, 1, 1}, []int32{1, 0, 1, 2, 3, 3}, []int32{0, 1, 0, 1, 0, 0}, 5, 2)
		return []*Var{h}, func(tp *Tape) *Var { return tp.GINEAggregateIndexed(h, nil, g) }
	}},
	{"GINAggregate", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		h := randParam(r, 4, 3)
		src, dst := []int32{0, 1, 2, 3, 1}, []int32{1, 0, 1, 2, 3}
		return []*Var{h}, func(tp *Tape) *Var { return tp.GINEAggregate(h, nil, src, dst, nil) }
	}},
	{"MaskedFill", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 2, 3)
		m := f64([]float64{1, 0, 1}, 3)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Exp(tp.MaskedFill(a, m, -1)) }
	}},
	{"Where", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a, b := randParam(r, 2, 3), randParam(r, 3)
		c := f64([]float64{1, 0, 0, 0, 1, 1}, 2, 3)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.Where(c, a, b) }
	}},
	{"LayerNorm", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		x, g, b := randParam(r, 2, 3, 5), randParam(r, 5), randParam(r, 5)
		return []*Var{x, g, b}, func(tp *Tape) *Var { return tp.LayerNorm(x, g, b, 1e-5) }
	}},
	{"LayerNormPlain", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		x := randParam(r, 3, 4)
		return []*Var{x}, func(tp *Tape) *Var { return tp.LayerNorm(x, nil, nil, 1e-5) }
	}},
	{"BatchNorm", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		x, g, b := randParam(r, 6, 4), randParam(r, 4), randParam(r, 4)
		return []*Var{x, g, b}, func(tp *Tape) *Var { y, _, _ := tp.BatchNorm(x, g, b, 1e-5); return y }
	}},
	{"BatchNormRank3", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		x, g := randParam(r, 2, 3, 4), randParam(r, 4)
		return []*Var{x, g}, func(tp *Tape) *Var { y, _, _ := tp.BatchNorm(x, g, nil, 1e-5); return y }
	}},
	{"AttentionNoMask", attentionCase(nil, KeyPadding)},
	{"AttentionKeyPadding", attentionCase(f64([]float64{1, 1, 0, 1, 1, 1, 1, 0}, 2, 4), KeyPadding)},
	{"AttentionSameGroup", attentionCase(f64([]float64{1, 1, 0, 0, 1, 1, 1, 0}, 2, 4), SameGroup)},
	{"AttentionFullMask", attentionCase(f64([]float64{
		1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0,
		1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1}, 2, 4, 4), KeyPadding)},
	{"Dropout", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 4, 5)
		return []*Var{a}, func(tp *Tape) *Var { return tp.Dropout(a, 0.3, tensor.NewRNG(7)) }
	}},
	{"SoftmaxCrossEntropy", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 2, 2, 3)
		return []*Var{a}, func(tp *Tape) *Var {
			return tp.SoftmaxCrossEntropy(a, []int32{0, 2, 1, 1}, []float32{1, 0.5, 0, 2})
		}
	}},
	{"SoftmaxCrossEntropyUnweighted", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := randParam(r, 3, 4)
		return []*Var{a}, func(tp *Tape) *Var { return tp.SoftmaxCrossEntropy(a, []int32{3, 0, 1}, nil) }
	}},
	{"MSE", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		p, t := randParam(r, 2, 3), randParam(r, 2, 3)
		w := f64([]float64{1, 0, 2}, 3)
		return []*Var{p, t}, func(tp *Tape) *Var { return tp.MSE(p, t, w) }
	}},
	{"SquaredError", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		p := randParam(r, 2, 3)
		t := NewConst(tensor.RandN(tensor.NewRNG(3), tensor.Float64, 2, 3))
		return []*Var{p}, func(tp *Tape) *Var { return tp.SquaredError(p, t, nil) }
	}},
	{"GaussianKL", func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		mu, lv := randParam(r, 3, 2), randParam(r, 3, 2)
		return []*Var{mu, lv}, func(tp *Tape) *Var { return tp.GaussianKL(mu, lv) }
	}},
}

func unaryCase(mk func(*tensor.RNG, ...int) *Var, op func(*Tape, *Var) *Var) func(*tensor.RNG) ([]*Var, func(*Tape) *Var) {
	return func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		a := mk(r, 2, 3)
		return []*Var{a}, func(tp *Tape) *Var { return op(tp, a) }
	}
}

func matmulCase(ta, tb bool) func(*tensor.RNG) ([]*Var, func(*Tape) *Var) {
	return func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		as, bs := []int{3, 4}, []int{4, 5}
		if ta {
			as = []int{4, 3}
		}
		if tb {
			bs = []int{5, 4}
		}
		a, b := randParam(r, as...), randParam(r, bs...)
		return []*Var{a, b}, func(tp *Tape) *Var { return tp.MatMul(a, b, ta, tb) }
	}
}

func attentionCase(mask *tensor.Tensor, mode MaskMode) func(*tensor.RNG) ([]*Var, func(*Tape) *Var) {
	return func(r *tensor.RNG) ([]*Var, func(*Tape) *Var) {
		q, k, v := randParam(r, 2, 2, 4, 3), randParam(r, 2, 2, 4, 3), randParam(r, 2, 2, 4, 3)
		return []*Var{q, k, v}, func(tp *Tape) *Var { return tp.Attention(q, k, v, mask, mode, 0.7) }
	}
}

func TestCheckGradAllOps(t *testing.T) {
	for _, fused := range []bool{true, false} {
		for _, c := range gradCases {
			if !fused && !isAttention(c.name) {
				continue
			}
			name := c.name
			if !fused {
				name += "/unfused"
			}
			t.Run(name, func(t *testing.T) {
				useFusedAttention = fused
				defer func() { useFusedAttention = true }()
				params, f := c.build(tensor.NewRNG(42))
				if err := CheckGrad(f, params, 1e-6, 1e-6); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func isAttention(name string) bool { return len(name) > 9 && name[:9] == "Attention" }

// A wrong backward must be caught: scale a gradient and expect an error.
func TestCheckGradDetectsWrongGradient(t *testing.T) {
	r := tensor.NewRNG(1)
	a := randParam(r, 3)
	// x ↦ x·x computed as Mul(a, Detach(a)) has the wrong gradient (x, not 2x).
	err := CheckGrad(func(tp *Tape) *Var { return tp.Mul(a, a.Detach()) }, []*Var{a}, 1e-6, 1e-6)
	if err == nil {
		t.Fatal("CheckGrad accepted a wrong gradient")
	}
}
