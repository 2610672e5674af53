package vae

import (
	"context"
	"fmt"
	"math"
	"strings"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/nn"
	"lgflow/tensor"
)

// conv is one message-passing layer of rho (GINE or its directed wrapper).
type conv interface {
	nn.Module
	Forward(tp *autograd.Tape, h *autograd.Var, e nn.Edges, f nn.EdgeFeatures) *autograd.Var
}

// norm is the normalisation after a rho layer: an *nn.LayerNorm,
// *nn.BatchNorm1d or *nn.GraphNorm (nil for none).
type norm = nn.Module

// Model is an LG-VAE: a Laplacian-positional-encoding encoder that maps
// every node to a Latent-dimensional vector, and a decoder that maps the
// latents back to node labels and edges.
//
// Forward passes on separate tapes may run concurrently (a server
// encoding or decoding for several requests) as long as nobody trains the
// model at the same time.
type Model struct {
	Cfg Config

	// encoder
	eps     *autograd.Var // (1, K) learnable eigenvalue offset
	phi1    *nn.Linear    // 2 (3 for directed) -> 2h
	phi2    *nn.Linear    // 2h -> h
	gate1   *nn.Linear    // 1 -> h (PhiGate)
	gate2   *nn.Linear    // h -> h or 2h (PhiGate; one gate per eigenvector part)
	nodeEmb *nn.Embedding // node labels -> h, nil if unlabelled
	nodeAtt *nn.Linear    // node attributes -> h, nil without Cfg.NodeAttrs
	convs   []conv
	norms   []norm
	head1   *nn.Linear // E -> E
	head2   *nn.Linear // E -> 2d

	// decoder
	refine   *refiner   // latent refinement network, nil without Cfg.Refine
	nodeHead *nn.Linear // d -> a, nil if unlabelled
	proj     *nn.Linear // d -> 2(b+1)d, or 4(b+1)d for directed
	dsPhi    *nn.Linear // 1 -> Ds (context term)
	dsSelf   *nn.Linear // 1 -> Ds
	dsCtx    *nn.Linear // Ds -> Ds, no bias
	dsOut    *nn.Linear // Ds -> 1
}

// New builds an LG-VAE with weights drawn from a generator seeded by seed.
// Options such as nn.WithDType(tensor.Float64) apply to every layer.
func New(cfg Config, seed uint64, opts ...nn.Option) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := tensor.NewRNG(seed)
	m := &Model{Cfg: cfg}
	// The dtype the options select, read off a throwaway layer.
	dt := nn.NewLinear(tensor.NewRNG(0), 1, 1, opts...).W.DType()

	epsT := tensor.New(dt, 1, cfg.K)
	for j := range cfg.K {
		epsT.Set(1e-12*float64(j), 0, j)
	}
	m.eps = autograd.NewParam(epsT)
	in := 2
	if cfg.Directed {
		in = 3
	}
	h, E, d := cfg.PhiWidth, cfg.Width, cfg.Latent
	m.phi1 = nn.NewLinear(r, in, 2*h, opts...)
	m.phi2 = nn.NewLinear(r, 2*h, h, opts...)
	if cfg.PhiGate {
		m.gate1 = nn.NewLinear(r, 1, h, opts...)
		m.gate2 = nn.NewLinear(r, h, (in-1)*h, opts...)
	}
	if cfg.NodeClasses > 0 {
		m.nodeEmb = nn.NewEmbedding(r, cfg.NodeClasses, h, opts...)
	}
	if cfg.NodeAttrs > 0 {
		m.nodeAtt = nn.NewLinear(r, cfg.NodeAttrs, h, opts...)
	}
	edge := nn.EdgeSpec{Classes: cfg.EdgeClasses, Dim: cfg.EdgeAttrs}
	for l := range cfg.Layers {
		w := E
		if l == 0 {
			w = h
		}
		if cfg.Directed {
			m.convs = append(m.convs, nn.NewDirGNN(r, w, E, edge, opts...))
		} else {
			m.convs = append(m.convs, nn.NewGINEConv(r, w, E, edge, opts...))
		}
		switch cfg.Norm {
		case LayerNorm:
			m.norms = append(m.norms, nn.NewLayerNorm(E, 1e-5, opts...))
		case BatchNorm:
			m.norms = append(m.norms, nn.NewBatchNorm1d(E, opts...))
		case GraphNorm:
			m.norms = append(m.norms, nn.NewGraphNorm(E, opts...))
		default:
			m.norms = append(m.norms, nil)
		}
	}
	m.head1 = nn.NewLinear(r, E, E, opts...)
	m.head2 = nn.NewLinear(r, E, 2*d, opts...)
	if cfg.LogVarInit != 0 {
		for j := d; j < 2*d; j++ {
			m.head2.B.Value.Set(cfg.LogVarInit, j)
		}
	}

	if cfg.NodeClasses > 0 {
		m.nodeHead = nn.NewLinear(r, d, cfg.NodeClasses, opts...)
	}
	if cfg.Refine > 0 {
		m.refine = newRefiner(r, cfg, opts...)
	}
	heads := cfg.EdgeClasses + 1
	mult := 2
	if cfg.Directed {
		mult = 4
	}
	m.proj = nn.NewLinear(r, d, mult*heads*d, opts...)
	m.dsPhi = nn.NewLinear(r, 1, cfg.DeepSet, opts...)
	m.dsSelf = nn.NewLinear(r, 1, cfg.DeepSet, opts...)
	m.dsCtx = nn.NewLinear(r, cfg.DeepSet, cfg.DeepSet, append(opts, nn.WithBias(false))...)
	m.dsOut = nn.NewLinear(r, cfg.DeepSet, 1, opts...)
	return m, nil
}

