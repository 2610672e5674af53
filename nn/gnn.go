package nn

import (
	"fmt"
	"math"

	"lgflow/autograd"
	"lgflow/tensor"
)

// Edges is a batch of directed edges over the node rows of a batch of
// concatenated graphs: edge k goes from node Src[k] to node Dst[k], and
// messages flow along it to Dst[k]. An undirected graph lists both
// directions.
type Edges struct {
	Src, Dst []int32
	// Index, when not nil, is the same edges prepared for the fused
	// aggregation (see Indexed), checked once and, on a GPU backend,
	// uploaded once and shared by every layer that takes these Edges (or
	// their Flip) and by the backward pass. GINConv always uses it;
	// GINEConv when it matches the layer's edge input: an index with
	// classes for a layer built for classes (built from the
	// EdgeFeatures.Classes the layer is given), one without for dense
	// features. Otherwise the layers index Src and Dst on every call.
	Index *tensor.EdgeIndex
}

// Flip returns the edges reversed (sharing the slices and the index).
func (e Edges) Flip() Edges {
	f := Edges{Src: e.Dst, Dst: e.Src}
	if e.Index != nil {
		f.Index = e.Index.Flip()
	}
	return f
}

// Indexed returns e with Index set to the index of its edges over nodes
// nodes (tensor.NewEdgeIndex): with classes, each edge's class among
// numClasses, for GINE layers built for edge classes (classes nil and
// numClasses 0 for dense or no edge features). Build it once per batch and
// pass the result to every layer; it returns an error for an index out of
// range or slices of different lengths.
func (e Edges) Indexed(nodes int, classes []int32, numClasses int) (Edges, error) {
	g, err := tensor.NewEdgeIndex(e.Src, e.Dst, classes, nodes, numClasses)
	if err != nil {
		return e, err
	}
	e.Index = g
	return e, nil
}

// Len returns the number of edges.
func (e Edges) Len() int { return len(e.Src) }

// EdgeFeatures carries per-edge inputs of a GINE convolution: either Attr,
// dense features (E, F), or Classes, one categorical class per edge. A
// convolution built for classes looks its edge term up in a table, so
// nothing per edge is computed but the index.
type EdgeFeatures struct {
	Attr    *autograd.Var
	Classes []int32
}

// EdgeSpec says what edge input a GINE convolution takes: Dim > 0 for dense
// features of width Dim (edge term W_e·e + b_e, a Linear), Classes > 0 for
// categorical edges (edge term a learned (Classes, in) table, an Embedding;
// equivalent to a Linear on one-hot classes), or both (the table's row plus
// a Linear without bias of the dense features: a molecule's bond type and
// its conjugation and ring memberships).
type EdgeSpec struct {
	Dim     int
	Classes int
}

// GINConv is the graph isomorphism convolution with ε = 0:
//
//	out_i = MLP(h_i + Σ_{j→i} h_j).
//
// Parameter names: "mlp.*".
type GINConv struct {
	MLP *MLP
}

// NewGINConv returns a GINConv whose MLP is in → out → out with GELU between
// (WithActivation changes it). Options apply to the MLP's Linear layers.
func NewGINConv(r *tensor.RNG, in, out int, opts ...Option) *GINConv {
	o := buildOptions(opts)
	if !o.actSet {
		o.act = GELU
	}
	return &GINConv{MLP: newMLP(r, []int{in, out, out}, o)}
}

// Forward returns the convolution of node features h (nodes, in) over e.
func (c *GINConv) Forward(tp *autograd.Tape, h *autograd.Var, e Edges) *autograd.Var {
	var agg *autograd.Var
	if e.Index != nil {
		agg = tp.GINEAggregateIndexed(h, nil, e.Index)
	} else {
		agg = tp.GINEAggregate(h, nil, e.Src, e.Dst, nil)
	}
	return c.MLP.Forward(tp, tp.Add(h, agg))
}

// Params returns "mlp.*".
func (c *GINConv) Params() []Param { return ParamsOf("mlp", c.MLP) }

