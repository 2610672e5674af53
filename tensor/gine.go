package tensor

import (
	"fmt"
	"sync"
)

// EdgeIndex is an edge list prepared for GINEAggregate: edge k goes from
// node Src()[k] to node Dst()[k] of a set of Nodes() nodes, and, when the
// index has classes, reads row Classes()[k] of a per-class edge table.
// NewEdgeIndex checks the indices once, so the ops that take an EdgeIndex do
// not check them again.
//
// The groupings a GPU backend needs (ByDst, BySrc, ByClass) are computed on
// the host on first use, and a backend keeps its device copy of them in the
// index (DeviceCache): a batch's index is built and uploaded once, then
// shared by every layer and by the backward pass. An index and its Flip
// share all of this. An EdgeIndex is safe for concurrent use; the slices it
// was built from must not be modified while it is in use.
type EdgeIndex struct {
	d   *edgeData
	rev bool // this view swaps the edges' directions
}

// edgeData is what an EdgeIndex and its Flip share.
type edgeData struct {
	nodes, classes int
	src, dst, eidx []int32
	views          [2]EdgeIndex // [0] as built, [1] flipped

	once    [3]sync.Once
	csr     [2]EdgeCSR // by destination, by source (as built)
	byClass ClassTiles

	mu  sync.Mutex
	dev []devCopy
}

type devCopy struct {
	b Backend
	v any
}

// NewEdgeIndex returns the index of the edges src[k] → dst[k] over nodes
// nodes. eidx, when not nil, gives each edge's row of a per-class edge
// table of classes rows; without eidx, classes must be 0 and an op's edge
// term is either absent or dense (one row per edge). It returns an error
// wrapping ErrShape for slices of different lengths and ErrIndex for an
// index out of range.
func NewEdgeIndex(src, dst, eidx []int32, nodes, classes int) (*EdgeIndex, error) {
	switch {
	case len(src) != len(dst):
		return nil, fmt.Errorf("tensor.NewEdgeIndex: %d sources and %d destinations: %w", len(src), len(dst), ErrShape)
	case eidx != nil && len(eidx) != len(src):
		return nil, fmt.Errorf("tensor.NewEdgeIndex: %d edge classes for %d edges: %w", len(eidx), len(src), ErrShape)
	case eidx == nil && classes != 0:
		return nil, fmt.Errorf("tensor.NewEdgeIndex: %d classes without edge classes: %w", classes, ErrShape)
	case nodes < 0 || classes < 0:
		return nil, fmt.Errorf("tensor.NewEdgeIndex: %d nodes, %d classes: %w", nodes, classes, ErrShape)
	case len(src) > 1<<31-1:
		return nil, fmt.Errorf("tensor.NewEdgeIndex: %d edges: %w", len(src), ErrShape)
	}
	for _, c := range [...]struct {
		what string
		idx  []int32
		n    int
	}{{"source", src, nodes}, {"destination", dst, nodes}, {"class", eidx, classes}} {
		for k, v := range c.idx {
			if v < 0 || int(v) >= c.n {
				return nil, fmt.Errorf("tensor.NewEdgeIndex: %s %d of edge %d out of range [0, %d): %w", c.what, v, k, c.n, ErrIndex)
			}
		}
	}
	d := &edgeData{nodes: nodes, classes: classes, src: src, dst: dst, eidx: eidx}
	d.views[0] = EdgeIndex{d: d}
	d.views[1] = EdgeIndex{d: d, rev: true}
	return &d.views[0], nil
}

// Flip returns the index of the reversed edges (Src and Dst swapped, the
// same classes), sharing g's groupings and device copies. g.Flip().Flip()
// is g.
func (g *EdgeIndex) Flip() *EdgeIndex {
	if g.rev {
		return &g.d.views[0]
	}
	return &g.d.views[1]
}

// Flipped reports whether g is the Flip of the index NewEdgeIndex built.
func (g *EdgeIndex) Flipped() bool { return g.rev }

// Nodes returns the number of nodes.
func (g *EdgeIndex) Nodes() int { return g.d.nodes }

// Len returns the number of edges.
func (g *EdgeIndex) Len() int { return len(g.d.src) }

// Src returns each edge's source node.
func (g *EdgeIndex) Src() []int32 {
	if g.rev {
		return g.d.dst
	}
	return g.d.src
}

// Dst returns each edge's destination node.
func (g *EdgeIndex) Dst() []int32 {
	if g.rev {
		return g.d.src
	}
	return g.d.dst
}

// Classes returns each edge's row of the per-class edge table, or nil for
// an index without classes.
func (g *EdgeIndex) Classes() []int32 { return g.d.eidx }

// NumClasses returns the rows of the per-class edge table (0 without
// classes).
func (g *EdgeIndex) NumClasses() int { return g.d.classes }