// Params lists the trainable parameters with dotted names.
func (m *Model) Params() []nn.Param {
	ps := []nn.Param{{Name: "encoder.eig_eps", V: m.eps}}
	ps = append(ps, nn.ParamsOf("encoder.phi.0", m.phi1)...)
	ps = append(ps, nn.ParamsOf("encoder.phi.2", m.phi2)...)
	if m.gate1 != nil {
		ps = append(ps, nn.ParamsOf("encoder.phi_gate.0", m.gate1)...)
		ps = append(ps, nn.ParamsOf("encoder.phi_gate.2", m.gate2)...)
	}
	if m.nodeEmb != nil {
		ps = append(ps, nn.ParamsOf("encoder.node_emb", m.nodeEmb)...)
	}
	if m.nodeAtt != nil {
		ps = append(ps, nn.ParamsOf("encoder.node_attr", m.nodeAtt)...)
	}
	for l, c := range m.convs {
		ps = append(ps, nn.ParamsOf(fmt.Sprintf("encoder.rho.%d.conv", l), c)...)
		if m.norms[l] != nil {
			ps = append(ps, nn.ParamsOf(fmt.Sprintf("encoder.rho.%d.norm", l), m.norms[l])...)
		}
	}
	ps = append(ps, nn.ParamsOf("encoder.head.0", m.head1)...)
	ps = append(ps, nn.ParamsOf("encoder.head.2", m.head2)...)
	if m.refine != nil {
		ps = append(ps, nn.ParamsOf("decoder.refine", m.refine)...)
	}
	if m.nodeHead != nil {
		ps = append(ps, nn.ParamsOf("decoder.node_head", m.nodeHead)...)
	}
	ps = append(ps, nn.ParamsOf("decoder.proj", m.proj)...)
	ps = append(ps, nn.ParamsOf("decoder.deepset.phi", m.dsPhi)...)
	ps = append(ps, nn.ParamsOf("decoder.deepset.self", m.dsSelf)...)
	ps = append(ps, nn.ParamsOf("decoder.deepset.ctx", m.dsCtx)...)
	ps = append(ps, nn.ParamsOf("decoder.deepset.out", m.dsOut)...)
	return ps
}

// Buffers lists non-trainable state (BatchNorm running statistics).
func (m *Model) Buffers() []nn.Param {
	var ps []nn.Param
	for l, n := range m.norms {
		if n != nil {
			ps = append(ps, nn.BuffersOf(fmt.Sprintf("encoder.rho.%d.norm", l), n)...)
		}
	}
	return ps
}

