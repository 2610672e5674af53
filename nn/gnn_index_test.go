package nn

import (
	"testing"

	"lgflow/autograd"
	"lgflow/tensor"
)

// TestEdgesIndexed checks that the graph layers give the same values and
// gradients, bit for bit, with the edges' index set (Edges.Indexed) as
// without: GINConv, GINEConv with classes and with dense features (whose
// layer ignores an index with classes), and DirGNN (which flips it).
func TestEdgesIndexed(t *testing.T) {
	r := tensor.NewRNG(9)
	const nodes = 8 // node 7 is isolated
	plain := Edges{Src: testSrc, Dst: testDst}
	withCls, err := plain.Indexed(nodes, testCls, 3)
	if err != nil {
		t.Fatal(err)
	}
	noCls, err := plain.Indexed(nodes, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Indexed(3, nil, 0); err == nil {
		t.Error("Indexed accepted nodes out of range")
	}
	attr := autograd.NewConst(tensor.RandN(r, tensor.Float64, len(testSrc), 3))
	type layer struct {
		name string
		m    Module
		fwd  func(tp *autograd.Tape, h *autograd.Var, e Edges) *autograd.Var
	}
	gin := NewGINConv(r, 4, 4, WithDType(tensor.Float64))
	gineC := NewGINEConv(r, 4, 4, EdgeSpec{Classes: 3}, WithDType(tensor.Float64))
	gineD := NewGINEConv(r, 4, 4, EdgeSpec{Dim: 3}, WithDType(tensor.Float64))
	dir := NewDirGNN(r, 4, 4, EdgeSpec{Classes: 3}, WithDType(tensor.Float64))
	for _, c := range []struct {
		layer
		idx Edges
	}{
		{layer{"GINConv", gin, func(tp *autograd.Tape, h *autograd.Var, e Edges) *autograd.Var { return gin.Forward(tp, h, e) }}, withCls},
		{layer{"GINEConv classes", gineC, func(tp *autograd.Tape, h *autograd.Var, e Edges) *autograd.Var {
			return gineC.Forward(tp, h, e, EdgeFeatures{Classes: testCls})
		}}, withCls},
		{layer{"GINEConv dense", gineD, func(tp *autograd.Tape, h *autograd.Var, e Edges) *autograd.Var {
			return gineD.Forward(tp, h, e, EdgeFeatures{Attr: attr})
		}}, noCls},
		{layer{"GINEConv dense, index with classes", gineD, func(tp *autograd.Tape, h *autograd.Var, e Edges) *autograd.Var {
			return gineD.Forward(tp, h, e, EdgeFeatures{Attr: attr})
		}}, withCls},
		{layer{"DirGNN", dir, func(tp *autograd.Tape, h *autograd.Var, e Edges) *autograd.Var {
			return dir.Forward(tp, h, e, EdgeFeatures{Classes: testCls})
		}}, withCls},
	} {
		h0 := tensor.RandN(r, tensor.Float64, nodes, 4)
		run := func(e Edges) []float64 {
			h := autograd.NewParam(h0.Clone())
			for _, p := range c.m.Params() {
				p.V.ZeroGrad()
			}
			tp := autograd.NewTape()
			defer tp.Release()
			y := c.fwd(tp, h, e)
			tp.Backward(tp.SumAll(tp.Mul(y, y)))
			out := append(y.Value.Clone().Data64(), h.Grad.Clone().Data64()...)
			for _, p := range c.m.Params() {
				out = append(out, p.V.Grad.Clone().Data64()...)
			}
			return out
		}
		want, got := run(plain), run(c.idx)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: value %d is %v with the index, %v without", c.name, i, got[i], want[i])
				break
			}
		}
	}
}