// EdgeCSR lists the edges of an EdgeIndex grouped by one of their
// endpoints, the key: the edges of key node i are at positions Ptr[i] to
// Ptr[i+1]-1 (len(Ptr) = Nodes()+1), in increasing edge number. At position
// p, Other[p] is the edge's other endpoint and Row[p] its row of the edge
// term (its class, or its edge number for an index without classes).
type EdgeCSR struct {
	Ptr, Other, Row []int32
}

// ByDst returns the edges grouped by destination: Other holds their
// sources. GINEAggregate sums each node's row over these.
func (g *EdgeIndex) ByDst() EdgeCSR {
	w := 0
	if g.rev {
		w = 1
	}
	return g.d.csrOf(w)
}

// BySrc returns the edges grouped by source: Other holds their
// destinations (the grouping of GINEAggregateBackward's dh).
func (g *EdgeIndex) BySrc() EdgeCSR {
	w := 1
	if g.rev {
		w = 0
	}
	return g.d.csrOf(w)
}

// csrOf returns the grouping by destination (w = 0) or source (w = 1) of
// the index as built.
func (d *edgeData) csrOf(w int) EdgeCSR {
	d.once[w].Do(func() {
		key, other := d.dst, d.src
		if w == 1 {
			key, other = d.src, d.dst
		}
		ptr := make([]int32, d.nodes+1)
		for _, v := range key {
			ptr[v+1]++
		}
		for i := range d.nodes {
			ptr[i+1] += ptr[i]
		}
		pos := make([]int32, d.nodes)
		copy(pos, ptr[:d.nodes])
		o, r := make([]int32, len(key)), make([]int32, len(key))
		for k, v := range key {
			p := pos[v]
			pos[v]++
			o[p] = other[k]
			if d.eidx != nil {
				r[p] = d.eidx[k]
			} else {
				r[p] = int32(k)
			}
		}
		d.csr[w] = EdgeCSR{Ptr: ptr, Other: o, Row: r}
	})
	return d.csr[w]
}

// ClassTileEdges is the most edges a tile of ClassTiles holds.
const ClassTileEdges = 32

// ClassTiles groups the edges of an index with classes by class, for
// summing per-class gradients in parallel in a fixed order: the edges
// sorted by class (stably) are cut into tiles of at most ClassTileEdges
// consecutive edges of one class. Src and Dst are the endpoints in that
// order; tile t holds positions Lo[t] to Lo[t+1]-1 of class Class[t]; the
// tiles of class c are Ptr[c] to Ptr[c+1]-1 (len(Ptr) = NumClasses()+1).
type ClassTiles struct {
	Src, Dst, Lo, Class, Ptr []int32
}

// ByClass returns the edges grouped by class in tiles (all empty for an
// index without classes).
func (g *EdgeIndex) ByClass() ClassTiles {
	d := g.d
	d.once[2].Do(func() {
		if d.eidx == nil {
			return
		}
		cnt := make([]int32, d.classes+1)
		for _, c := range d.eidx {
			cnt[c+1]++
		}
		tiles := 0
		for c := range d.classes {
			tiles += (int(cnt[c+1]) + ClassTileEdges - 1) / ClassTileEdges
			cnt[c+1] += cnt[c]
		}
		ct := ClassTiles{Src: make([]int32, len(d.eidx)), Dst: make([]int32, len(d.eidx)),
			Lo: make([]int32, 0, tiles+1), Class: make([]int32, 0, tiles), Ptr: make([]int32, d.classes+1)}
		pos := make([]int32, d.classes)
		copy(pos, cnt[:d.classes])
		for k, c := range d.eidx {
			ct.Src[pos[c]], ct.Dst[pos[c]] = d.src[k], d.dst[k]
			pos[c]++
		}
		for c := range d.classes {
			ct.Ptr[c] = int32(len(ct.Class))
			for lo := cnt[c]; lo < cnt[c+1]; lo += ClassTileEdges {
				ct.Lo = append(ct.Lo, lo)
				ct.Class = append(ct.Class, int32(c))
			}
		}
		ct.Ptr[d.classes] = int32(len(ct.Class))
		ct.Lo = append(ct.Lo, int32(len(d.eidx)))
		d.byClass = ct
	})
	ct := g.d.byClass
	if g.rev {
		ct.Src, ct.Dst = ct.Dst, ct.Src
	}
	return ct
}

// DeviceCache returns the value backend b keeps for this index (its device
// copy of the groupings), calling build to make it on b's first request.
// The value is shared by the index and its Flip, so build must describe
// the index as built (g.Flipped() false: use g.Flip() when it is true) and
// users must swap the directions for a flipped view. A value with a
// Release() method is released by EdgeIndex.Release; a backend should also
// free its memory when the value becomes unreachable.
func (g *EdgeIndex) DeviceCache(b Backend, build func() any) any {
	d := g.d
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.dev {
		if c.b == b {
			return c.v
		}
	}
	v := build()
	d.dev = append(d.dev, devCopy{b: b, v: v})
	return v
}