// Mode selects how a forward pass runs. It is an argument of each pass,
// not a state of the Model, so passes in different modes may run on one
// model at once (only a Training pass of a BatchNorm model writes to it:
// the running statistics).
type Mode int

const (
	// Eval is evaluation: no sign flips, orbit noise seeded by each graph
	// (so a graph's latents do not depend on its batch), z = mu, BatchNorm
	// with running statistics.
	Eval Mode = iota
	// Training draws eigenvector sign flips, orbit noise and the latents
	// z = mu + sigma*eps from the pass's generator, and normalises with
	// batch statistics.
	Training
)

// calibrate is RecalibrateBatchNorm's encoder pass: evaluation inputs (no
// sign flips, orbit noise seeded by each graph) with BatchNorm on batch
// statistics, which it folds into the running statistics.
const calibrate Mode = -1

// DType returns the floating-point type of the model's parameters.
func (m *Model) DType() tensor.DType { return m.eps.DType() }

// featureHash returns a seed derived from a graph's features (FNV-1a).
func featureHash(f *Features) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		for range 8 {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	mix(uint64(f.N))
	for _, v := range f.Vectors {
		mix(uint64(math.Float32bits(v)))
	}
	return h
}

// Encode runs the encoder on a batch in the given mode and returns the
// posterior mean and log-variance, both (NumNodes, Latent), in
// concatenated node order. r supplies the Training randomness (sign flips,
// orbit noise); it may be nil for Eval.
func (m *Model) Encode(tp *autograd.Tape, b *graph.Batch, feats []*Features, mode Mode, r *tensor.RNG) (mu, logvar *autograd.Var) {
	return m.encode(tp, b, feats, mode, r, nil)
}

