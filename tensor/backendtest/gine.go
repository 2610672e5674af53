package backendtest

import (
	"fmt"
	"testing"

	"lgflow/tensor"
)

// gineGraph is an edge list for the GINE cases.
type gineGraph struct {
	name           string
	nodes, classes int
	src, dst, eidx []int32
}

// gineGraphs returns the graphs of the GINE cases: a small one with an
// isolated node, a self loop and repeated edges, one without edges, and a
// large random one (classes of more than ClassTileEdges edges each).
func gineGraphs(r *tensor.RNG) []gineGraph {
	small := gineGraph{name: "small", nodes: 6, classes: 3,
		src:  []int32{0, 1, 2, 2, 3, 0, 0, 3, 3, 1, 1},
		dst:  []int32{1, 0, 3, 3, 2, 1, 2, 3, 0, 5, 5},
		eidx: []int32{0, 1, 2, 2, 0, 0, 1, 1, 2, 0, 0}}
	empty := gineGraph{name: "no edges", nodes: 3, classes: 2, src: []int32{}, dst: []int32{}, eidx: []int32{}}
	const n, e = 300, 2000
	big := gineGraph{name: "large", nodes: n, classes: 4, src: randIdx(r, e, n), dst: randIdx(r, e, n-7), eidx: randIdx(r, e, 4)}
	return []gineGraph{small, empty, big}
}

// gineEdgeTerms returns the edge-term cases of g: none, dense (one row per
// edge) and a per-class table, with the index each needs.
func gineEdgeTerms(t *testing.T, r *tensor.RNG, dt tensor.DType, g gineGraph, f int) []struct {
	name string
	e    *tensor.Tensor
	idx  *tensor.EdgeIndex
} {
	t.Helper()
	plain, err := tensor.NewEdgeIndex(g.src, g.dst, nil, g.nodes, 0)
	if err != nil {
		t.Fatal(err)
	}
	cls, err := tensor.NewEdgeIndex(g.src, g.dst, g.eidx, g.nodes, g.classes)
	if err != nil {
		t.Fatal(err)
	}
	return []struct {
		name string
		e    *tensor.Tensor
		idx  *tensor.EdgeIndex
	}{
		{"e nil", nil, plain},
		{"dense e", rand(r, dt, -1, 1, len(g.src), f), plain},
		{"class table", rand(r, dt, -1, 1, g.classes, f), cls},
		{"dense e flipped", rand(r, dt, -1, 1, len(g.src), f), plain.Flip()},
		{"class table flipped", rand(r, dt, -1, 1, g.classes, f), cls.Flip()},
	}
}

// offsetView returns a contiguous copy of x on the backend that starts at a
// non-zero offset of its storage.
func (s *suite) offsetView(x *tensor.Tensor) *tensor.Tensor {
	shape := append([]int(nil), x.Shape()...)
	shape[0] += 2
	w := tensor.NewOn(s.b, x.DType(), shape...).Fill(55)
	v := w.Slice(0, 1, 1+x.Dim(0))
	tensor.Copy(v, x)
	return v
}

func testGINEAggregate(t *testing.T, s *suite) {
	r := tensor.NewRNG(31)
	for _, dt := range dtypes {
		for _, g := range gineGraphs(r) {
			for _, f := range []int{1, 5, 40} {
				h := rand(r, dt, -1, 1, g.nodes, f)
				for _, c := range gineEdgeTerms(t, r, dt, g, f) {
					what := fmt.Sprintf("GINEAggregate %v %s F=%d %s", dt, g.name, f, c.name)
					want := tensor.GINEAggregate(nil, h, c.e, c.idx)
					var e *tensor.Tensor
					if c.e != nil {
						e = s.on(c.e)
					}
					s.check(t, what, tensor.GINEAggregate(nil, s.on(h), e, c.idx), want, tolFor(dt, kReduce))
					// Offset and strided operands; out is overwritten.
					if c.e != nil {
						e = s.offsetView(c.e)
					}
					out := s.stridedDst(dt, g.nodes, f).Fill(3)
					s.check(t, what+" offset operands, strided out", tensor.GINEAggregate(out, s.offsetView(h), e, c.idx), want, tolFor(dt, kReduce))
					if f > 1 {
						s.check(t, what+" transposed h", tensor.GINEAggregate(nil, s.on(h.T()).T(), e, c.idx), want, tolFor(dt, kReduce))
					}
				}
			}
		}
	}
}

func testGINEAggregateBackward(t *testing.T, s *suite) {
	r := tensor.NewRNG(32)
	for _, dt := range dtypes {
		for _, g := range gineGraphs(r) {
			for _, f := range []int{1, 5, 40} {
				h := rand(r, dt, -1, 1, g.nodes, f)
				gout := rand(r, dt, -1, 1, g.nodes, f)
				for _, c := range gineEdgeTerms(t, r, dt, g, f) {
					// Accumulating into non-zero gradients, both wanted or one of them.
					dh0 := rand(r, dt, -1, 1, g.nodes, f)
					var de0 *tensor.Tensor
					if c.e != nil {
						de0 = rand(r, dt, -1, 1, c.e.Shape()...)
					}
					for _, want := range []struct {
						name   string
						dh, de bool
					}{{"dh and de", true, true}, {"dh", true, false}, {"de", false, true}} {
						if c.e == nil && !want.dh {
							continue
						}
						what := fmt.Sprintf("GINEAggregateBackward %v %s F=%d %s, %s", dt, g.name, f, c.name, want.name)
						var wdh, wde, gdh, gde, e *tensor.Tensor
						if want.dh {
							wdh, gdh = dh0.Clone(), s.offsetView(dh0)
						}
						if want.de && c.e != nil {
							wde, gde = de0.Clone(), s.offsetView(de0)
						}
						if c.e != nil {
							e = s.offsetView(c.e)
						}
						tensor.GINEAggregateBackward(wdh, wde, gout, h, c.e, c.idx)
						tensor.GINEAggregateBackward(gdh, gde, s.offsetView(gout), s.offsetView(h), e, c.idx)
						if wdh != nil {
							s.check(t, what+": dh", gdh, wdh, tolFor(dt, kReduce))
						}
						if wde != nil {
							// A per-class table sums many edges per row, in
							// the working precision and an order of the
							// backend's choosing.
							tl := tolFor(dt, kReduce)
							if c.idx.Classes() != nil {
								tl = sumTol(dt, len(g.src))
							}
							s.check(t, what+": de", gde, wde, tl)
						}
					}
					// A strided dh.
					if f > 1 {
						wdh := dh0.Clone()
						tensor.GINEAggregateBackward(wdh, nil, gout, h, c.e, c.idx)
						gdh := s.on(dh0.T()).T()
						var e *tensor.Tensor
						if c.e != nil {
							e = s.on(c.e)
						}
						tensor.GINEAggregateBackward(gdh, nil, s.on(gout), s.on(h), e, c.idx)
						s.check(t, fmt.Sprintf("GINEAggregateBackward %v %s F=%d %s: transposed dh", dt, g.name, f, c.name), gdh, wdh, tolFor(dt, kReduce))
					}
				}
			}
		}
	}
}

// sumTol is the tolerance of sums of up to n terms of magnitude up to
// about 1 accumulated in dt in different orders.
func sumTol(dt tensor.DType, n int) tol {
	if dt == tensor.Float64 {
		return tol{1e-13, 2e-16 * float64(n+1)}
	}
	return tol{1e-5, 4e-8 * float64(n+1)}
}