// GINEConv is the GIN convolution with edge features (Hu et al.), ε = 0:
//
//	out_i = MLP(h_i + Σ_{j→i} ReLU(h_j + W_e·e_ji + b_e)).
//
// The edge term comes from EdgeLin (dense features), EdgeEmb (edge
// classes) or both. The neighbourhood sum is one fused kernel
// (autograd.GINEAggregate). Parameter names: "mlp.*", "edge.*", and
// "edge_attr.*" for the dense features' Linear of a convolution that has
// both.
type GINEConv struct {
	MLP     *MLP
	EdgeLin *Linear
	EdgeEmb *Embedding
}

// NewGINEConv returns a GINEConv in → out with MLP in → out → out (GELU
// between, WithActivation changes it) and the edge term given by edge.
// Options apply to every Linear and Embedding. The edge table of a
// categorical convolution is initialised like a Linear's bias plus weight
// column (uniform ±1/√Classes) unless WithNormalInit is given.
func NewGINEConv(r *tensor.RNG, in, out int, edge EdgeSpec, opts ...Option) *GINEConv {
	o := buildOptions(opts)
	if !o.actSet {
		o.act = GELU
	}
	c := &GINEConv{MLP: newMLP(r, []int{in, out, out}, o)}
	switch {
	case edge.Dim > 0 && edge.Classes > 0:
		c.EdgeEmb = newEdgeTable(r, edge.Classes, in, o)
		lo := o
		lo.bias = false
		c.EdgeLin = newLinear(r, edge.Dim, in, lo)
	case edge.Dim > 0:
		c.EdgeLin = newLinear(r, edge.Dim, in, o)
	case edge.Classes > 0:
		c.EdgeEmb = newEdgeTable(r, edge.Classes, in, o)
	default:
		panic(fmt.Sprintf("nn.NewGINEConv: edge spec %+v sets neither Dim nor Classes", edge))
	}
	return c
}

// newEdgeTable returns the (classes, in) edge table of a categorical GINE
// convolution.
func newEdgeTable(r *tensor.RNG, classes, in int, o options) *Embedding {
	w := tensor.New(o.dtype, classes, in)
	if o.normalInit {
		tensor.FillNormal(w, r, 0, o.std)
	} else {
		// W_e·onehot(c) + b_e of a Linear(Classes → in) with PyTorch's init:
		// a uniform weight column plus a uniform bias.
		bound := 1 / math.Sqrt(float64(classes))
		tensor.FillUniform(w, r, -bound, bound)
		b := tensor.FillUniform(tensor.New(o.dtype, 1, in), r, -bound, bound)
		tensor.Add(w, w, b)
	}
	return &Embedding{W: autograd.NewParam(w), Num: classes, Dim: in}
}

// edgeTerm returns the (E, in) edge term or the (Classes, in) table with its
// per-edge indices.
func (c *GINEConv) edgeTerm(tp *autograd.Tape, e Edges, f EdgeFeatures) (*autograd.Var, []int32) {
	switch {
	case c.EdgeLin != nil && c.EdgeEmb != nil:
		if f.Classes == nil && e.Len() > 0 || f.Attr == nil {
			panic("nn.GINEConv: built for edge classes and dense features but EdgeFeatures lacks Classes or Attr")
		}
		if f.Attr.Rank() != 2 || f.Attr.Dim(0) != e.Len() || len(f.Classes) != e.Len() {
			panic(fmt.Sprintf("nn.GINEConv: edge features %v and %d classes for %d edges", f.Attr.Shape(), len(f.Classes), e.Len()))
		}
		return tp.Add(tp.Gather(c.EdgeEmb.W, f.Classes), c.EdgeLin.Forward(tp, f.Attr)), nil
	case c.EdgeLin != nil:
		if f.Attr == nil {
			panic("nn.GINEConv: built for dense edge features (EdgeSpec.Dim) but EdgeFeatures.Attr is nil")
		}
		if f.Attr.Rank() != 2 || f.Attr.Dim(0) != e.Len() {
			panic(fmt.Sprintf("nn.GINEConv: edge features %v for %d edges", f.Attr.Shape(), e.Len()))
		}
		return c.EdgeLin.Forward(tp, f.Attr), nil
	case c.EdgeEmb != nil:
		if f.Classes == nil && e.Len() > 0 {
			panic("nn.GINEConv: built for edge classes (EdgeSpec.Classes) but EdgeFeatures.Classes is nil")
		}
		return c.EdgeEmb.W, f.Classes
	}
	panic("nn.GINEConv: no edge layer (EdgeLin or EdgeEmb)")
}

