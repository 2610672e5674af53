package flow

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"lgflow/autograd"
	"lgflow/dist"
	"lgflow/dit"
	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/nn"
	"lgflow/optim"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// Latents are the frozen LG-VAE posteriors of a training set: per graph
// the mean and log-variance of every node's latent, (N_i, d) float32.
type Latents struct {
	Mu, LogVar []*tensor.Tensor
	// Cond, when not nil, holds the graphs' conditions (cond.NewSet):
	// Train then trains a conditional flow, whose Config.DiT must have
	// the schema's numbers of labels and properties
	// (Config.ForCondition). EncodeLatents leaves it nil.
	Cond *cond.Set
}

// EncodeLatents encodes every graph of d with the frozen LG-VAE in
// evaluation mode. Because evaluation-mode encoding is deterministic and
// batch-independent in lgflow, encoding once is equivalent to re-encoding
// every step as the reference implementation does.
func EncodeLatents(ctx context.Context, ae *vae.Model, d *vae.Dataset, batch int, progress func(done, total int)) (*Latents, error) {
	if batch <= 0 {
		batch = 64
	}
	l := &Latents{}
	for lo := 0; lo < len(d.Graphs); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+batch, len(d.Graphs))
		b := graph.NewBatch(d.Graphs[lo:hi])
		tp := autograd.NoGrad()
		mu, lv := ae.Encode(tp, b, d.Features[lo:hi], vae.Eval, nil)
		mu32, lv32 := mu.Value.To(tensor.Float32), lv.Value.To(tensor.Float32)
		for i := range b.Len() {
			l.Mu = append(l.Mu, mu32.Slice(0, b.NodeOffset[i], b.NodeOffset[i+1]).Clone())
			l.LogVar = append(l.LogVar, lv32.Slice(0, b.NodeOffset[i], b.NodeOffset[i+1]).Clone())
		}
		tp.Release()
		if progress != nil {
			progress(hi, len(d.Graphs))
		}
	}
	return l, nil
}

// batchLatents returns the padded (B, N, d) latents x1 = scale·z of the
// graphs idx (z = mu, or mu + sigma*eps when sample is set) and their mask
// (B, N).
func (l *Latents) batchLatents(idx []int, scale float64, sample bool, r *tensor.RNG) (x1, mask *tensor.Tensor) {
	d := l.Mu[0].Dim(1)
	n := 0
	for _, i := range idx {
		n = max(n, l.Mu[i].Dim(0))
	}
	x1 = tensor.New(tensor.Float32, len(idx), n, d)
	mask = tensor.New(tensor.Float32, len(idx), n)
	xd, md := x1.Data32(), mask.Data32()
	for b, i := range idx {
		mu, lv := l.Mu[i].Data32(), l.LogVar[i].Data32()
		rows := l.Mu[i].Dim(0)
		for j := range rows * d {
			z := float64(mu[j])
			if sample {
				z += math.Exp(0.5*float64(lv[j])) * r.Normal()
			}
			xd[b*n*d+j] = float32(scale * z)
		}
		for j := range rows {
			md[b*n+j] = 1
		}
	}
	return x1, mask
}

// latentScale returns 1 / std of all entries of z = mu (+ noise) over the
// first batch, the reference's global latent scale.
func (l *Latents) latentScale(idx []int, sample bool, r *tensor.RNG) float64 {
	var s, s2 float64
	var cnt int
	x1, mask := l.batchLatents(idx, 1, sample, r)
	d := x1.Dim(2)
	xd, md := x1.Data32(), mask.Data32()
	for t, m := range md {
		if m == 0 {
			continue
		}
		for _, v := range xd[t*d : (t+1)*d] {
			s += float64(v)
			s2 += float64(v) * float64(v)
			cnt++
		}
	}
	mean := s / float64(cnt)
	std := math.Sqrt(s2/float64(cnt) - mean*mean)
	if std == 0 || math.IsNaN(std) {
		return 1
	}
	return 1 / std
}

// initScale returns the latent scale that shows init's denoiser this
// training set's latents at the spread it was trained on. With the same
// encoder it is init's own scale. With another one (an autoencoder
// fine-tuned from init's) it is init's scale times the ratio of the two
// encoders' latent spreads on the same graphs, idx: a scale computed afresh
// from one batch differs from the stored one by several per cent, and the
// denoiser's data-end predictions are that sensitive to it.
func initScale(ctx context.Context, init *Model, ae *vae.Model, train *vae.Dataset, lat *Latents, idx []int) (float64, error) {
	if init.VAE == nil || init.VAE.EncoderFingerprint() == ae.EncoderFingerprint() {
		return init.Scale, nil
	}
	gs := make([]*graph.Graph, len(idx))
	for i, j := range idx {
		gs[i] = train.Graphs[j]
	}
	d, err := vae.Prepare(ctx, gs, init.VAE.Cfg, nil)
	if err != nil {
		return 0, fmt.Errorf("flow: the initial denoiser's autoencoder: %w", err)
	}
	old, err := EncodeLatents(ctx, init.VAE, d, len(gs), nil)
	if err != nil {
		return 0, fmt.Errorf("flow: the initial denoiser's autoencoder: %w", err)
	}
	all := make([]int, len(gs))
	for i := range all {
		all[i] = i
	}
	// latentScale is 1/std: init.Scale · std(old) / std(new).
	return init.Scale * lat.latentScale(idx, false, nil) / old.latentScale(all, false, nil), nil
}

