package vae

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/nn"
	"lgflow/tensor"
)

// Loss holds the terms of the LG-VAE objective for one batch.
type Loss struct {
	// Total = Edge + Node + KLWeight*KL, the value differentiated.
	Total *autograd.Var
	// Edge is the mean cross-entropy over valid ordered pairs.
	Edge float64
	// Node is the mean cross-entropy of node labels (0 if unlabelled).
	Node float64
	// KL is the mean over nodes of KL(q(z|G) || N(0, I)).
	KL float64
}

// targets returns the padded edge-class targets (B*N*N) and node-label
// targets (B*N) of a batch.
func targets(b *graph.Batch) (edge, node []int32) {
	edge = b.DenseEdgeClasses(nil)
	if b.NodeLabels != nil {
		node = make([]int32, b.Len()*b.MaxN)
		for i, l := range b.NodeLabels {
			node[b.PaddedRow(i)] = l
		}
	}
	return edge, node
}

// nodeWeights returns the (B*N) 0/1 weights of real nodes in padded order.
func nodeWeights(b *graph.Batch) []float32 { return b.Mask(nil) }

// sizes returns the node counts of a batch's graphs.
func sizes(b *graph.Batch) []int {
	s := make([]int, b.Len())
	for i, g := range b.Graphs {
		s[i] = g.N()
	}
	return s
}

// Pad scatters concatenated per-node rows (NumNodes, d) into the padded
// layout (B, MaxN, d) with zero rows for padding, differentiably.
func Pad(tp *autograd.Tape, x *autograd.Var, b *graph.Batch) *autograd.Var {
	d := x.Dim(1)
	zero := autograd.NewConst(tensor.NewOn(x.Value.Backend(), x.DType(), 1, d))
	all := tp.Concat(0, x, zero)
	return tp.Reshape(tp.Gather(all, padIndex(b)), b.Len(), b.MaxN, d)
}

// Objective runs encoder and decoder on a batch in the given mode and
// returns the loss. In Training mode the latents are sampled with the
// reparameterisation trick (with randomness from r); in Eval mode z = mu.
func (m *Model) Objective(tp *autograd.Tape, b *graph.Batch, feats []*Features, mode Mode, r *tensor.RNG) (*Loss, *Decoded) {
	loss, dec, err := m.objective(tp, b, feats, mode, r, runSettings{})
	if err != nil {
		// Only a TrainOptions.Perturb function fails, and only Train sets one.
		panic(err)
	}
	return loss, dec
}

// runSettings are the settings of one training run that change its
// objective (TrainOptions.FreezeEncoder and Perturb): they belong to the
// run, not to the model.
type runSettings struct {
	// frozenEncoder runs the encoder without gradients in evaluation mode.
	frozenEncoder bool
	// perturb replaces the frozen encoder's latents before decoding in
	// training.
	perturb LatentPerturbation
}

// objective is Objective with a training run's settings, returning the
// error of a latent perturbation instead of panicking.
func (m *Model) objective(tp *autograd.Tape, b *graph.Batch, feats []*Features, mode Mode, r *tensor.RNG, run runSettings) (*Loss, *Decoded, error) {
	var mu, logvar *autograd.Var
	if run.frozenEncoder {
		// The encoder as the flow sees it: evaluation mode, no gradient.
		ng := autograd.NoGrad()
		mu0, lv0 := m.Encode(ng, b, feats, Eval, nil)
		mu, logvar = autograd.NewConst(mu0.Value.Clone()), autograd.NewConst(lv0.Value.Clone())
		ng.Release()
	} else {
		mu, logvar = m.Encode(tp, b, feats, mode, r)
	}
	var dec *Decoded
	if mode == Training && run.perturb != nil {
		zp, err := run.perturb(padConst(mu.Value, b), sizes(b), r)
		if err != nil {
			return nil, nil, fmt.Errorf("vae: latent perturbation: %w", err)
		}
		if want := []int{b.Len(), b.MaxN, m.Cfg.Latent}; !slices.Equal(zp.Shape(), want) {
			return nil, nil, fmt.Errorf("vae: latent perturbation returned shape %v, want %v", zp.Shape(), want)
		}
		dec = m.DecodeDense(tp, autograd.NewConst(zp.To(mu.DType()).On(m.backend())), sizes(b))
	} else {
		z := mu
		if mode == Training {
			z = Reparameterize(tp, mu, logvar, r)
			if m.Cfg.LatentNoise > 0 {
				noise := m.latentNoise(mu.Value, b, r).On(m.backend())
				z = tp.Add(z, autograd.NewConst(noise))
			}
		}
		dec = m.DecodeDense(tp, Pad(tp, z, b), sizes(b))
	}
	le, ln := m.reconstruction(tp, dec, b)
	total := le
	loss := &Loss{Edge: le.Value.Item()}
	if ln != nil {
		loss.Node = ln.Value.Item()
		total = tp.Add(total, ln)
	}
	kl := tp.GaussianKL(mu, logvar)
	loss.KL = kl.Value.Item()
	if m.Cfg.KLWeight != 0 {
		total = tp.Add(total, tp.MulScalar(kl, m.Cfg.KLWeight))
	}
	loss.Total = total
	return loss, dec, nil
}

