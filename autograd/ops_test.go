package autograd

import (
	"math"
	"testing"

	"lgflow/tensor"
)

func assertClose(t *testing.T, name string, got []float64, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol || math.IsNaN(got[i]) {
			t.Fatalf("%s: element %d = %v, want %v (all: %v)", name, i, got[i], want[i], got)
		}
	}
}

func c64(data []float64, shape ...int) *Var { return NewConst(tensor.FromFloat64(data, shape...)) }

func TestOpValues(t *testing.T) {
	ln2, ln3 := math.Log(2), math.Log(3)
	const eps = 1e-5
	cases := []struct {
		name string
		f    func(tp *Tape) *Var
		want []float64
	}{
		{"Linear", func(tp *Tape) *Var {
			return tp.Linear(c64([]float64{1, 2}, 1, 2), c64([]float64{1, 0, 0, 1, 1, 1}, 3, 2), c64([]float64{1, 2, 3}, 3))
		}, []float64{2, 4, 6}},
		{"MatMulTransB", func(tp *Tape) *Var {
			return tp.MatMul(c64([]float64{1, 2, 3, 4}, 2, 2), c64([]float64{1, 1, 0, 1}, 2, 2), false, true)
		}, []float64{3, 2, 7, 4}},
		{"GINEAggregateDense", func(tp *Tape) *Var {
			h := c64([]float64{1, -1, 2, 3, 0, 1}, 3, 2)
			e := c64([]float64{0, 0, -5, 1, 1, 1}, 3, 2)
			return tp.GINEAggregate(h, e, []int32{0, 2, 1}, []int32{1, 1, 0}, nil)
		}, []float64{3, 4, 1, 2, 0, 0}},
		{"GINEAggregateClasses", func(tp *Tape) *Var {
			h := c64([]float64{1, -1, 2, 3, 0, 1}, 3, 2)
			table := c64([]float64{0, 0, 1, 1}, 2, 2)
			return tp.GINEAggregate(h, table, []int32{0, 2, 1}, []int32{1, 1, 0}, []int32{0, 1, 1})
		}, []float64{3, 4, 2, 2, 0, 0}},
		{"GINSum", func(tp *Tape) *Var {
			h := c64([]float64{1, -1, 2, 3, 0, 1}, 3, 2)
			return tp.GINEAggregate(h, nil, []int32{0, 2, 1}, []int32{1, 1, 0}, nil)
		}, []float64{2, 3, 1, 0, 0, 0}},
		{"AttentionSameGroup", func(tp *Tape) *Var {
			z := c64([]float64{0, 0, 0}, 1, 1, 3, 1)
			v := c64([]float64{1, 3, 10}, 1, 1, 3, 1)
			return tp.Attention(z, z, v, tensor.FromFloat64([]float64{1, 1, 0}, 1, 3), SameGroup, 1)
		}, []float64{2, 2, 10}},
		{"AttentionKeyPadding", func(tp *Tape) *Var {
			z := c64([]float64{0, 0, 0}, 1, 1, 3, 1)
			v := c64([]float64{1, 3, 10}, 1, 1, 3, 1)
			return tp.Attention(z, z, v, tensor.FromFloat64([]float64{1, 1, 0}, 1, 3), KeyPadding, 1)
		}, []float64{2, 2, 2}},
		{"AttentionScores", func(tp *Tape) *Var {
			// q·k = [0, ln3]: weights 1/4, 3/4 over v = [4, 8] -> 7.
			q := c64([]float64{1}, 1, 1, 1, 1)
			k := c64([]float64{0, ln3}, 1, 1, 2, 1)
			v := c64([]float64{4, 8}, 1, 1, 2, 1)
			return tp.Attention(q, k, v, nil, KeyPadding, 1)
		}, []float64{7}},
		{"AttentionFullMaskEmptyRow", func(tp *Tape) *Var {
			z := c64([]float64{0, 0}, 1, 1, 2, 1)
			v := c64([]float64{1, 3}, 1, 1, 2, 1)
			return tp.Attention(z, z, v, tensor.FromFloat64([]float64{0, 1, 0, 0}, 1, 2, 2), KeyPadding, 1)
		}, []float64{3, 0}},
		{"BatchNorm", func(tp *Tape) *Var {
			y, _, _ := tp.BatchNorm(c64([]float64{1, 10, 3, 10}, 2, 2), c64([]float64{2, 1}, 2), c64([]float64{0, 5}, 2), eps)
			return y
		}, []float64{-2 / math.Sqrt(1+eps), 5, 2 / math.Sqrt(1+eps), 5}},
		{"LayerNorm", func(tp *Tape) *Var {
			return tp.LayerNorm(c64([]float64{1, 3}, 1, 2), c64([]float64{2, 1}, 2), c64([]float64{0, 5}, 2), eps)
		}, []float64{-2 / math.Sqrt(1+eps), 5 + 1/math.Sqrt(1+eps)}},
		{"SoftmaxCrossEntropy", func(tp *Tape) *Var {
			return tp.SoftmaxCrossEntropy(c64([]float64{0, 0, 0, ln3, 9, 9}, 3, 2), []int32{0, 1, 1}, []float32{1, 3, 0})
		}, []float64{(ln2 + 3*math.Log(4.0/3)) / 4}},
		{"GaussianKL", func(tp *Tape) *Var {
			return tp.GaussianKL(c64([]float64{1, 0, 0, 0}, 2, 2), c64([]float64{0, ln2, 0, 0}, 2, 2))
		}, []float64{(2 - ln2) / 2 / 2}},
		{"MSEWeighted", func(tp *Tape) *Var {
			return tp.MSE(c64([]float64{1, 2, 3}, 3), c64([]float64{0, 0, 0}, 3), tensor.FromFloat64([]float64{1, 0, 1}, 3))
		}, []float64{5}},
		{"MSEBroadcastWeight", func(tp *Tape) *Var {
			// weight (2,1) covers 2 columns each: Σw = 2·(1+0) = 2.
			return tp.MSE(c64([]float64{1, 2, 3, 4}, 2, 2), c64([]float64{0, 0, 0, 0}, 2, 2), tensor.FromFloat64([]float64{1, 0}, 2, 1))
		}, []float64{2.5}},
		{"SegmentMean", func(tp *Tape) *Var {
			return tp.SegmentMean(c64([]float64{1, 3, 5}, 3, 1), []int32{0, 0, 2}, 3)
		}, []float64{2, 0, 5}},
		{"MaxAxis", func(tp *Tape) *Var { return tp.Max(c64([]float64{1, 5, 2, 7, 0, 3}, 2, 3), 1, false) }, []float64{5, 7}},
		{"Clamp", func(tp *Tape) *Var { return tp.Clamp(c64([]float64{-3, 0.5, 9}, 3), -1, 1) }, []float64{-1, 0.5, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := NoGrad()
			defer tp.Release()
			assertClose(t, c.name, c.f(tp).Value.Contiguous().Data64(), c.want, 1e-12)
		})
	}
}