// Progress is reported by Train.
type Progress struct {
	Step, Steps int
	Loss        float64
	// Score is the latest validation score (NaN before the first).
	Score, BestScore float64
	Elapsed, ETA     time.Duration
	StepsPerSecond   float64
}

// TrainOptions controls Train's output and validation.
type TrainOptions struct {
	// Dir receives flow.safetensors (the best sampling model) and
	// state.safetensors (resumable). Empty: nothing is written.
	Dir    string
	Resume bool
	// Init, when not nil, supplies the denoiser's starting weights (and
	// the EMA's): those of a flow with the same DiT configuration trained
	// elsewhere, for example on smaller graphs of the same family or in
	// the latent space of the autoencoder this one's was fine-tuned from.
	// Its denoiser is used, and its latent scale (adjusted by the ratio
	// of the latent spreads when the autoencoder differs, initScale); the
	// node counts come from this training set. A resumed state takes
	// precedence.
	Init *Model
	// Score rates validation samples (higher is better, e.g. the fraction
	// of valid graphs); nil disables validation-based selection and the
	// last model is kept. A conditional flow's validation samples are
	// unconditional (the null condition).
	Score    func(gs []*graph.Graph) float64
	Progress func(Progress)
	LogEvery int
	// MaxDuration stops training (after a checkpoint) once exceeded.
	MaxDuration time.Duration
	// Backend runs the training steps on another tensor backend, such as
	// the GPU backend that package cuda registers (nil: the CPU). Batches
	// are assembled on the CPU and uploaded; validation sampling, the EMA
	// model that Train returns, and the files it writes are on the CPU.
	Backend tensor.Backend
	// Comm, when it has more than one rank (under mpirun, dist.Open),
	// trains data parallel: Config.BatchSize stays the global batch, each
	// step's batch, noise, times and conditions are drawn in full as in one
	// process on every rank, each rank computes the loss of its
	// contiguous share of the batch (trainer.Share; the loss weights are
	// the whole batch's, so the shares' losses sum to the batch's), and
	// the gradients are summed, so every rank takes the step one process
	// would (up to float summation order). Every rank starts from rank 0's
	// state; rank 0 alone validates, reports Progress and writes Dir. The
	// decoder loss (Config.DecoderWeight) is not supported. Nil:
	// dist.Local(), one process.
	Comm dist.Comm
}

// nodeCountHistogram returns counts[n] = number of graphs with n nodes.
func nodeCountHistogram(gs []*graph.Graph) []int {
	var c []int
	for _, g := range gs {
		for len(c) <= g.N() {
			c = append(c, 0)
		}
		c[g.N()]++
	}
	return c
}

// sampleTime draws training times: logit-normal(mean, std) mixed 2% with
// uniform, rescaled to [0.01, 0.99]. std 0 means 1.
func sampleTime(r *tensor.RNG, n int, mean, std float64) []float64 {
	if std == 0 {
		std = 1
	}
	t := make([]float64, n)
	for i := range t {
		p := 1 / (1 + math.Exp(-(mean + std*r.Normal())))
		p = 0.98*p + 0.02*r.Uniform()
		t[i] = 0.01 + 0.98*p
	}
	return t
}

// Loss returns the flow-matching loss of c's training (its training-time
// distribution and self-conditioning) of net on a batch x1 (B, N, d) of
// latents in the flow's space with mask (B, N), drawing noise, times and
// the self-conditioning decision from r: one step of Train without the
// decoder term and conditions, for benchmarks and tests of the step.
func (c Config) Loss(tp *autograd.Tape, net *dit.Model, x1, mask *tensor.Tensor, r *tensor.RNG) *autograd.Var {
	l, _ := prepareBatch(c, x1, mask, r).loss(tp, net, c, r, nil)
	return l
}

// decoderTerm is the decoder loss of a training run (Config.DecoderWeight):
// a frozen copy of the LG-VAE and the map from the flow's space back to
// the LG-VAE's.
type decoderTerm struct {
	ae     *vae.Model // frozen
	weight float64
	// scale is the flow's global latent scale.
	scale float64
}

// newDecoderTerm returns the decoder term of m's training (nil when
// cfg.DecoderWeight is 0), with m's scale set.
func newDecoderTerm(cfg Config, ae *vae.Model, m *Model) (*decoderTerm, error) {
	if cfg.DecoderWeight == 0 {
		return nil, nil
	}
	frozen, err := ae.Frozen()
	if err != nil {
		return nil, fmt.Errorf("flow: decoder loss: %w", err)
	}
	return &decoderTerm{ae: frozen, weight: cfg.DecoderWeight, scale: m.Scale}, nil
}