// reconstruction returns the decoder's cross-entropies on b: edge classes
// averaged over each graph's ordered pairs, and node labels averaged over
// nodes (nil when unlabelled).
func (m *Model) reconstruction(tp *autograd.Tape, dec *Decoded, b *graph.Batch) (edge, node *autograd.Var) {
	edgeT, nodeT := targets(b)
	C := m.Cfg.EdgeClasses + 1
	pairW := dec.PairMask.To(tensor.Float32).Data32()
	edge = tp.SoftmaxCrossEntropy(tp.Reshape(dec.EdgeLogits, len(edgeT), C), edgeT, pairW)
	if dec.NodeLogits != nil && nodeT != nil {
		node = tp.SoftmaxCrossEntropy(dec.NodeLogits, nodeT, nodeWeights(b))
	}
	return edge, node
}

// DecoderLoss returns the decoder's reconstruction loss of the padded
// latents z (B, b.MaxN, Latent) against the graphs of b: the edge-class
// cross-entropy over each graph's ordered pairs plus, for labelled graphs,
// the node-label cross-entropy, the terms of the LG-VAE objective that
// decode. Gradients flow into z (and into the decoder's weights unless
// they are frozen, Frozen). A flow trains its data estimate with it
// (flow.Config.DecoderWeight).
func (m *Model) DecoderLoss(tp *autograd.Tape, z *autograd.Var, b *graph.Batch) (*autograd.Var, error) {
	if want := []int{b.Len(), b.MaxN, m.Cfg.Latent}; !slices.Equal(z.Shape(), want) {
		return nil, fmt.Errorf("vae: DecoderLoss: latents of shape %v for a batch of shape %v", z.Shape(), want)
	}
	edge, node := m.reconstruction(tp, m.DecodeDense(tp, z, sizes(b)), b)
	if node != nil {
		edge = tp.Add(edge, node)
	}
	return edge, nil
}

// Frozen returns a copy of m whose parameters are constants (autograd.Var.Freeze):
// a decoder that gradients pass through to its input without changing or
// accumulating into m's weights.
func (m *Model) Frozen() (*Model, error) {
	c, err := New(m.Cfg, 0, nn.WithDType(m.DType()))
	if err != nil {
		return nil, err
	}
	if err := nn.LoadStateDict(c, nn.StateDict(m)); err != nil {
		return nil, fmt.Errorf("vae: Frozen: %w", err)
	}
	if be := m.backend(); be != tensor.CPU {
		if err := nn.ToBackend(c, be); err != nil {
			return nil, fmt.Errorf("vae: Frozen: %w", err)
		}
	}
	for _, p := range c.Params() {
		p.V.Freeze()
	}
	return c, nil
}

// padConst returns concatenated per-node rows x (NumNodes, d) in b's padded
// layout (B, MaxN, d) on the CPU.
func padConst(x *tensor.Tensor, b *graph.Batch) *tensor.Tensor {
	tp := autograd.NoGrad()
	defer tp.Release()
	return Pad(tp, autograd.NewConst(x), b).Value.On(tensor.CPU).Clone()
}

