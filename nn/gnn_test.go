package nn

import (
	"math"
	"testing"

	"lgflow/autograd"
	"lgflow/tensor"
)

// A small batch of two graphs (nodes 0-3 and 4-6), directed edges.
var (
	testSrc = []int32{0, 1, 2, 3, 0, 4, 5, 6, 2}
	testDst = []int32{1, 2, 3, 0, 2, 5, 6, 4, 1}
	testCls = []int32{0, 1, 2, 0, 1, 2, 0, 1, 1}
)

const testNodes = 7

// row returns row i of a contiguous (rows, cols) float64 tensor (shared).
func row(t *tensor.Tensor, i int) []float64 {
	c := t.Dim(1)
	return t.Data64()[i*c : (i+1)*c]
}

// naiveLinear computes W·x + b from the layer's values.
func naiveLinear(l *Linear, x []float64) []float64 {
	w := l.W.Value.Float64s()
	out := make([]float64, l.Out)
	for o := range out {
		for i, v := range x {
			out[o] += w[o*l.In+i] * v
		}
		if l.B != nil {
			out[o] += l.B.Value.Float64s()[o]
		}
	}
	return out
}

func gelu(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

func naiveMLP(m *MLP, x []float64) []float64 {
	for i, l := range m.Layers {
		if i > 0 {
			y := make([]float64, len(x))
			for j, v := range x {
				switch m.Act {
				case GELU:
					y[j] = gelu(v)
				case ReLU:
					y[j] = math.Max(v, 0)
				default:
					panic("naiveMLP: activation")
				}
			}
			x = y
		}
		x = naiveLinear(l, x)
	}
	return x
}

// naiveGINE evaluates out_i = MLP(h_i + Σ_{k: dst_k = i} ReLU(h_{src_k} + edge_k)) with plain loops.
func naiveGINE(c *GINEConv, h *tensor.Tensor, src, dst []int32, attr *tensor.Tensor, cls []int32) []float64 {
	n, f := h.Dim(0), h.Dim(1)
	var out []float64
	for i := 0; i < n; i++ {
		s := append([]float64(nil), row(h, i)...)
		for k := range src {
			if int(dst[k]) != i {
				continue
			}
			var et []float64
			if c.EdgeLin != nil {
				et = naiveLinear(c.EdgeLin, row(attr, k))
			} else {
				et = row(c.EdgeEmb.W.Value, int(cls[k]))
			}
			hj := row(h, int(src[k]))
			for t := 0; t < f; t++ {
				s[t] += math.Max(hj[t]+et[t], 0)
			}
		}
		out = append(out, naiveMLP(c.MLP, s)...)
	}
	return out
}

func TestGINEConvMatchesNaiveLoop(t *testing.T) {
	r := tensor.NewRNG(11)
	h := tensor.RandN(r, tensor.Float64, testNodes, 4)
	attr := tensor.RandN(r, tensor.Float64, len(testSrc), 3)
	e := Edges{Src: testSrc, Dst: testDst}
	for _, spec := range []EdgeSpec{{Dim: 3}, {Classes: 3}} {
		c := NewGINEConv(r, 4, 5, spec, f64)
		tp := autograd.NoGrad()
		got := c.Forward(tp, autograd.NewConst(h), e, EdgeFeatures{Attr: autograd.NewConst(attr), Classes: testCls})
		assertClose(t, "GINE", values(got), naiveGINE(c, h, testSrc, testDst, attr, testCls), 1e-12)
		tp.Release()
	}
	// GIN (no edge term, no ReLU on messages).
	g := NewGINConv(r, 4, 5, f64)
	tp := autograd.NoGrad()
	defer tp.Release()
	got := values(g.Forward(tp, autograd.NewConst(h), e))
	var want []float64
	for i := 0; i < testNodes; i++ {
		s := append([]float64(nil), row(h, i)...)
		for k := range testSrc {
			if int(testDst[k]) == i {
				for t, v := range row(h, int(testSrc[k])) {
					s[t] += v
				}
			}
		}
		want = append(want, naiveMLP(g.MLP, s)...)
	}
	assertClose(t, "GIN", got, want, 1e-12)
}

func TestDirGNNMatchesNaiveLoop(t *testing.T) {
	r := tensor.NewRNG(12)
	h := tensor.RandN(r, tensor.Float64, testNodes, 4)
	d := NewDirGNN(r, 4, 6, EdgeSpec{Classes: 3}, f64)
	tp := autograd.NoGrad()
	defer tp.Release()
	got := values(d.Forward(tp, autograd.NewConst(h), Edges{Src: testSrc, Dst: testDst}, EdgeFeatures{Classes: testCls}))
	in := naiveGINE(d.ConvIn, h, testSrc, testDst, nil, testCls)
	out := naiveGINE(d.ConvOut, h, testDst, testSrc, nil, testCls) // flipped: messages to the source
	want := make([]float64, len(in))
	for i := 0; i < testNodes; i++ {
		root := naiveLinear(d.Root, row(h, i))
		for j := 0; j < 6; j++ {
			want[i*6+j] = 0.5*out[i*6+j] + 0.5*in[i*6+j] + root[j]
		}
	}
	assertClose(t, "DirGNN", got, want, 1e-12)
	// The two directions really differ on a directed graph.
	same := true
	for i := range in {
		same = same && math.Abs(in[i]-out[i]) < 1e-9
	}
	if same {
		t.Fatal("in- and out-neighbour convolutions agree; test graph is not directed enough")
	}
}

func TestGINEPermutationEquivariance(t *testing.T) {
	r := tensor.NewRNG(13)
	h := tensor.RandN(r, tensor.Float64, testNodes, 4)
	c := NewGINEConv(r, 4, 5, EdgeSpec{Classes: 3}, f64)
	perm := []int{3, 6, 0, 5, 1, 4, 2} // new node p holds old node perm[p]
	inv := make([]int32, testNodes)
	for p, o := range perm {
		inv[o] = int32(p)
	}
	hp := tensor.New(tensor.Float64, testNodes, 4)
	for p, o := range perm {
		copy(row(hp, p), row(h, o))
	}
	// Relabel the edges and also shuffle their order.
	k := len(testSrc)
	src, dst, cls := make([]int32, k), make([]int32, k), make([]int32, k)
	for i := 0; i < k; i++ {
		j := (i*4 + 1) % k
		src[i], dst[i], cls[i] = inv[testSrc[j]], inv[testDst[j]], testCls[j]
	}
	tp := autograd.NoGrad()
	defer tp.Release()
	a := c.Forward(tp, autograd.NewConst(h), Edges{Src: testSrc, Dst: testDst}, EdgeFeatures{Classes: testCls}).Value
	b := c.Forward(tp, autograd.NewConst(hp), Edges{Src: src, Dst: dst}, EdgeFeatures{Classes: cls}).Value
	for p, o := range perm {
		assertClose(t, "equivariance", row(b, p), row(a, o), 1e-12)
	}
}

func TestGNNGradients(t *testing.T) {
	r := tensor.NewRNG(14)
	e := Edges{Src: testSrc, Dst: testDst}
	cases := []struct {
		name string
		m    Module
		fwd  func(tp *autograd.Tape, h, attr *autograd.Var) *autograd.Var
	}{}
	gd := NewGINEConv(r, 3, 4, EdgeSpec{Dim: 2}, f64)
	cases = append(cases, struct {
		name string
		m    Module
		fwd  func(tp *autograd.Tape, h, attr *autograd.Var) *autograd.Var
	}{"GINEDense", gd, func(tp *autograd.Tape, h, attr *autograd.Var) *autograd.Var {
		return gd.Forward(tp, h, e, EdgeFeatures{Attr: attr})
	}})
	gc := NewGINEConv(r, 3, 4, EdgeSpec{Classes: 3}, f64)
	cases = append(cases, struct {
		name string
		m    Module
		fwd  func(tp *autograd.Tape, h, attr *autograd.Var) *autograd.Var
	}{"GINEClasses", gc, func(tp *autograd.Tape, h, _ *autograd.Var) *autograd.Var {
		return gc.Forward(tp, h, e, EdgeFeatures{Classes: testCls})
	}})
	gb := NewGINEConv(r, 3, 4, EdgeSpec{Classes: 3, Dim: 2}, f64)
	cases = append(cases, struct {
		name string
		m    Module
		fwd  func(tp *autograd.Tape, h, attr *autograd.Var) *autograd.Var
	}{"GINEClassesAndDense", gb, func(tp *autograd.Tape, h, attr *autograd.Var) *autograd.Var {
		return gb.Forward(tp, h, e, EdgeFeatures{Classes: testCls, Attr: attr})
	}})
	gin := NewGINConv(r, 3, 4, f64)
	cases = append(cases, struct {
		name string
		m    Module
		fwd  func(tp *autograd.Tape, h, attr *autograd.Var) *autograd.Var
	}{"GIN", gin, func(tp *autograd.Tape, h, _ *autograd.Var) *autograd.Var { return gin.Forward(tp, h, e) }})
	dg := NewDirGNN(r, 3, 4, EdgeSpec{Dim: 2}, f64)
	cases = append(cases, struct {
		name string
		m    Module
		fwd  func(tp *autograd.Tape, h, attr *autograd.Var) *autograd.Var
	}{"DirGNN", dg, func(tp *autograd.Tape, h, attr *autograd.Var) *autograd.Var {
		return dg.Forward(tp, h, e, EdgeFeatures{Attr: attr})
	}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := autograd.NewParam(tensor.RandN(r, tensor.Float64, testNodes, 3))
			attr := autograd.NewParam(tensor.RandN(r, tensor.Float64, len(testSrc), 2))
			params := []*autograd.Var{h, attr}
			for _, p := range c.m.Params() {
				params = append(params, p.V)
			}
			f := func(tp *autograd.Tape) *autograd.Var { return c.fwd(tp, h, attr) }
			if err := autograd.CheckGrad(f, params, 1e-6, 1e-5); err != nil {
				t.Fatal(err)
			}
		})
	}
}