// dataEstimate returns the coefficients that give the denoiser's
// estimate of the data from its noise prediction at times t:
// x̂1 = base + coef·pred, with base = xt/t and coef (B, 1, 1) = -(1-t)/t
// (x̂1 = (xt - (1-t)·x̂0)/t).
func dataEstimate(xt *tensor.Tensor, t []float64) (base, coef *tensor.Tensor) {
	dt := xt.DType()
	inv := perGraph(dt, t, func(v float64) float64 { return 1 / v })
	return tensor.Mul(nil, xt, inv), perGraph(dt, t, func(v float64) float64 { return -(1 - v) / v })
}

// prepare sets the host-side parts of p's decoder term: its graphs (the
// training graphs idx of train) and the affine map from the prediction to
// the LG-VAE latents of the data estimate, z = base + coef·pred
// (dataEstimate followed by the inverse of the flow's latent map).
func (d *decoderTerm) prepare(p *preparedBatch, train *vae.Dataset, idx []int) {
	gs := make([]*graph.Graph, len(idx))
	for i, j := range idx {
		gs[i] = train.Graphs[j]
	}
	p.graphs = graph.NewBatch(gs)
	p.decBase, p.decCoef = d.latentMap(p.xt, p.t)
}

// latentMap returns base and coef of z = base + coef·pred, the LG-VAE
// latents of the data estimate from the prediction pred at xt and times t.
func (d *decoderTerm) latentMap(xt *tensor.Tensor, t []float64) (base, coef *tensor.Tensor) {
	base, coef = dataEstimate(xt, t)
	tensor.MulScalar(base, base, 1/d.scale)
	tensor.MulScalar(coef, coef, 1/d.scale)
	return base, coef
}

// lossOf returns the decoder loss of the prediction pred of the prepared
// batch p (prepare set its decoder parts).
func (d *decoderTerm) lossOf(tp *autograd.Tape, pred *autograd.Var, p *preparedBatch) (*autograd.Var, error) {
	be := pred.Value.Backend()
	z := tp.Add(tp.Mul(pred, autograd.NewConst(tp.Own(p.decCoef.On(be)))), autograd.NewConst(tp.Own(p.decBase.On(be))))
	return d.ae.DecoderLoss(tp, z, p.graphs)
}

// preparedBatch is the host-side part of a training step (loss): the
// noised latents, their times, the regression target and the loss
// weights, all on the CPU.
type preparedBatch struct {
	xt, mask, target, w *tensor.Tensor
	t                   []float64
	// graphs are the batch's training graphs and decBase, decCoef the map
	// z = decBase + decCoef·pred to the LG-VAE latents of the data
	// estimate, for the decoder loss (Config.DecoderWeight; nil without
	// it; decoderTerm.prepare).
	graphs           *graph.Batch
	decBase, decCoef *tensor.Tensor
	// cond is the batch's condition, some of it dropped (a conditional
	// flow; nil without).
	cond *dit.Cond
	// skipXt and cOut, with Config.Precondition, map the denoiser's
	// output F to the noise estimate skipXt + cOut·F: c_skip(t)·x_t
	// (B, N, d) and c_out(t) (B, 1, 1) (preconditioning); nil without.
	skipXt, cOut *tensor.Tensor
}

// prepareBatch draws the times and noise of a batch x1 (B, N, d) with mask
// (B, N) from r and builds the path points, target and weights. It needs
// no network, so training prepares the next step's batch while the
// current step runs.
func prepareBatch(cfg Config, x1, mask *tensor.Tensor, r *tensor.RNG) *preparedBatch {
	B, N, d := x1.Dim(0), x1.Dim(1), x1.Dim(2)
	t := sampleTime(r, B, cfg.TimeMean, cfg.TimeStd)
	x0 := tensor.RandN(r, x1.DType(), B, N, d)
	mask3 := mask.Reshape(B, N, 1)
	tensor.Mul(x0, x0, mask3)
	xt := pathPoint(x1, x0, t)
	// Per-graph weights: mask / (n_valid * d * B · max(t, 0.1)^2).
	w := tensor.New(x1.DType(), B, N, 1)
	md := mask.To(tensor.Float64).Data64()
	for b := range B {
		nv := 0.0
		for j := range N {
			nv += md[b*N+j]
		}
		if nv == 0 {
			continue
		}
		c := 1 / (nv * float64(d) * float64(B))
		c /= math.Pow(max(t[b], 0.1), 2)
		for j := range N {
			w.Set(c*md[b*N+j], b, j, 0)
		}
	}
	p := &preparedBatch{xt: xt, mask: mask, target: x0, w: w, t: t}
	if cfg.Precondition {
		p.skipXt = tensor.Mul(nil, xt, perGraph(x1.DType(), t, func(v float64) float64 { s, _ := preconditioning(v); return s }))
		p.cOut = perGraph(x1.DType(), t, func(v float64) float64 { _, o := preconditioning(v); return o })
	}
	return p
}

// preconditioning returns the coefficients of the noise estimate x̂0 =
// skip·x_t + out·F of a preconditioned denoiser's output F at time t
// (Config.Precondition): skip = (1−t)/n and out = t/√n, n = (1−t)²+t²,
// the residual x0 − skip·x_t's regression onto x_t and its spread for
// unit-variance data.
func preconditioning(t float64) (skip, out float64) {
	n := (1-t)*(1-t) + t*t
	return (1 - t) / n, t / math.Sqrt(n)
}