// latentNoise draws the decoder's training noise for latent means mu
// (NumNodes, d) of batch b (Config.LatentNoise, LatentNoiseSpread): Gaussian
// with standard deviation LatentNoise·s, s the standard deviation of all
// of mu's entries, or with a level drawn per graph from [0, LatentNoise].
// The result is on the CPU.
func (m *Model) latentNoise(mu *tensor.Tensor, b *graph.Batch, r *tensor.RNG) *tensor.Tensor {
	noise := tensor.RandN(r, mu.DType(), mu.Shape()...)
	tensor.MulScalar(noise, noise, m.Cfg.LatentNoise*stdAll(mu))
	if m.Cfg.LatentNoiseSpread {
		// One level in [0, 1] per graph, as a (NumNodes, 1) column.
		level := make([]float64, b.NumNodes())
		for g := range b.Len() {
			u := r.Uniform()
			for i := b.NodeOffset[g]; i < b.NodeOffset[g+1]; i++ {
				level[i] = u
			}
		}
		tensor.Mul(noise, noise, tensor.FromFloat64(level, len(level), 1).To(noise.DType()))
	}
	return noise
}

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

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// accuracy compares a decoded batch with its targets.
func accuracy(dec *Decoded, b *graph.Batch) Accuracy {
	edgeT, nodeT := targets(b)
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

// graphs turns decoder outputs into graphs: the argmax class of every
// ordered pair; for undirected models rule decides an edge {i, j} from the
// pairs (i, j) and (j, i). Edge label c-1 is used for class c; node labels
// are the argmax of the node logits.
func (m *Model) graphs(dec *Decoded, o decodeOptions) []*graph.Graph {
	rule := o.rule
	N := dec.N
	C := m.Cfg.EdgeClasses + 1
	B := len(dec.Sizes)
	logits := dec.EdgeLogits.Value.Reshape(B*N*N, C)
	var scores []float64
	if o.margin != 0 || rule == MeanLogits && !m.Cfg.Directed {
		scores = logits.To(tensor.Float64).Data64()
	}
	if o.margin != 0 {
		// The margin is taken off every edge class's logit: an edge needs
		// to beat no-edge by more than it, in either rule.
		scores = slices.Clone(scores)
		for p := 0; p < len(scores); p += C {
			for k := 1; k < C; k++ {
				scores[p+k] -= o.margin
			}
		}
	}
	var cls []int32
	if scores != nil && o.margin != 0 {
		cls = make([]int32, B*N*N)
		for p := range cls {
			cls[p] = int32(argmaxRow(scores[p*C : p*C+C]))
		}
	} else {
		cls = tensor.Argmax(logits, 1)
	}
	var nodeCls []int32
	if dec.NodeLogits != nil {
		nodeCls = tensor.Argmax(dec.NodeLogits.Value, 1)
	}
	out := make([]*graph.Graph, B)
	var lg []float64 // the logits in float64, made when a graph is constrained
	for g, n := range dec.Sizes {
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
		if o.keep != nil && !o.keep(h) {
			if lg == nil {
				lg = logits.To(tensor.Float64).Data64()
			}
			h = m.constrain(h, lg, g*N*N, N, o)
		}
		if o.tree && !graph.IsTree(h) {
			if lg == nil {
				lg = logits.To(tensor.Float64).Data64()
			}
			h = m.spanningTree(h, lg, g*N*N, N, o)
		}
		if o.connected && !graph.IsConnected(h) {
			if lg == nil {
				lg = logits.To(tensor.Float64).Data64()
			}
			h = m.connect(h, lg, g*N*N, N, o)
		}
		if o.fill {
			if lg == nil {
				lg = logits.To(tensor.Float64).Data64()
			}
			h = m.fillEdges(h, lg, g*N*N, N, o.rule, o.keep, o.fillMin)
		}
		if o.complete != nil && o.complete(h) {
			if lg == nil {
				lg = logits.To(tensor.Float64).Data64()
			}
			h = m.fillEdges(h, lg, g*N*N, N, o.rule, o.complete, o.completeMin)
		}
		out[g] = h
	}
	return out
}

// constrain rebuilds the decoded graph h so that o.keep holds: h's edges are
// added back one at a time, most confident first, and each is kept only if
// o.keep still holds with it. An edge's confidence is its best edge class's
// logit minus the no-edge logit (the larger of the two directions' for the
// EitherDirection rule, the smaller for BothDirections, their mean for
// MeanLogits); lg holds the batch's logits (rows of C per ordered pair) and
// base is the row of h's first pair.
func (m *Model) constrain(h *graph.Graph, lg []float64, base, N int, o decodeOptions) *graph.Graph {
	edges := h.Edges()
	score := make([]float64, len(edges))
	for k, e := range edges {
		score[k] = m.pairConfidence(lg, base, N, e.From, e.To, o.rule)
	}
	order := make([]int, len(edges))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(score[y], score[x]) })
	var out *graph.Graph
	if m.Cfg.Directed {
		out = graph.NewDirected(h.N())
	} else {
		out = graph.New(h.N())
	}
	out.NodeLabels = h.NodeLabels
	// Adding the edges one at a time, each kept only if keep still holds,
	// costs a test per edge. As keep survives removing edges, a run of
	// edges that keeps it when added together is exactly what the one-at-a-
	// time rule keeps of it, so runs are tried whole and split only when
	// they fail: the same graph with a test per rejected edge and level.
	var add func(run []int)
	add = func(run []int) {
		for _, k := range run {
			e := edges[k]
			out.AddLabeledEdge(e.From, e.To, h.EdgeLabel(e.From, e.To))
		}
		if o.keep(out) {
			return
		}
		for _, k := range run {
			out.RemoveEdge(edges[k].From, edges[k].To)
		}
		if len(run) > 1 {
			add(run[:len(run)/2])
			add(run[len(run)/2:])
		}
	}
	add(order)
	return out
}

