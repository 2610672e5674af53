package vae

import (
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
	// share, when not nil, makes the batch one rank's share of a step's
	// batch in data-parallel training.
	share *share
}

// share describes the part of a step's global batch that one rank of a
// data-parallel run computes: the batch's graphs lo to hi-1. The step's
// random draws are those of the whole batch (drawn in full on every rank
// and cut to the share), and each loss term is scaled by the share of its
// denominator (pairs or nodes), so that the ranks' losses, and so their
// gradients, sum to those of one process on the whole batch.
type share struct {
	feats  []*Features // the whole batch's features
	nodes  int         // the whole batch's node count
	nodeLo int         // the share's first node in the whole batch
	// The share's fractions of the whole batch's ordered pairs and nodes.
	pairFrac, nodeFrac float64
}

// newShare returns the share of graphs [lo, hi) of the batch gs (with
// features feats).
func newShare(gs []*graph.Graph, feats []*Features, lo, hi int) *share {
	sh := &share{feats: feats}
	var pairs, nodes, myPairs, myNodes float64
	for i, g := range gs {
		n := g.N()
		p := float64(n * (n - 1))
		if i == lo {
			sh.nodeLo = int(nodes)
		}
		pairs, nodes = pairs+p, nodes+float64(n)
		if i >= lo && i < hi {
			myPairs, myNodes = myPairs+p, myNodes+float64(n)
		}
	}
	sh.nodes = int(nodes)
	if pairs > 0 {
		sh.pairFrac = myPairs / pairs
	}
	if nodes > 0 {
		sh.nodeFrac = myNodes / nodes
	}
	return sh
}

// scale returns v multiplied by frac, or v itself without a share.
func (sh *share) scale(tp *autograd.Tape, v *autograd.Var, frac func(*share) float64) *autograd.Var {
	if sh == nil {
		return v
	}
	return tp.MulScalar(v, frac(sh))
}

func pairFrac(sh *share) float64 { return sh.pairFrac }
func nodeFrac(sh *share) float64 { return sh.nodeFrac }

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
		mu, logvar = m.encode(tp, b, feats, mode, r, run.share)
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
			z = reparameterize(tp, mu, logvar, r, run.share)
			if m.Cfg.LatentNoise > 0 {
				noise := m.latentNoise(mu.Value, b, r).On(m.backend())
				z = tp.Add(z, autograd.NewConst(noise))
			}
		}
		dec = m.DecodeDense(tp, Pad(tp, z, b), sizes(b))
	}
	le, ln := m.reconstruction(tp, dec, b)
	le = run.share.scale(tp, le, pairFrac)
	total := le
	loss := &Loss{Edge: le.Value.Item()}
	if ln != nil {
		ln = run.share.scale(tp, ln, nodeFrac)
		loss.Node = ln.Value.Item()
		total = tp.Add(total, ln)
	}
	kl := run.share.scale(tp, tp.GaussianKL(mu, logvar), nodeFrac)
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
	edgeT, nodeT := targets(tp, b)
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