// share returns the part of p that holds sets lo..hi-1 of its batch (the
// share of one rank in data-parallel training, trainer.Share): its rows of
// the latents, targets, weights, times and condition (of condDim values
// per set). The weights are the whole batch's, so the shares' losses sum
// to the batch's. The decoder term's parts are not cut (Train refuses it
// with more than one rank).
func (p *preparedBatch) share(lo, hi, condDim int) *preparedBatch {
	cut := func(t *tensor.Tensor) *tensor.Tensor { return t.Slice(0, lo, hi).Clone() }
	q := &preparedBatch{xt: cut(p.xt), mask: cut(p.mask), target: cut(p.target), w: cut(p.w), t: slices.Clone(p.t[lo:hi])}
	if p.skipXt != nil {
		q.skipXt, q.cOut = cut(p.skipXt), cut(p.cOut)
	}
	if c := p.cond; c != nil {
		qc := &dit.Cond{}
		if c.Class != nil {
			qc.Class = slices.Clone(c.Class[lo:hi])
		}
		if c.Vec != nil {
			qc.Vec = slices.Clone(c.Vec[lo*condDim : hi*condDim])
		}
		if c.Drop != nil {
			qc.Drop = slices.Clone(c.Drop[lo:hi])
		}
		q.cond = qc
	}
	return q
}

// loss runs net on the prepared batch (brought to the network's backend)
// under its condition and returns the weighted squared error, drawing the
// self-conditioning decision from r after prepareBatch's draws; with dec,
// plus its weight times the decoder loss of the data estimate. The
// self-conditioning pass sees the same condition.
func (p *preparedBatch) loss(tp *autograd.Tape, net *dit.Model, cfg Config, r *tensor.RNG, dec *decoderTerm) (*autograd.Var, error) {
	be := net.Backend()
	xtV, devMask := autograd.NewConst(tp.Own(p.xt.On(be))), tp.Own(p.mask.On(be))
	var xsc *autograd.Var
	if cfg.DiT.SelfCond && r.Uniform() < cfg.SelfCondProb {
		ng := autograd.NoGrad()
		pred := p.estimate(ng, net.ForwardCond(ng, xtV, p.t, devMask, nil, p.cond), be)
		xsc = autograd.NewConst(tp.Own(pred.Value.Clone()))
		ng.Release()
	}
	pred := p.estimate(tp, net.ForwardCond(tp, xtV, p.t, devMask, xsc, p.cond), be)
	fm := tp.SquaredError(pred, autograd.NewConst(tp.Own(p.target.On(be))), tp.Own(p.w.On(be)))
	if dec == nil {
		return fm, nil
	}
	dl, err := dec.lossOf(tp, pred, p)
	if err != nil {
		return nil, err
	}
	return tp.Add(fm, tp.MulScalar(dl, dec.weight)), nil
}

// estimate returns the noise estimate x̂0 of the denoiser's output out:
// out itself, or with Config.Precondition c_skip·x_t + c_out·out.
func (p *preparedBatch) estimate(tp *autograd.Tape, out *autograd.Var, be tensor.Backend) *autograd.Var {
	if p.skipXt == nil {
		return out
	}
	return tp.Add(tp.Mul(out, autograd.NewConst(tp.Own(p.cOut.On(be)))), autograd.NewConst(tp.Own(p.skipXt.On(be))))
}

// Train trains an LG-Flow model in the latent space of the frozen ae on the
// training set train (with its latents precomputed by EncodeLatents). A
// failure of the backend's device (out of memory, tensor.ErrDevice) is
// returned as an error.
//
// With lat.Cond it trains a conditional flow (cond.Schema): each training
// graph's condition is standardised with the schema and dropped, replaced
// by the null condition, with probability cfg.CondDrop, drawn from the
// step's seeded generator (after the batch's noise and times), so a
// resumed run continues bit for bit.
func Train(ctx context.Context, cfg Config, ae *vae.Model, train *vae.Dataset, lat *Latents, opts TrainOptions) (_ *Model, err error) {
	defer tensor.CatchDeviceError(&err)
	schema, err := checkTrainArgs(cfg, ae, train, lat, opts)
	if err != nil {
		return nil, err
	}
	r, err := newTrainRun(ctx, cfg, ae, train, lat, opts, schema)
	if err != nil {
		return nil, err
	}
	state, err := r.openDir()
	if err != nil {
		return nil, err
	}
	if trainer.Distributed(r.comm) {
		// Every rank starts from rank 0's weights, optimiser, EMA, latent
		// scale and run state.
		if err := trainer.BroadcastState(r.comm, r.net, r.opt, r.ema.Weights(), &state); err != nil {
			return nil, fmt.Errorf("flow: %w", err)
		}
		scale := []float64{r.m.Scale}
		if err := r.comm.Broadcast64(scale, 0); err != nil {
			return nil, fmt.Errorf("flow: broadcasting the latent scale: %w", err)
		}
		r.m.Scale = scale[0]
	}
	r.meta[metaScale] = fmt.Sprint(r.m.Scale)
	if r.dec, err = newDecoderTerm(cfg, ae, r.m); err != nil {
		return nil, err
	}
	r.stepper = trainer.NewStepper(r.params, r.opt, 0)
	r.stepper.Comm = r.comm
	state, err = trainer.Run(ctx, state, r.loop())
	return r.finish(ctx, state, err)
}