// encode is Encode of b, which is sh's share of a larger batch when sh is
// not nil: the encoder's random draws are then those of the whole batch,
// drawn in full and cut to the share's nodes.
func (m *Model) encode(tp *autograd.Tape, b *graph.Batch, feats []*Features, mode Mode, r *tensor.RNG, sh *share) (mu, logvar *autograd.Var) {
	if len(feats) != b.Len() {
		panic(fmt.Sprintf("vae.Encode: %d feature sets for %d graphs", len(feats), b.Len()))
	}
	if r == nil {
		r = tensor.NewRNG(0)
	}
	nodes, K := b.NumNodes(), m.Cfg.K
	var vecT, valsT, slotT *tensor.Tensor
	if sh == nil {
		vecT, valsT, slotT = m.encoderInput(tp, feats, nodes, mode, r)
	} else {
		vecT, valsT, slotT = m.encoderInput(tp, sh.feats, sh.nodes, mode, r)
		lo, hi := sh.nodeLo, sh.nodeLo+nodes
		vecT, valsT, slotT = vecT.Slice(0, lo, hi).Clone(), valsT.Slice(0, lo, hi).Clone(), slotT.Slice(0, lo*K, hi*K).Clone()
	}
	be := m.backend()
	vecT, valsT, slotT = vecT.On(be), valsT.On(be), slotT.On(be)
	lam := tp.Add(autograd.NewConst(valsT), tp.Reshape(m.eps, 1, K, 1))
	vec := autograd.NewConst(vecT)
	x := tp.Concat(2, vec, lam)
	x = tp.Reshape(x, nodes*K, x.Dim(2))
	x = tp.ReLU(m.phi2.Forward(tp, tp.ReLU(m.phi1.Forward(tp, x))))
	if m.gate1 != nil {
		// u * g(lam): (nodes*K, parts, h) gates times (nodes*K, parts, 1) entries, summed over parts.
		parts := vecT.Dim(2)
		g := m.gate2.Forward(tp, tp.ReLU(m.gate1.Forward(tp, tp.Reshape(lam, nodes*K, 1))))
		g = tp.Reshape(g, nodes*K, parts, m.Cfg.PhiWidth)
		u := tp.Reshape(vec, nodes*K, parts, 1)
		x = tp.Add(x, tp.Sum(tp.Mul(g, u), 1, false))
	}
	x = tp.Mul(x, autograd.NewConst(slotT))
	h := tp.Sum(tp.Reshape(x, nodes, K, m.Cfg.PhiWidth), 1, false)
	if m.nodeEmb != nil && b.NodeLabels != nil {
		h = tp.Add(h, m.nodeEmb.Forward(tp, b.NodeLabels))
	}
	if m.nodeAtt != nil {
		if b.NodeAttrDim != m.Cfg.NodeAttrs {
			panic(fmt.Sprintf("vae.Encode: batch has %d node attributes, the model %d", b.NodeAttrDim, m.Cfg.NodeAttrs))
		}
		a := tensor.FromFloat32(b.NodeAttrs, nodes, m.Cfg.NodeAttrs).To(m.DType()).On(be)
		h = tp.Add(h, m.nodeAtt.Forward(tp, autograd.NewConst(a)))
	}
	edges := nn.Edges{Src: b.Src, Dst: b.Dst}
	ef := nn.EdgeFeatures{Classes: b.EdgeLabels}
	ixClasses, ixNum := b.EdgeLabels, m.Cfg.EdgeClasses
	if m.Cfg.EdgeAttrs > 0 {
		if b.EdgeAttrDim != m.Cfg.EdgeAttrs {
			panic(fmt.Sprintf("vae.Encode: batch has %d edge attributes, the model %d", b.EdgeAttrDim, m.Cfg.EdgeAttrs))
		}
		a := tensor.FromFloat32(b.EdgeAttrs, b.NumPairs(), m.Cfg.EdgeAttrs).To(m.DType()).On(be)
		ef.Attr = autograd.NewConst(a)
		// The edge term is then a dense (pairs, width) input: an index
		// without classes.
		ixClasses, ixNum = nil, 0
	}
	// One index of the batch's edges for every layer (and the backward
	// pass): a GPU backend uploads it once; the tape frees its copy. A
	// malformed batch fails here without an index and is then reported by
	// the layers' own index checks.
	if ix, err := edges.Indexed(nodes, ixClasses, ixNum); err == nil {
		edges = ix
		tp.OwnIndex(ix.Index)
	}
	var seg *nn.Segments
	if m.Cfg.Norm == GraphNorm {
		var err error
		if seg, err = nn.NewSegments(b.NodeGraph, b.Len()); err != nil {
			panic(fmt.Sprintf("vae.Encode: %v", err))
		}
	}
	for l, c := range m.convs {
		z := c.Forward(tp, h, edges, ef)
		switch n := m.norms[l].(type) {
		case nil:
		case *nn.BatchNorm1d:
			z = n.ForwardMode(tp, z, mode != Eval)
		case *nn.GraphNorm:
			z = n.Forward(tp, z, seg)
		case *nn.LayerNorm:
			z = n.Forward(tp, z)
		default:
			panic(fmt.Sprintf("vae.Encode: norm %T", n))
		}
		z = tp.GELU(z)
		if l == 0 {
			h = z
		} else {
			h = tp.Add(h, z)
		}
	}
	out := m.head2.Forward(tp, tp.GELU(m.head1.Forward(tp, h)))
	parts := tp.Split(out, 1, m.Cfg.Latent, m.Cfg.Latent)
	return parts[0], tp.Clamp(parts[1], -30, 20)
}

// Reparameterize returns mu + exp(logvar/2) * noise with noise ~ N(0, I)
// drawn from r.
func Reparameterize(tp *autograd.Tape, mu, logvar *autograd.Var, r *tensor.RNG) *autograd.Var {
	return reparameterize(tp, mu, logvar, r, nil)
}

// reparameterize is Reparameterize of sh's share of a larger batch (when
// sh is not nil): the noise of the whole batch is drawn and cut to the
// share's rows.
func reparameterize(tp *autograd.Tape, mu, logvar *autograd.Var, r *tensor.RNG, sh *share) *autograd.Var {
	var noise *tensor.Tensor
	if sh == nil {
		noise = tensor.FillNormal(tp.Scratch(mu.DType(), mu.Shape()...), r, 0, 1)
	} else {
		noise = tensor.RandN(r, mu.DType(), sh.nodes, mu.Dim(1)).Slice(0, sh.nodeLo, sh.nodeLo+mu.Dim(0)).Clone()
	}
	noise = noise.On(mu.Value.Backend())
	std := tp.Exp(tp.MulScalar(logvar, 0.5))
	return tp.Add(mu, tp.Mul(std, autograd.NewConst(noise)))
}