// Forward returns the convolution of node features h (nodes, in) over the
// edges e with edge inputs f.
func (c *GINEConv) Forward(tp *autograd.Tape, h *autograd.Var, e Edges, f EdgeFeatures) *autograd.Var {
	et, idx := c.edgeTerm(tp, e, f)
	var agg *autograd.Var
	if g := e.Index; g != nil && (idx != nil) == (g.Classes() != nil) {
		if idx != nil && len(idx) != len(g.Classes()) {
			panic(fmt.Sprintf("nn.GINEConv: %d edge classes for an index of %d", len(idx), len(g.Classes())))
		}
		agg = tp.GINEAggregateIndexed(h, et, g)
	} else {
		agg = tp.GINEAggregate(h, et, e.Src, e.Dst, idx)
	}
	return c.MLP.Forward(tp, tp.Add(h, agg))
}

// Params returns "mlp.*" and "edge.*".
func (c *GINEConv) Params() []Param {
	ps := ParamsOf("mlp", c.MLP)
	switch {
	case c.EdgeLin != nil && c.EdgeEmb != nil:
		ps = append(ps, ParamsOf("edge", c.EdgeEmb)...)
		ps = append(ps, ParamsOf("edge_attr", c.EdgeLin)...)
	case c.EdgeLin != nil:
		ps = append(ps, ParamsOf("edge", c.EdgeLin)...)
	case c.EdgeEmb != nil:
		ps = append(ps, ParamsOf("edge", c.EdgeEmb)...)
	}
	return ps
}

// DirGNN runs two independent GINE convolutions on a directed graph, one over
// in-neighbours and one over out-neighbours, plus a root linear map (PyG's
// DirGNNConv with root_weight=True):
//
//	out = Alpha·ConvOut(h, flipped edges) + (1 − Alpha)·ConvIn(h, edges) + Root(h)
//
// with Alpha = 0.5. Parameter names: "conv_in.*", "conv_out.*", "root.*".
type DirGNN struct {
	ConvIn, ConvOut *GINEConv
	Root            *Linear
	Alpha           float64
}

// NewDirGNN returns a DirGNN in → out whose convolutions are
// NewGINEConv(r, in, out, edge, opts...) and root a Linear in → out with bias.
func NewDirGNN(r *tensor.RNG, in, out int, edge EdgeSpec, opts ...Option) *DirGNN {
	o := buildOptions(opts)
	d := &DirGNN{
		ConvIn:  NewGINEConv(r, in, out, edge, opts...),
		ConvOut: NewGINEConv(r, in, out, edge, opts...),
		Alpha:   0.5,
	}
	o.bias = true
	d.Root = newLinear(r, in, out, o)
	return d
}

// Forward returns the directed convolution of h (nodes, in) over e (messages
// of ConvIn flow along Src → Dst, those of ConvOut along Dst → Src) with the
// same edge inputs f for both.
func (d *DirGNN) Forward(tp *autograd.Tape, h *autograd.Var, e Edges, f EdgeFeatures) *autograd.Var {
	in := d.ConvIn.Forward(tp, h, e, f)
	out := d.ConvOut.Forward(tp, h, e.Flip(), f)
	y := tp.Add(tp.MulScalar(out, d.Alpha), tp.MulScalar(in, 1-d.Alpha))
	return tp.Add(y, d.Root.Forward(tp, h))
}

// Params returns "conv_in.*", "conv_out.*" and "root.*".
func (d *DirGNN) Params() []Param {
	ps := ParamsOf("conv_in", d.ConvIn)
	ps = append(ps, ParamsOf("conv_out", d.ConvOut)...)
	return append(ps, ParamsOf("root", d.Root)...)
}