// checkTrainArgs rejects the configuration, autoencoder and training set
// that Train cannot run with, before anything is built, and returns the
// conditions' schema (nil: unconditional).
func checkTrainArgs(cfg Config, ae *vae.Model, train *vae.Dataset, lat *Latents, opts TrainOptions) (*cond.Schema, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.DiT.Dim != ae.Cfg.Latent {
		return nil, fmt.Errorf("flow: DiT dimension %d does not match the LG-VAE latent dimension %d", cfg.DiT.Dim, ae.Cfg.Latent)
	}
	if len(lat.Mu) != len(train.Graphs) || len(lat.Mu) == 0 {
		return nil, fmt.Errorf("flow: %d latents for %d training graphs", len(lat.Mu), len(train.Graphs))
	}
	var schema *cond.Schema
	if lat.Cond != nil {
		if err := lat.Cond.Check(len(lat.Mu)); err != nil {
			return nil, err
		}
		schema = lat.Cond.Schema
	}
	if err := checkSchema(schema, cfg.DiT); err != nil {
		return nil, fmt.Errorf("flow: %w", err)
	}
	if c := opts.Comm; trainer.Distributed(c) {
		if cfg.BatchSize < c.Size() {
			return nil, fmt.Errorf("flow: a batch of %d graphs cannot be split over %d ranks", cfg.BatchSize, c.Size())
		}
		if cfg.DecoderWeight != 0 {
			return nil, fmt.Errorf("flow: the decoder loss (decoder_weight %g) is not supported in data-parallel training", cfg.DecoderWeight)
		}
	}
	return schema, nil
}

// trainRun is one call of Train: the denoiser being trained, its
// optimiser and EMA, the model it becomes, and where it writes.
type trainRun struct {
	cfg   Config
	opts  TrainOptions
	train *vae.Dataset
	lat   *Latents
	comm  dist.Comm // opts.Comm, or dist.Local()

	// m is the model being trained: its latent scale, node counts and
	// conditions; its Net is set when the run ends.
	m        *Model
	net      *dit.Model
	params   []optim.Param
	opt      *optim.AdamW
	schedule optim.StableDecay
	ema      *optim.EMA
	dec      *decoderTerm // the decoder loss of the data estimate, if any
	// stepper checks for non-finite values on a GPU every few steps, and
	// before anything is saved.
	stepper              *trainer.Stepper
	meta                 map[string]string // the checkpoints' metadata
	statePath, modelPath string            // empty without TrainOptions.Dir

	// sampled is a Model whose Net holds the EMA weights after step
	// sampledStep (emaModel): validation, the checkpoint and the returned
	// model of one step share it.
	sampled     *Model
	sampledStep int
}

// newTrainRun builds the denoiser of cfg (from opts.Init's weights when
// given, on opts.Backend, its weights flattened), its AdamW optimiser,
// learning-rate schedule and EMA, and the model with its latent scale.
func newTrainRun(ctx context.Context, cfg Config, ae *vae.Model, train *vae.Dataset, lat *Latents, opts TrainOptions, schema *cond.Schema) (*trainRun, error) {
	net, err := dit.New(cfg.DiT, tensor.NewRNG(cfg.Seed))
	if err != nil {
		return nil, err
	}
	if opts.Init != nil {
		if err := initFrom(net, opts.Init, cfg); err != nil {
			return nil, err
		}
	}
	if be := opts.Backend; be != nil && be != tensor.CPU {
		if err := nn.ToBackend(net, be); err != nil {
			return nil, fmt.Errorf("flow: %w", err)
		}
	}
	if err := trainer.Flatten(net); err != nil {
		return nil, fmt.Errorf("flow: %w", err)
	}
	r := &trainRun{cfg: cfg, opts: opts, train: train, lat: lat, comm: opts.Comm, net: net, params: trainer.OptimParams(net), sampledStep: -1}
	if r.comm == nil {
		r.comm = dist.Local()
	}
	if r.opt, err = optim.NewAdamW(r.params, optim.AdamWConfig{LR: cfg.LR, Beta1: cfg.Beta1, Beta2: cfg.Beta2, Eps: 1e-8, WeightDecay: cfg.WeightDecay}); err != nil {
		return nil, err
	}
	r.schedule = optim.StableDecay{Peak: cfg.LR, Steps: cfg.Steps, Decay: cfg.Cooldown}
	if r.ema, err = optim.NewEMA(r.params, optim.EMAConfig{Beta: cfg.EMABeta, UpdateAfterStep: cfg.EMAAfter, UpdateEvery: 1, InvGamma: 1, Power: 2.0 / 3}); err != nil {
		return nil, err
	}
	r.m = &Model{Cfg: cfg, VAE: ae, NodeCounts: nodeCountHistogram(train.Graphs), Cond: cloneCondition(schema)}
	first := trainer.BatchOrder(cfg.Seed^0xf10f10, len(train.Graphs), cfg.BatchSize, 0)
	r.m.Scale = lat.latentScale(first, cfg.SampleLatents, tensor.NewRNG(cfg.Seed^0x5ca1e))
	if opts.Init != nil {
		if r.m.Scale, err = initScale(ctx, opts.Init, ae, train, lat, first); err != nil {
			return nil, err
		}
	}
	if lat.Cond != nil {
		nodes := make([]int, len(train.Graphs))
		for i, g := range train.Graphs {
			nodes[i] = g.N()
		}
		if r.m.CondSizes, err = cond.NewSizes(lat.Cond, nodes); err != nil {
			return nil, err
		}
	}
	r.meta = map[string]string{trainer.MetaKind: stateKind, trainer.MetaConfig: trainer.MarshalMeta(cfg)}
	if r.m.Cond != nil {
		r.meta[metaCondition] = trainer.MarshalMeta(r.m.Cond)
	}
	return r, nil
}