func TestDropoutIsSeededAndScaled(t *testing.T) {
	tp := NoGrad()
	defer tp.Release()
	x := NewConst(tensor.Full(tensor.Float64, 1, 1000))
	y1 := tp.Dropout(x, 0.25, tensor.NewRNG(9)).Value.Data64()
	y2 := tp.Dropout(x, 0.25, tensor.NewRNG(9)).Value.Data64()
	zeros := 0
	for i, v := range y1 {
		if v != y2[i] {
			t.Fatal("same seed gave different masks")
		}
		switch v {
		case 0:
			zeros++
		case 1 / 0.75:
		default:
			t.Fatalf("kept value %v, want %v", v, 1/0.75)
		}
	}
	if zeros < 200 || zeros > 300 {
		t.Fatalf("%d of 1000 dropped at p = 0.25", zeros)
	}
	if tp.Dropout(x, 0, nil) != x {
		t.Fatal("p = 0 should return the input")
	}
}

// The float32 kernels agree with the float64 ones on a network that uses
// every hand-written kernel (GINE, BatchNorm, masked attention, LayerNorm,
// cross entropy), values and gradients.
func TestFloat32MatchesFloat64(t *testing.T) {
	type run struct {
		loss  float64
		grads [][]float64
	}
	do := func(dt tensor.DType) run {
		r := tensor.NewRNG(5)
		mk := func(shape ...int) *Var {
			return NewParam(tensor.RandN(r, tensor.Float64, shape...).To(dt))
		}
		h, e, g, b := mk(6, 8), mk(3, 8), mk(8), mk(8)
		w := mk(8, 8)
		src, dst, cls := []int32{0, 1, 2, 3, 4, 5, 1}, []int32{1, 2, 3, 4, 5, 0, 3}, []int32{0, 1, 2, 0, 1, 2, 2}
		mask := tensor.FromFloat64([]float64{1, 1, 0, 1, 0, 0}, 2, 3).To(dt)
		ps := []*Var{h, e, g, b, w}
		tp := NewTape()
		x := tp.GINEAggregate(h, e, src, dst, cls)
		x, _, _ = tp.BatchNorm(tp.Linear(x, w, nil), g, b, 1e-5)
		x = tp.Reshape(x, 2, 1, 3, 8) // (B=2, H=1, N=3, Dh=8)
		for _, mode := range []MaskMode{SameGroup, KeyPadding} {
			x = tp.Attention(x, x, x, mask, mode, 0.3)
		}
		x = tp.LayerNorm(x, g, nil, 1e-5)
		loss := tp.SoftmaxCrossEntropy(x, []int32{0, 1, 2, 3, 4, 5}, nil)
		tp.Backward(loss)
		out := run{loss: loss.Item()}
		for _, p := range ps {
			out.grads = append(out.grads, p.Grad.To(tensor.Float64).Data64())
		}
		tp.Release()
		return out
	}
	a, b := do(tensor.Float32), do(tensor.Float64)
	if math.Abs(a.loss-b.loss) > 1e-4 {
		t.Fatalf("loss float32 %v, float64 %v", a.loss, b.loss)
	}
	for i := range a.grads {
		assertClose(t, "grad", a.grads[i], b.grads[i], 2e-4)
	}
}