// fillEdges returns h with the pairs it lacks whose confidence
// (pairConfidence under rule) is at least minConf added, most confident
// first, each kept only if keep still holds with it (WithEdgeFill,
// WithEdgeCompletion); lg, base and N are as for constrain. Added edges
// are labelled by pairEdgeLabel.
func (m *Model) fillEdges(h *graph.Graph, lg []float64, base, N int, rule EdgeRule, keep func(*graph.Graph) bool, minConf float64) *graph.Graph {
	n := h.N()
	C := m.Cfg.EdgeClasses + 1
	type pair struct {
		i, j  int
		score float64
	}
	var pairs []pair
	for i := range n {
		for j := i + 1; j < n; j++ {
			if h.HasEdge(i, j) {
				continue
			}
			if s := m.pairConfidence(lg, base, N, i, j, rule); s >= minConf {
				pairs = append(pairs, pair{i, j, s})
			}
		}
	}
	if len(pairs) == 0 {
		return h
	}
	slices.SortStableFunc(pairs, func(x, y pair) int { return cmp.Compare(y.score, x.score) })
	out := h.Clone()
	for _, p := range pairs {
		out.AddLabeledEdge(p.i, p.j, pairEdgeLabel(lg, base, N, C, p.i, p.j))
		if !keep(out) {
			out.RemoveEdge(p.i, p.j)
		}
	}
	return out
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

// spanningTree returns the spanning tree of maximum total confidence
// (pairConfidence) over all pairs of h's nodes, by Kruskal's algorithm;
// lg, base and N are as for constrain. h's own edges are the pairs of
// positive confidence (under the margin and rule h was decoded with) and
// so come first. An edge's label is the edge class with the largest sum of
// the two directions' logits.
func (m *Model) spanningTree(h *graph.Graph, lg []float64, base, N int, o decodeOptions) *graph.Graph {
	out := graph.New(h.N())
	out.NodeLabels = h.NodeLabels
	m.joinComponents(out, h, lg, base, N, o)
	return out
}

// connect returns h with the fewest edges added that join its components:
// h's own edges all stay, and the missing pairs of most confidence that
// join two components are added (Kruskal's algorithm over h's components,
// so the added edges have the maximum total confidence of any such set).
func (m *Model) connect(h *graph.Graph, lg []float64, base, N int, o decodeOptions) *graph.Graph {
	out := h.Clone()
	m.joinComponents(out, h, lg, base, N, o)
	return out
}

// joinComponents runs Kruskal's algorithm over all pairs of h's nodes, h's
// own edges first, then the others most confident first (pairConfidence),
// and adds to out each pair that joins two components of the forest built
// so far (as an edge labelled by the class with the largest sum of the two
// directions' logits), unless out already has it. With out empty it builds
// a spanning tree; with out a copy of h it adds only the edges that connect
// h.
func (m *Model) joinComponents(out, h *graph.Graph, lg []float64, base, N int, o decodeOptions) {
	n := h.N()
	C := m.Cfg.EdgeClasses + 1
	type pair struct {
		i, j  int32
		own   bool // a decoded edge of h
		score float64
	}
	pairs := make([]pair, 0, n*(n-1)/2)
	for i := range n {
		for j := i + 1; j < n; j++ {
			pairs = append(pairs, pair{int32(i), int32(j), h.HasEdge(i, j), m.pairConfidence(lg, base, N, i, j, o.rule)})
		}
	}
	// The decoder's own edges ahead of every pair it left out (whatever
	// the margin), then most confident first.
	slices.SortStableFunc(pairs, func(x, y pair) int {
		if x.own != y.own {
			if x.own {
				return -1
			}
			return 1
		}
		return cmp.Compare(y.score, x.score)
	})
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	joined := 0
	for _, p := range pairs {
		if joined == n-1 {
			break
		}
		a, b := find(p.i), find(p.j)
		if a == b {
			continue
		}
		parent[a] = b
		joined++
		if out.HasEdge(int(p.i), int(p.j)) {
			continue
		}
		out.AddLabeledEdge(int(p.i), int(p.j), pairEdgeLabel(lg, base, N, C, int(p.i), int(p.j)))
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

// stdAll returns the standard deviation of all entries of the tensors ts
// (0 when they hold none).
func stdAll(ts ...*tensor.Tensor) float64 {
	var sum, sum2, n float64
	for _, t := range ts {
		for _, x := range t.On(tensor.CPU).To(tensor.Float64).Data64() {
			sum, sum2, n = sum+x, sum2+x*x, n+1
		}
	}
	if n == 0 {
		return 0
	}
	return math.Sqrt(max(sum2/n-(sum/n)*(sum/n), 0))
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