// openDir creates TrainOptions.Dir and, with Resume, loads the denoiser,
// optimiser, EMA and latent scale from the training state there,
// returning the state to run from (the zero RunState for a new run, or
// without Dir).
func (r *trainRun) openDir() (trainer.RunState, error) {
	var run trainer.RunState
	if r.opts.Dir == "" {
		return run, nil
	}
	r.statePath, r.modelPath = filepath.Join(r.opts.Dir, StateFile), filepath.Join(r.opts.Dir, ModelFile)
	st, err := trainer.OpenDir(r.opts.Dir, StateFile, r.opts.Resume, r.net, r.opt)
	if err != nil {
		return run, fmt.Errorf("flow: %w", err)
	}
	if st == nil {
		return run, nil // a new run
	}
	var saved Config
	if err := trainer.UnmarshalMeta(st.Meta, trainer.MetaConfig, &saved); err != nil || !resumable(saved, r.cfg) {
		return run, fmt.Errorf("flow: resume: %s was written for a different configuration", r.statePath)
	}
	if st.Meta[metaCondition] != r.meta[metaCondition] {
		return run, fmt.Errorf("flow: resume: %s was written for other conditions (%s), these are %s", r.statePath, orNone(st.Meta[metaCondition]), orNone(r.meta[metaCondition]))
	}
	if err := r.ema.LoadWeights(st.Extra); err != nil {
		return run, fmt.Errorf("flow: resume: EMA weights: %w", err)
	}
	if run, err = st.Run("best_score"); err != nil {
		return run, fmt.Errorf("flow: resume: %s: %w", r.statePath, err)
	}
	trainer.ForgetLostBest(&run, r.modelPath)
	if r.m.Scale, err = strconv.ParseFloat(st.Meta[metaScale], 64); err != nil || !(r.m.Scale > 0) || math.IsInf(r.m.Scale, 0) {
		return run, fmt.Errorf("flow: resume: %s: bad %q metadata %q", r.statePath, metaScale, st.Meta[metaScale])
	}
	return run, nil
}

// validating reports whether the run validates: with a score, every
// Config.ValEvery steps.
func (r *trainRun) validating() bool { return r.opts.Score != nil && r.cfg.ValEvery > 0 }

// loop returns the trainer.Loop of the run: its cadence and its step
// preparation, checkpoint, progress and (when validating) validation
// functions.
func (r *trainRun) loop() trainer.Loop {
	cfg, opts := r.cfg, r.opts
	l := trainer.Loop{
		Seed: cfg.Seed, BatchSeed: cfg.Seed ^ 0xf10f10, N: len(r.train.Graphs), BatchSize: cfg.BatchSize,
		Steps: cfg.Steps, ValEvery: cfg.ValEvery, CheckpointEvery: cfg.CheckpointEvery, LogEvery: opts.LogEvery,
		MaxDuration: opts.MaxDuration, TiesToLater: true, Sizes: nodeCountsIf(cfg.BucketBySize, r.lat), Comm: r.comm,
		Prepare:    r.prepare,
		Checkpoint: r.checkpoint,
		Progress:   r.progress,
	}
	if r.validating() {
		l.Validate = r.validate
		// Ties go to the later (longer-trained) model.
		l.SaveBest = r.saveBest
	}
	return l
}

// prepare assembles the batch of a step (latents, noise, times, the
// decoder term's graphs, conditions), drawing from rng, while the
// previous step runs, and returns the step itself.
func (r *trainRun) prepare(step int, batch []int, rng *tensor.RNG) func() error {
	cfg, lat := r.cfg, r.lat
	x1, mask := lat.batchLatents(batch, r.m.Scale, cfg.SampleLatents, rng)
	pb := prepareBatch(cfg, x1, mask, rng)
	if r.dec != nil {
		r.dec.prepare(pb, r.train, batch)
	}
	if lat.Cond != nil {
		pb.cond = condBatch(lat.Cond, batch, cfg.condDrop(), rng)
	}
	if trainer.Distributed(r.comm) {
		lo, hi := trainer.Share(len(batch), r.comm.Rank(), r.comm.Size())
		pb = pb.share(lo, hi, cfg.DiT.CondDim)
	}
	return func() error {
		r.opt.SetLR(r.schedule.LR(step + 1))
		tp := autograd.NewTape()
		loss, err := pb.loss(tp, r.net, cfg, rng, r.dec)
		if err != nil {
			tp.Release()
			return err
		}
		if err := r.stepper.Step(tp, loss); err != nil {
			return err
		}
		r.ema.Update(step + 1)
		return nil
	}
}

