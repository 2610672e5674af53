package graph

import "fmt"

// Batch packs graphs of different sizes into one concatenated graph, the
// layout message-passing code uses, and converts between it and the dense
// padded layout (B, MaxN, ...) that attention and decoders use.
//
// Graph b owns the concatenated nodes NodeOffset[b] .. NodeOffset[b+1]-1
// and the edge pairs EdgeOffset[b] .. EdgeOffset[b+1]-1. In the padded
// layout node i of graph b sits in row b*MaxN + i.
type Batch struct {
	// Graphs are the packed graphs (not copied; do not modify them while
	// the batch is in use).
	Graphs []*Graph
	// NodeOffset has B+1 entries: the first concatenated node of each graph
	// and, last, the total number of nodes.
	NodeOffset []int
	// NodeGraph holds, for every concatenated node, its graph index.
	NodeGraph []int32
	// EdgeOffset has B+1 entries delimiting each graph's edge pairs.
	EdgeOffset []int
	// Src and Dst are the edge pairs in concatenated numbering, as
	// Graph.EdgeIndex gives them (both directions for undirected graphs).
	Src, Dst []int32
	// EdgeLabels holds the label of every pair (0 when unlabelled).
	EdgeLabels []int32
	// NodeLabels holds every node's label, or is nil when no graph has
	// node labels (graphs without labels then contribute 0).
	NodeLabels []int32
	// MaxN is the largest graph's node count: the padded width.
	MaxN int
	// NodeAttrs (NumNodes × NodeAttrDim) and EdgeAttrs (NumPairs ×
	// EdgeAttrDim, both directions of an undirected edge alike) hold the
	// graphs' Attrs as numbers, row-major; they are nil unless every graph
	// has Attrs of the same widths (widths 0 give nil too).
	NodeAttrs, EdgeAttrs     []float32
	NodeAttrDim, EdgeAttrDim int
}

// NewBatch packs gs (see Batch). It copies the graphs' structure into
// flat arrays; the graphs themselves are referenced, not copied.
func NewBatch(gs []*Graph) *Batch {
	b := &Batch{Graphs: gs, NodeOffset: make([]int, len(gs)+1), EdgeOffset: make([]int, len(gs)+1)}
	labelled := false
	pairs := 0
	for i, g := range gs {
		b.NodeOffset[i+1] = b.NodeOffset[i] + g.N()
		b.MaxN = max(b.MaxN, g.N())
		k := g.M()
		if !g.directed {
			k *= 2
		}
		pairs += k
		if g.NodeLabels != nil {
			labelled = true
		}
	}
	total := b.NodeOffset[len(gs)]
	b.NodeGraph = make([]int32, total)
	b.Src = make([]int32, 0, pairs)
	b.Dst = make([]int32, 0, pairs)
	b.EdgeLabels = make([]int32, 0, pairs)
	if labelled {
		b.NodeLabels = make([]int32, total)
	}
	for i, g := range gs {
		off := b.NodeOffset[i]
		for u := 0; u < g.N(); u++ {
			b.NodeGraph[off+u] = int32(i)
			if labelled && g.NodeLabels != nil {
				b.NodeLabels[off+u] = int32(g.NodeLabels[u])
			}
			for _, v := range g.out[u] {
				b.Src = append(b.Src, int32(off+u))
				b.Dst = append(b.Dst, int32(off+v))
				b.EdgeLabels = append(b.EdgeLabels, int32(g.EdgeLabel(u, v)))
			}
		}
		b.EdgeOffset[i+1] = len(b.Src)
	}
	b.packAttrs()
	return b
}

// packAttrs fills NodeAttrs and EdgeAttrs when every graph has Attrs of
// the same widths that fit it.
func (b *Batch) packAttrs() {
	if len(b.Graphs) == 0 || b.Graphs[0].Attrs == nil {
		return
	}
	nd, ed := b.Graphs[0].Attrs.NodeDim, b.Graphs[0].Attrs.EdgeDim
	for _, g := range b.Graphs {
		if a := g.Attrs; a == nil || a.NodeDim != nd || a.EdgeDim != ed || a.Check(g) != nil {
			return
		}
	}
	if nd > 0 {
		b.NodeAttrDim = nd
		b.NodeAttrs = make([]float32, 0, b.NumNodes()*nd)
		for _, g := range b.Graphs {
			for _, v := range g.Attrs.Node {
				b.NodeAttrs = append(b.NodeAttrs, float32(v))
			}
		}
	}
	if ed > 0 {
		b.EdgeAttrDim = ed
		b.EdgeAttrs = make([]float32, 0, b.NumPairs()*ed)
		for _, g := range b.Graphs {
			for _, k := range edgeRanks(g) {
				for _, v := range g.Attrs.Edge[k*ed : (k+1)*ed] {
					b.EdgeAttrs = append(b.EdgeAttrs, float32(v))
				}
			}
		}
	}
}