// Decoded holds the decoder's outputs for a padded batch.
type Decoded struct {
	// EdgeLogits is (B, N, N, b+1): class scores for the ordered pair
	// (i, j), i.e. the edge i -> j; class 0 is "no edge".
	EdgeLogits *autograd.Var
	// NodeLogits is (B*N, a) in padded order, nil if unlabelled.
	NodeLogits *autograd.Var
	// PairMask is (B, 1, N, N): 1 for valid ordered pairs. Like the
	// logits, it belongs to the decoding tape: Clone it to keep it past the
	// tape's Release.
	PairMask *tensor.Tensor
	// Sizes holds each graph's node count; N is the padded width.
	Sizes []int
	N     int
}

// DecodeDense runs the decoder on padded latents z (B, N, Latent) for
// graphs of the given sizes (each <= N).
func (m *Model) DecodeDense(tp *autograd.Tape, z *autograd.Var, sizes []int) *Decoded {
	shape := z.Shape()
	if len(shape) != 3 || shape[2] != m.Cfg.Latent || shape[0] != len(sizes) {
		panic(fmt.Sprintf("vae.DecodeDense: latents of shape %v for %d graphs, want (B, N, %d)", shape, len(sizes), m.Cfg.Latent))
	}
	B, N, d := shape[0], shape[1], shape[2]
	C := m.Cfg.EdgeClasses + 1
	dt := z.DType()
	out := &Decoded{Sizes: sizes, N: N}
	if m.refine != nil {
		z = m.refine.Forward(tp, z, sizes)
	}
	if m.nodeHead != nil {
		out.NodeLogits = m.nodeHead.Forward(tp, tp.Reshape(z, B*N, d))
	}
	p := m.proj.Forward(tp, z)                     // (B, N, mult*C*d)
	heads := func(v *autograd.Var) *autograd.Var { // (B, N, C*d) -> (B*C, N, d)
		v = tp.Permute(tp.Reshape(v, B, N, C, d), 0, 2, 1, 3)
		return tp.Reshape(tp.Contiguous(v), B*C, N, d)
	}
	scale := 1 / math.Sqrt(float64(d))
	var s *autograd.Var
	if !m.Cfg.Directed {
		qk := tp.Split(p, 2, C*d, C*d)
		s = tp.MatMul(heads(qk[0]), heads(qk[1]), false, true)
		s = tp.MulScalar(s, scale)
		s = tp.MulScalar(tp.Add(s, tp.Transpose(s, 1, 2)), 0.5)
	} else {
		qk := tp.Split(p, 2, C*d, C*d, C*d, C*d)
		sre := tp.MatMul(heads(qk[0]), heads(qk[1]), false, true)
		sim := tp.MatMul(heads(qk[2]), heads(qk[3]), false, true)
		if m.Cfg.QPerGraph { // one factor per graph, broadcast over its heads
			f := tensor.New(dt, B, C, 1, 1)
			for b, n := range sizes {
				for c := range C {
					f.Set(magneticFactor(m.Cfg.DecoderQ(n)), b, c, 0, 0)
				}
			}
			sim = tp.Mul(sim, autograd.NewConst(f.Reshape(B*C, 1, 1).On(m.backend())))
		} else {
			sim = tp.MulScalar(sim, magneticFactor(m.Cfg.Q))
		}
		s = tp.MulScalar(tp.Add(sre, sim), scale)
	}
	s = tp.Reshape(s, B, C, N, N)

	mask, count := pairMask(tp, dt, sizes, N)
	out.PairMask = mask
	maskV, countV := autograd.NewConst(mask.On(m.backend())), autograd.NewConst(count.On(m.backend()))
	// Row-wise DeepSet: context from the mean of row i's valid scores.
	rowMean := tp.Div(tp.Sum(tp.Mul(s, maskV), 3, true), countV) // (B, C, N, 1)
	ctx := m.dsCtx.Forward(tp, m.dsPhi.Forward(tp, rowMean))     // (B, C, N, Ds)
	// Each score s[b, c, i, j] -> dsOut(GELU(dsSelf(s) + ctx[b, c, i])),
	// fused: no (B, C, N, N, Ds) tensor, forward or backward. dsSelf's
	// weight is (Ds, 1) and dsOut's (1, Ds): both are vectors of Ds.
	Ds, rows := m.Cfg.DeepSet, B*C*N
	logit := tp.DeepSetScores(tp.Reshape(s, rows, N), tp.Reshape(ctx, rows, Ds),
		tp.Reshape(m.dsSelf.W, Ds), m.dsSelf.B, tp.Reshape(m.dsOut.W, Ds), m.dsOut.B) // (B·C·N, N)
	logit = tp.Permute(tp.Reshape(logit, B, C, N, N), 0, 2, 3, 1)
	logit = tp.Contiguous(logit) // (B, N, N, C)
	if m.Cfg.SymmetricLogits {
		logit = tp.MulScalar(tp.Add(logit, tp.Contiguous(tp.Transpose(logit, 1, 2))), 0.5)
	}
	out.EdgeLogits = logit
	return out
}