// gineComposed is GINEAggregate from backend-generic ops (IndexSelect,
// ReLU, ScatterAdd), the reference of TestGINEComposed.
func (tp *Tape) gineComposed(h, e *Var, src, dst, eidx []int32, nodes int) *Var {
	msg := tp.IndexSelect(h, 0, src)
	if e != nil {
		et := e
		if eidx != nil {
			et = tp.IndexSelect(e, 0, eidx)
		}
		msg = tp.ReLU(tp.Add(msg, et))
	}
	return tp.ScatterAdd(msg, dst, nodes)
}

// TestGINEComposed checks GINEAggregate against the same computation
// composed of backend-generic ops: values and gradients, with a per-class
// edge table, dense edge terms and no edge term.
func TestGINEComposed(t *testing.T) {
	r := tensor.NewRNG(5)
	src := []int32{0, 1, 2, 2, 3, 4, 0}
	dst := []int32{1, 0, 3, 4, 2, 2, 4}
	cls := []int32{0, 1, 1, 0, 2, 2, 1}
	for _, c := range []struct {
		name string
		rows int
		eidx []int32
	}{{"table", 3, cls}, {"dense", len(src), nil}, {"none", 0, nil}} {
		h0 := tensor.RandN(r, tensor.Float64, 5, 4)
		var e0 *tensor.Tensor
		if c.rows > 0 {
			e0 = tensor.RandN(r, tensor.Float64, c.rows, 4)
		}
		w := tensor.RandN(r, tensor.Float64, 5, 4)
		run := func(composed bool) (y, gh, ge []float64) {
			tp := NewTape()
			h := NewParam(h0.Clone())
			var e *Var
			if e0 != nil {
				e = NewParam(e0.Clone())
			}
			var out *Var
			if composed {
				out = tp.gineComposed(h, e, src, dst, c.eidx, 5)
			} else {
				out = tp.GINEAggregate(h, e, src, dst, c.eidx)
			}
			y = out.Value.Clone().Data64()
			tp.Backward(tp.SumAll(tp.Mul(out, NewConst(w))))
			gh = h.Grad.Clone().Data64()
			if e != nil {
				ge = e.Grad.Clone().Data64()
			}
			tp.Release()
			return y, gh, ge
		}
		y0, gh0, ge0 := run(false)
		y1, gh1, ge1 := run(true)
		assertClose(t, c.name+" value", y1, y0, 1e-12)
		assertClose(t, c.name+" dh", gh1, gh0, 1e-12)
		assertClose(t, c.name+" de", ge1, ge0, 1e-12)
	}
}