// emaModel returns a Model whose Net holds the EMA weights after step
// steps, built once per step.
func (r *trainRun) emaModel(step int) (*Model, error) {
	if r.sampled != nil && r.sampledStep == step {
		return r.sampled, nil
	}
	s := *r.m
	net, err := dit.New(r.cfg.DiT, tensor.NewRNG(0))
	if err != nil {
		return nil, err
	}
	if err := r.ema.CopyTo(trainer.OptimParams(net)); err != nil {
		return nil, err
	}
	s.Net = net
	r.sampled, r.sampledStep = &s, step
	return &s, nil
}

// checkpoint writes the training state st and, as LastFile, the EMA
// model (when the run has a directory), once the weights are known to be
// finite.
func (r *trainRun) checkpoint(st trainer.RunState) error {
	if err := r.stepper.Check(); err != nil || r.statePath == "" {
		return err
	}
	_, err := trainer.OnRoot(r.comm, func() ([]byte, error) {
		if err := trainer.SaveState(r.statePath, r.net, r.opt, st.Step, st.Meta(r.meta), r.ema.Weights()); err != nil {
			return nil, err
		}
		s, err := r.emaModel(st.Step)
		if err != nil {
			return nil, err
		}
		return nil, s.Save(filepath.Join(r.opts.Dir, LastFile), map[string]string{"step": fmt.Sprint(st.Step)})
	})
	return err
}

// progress reports s to TrainOptions.Progress with the latest step's loss
// and the latest validation score.
func (r *trainRun) progress(s trainer.Status) {
	if r.opts.Progress == nil || r.comm.Rank() != 0 {
		return
	}
	p := Progress{Step: s.Step, Steps: s.Steps, Loss: r.stepper.Loss(), Score: math.NaN(), BestScore: math.Inf(-1),
		Elapsed: s.Elapsed, ETA: s.ETA, StepsPerSecond: s.StepsPerSecond}
	if s.Score != nil {
		p.Score = s.Score.Value
	}
	if s.Best != nil {
		p.BestScore = s.Best.Value
	}
	r.opts.Progress(p)
}

// validate scores the EMA model after step by TrainOptions.Score on
// Config.ValSamples graphs sampled with Config.ValSteps steps.
func (r *trainRun) validate(ctx context.Context, step int) (trainer.Score, error) {
	if err := r.stepper.Check(); err != nil {
		return trainer.Score{}, err
	}
	// Rank 0 validates; every rank gets its score.
	data, err := trainer.OnRoot(r.comm, func() ([]byte, error) {
		s, err := r.emaModel(step)
		if err != nil {
			return nil, err
		}
		gs, err := Sample(ctx, s, r.cfg.ValSamples, WithSeed(r.cfg.Seed+uint64(step)), WithSettings(func(s *Sampler) { s.Steps = r.cfg.ValSteps }))
		if err != nil {
			return nil, err
		}
		return []byte(strconv.FormatFloat(r.opts.Score(gs), 'g', -1, 64)), nil
	})
	if err != nil {
		return trainer.Score{}, err
	}
	v, err := strconv.ParseFloat(string(data), 64)
	if err != nil {
		return trainer.Score{}, fmt.Errorf("flow: the validation score from rank 0: %w", err)
	}
	return trainer.Score{Value: v}, nil
}

// saveBest writes the model just validated, scored sc at step, as the
// run's model file (when the run has a directory).
func (r *trainRun) saveBest(step int, sc trainer.Score) error {
	if r.modelPath == "" {
		return nil
	}
	_, err := trainer.OnRoot(r.comm, func() ([]byte, error) {
		s, err := r.emaModel(step)
		if err != nil {
			return nil, err
		}
		return nil, s.Save(r.modelPath, map[string]string{"val_score": fmt.Sprint(sc.Value), "step": fmt.Sprint(step)})
	})
	return err
}

// finish ends the run that trainer.Run left at run with err: it returns
// the model with the EMA weights and, for a run that completed without a
// validated model, saves it as the model file.
func (r *trainRun) finish(ctx context.Context, run trainer.RunState, err error) (*Model, error) {
	m := r.m
	if err != nil {
		if ctx.Err() != nil {
			return m, err
		}
		return m, fmt.Errorf("flow: %w", err)
	}
	s, err := r.emaModel(run.Step)
	if err != nil {
		return m, err
	}
	m.Net = s.Net
	if r.modelPath != "" && (!r.validating() || run.Best == nil) {
		if _, err := trainer.OnRoot(r.comm, func() ([]byte, error) {
			return nil, m.Save(r.modelPath, map[string]string{"step": fmt.Sprint(run.Step)})
		}); err != nil {
			return m, err
		}
	}
	return m, nil
}

// outputKind names what a denoiser's output is (Config.Precondition).
func outputKind(precondition bool) string {
	if precondition {
		return "preconditioned"
	}
	return "the noise estimate itself"
}