// Len returns the number of graphs B.
func (b *Batch) Len() int { return len(b.Graphs) }

// NumNodes returns the total number of nodes.
func (b *Batch) NumNodes() int { return b.NodeOffset[len(b.Graphs)] }

// NumPairs returns the number of edge pairs (len(Src)).
func (b *Batch) NumPairs() int { return len(b.Src) }

// PaddedRow returns the row of concatenated node i in the padded layout:
// NodeGraph[i]*MaxN + (i - NodeOffset[NodeGraph[i]]).
func (b *Batch) PaddedRow(i int) int {
	g := int(b.NodeGraph[i])
	return g*b.MaxN + i - b.NodeOffset[g]
}

func grow[T any](dst []T, n int) []T {
	if cap(dst) >= n {
		dst = dst[:n]
		clear(dst)
		return dst
	}
	return make([]T, n)
}

// Mask returns the (B, MaxN) node mask, row-major: 1 where the slot holds
// a real node, 0 for padding. It reuses dst when it has enough capacity.
func (b *Batch) Mask(dst []float32) []float32 {
	dst = grow(dst, b.Len()*b.MaxN)
	for i, g := range b.Graphs {
		row := dst[i*b.MaxN : i*b.MaxN+g.N()]
		for j := range row {
			row[j] = 1
		}
	}
	return dst
}

// Pad scatters per-node features x (NumNodes, d), row-major, into the
// padded layout (B, MaxN, d), zero in padding slots. It reuses dst when it
// has enough capacity and panics if len(x) != NumNodes*d.
func (b *Batch) Pad(dst, x []float32, d int) []float32 {
	if len(x) != b.NumNodes()*d {
		panic(fmt.Sprintf("graph: Batch.Pad: len(x) = %d, want %d nodes × %d", len(x), b.NumNodes(), d))
	}
	dst = grow(dst, b.Len()*b.MaxN*d)
	for i := range b.Graphs {
		lo, hi := b.NodeOffset[i], b.NodeOffset[i+1]
		copy(dst[i*b.MaxN*d:], x[lo*d:hi*d])
	}
	return dst
}

// Unpad gathers the real nodes' rows of padded features (B, MaxN, d) into
// the concatenated layout (NumNodes, d). It reuses dst when it has enough
// capacity and panics on a length mismatch.
func (b *Batch) Unpad(dst, padded []float32, d int) []float32 {
	if len(padded) != b.Len()*b.MaxN*d {
		panic(fmt.Sprintf("graph: Batch.Unpad: len(padded) = %d, want %d × %d × %d", len(padded), b.Len(), b.MaxN, d))
	}
	dst = grow(dst, b.NumNodes()*d)
	for i := range b.Graphs {
		lo, hi := b.NodeOffset[i], b.NodeOffset[i+1]
		copy(dst[lo*d:hi*d], padded[i*b.MaxN*d:])
	}
	return dst
}

// DenseAdjacency returns the padded adjacency tensor (B, MaxN, MaxN),
// row-major, with A[b][u][v] = 1 for every edge u -> v of graph b (both
// directions if undirected). It reuses dst when it has enough capacity.
func (b *Batch) DenseAdjacency(dst []float32) []float32 {
	n := b.MaxN
	dst = grow(dst, b.Len()*n*n)
	for k := range b.Src {
		g := int(b.NodeGraph[b.Src[k]])
		off := b.NodeOffset[g]
		u, v := int(b.Src[k])-off, int(b.Dst[k])-off
		dst[(g*n+u)*n+v] = 1
	}
	return dst
}

// DenseEdgeClasses returns the padded edge-class tensor (B, MaxN, MaxN):
// 0 where there is no edge and label+1 where there is one, the target of
// an edge decoder whose class 0 means "no edge". It reuses dst when it has
// enough capacity.
func (b *Batch) DenseEdgeClasses(dst []int32) []int32 {
	n := b.MaxN
	dst = grow(dst, b.Len()*n*n)
	for k := range b.Src {
		g := int(b.NodeGraph[b.Src[k]])
		off := b.NodeOffset[g]
		u, v := int(b.Src[k])-off, int(b.Dst[k])-off
		dst[(g*n+u)*n+v] = b.EdgeLabels[k] + 1
	}
	return dst
}