// Release frees the backends' copies of the index (and of its Flip) at
// once instead of when the index becomes unreachable. The index may still
// be used: a backend uploads it again.
func (g *EdgeIndex) Release() {
	d := g.d
	d.mu.Lock()
	dev := d.dev
	d.dev = nil
	d.mu.Unlock()
	for _, c := range dev {
		if r, ok := c.v.(interface{ Release() }); ok {
			r.Release()
		}
	}
}

// checkGINE validates the operands of the GINE ops.
func checkGINE(name string, h, e *Tensor, g *EdgeIndex) {
	if g == nil {
		fail(ErrShape, name, "nil EdgeIndex")
	}
	if len(h.shape) != 2 || h.shape[0] != g.d.nodes {
		fail(ErrShape, name, "h shape %v for %d nodes", h.shape, g.d.nodes)
	}
	if e == nil {
		return
	}
	sameDType(name, h.dtype, e)
	rows := g.Len()
	if g.d.eidx != nil {
		rows = g.d.classes
	}
	if len(e.shape) != 2 || e.shape[0] != rows || e.shape[1] != h.shape[1] {
		fail(ErrShape, name, "edge term shape %v for h %v and %d edge rows", e.shape, h.shape, rows)
	}
}

// GINEAggregate sets out to the neighbourhood sum of GIN/GINE message
// passing over the edges of g:
//
//	out[i] = Σ_{k: dst[k]=i} ReLU(h[src[k]] + e[ek]),   ek = g.Classes()[k], or k without classes
//
// h is (nodes, F); e is the (edges, F) dense edge term, the (classes, F)
// per-class table of an index with classes, or nil: then out[i] =
// Σ h[src[k]], the plain GIN sum without ReLU. The (edges, F) messages are
// never materialised. Every node sums its edges in increasing k, so the
// result does not depend on the backend beyond rounding of the additions
// (which on the CPU and the CUDA backend is the same). out has h's shape;
// nil allocates. out is returned.
func GINEAggregate(out, h, e *Tensor, g *EdgeIndex) *Tensor {
	const name = "GINEAggregate"
	be := pickBackend(name, out, h, e)
	checkGINE(name, h, e, g)
	if out == nil {
		out = EmptyOn(be, h.dtype, h.shape...)
	} else {
		wantShape(name, "out", out, h.dtype, h.shape)
	}
	if out.Size() == 0 {
		return out
	}
	h, e = h.Contiguous(), e.contiguousOrNil()
	o := out
	if !o.IsContiguous() {
		o = EmptyOn(be, out.dtype, out.shape...)
	}
	be.GINEAggregate(o, h, e, g)
	if o != out {
		Copy(out, o)
	}
	return out
}

// GINEAggregateBackward accumulates the gradients of GINEAggregate(h, e, g)
// given gout, the gradient of its result: with mask = [h[src[k]] + e[ek]
// has a clear sign bit] (recomputed, as ReLU's derivative),
//
//	dh[src[k]] += gout[dst[k]] ⊙ mask,   de[ek] += gout[dst[k]] ⊙ mask
//
// (dh[src[k]] += gout[dst[k]] when e is nil). dh and de, of h's and e's
// shapes, accumulate (zero them first for the gradient alone); either may
// be nil when not wanted. dh is summed per node in increasing k; de, for a
// per-class table, in an order of the backend's choosing.
func GINEAggregateBackward(dh, de, gout, h, e *Tensor, g *EdgeIndex) {
	const name = "GINEAggregateBackward"
	be := pickBackend(name, dh, de, gout, h, e)
	checkGINE(name, h, e, g)
	wantShape(name, "gout", gout, h.dtype, h.shape)
	if dh != nil {
		wantShape(name, "dh", dh, h.dtype, h.shape)
	}
	if de != nil {
		if e == nil {
			fail(ErrShape, name, "de without an edge term")
		}
		wantShape(name, "de", de, e.dtype, e.shape)
	}
	if (dh == nil && de == nil) || h.Size() == 0 || g.Len() == 0 {
		return
	}
	gout, h, e = gout.Contiguous(), h.Contiguous(), e.contiguousOrNil()
	dhc, dec := dh.contiguousOrNil(), de.contiguousOrNil()
	be.GINEAggregateBackward(dhc, dec, gout, h, e, g)
	if dhc != dh {
		Copy(dh, dhc)
	}
	if dec != de {
		Copy(de, dec)
	}
}

// contiguousOrNil is Contiguous for an optional tensor.
func (t *Tensor) contiguousOrNil() *Tensor {
	if t == nil {
		return nil
	}
	return t.Contiguous()
}