// initFrom loads the weights of init's denoiser into net, this flow's
// (TrainOptions.Init): a denoiser of the same configuration, or an
// unconditional one of the same shape for a conditional flow, whose
// condition paths then start at zero (dit.New), so that the flow starts
// as the unconditional one.
func initFrom(net *dit.Model, init *Model, cfg Config) error {
	shared := cfg.DiT
	shared.Classes, shared.CondDim = 0, 0
	switch {
	case init.Cfg.DiT != cfg.DiT && init.Cfg.DiT != shared:
		return fmt.Errorf("flow: the initial denoiser is %+v, this flow's %+v", init.Cfg.DiT, cfg.DiT)
	case init.Cfg.Precondition != cfg.Precondition:
		return fmt.Errorf("flow: the initial denoiser's output is %s, this flow's %s (Config.Precondition): its weights would mean another estimate", outputKind(init.Cfg.Precondition), outputKind(cfg.Precondition))
	}
	sd := nn.StateDict(net)
	for k, v := range sd {
		sd[k] = v.Clone() // the condition paths keep their own
	}
	for k, v := range nn.StateDict(init.Net) {
		sd[k] = v
	}
	if err := nn.LoadStateDict(net, sd); err != nil {
		return fmt.Errorf("flow: initial weights: %w", err)
	}
	return nil
}

// cloneCondition returns a deep copy of s (nil for nil).
func cloneCondition(s *cond.Schema) *cond.Schema {
	if s == nil {
		return nil
	}
	c := *s
	c.Labels = slices.Clone(s.Labels)
	c.Properties = slices.Clone(s.Properties)
	return &c
}

// orNone returns s, or "none" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// resumable reports whether a checkpoint written under saved can continue
// under cfg: the step count, the learning rate and its cooldown, the
// training-time distribution, the batching, the decoder loss, the
// condition dropout and the validation and checkpoint cadence may change,
// nothing else.
func resumable(saved, cfg Config) bool {
	saved.Steps, saved.ValEvery, saved.ValSamples, saved.ValSteps, saved.CheckpointEvery =
		cfg.Steps, cfg.ValEvery, cfg.ValSamples, cfg.ValSteps, cfg.CheckpointEvery
	// The training-time distribution and the batching (its order is a
	// pure function of seed, step and batch size) change only which paths
	// the next steps train on: a run may switch them.
	saved.LR, saved.Cooldown = cfg.LR, cfg.Cooldown
	saved.TimeMean, saved.TimeStd, saved.BucketBySize = cfg.TimeMean, cfg.TimeStd, cfg.BucketBySize
	// The decoder loss changes the objective, not the model: a flow may
	// be fine-tuned with it from its flow-matching state. So does the
	// condition dropout.
	saved.DecoderWeight, saved.CondDrop = cfg.DecoderWeight, cfg.CondDrop
	saved.BatchSize = cfg.BatchSize
	return saved == cfg
}

// stateKind is the MetaKind of Train's training states.
const stateKind = "lgflow.flow.state"

// CheckpointConfig returns the configuration and the condition schema
// (nil for an unconditional flow) the training state at path (a StateFile
// written by Train) was written with, reading only the file's header. A
// resumed run continues with the configuration, train-flow applying the
// settings a user gives on top, and must train on the same conditions.
func CheckpointConfig(path string) (Config, *cond.Schema, error) {
	meta, err := trainer.ReadStateMeta(path, stateKind)
	if err != nil {
		return Config{}, nil, fmt.Errorf("flow: %w", err)
	}
	var c Config
	if err := trainer.UnmarshalMeta(meta, trainer.MetaConfig, &c); err != nil {
		return Config{}, nil, fmt.Errorf("flow: %s: %w", path, err)
	}
	if _, ok := meta[metaCondition]; !ok {
		return c, nil, nil
	}
	var s cond.Schema
	if err := trainer.UnmarshalMeta(meta, metaCondition, &s); err != nil {
		return Config{}, nil, fmt.Errorf("flow: %s: %w", path, err)
	}
	return c, &s, nil
}

// nodeCountsIf returns the node counts of the latents' graphs when bucket
// is set (batches of similar sizes, trainer.Loop.Sizes), else nil.
func nodeCountsIf(bucket bool, l *Latents) []int {
	if !bucket {
		return nil
	}
	sizes := make([]int, len(l.Mu))
	for i, mu := range l.Mu {
		sizes[i] = mu.Dim(0)
	}
	return sizes
}

// pathPoint returns x0 + t·(x1 - x0) with one time per graph.
func pathPoint(x1, x0 *tensor.Tensor, t []float64) *tensor.Tensor {
	x := tensor.Sub(nil, x1, x0)
	tensor.Mul(x, x, perGraph(x1.DType(), t, func(v float64) float64 { return v }))
	return tensor.Add(x, x, x0)
}

// perGraph returns f of each graph's time as a (B, 1, 1) tensor.
func perGraph(dt tensor.DType, t []float64, f func(float64) float64) *tensor.Tensor {
	c := tensor.New(dt, len(t), 1, 1)
	for b, v := range t {
		c.Set(f(v), b, 0, 0)
	}
	return c
}
