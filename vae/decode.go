package vae

import (
	"math"
	"slices"

	"lgflow/graph"
	"lgflow/tensor"
)

// graphs turns decoder outputs into graphs: the argmax class of every
// ordered pair (pairClasses, after o's edge margin); for undirected models
// rule decides an edge {i, j} from the pairs (i, j) and (j, i). Edge label
// c-1 is used for class c; node labels are the argmax of the node logits.
// The graphs then go through o's constrained decoding (postProcess).
func (m *Model) graphs(dec *Decoded, o decodeOptions) []*graph.Graph {
	N := dec.N
	C := m.Cfg.EdgeClasses + 1
	B := len(dec.Sizes)
	logits := dec.EdgeLogits.Value.Reshape(B*N*N, C)
	cls, scores := m.pairClasses(logits, o)
	var nodeCls []int32
	if dec.NodeLogits != nil {
		nodeCls = tensor.Argmax(dec.NodeLogits.Value, 1)
	}
	var lg []float64 // the logits in float64, made when a graph is post-processed
	logits64 := func() []float64 {
		if lg == nil {
			lg = logits.To(tensor.Float64).Data64()
		}
		return lg
	}
	out := make([]*graph.Graph, B)
	for g, n := range dec.Sizes {
		h := m.argmaxGraph(cls, scores, nodeCls, g, n, N, o.rule)
		out[g] = m.postProcess(h, logits64, g*N*N, N, o)
	}
	return out
}

// pairClasses returns the decoded class of every ordered pair of a batch,
// given its logits (one row of C classes per pair): the argmax of the row,
// an edge class needing to beat no-edge by more than o.margin. scores
// holds the logits in float64, the margin taken off, when the margin or
// the MeanLogits rule of an undirected model needs them; else it is nil.
func (m *Model) pairClasses(logits *tensor.Tensor, o decodeOptions) (cls []int32, scores []float64) {
	C := m.Cfg.EdgeClasses + 1
	if o.margin != 0 || o.rule == MeanLogits && !m.Cfg.Directed {
		scores = logits.To(tensor.Float64).Data64()
	}
	if o.margin == 0 {
		return tensor.Argmax(logits, 1), scores
	}
	// The margin is taken off every edge class's logit: an edge needs to
	// beat no-edge by more than it, in either rule.
	scores = slices.Clone(scores)
	for p := 0; p < len(scores); p += C {
		for k := 1; k < C; k++ {
			scores[p+k] -= o.margin
		}
	}
	cls = make([]int32, len(scores)/C)
	for p := range cls {
		cls[p] = int32(argmaxRow(scores[p*C : p*C+C]))
	}
	return cls, scores
}

// argmaxGraph returns graph g of a decoded batch (n nodes, padded width N)
// with the edges of the pair classes cls (from pairClasses): for
// undirected models rule combines the classes of (i, j) and (j, i), and
// MeanLogits takes the argmax of the two pairs' scores summed. Its node
// labels are nodeCls's (none when nil).
func (m *Model) argmaxGraph(cls []int32, scores []float64, nodeCls []int32, g, n, N int, rule EdgeRule) *graph.Graph {
	C := m.Cfg.EdgeClasses + 1
	var h *graph.Graph
	if m.Cfg.Directed {
		h = graph.NewDirected(n)
	} else {
		h = graph.New(n)
	}
	pair := func(i, j int) int { return (g*N+i)*N + j }
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			c := int(cls[pair(i, j)])
			if m.Cfg.Directed {
				if c != 0 {
					h.AddLabeledEdge(i, j, c-1)
				}
				continue
			}
			if i > j {
				continue
			}
			back := int(cls[pair(j, i)])
			switch rule {
			case EitherDirection:
				if c == 0 {
					c = back
				}
			case BothDirections:
				if back == 0 {
					c = 0
				}
			case MeanLogits:
				c = meanArgmax(scores[pair(i, j)*C:pair(i, j)*C+C], scores[pair(j, i)*C:pair(j, i)*C+C])
			}
			if c != 0 {
				h.AddLabeledEdge(i, j, c-1)
			}
		}
	}
	if nodeCls != nil {
		h.NodeLabels = make([]int, n)
		for i := range n {
			h.NodeLabels[i] = int(nodeCls[g*N+i])
		}
	}
	return h
}

// postProcess applies o's constrained decoding to the decoded graph h, in
// this order: the edge constraint, the spanning tree, the connection, the
// fill and the completion, each only where o asks for it and h needs it.
// lg returns the batch's logits in float64 (rows of C per ordered pair),
// base is the row of h's first pair and N the padded width.
func (m *Model) postProcess(h *graph.Graph, lg func() []float64, base, N int, o decodeOptions) *graph.Graph {
	if o.keep != nil && !o.keep(h) {
		h = m.constrain(h, lg(), base, N, o)
	}
	if o.tree && !graph.IsTree(h) {
		h = m.spanningTree(h, lg(), base, N, o)
	}
	if o.connected && !graph.IsConnected(h) {
		h = m.connect(h, lg(), base, N, o)
	}
	if o.fill {
		h = m.fillEdges(h, lg(), base, N, o.rule, o.keep, o.fillMin)
	}
	if o.complete != nil && o.complete(h) {
		h = m.fillEdges(h, lg(), base, N, o.rule, o.complete, o.completeMin)
	}
	return h
}

// pairConfidence returns how strongly the logits lg (rows of C per ordered
// pair, the graph's first pair at row base, N nodes per padded row) predict
// an edge from i to j: the best edge class's logit minus the no-edge logit,
// for undirected models combined with (j, i)'s as rule says (the larger for
// EitherDirection, the smaller for BothDirections, the mean for
// MeanLogits).
func (m *Model) pairConfidence(lg []float64, base, N, i, j int, rule EdgeRule) float64 {
	C := m.Cfg.EdgeClasses + 1
	conf := func(i, j int) float64 {
		row := lg[(base+i*N+j)*C : (base+i*N+j)*C+C]
		best := math.Inf(-1)
		for _, v := range row[1:] {
			best = max(best, v)
		}
		return best - row[0]
	}
	a := conf(i, j)
	if m.Cfg.Directed {
		return a
	}
	b := conf(j, i)
	switch rule {
	case BothDirections:
		return min(a, b)
	case MeanLogits:
		return (a + b) / 2
	default:
		return max(a, b)
	}
}

// pairEdgeLabel returns the label of an edge {i, j} added by a decoding
// step: the edge class with the largest sum of the two directions' logits,
// minus one (lg, base and N as for constrain; C classes per pair).
func pairEdgeLabel(lg []float64, base, N, C, i, j int) int {
	ij := lg[(base+i*N+j)*C:][:C]
	ji := lg[(base+j*N+i)*C:][:C]
	best := 1
	for k := 2; k < C; k++ {
		if ij[k]+ji[k] > ij[best]+ji[best] {
			best = k
		}
	}
	return best - 1
}

// argmaxRow returns the index of the largest entry of row (the first on
// ties).
func argmaxRow(row []float64) int {
	best := 0
	for k, v := range row {
		if v > row[best] {
			best = k
		}
	}
	return best
}

// meanArgmax returns the argmax of a + b (the first index on ties).
func meanArgmax(a, b []float64) int {
	best := 0
	for k := range a {
		if a[k]+b[k] > a[best]+b[best] {
			best = k
		}
	}
	return best
}
