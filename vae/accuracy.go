package vae

import (
	"lgflow/graph"
	"lgflow/tensor"
)

// Accuracy counts reconstruction quality.
type Accuracy struct {
	// EdgeCorrect and EdgePairs count correctly classified valid ordered
	// pairs (edge or no edge, and the edge label).
	EdgeCorrect, EdgePairs int
	// NodeCorrect and Nodes count correctly classified node labels.
	NodeCorrect, Nodes int
	// GraphsExact and Graphs count graphs reconstructed exactly: every
	// ordered pair and every node label right (the paper's sample accuracy).
	GraphsExact, Graphs int
	// GraphsDecoded counts graphs whose decoded graph (as sampling returns
	// it: by default, for undirected models, the OR of the (i, j) and
	// (j, i) decisions; ReconstructLatents applies its decode options)
	// equals the input graph, labels included.
	GraphsDecoded int
}

// Add accumulates o into a.
func (a *Accuracy) Add(o Accuracy) {
	a.EdgeCorrect += o.EdgeCorrect
	a.EdgePairs += o.EdgePairs
	a.NodeCorrect += o.NodeCorrect
	a.Nodes += o.Nodes
	a.GraphsExact += o.GraphsExact
	a.Graphs += o.Graphs
	a.GraphsDecoded += o.GraphsDecoded
}

// Edge returns the edge accuracy (1 when there are no pairs).
func (a Accuracy) Edge() float64 { return ratio(a.EdgeCorrect, a.EdgePairs) }

// Node returns the node-label accuracy (1 when unlabelled).
func (a Accuracy) Node() float64 { return ratio(a.NodeCorrect, a.Nodes) }

// Sample returns the fraction of graphs reconstructed exactly.
func (a Accuracy) Sample() float64 { return ratio(a.GraphsExact, a.Graphs) }

// Decoded returns the fraction of graphs whose decoded graph equals the input.
func (a Accuracy) Decoded() float64 { return ratio(a.GraphsDecoded, a.Graphs) }

// sameGraph reports whether g and h have the same nodes, edges and labels.
func sameGraph(g, h *graph.Graph) bool {
	if g.N() != h.N() || g.M() != h.M() || g.Directed() != h.Directed() {
		return false
	}
	for _, e := range g.Edges() {
		if !h.HasEdge(e.From, e.To) || h.EdgeLabel(e.From, e.To) != e.Label {
			return false
		}
	}
	if g.NodeLabels != nil || h.NodeLabels != nil {
		for i := range g.N() {
			var a, b int
			if g.NodeLabels != nil {
				a = g.NodeLabels[i]
			}
			if h.NodeLabels != nil {
				b = h.NodeLabels[i]
			}
			if a != b {
				return false
			}
		}
	}
	return true
}

// ratio returns a/b, or 1 when b is 0 (nothing to get wrong).
func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// accuracy compares a decoded batch with its targets.
func accuracy(dec *Decoded, b *graph.Batch) Accuracy {
	edgeT, nodeT := targets(nil, b)
	N := dec.N
	C := dec.EdgeLogits.Dim(3)
	cls := tensor.Argmax(dec.EdgeLogits.Value.Reshape(len(edgeT), C), 1)
	var nodeCls []int32
	if dec.NodeLogits != nil && nodeT != nil {
		nodeCls = tensor.Argmax(dec.NodeLogits.Value, 1)
	}
	var a Accuracy
	for g, n := range dec.Sizes {
		exact := true
		for i := range n {
			for j := range n {
				if i == j {
					continue
				}
				k := (g*N+i)*N + j
				a.EdgePairs++
				if cls[k] == edgeT[k] {
					a.EdgeCorrect++
				} else {
					exact = false
				}
			}
			if nodeCls != nil {
				a.Nodes++
				if nodeCls[g*N+i] == nodeT[g*N+i] {
					a.NodeCorrect++
				} else {
					exact = false
				}
			}
		}
		a.Graphs++
		if exact {
			a.GraphsExact++
		}
	}
	return a
}