// EncoderFingerprint returns the nn.Fingerprint of the encoder's weights
// and buffers alone. Latents depend on nothing else (given the
// configuration), so a model whose decoder was fine-tuned with
// TrainOptions.FreezeEncoder keeps its encoder fingerprint, and an LG-Flow
// trained in its latent space stays usable with it.
func (m *Model) EncoderFingerprint() string { return nn.Fingerprint(encoderView{m}) }

// encoderView is the encoder part of a Model as an nn.Module.
type encoderView struct{ m *Model }

func (e encoderView) Params() []nn.Param {
	var ps []nn.Param
	for _, p := range e.m.Params() {
		if strings.HasPrefix(p.Name, "encoder.") {
			ps = append(ps, p)
		}
	}
	return ps
}

// Buffers returns the BatchNorm statistics, all of which are the encoder's.
func (e encoderView) Buffers() []nn.Param { return e.m.Buffers() }

// backend returns the backend m's parameters live on.
func (m *Model) backend() tensor.Backend { return m.eps.Value.Backend() }

// RecalibrateBatchNorm sets the running statistics of a BatchNorm model to
// the average of the batch statistics of the first batches batches of
// batch graphs of d under the current weights ("precise BatchNorm", Wu and
// Johnson 2021). Running averages updated with momentum lag behind weights
// that move quickly: early in training a model evaluated with them decodes
// far worse than with batch statistics. The inputs are those of
// evaluation (no sign flips), so the statistics are the ones evaluation
// meets. Models without BatchNorm are left unchanged. It must not run
// concurrently with other passes over m.
func (m *Model) RecalibrateBatchNorm(ctx context.Context, d *Dataset, batch, batches int) error {
	var bns []*nn.BatchNorm1d
	for _, n := range m.norms {
		if b, ok := n.(*nn.BatchNorm1d); ok && b.TrackRunningStats {
			bns = append(bns, b)
		}
	}
	if len(bns) == 0 || len(d.Graphs) == 0 {
		return nil
	}
	if batch <= 0 || batches <= 0 {
		return fmt.Errorf("vae: RecalibrateBatchNorm: batch %d, batches %d", batch, batches)
	}
	momentum := bns[0].Momentum
	defer func() {
		for _, b := range bns {
			b.Momentum = momentum
		}
	}()
	for i := 0; i < batches && i*batch < len(d.Graphs); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Momentum 1/(i+1) makes the running statistics the plain mean of
		// the i+1 batches' statistics.
		for _, b := range bns {
			b.Momentum = 1 / float64(i+1)
		}
		lo, hi := i*batch, min((i+1)*batch, len(d.Graphs))
		tp := autograd.NoGrad()
		m.Encode(tp, graph.NewBatch(d.Graphs[lo:hi]), d.Features[lo:hi], calibrate, nil)
		tp.Release()
	}
	return nil
}
