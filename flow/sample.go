package flow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"lgflow/autograd"
	"lgflow/dit"
	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/tensor"
	"lgflow/vae"
)

// sampleOptions are the choices of one call's SampleOptions.
type sampleOptions struct {
	seed     uint64
	batch    int // WithBatchSize, when batchSet
	batchSet bool
	sizes    []int
	conds    []cond.Value // WithCondition
	cfgW     *float64     // WithGuidanceScale; nil: the sampler's
	progress func(done, total int)

	// recipe is WithRecipe's choice of the settings the call starts
	// from, edits WithSettings's changes to them.
	recipe string
	edits  []func(*Sampler)
}

// settings are the resolved settings of one call (resolveOptions): the
// sampler's (Sampler.apply) and the call's own.
type settings struct {
	seed       uint64
	steps      int
	batch      int
	sizes      []int
	randomGrid bool
	shift      float64
	temp       float64
	jumpAt     float64
	offsets    TimeOffsets
	experts    []expert
	edgeRule   vae.EdgeRule
	edgeMargin *float64 // nil: the LG-VAE's Config.EdgeMargin
	decode     []vae.DecodeOption
	conds      []cond.Value
	cfgW       float64
	// cf is the classifier-free guidance of the batch being integrated,
	// which sample sets per batch from conds and cfgW; the zero value
	// samples unconditionally.
	cf       guidance
	progress func(done, total int)
}

// SampleOption configures Sample and Model.SampleLatents.
type SampleOption func(*sampleOptions)

// WithSeed sets the seed (default 0): the same seed, model and options give
// the same graphs.
func WithSeed(seed uint64) SampleOption { return func(o *sampleOptions) { o.seed = seed } }

// WithBatchSize sets how many graphs are integrated together (default: the
// sampler's Sampler.BatchSize, else DefaultBatchSize). With a seed, it is
// part of what decides the graphs.
func WithBatchSize(n int) SampleOption {
	return func(o *sampleOptions) { o.batch, o.batchSet = n, true }
}

// WithNodeCounts fixes the node counts of the sampled graphs instead of
// drawing them from the training distribution; its length must equal n.
func WithNodeCounts(sizes []int) SampleOption { return func(o *sampleOptions) { o.sizes = sizes } }

// WithCondition samples under conditions, for a conditional model
// (Model.Cond, trained with Latents.Cond): one condition for every graph,
// or one per graph (as many as graphs are sampled). Each must give every
// part of the model's schema, a label it knows and property values within
// the trained range widened by the schema's tolerance
// (cond.Schema.Range); the zero cond.Value samples its graph unconditionally.
// Without WithCondition a conditional model samples unconditionally, from
// the null condition, whatever the guidance scale; an unconditional
// model given a condition is an error. A graph under a condition takes
// its node count from the training graphs with that condition
// (Model.CondSizes, cond.Sizes.Candidates), as a condition such as an edge
// count can be met only at some sizes; WithNodeCounts fixes the counts
// instead. With the node counts fixed, the condition does not change what
// the seed draws: the same seed gives the same noise under any condition.
func WithCondition(c ...cond.Value) SampleOption {
	return func(o *sampleOptions) { o.conds = slices.Clone(c) }
}

// WithGuidanceScale sets the classifier-free guidance scale w of sampling
// under a condition (WithCondition; default: the sampler's
// Sampler.GuidanceScale, else 1): every step uses
//
//	pred = pred_uncond + w·(pred_cond - pred_uncond),
//
// the denoiser's prediction under the null condition moved w times its
// difference to the prediction under the graph's condition. w = 1 is
// plain conditional sampling and w = 0 unconditional sampling, each one
// evaluation a step; w > 1 follows the condition more strongly, at the
// cost of two evaluations a step (batched in one pass) and of diversity.
// Each prediction keeps its own self-conditioning input. A guidance scale
// other than 1 for an unconditional model is an error; w must be finite
// and >= 0.
func WithGuidanceScale(w float64) SampleOption { return func(o *sampleOptions) { o.cfgW = &w } }

// WithRecipe samples with the model's recipe alternative of this name
// (Recipe.Alternatives, for example "constrained"; "": the recipe's
// Sampler, the default) instead of its default settings; NoRecipe ignores
// the recipe: Sample's own defaults, the zero Sampler. WithSettings edits
// the settings chosen. A name the recipe lacks is an error, and so is any
// name but "" and NoRecipe for a model without a recipe.
func WithRecipe(name string) SampleOption {
	return func(o *sampleOptions) { o.recipe = name }
}

// WithSettings changes settings of the sampler the call samples with:
// the recipe's (Model.Recipe) or the alternative WithRecipe names,
// whatever the order of the options; edits apply in the order given, to a
// copy. For example
//
//	flow.WithSettings(func(s *flow.Sampler) { s.Steps, s.TimeShift = 100, 1 })
//
// samples the recipe's settings on the paper's uniform grid of 100 steps,
// and
//
//	flow.WithSettings(func(s *flow.Sampler) { s.Decode = append(s.Decode, vae.WithEdgeConstraint(planar.IsPlanar)) })
//
// decodes under a constraint of one's own. An edit that assigns the whole
// Sampler, func(s *flow.Sampler) { *s = mine }, samples with settings of
// one's own, for example to try them before writing them into a bundle's
// sampler.json; their experts name files of the model's bundle (Open) or
// carry their model (Expert.Model). A field set to its zero value means
// Sample's default (Sampler), so an edit that sets Steps to 0 asks for
// DefaultSteps.
func WithSettings(edit func(s *Sampler)) SampleOption {
	return func(o *sampleOptions) { o.edits = append(o.edits, edit) }
}

// WithProgress reports the number of graphs finished.
func WithProgress(f func(done, total int)) SampleOption {
	return func(o *sampleOptions) { o.progress = f }
}

// expert is a denoiser the sampler uses from its first time on.
type expert struct {
	m    *Model
	from float64
}

// TimeOffsets relabel the times at which the sampler evaluates the
// denoiser (Sampler.Offsets). An ODE sampler's states drift from the noise
// level the grid assigns them (exposure bias), and a denoiser asked at the
// time whose noise level matches the state does better: the idea of Li et
// al. 2024, "Alleviating exposure bias in diffusion models through
// sampling with shifted time steps". With the shipped planar flow and its
// expert, Step +0.015 from 0.5 and Jump -0.035 lower every MMD but the
// spectral one, V.U.N. within about a point (docs/results.md). Every
// shifted time must stay inside (0, 1). The zero value changes nothing,
// the paper's sampler.
type TimeOffsets struct {
	// Step is added to the time of every step that starts at From or
	// later, except the final one: the denoiser sees the state as if it
	// were at t+Step, and the step's velocity is (x - x̂0)/(t+Step).
	// Positive: the state is taken to be less noisy than the grid says.
	Step float64 `json:"step"`
	// From is the first time at which Step and Jump apply (0: every
	// step).
	From float64 `json:"from"`
	// Jump is added to the time of the final step, the jump to the data,
	// when it starts at From or later: the sample is the data estimate of
	// the state taken at time t+Jump, (x - (1-t')·x̂0)/t' with t' =
	// t+Jump. Negative: the state is taken to be noisier than the grid
	// says.
	Jump float64 `json:"jump"`
}

// Zero reports whether the offsets change nothing.
func (t TimeOffsets) Zero() bool { return t == TimeOffsets{} }

// Sample generates n graphs. A model opened from a bundle (Open) samples
// with its recipe's settings (Model.Recipe; WithRecipe selects another of
// them, WithSettings changes single ones); a model without a recipe (Load,
// Train) with Sample's defaults, the zero Sampler: DefaultSteps uniform
// Euler steps with the final jump at DefaultFinalJump, the paper's
// sampler otherwise. It is safe to call from several goroutines at once on
// the same Model, and returns ctx.Err() promptly when ctx is cancelled.
func Sample(ctx context.Context, m *Model, n int, opts ...SampleOption) ([]*graph.Graph, error) {
	out := make([]*graph.Graph, 0, max(n, 0))
	err := sample(ctx, m, n, opts, func(z *tensor.Tensor, sizes []int, o *settings) error {
		dopts := []vae.DecodeOption{vae.WithEdgeRule(o.edgeRule)}
		if o.edgeMargin != nil {
			dopts = append(dopts, vae.WithEdgeMargin(*o.edgeMargin))
		}
		dopts = append(dopts, o.decode...)
		gs, err := m.VAE.DecodePadded(ctx, z, sizes, dopts...)
		if err != nil {
			return err
		}
		out = append(out, gs...)
		if o.progress != nil {
			o.progress(len(out), n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SampleLatents generates the latents of n graphs without decoding them:
// the i-th result is (n_i, d) in the LG-VAE's latent space, ready for
// vae.Model.DecodeGraphs. With the same seed and options, Sample decodes
// exactly these latents (the sampler's decoding settings are ignored
// here; Sampler.DecodeOptions returns them). It is safe for concurrent use
// like Sample.
func (m *Model) SampleLatents(ctx context.Context, n int, opts ...SampleOption) ([]*tensor.Tensor, error) {
	out := make([]*tensor.Tensor, 0, max(n, 0))
	err := sample(ctx, m, n, opts, func(z *tensor.Tensor, sizes []int, o *settings) error {
		for i, s := range sizes {
			out = append(out, z.Slice(0, i, i+1).Reshape(z.Dim(1), z.Dim(2)).Slice(0, 0, s).Clone())
		}
		if o.progress != nil {
			o.progress(len(out), n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sample validates the options, draws node counts and integrates batch after
// batch, handing each batch's padded latents (B, N, d) on the CPU to emit.
//
// A failure of the denoiser's device (out of memory, any CUDA error:
// tensor.ErrDevice) comes back as an error, so a service sampling on a GPU
// survives it.
func sample(ctx context.Context, m *Model, n int, opts []SampleOption, emit func(z *tensor.Tensor, sizes []int, o *settings) error) (err error) {
	defer tensor.CatchDeviceError(&err)
	o, err := resolveOptions(m, opts)
	if err != nil {
		return err
	}
	switch {
	case n < 0:
		return fmt.Errorf("flow: cannot sample %d graphs", n)
	case o.batch <= 0:
		return fmt.Errorf("flow: batch size must be positive, got %d", o.batch)
	case o.sizes != nil && len(o.sizes) != n:
		return fmt.Errorf("flow: %d node counts for %d graphs", len(o.sizes), n)
	case m == nil || m.Net == nil || m.VAE == nil:
		return errors.New("flow: Sample needs a trained model")
	}
	if err := checkExperts(m, o.experts); err != nil {
		return err
	}
	plan, err := planConditions(m, o.conds, n, o.cfgW)
	if err != nil {
		return err
	}
	if o.jumpAt == 1 || o.steps < 2 {
		o.jumpAt = 0 // integrate to 1: no room for a jump in one step
	}
	sizes := o.sizes
	if sizes == nil {
		total := 0
		for _, c := range m.NodeCounts {
			if c < 0 {
				return fmt.Errorf("flow: negative entry %d in the node-count distribution", c)
			}
			total += c
		}
		if total == 0 {
			return errors.New("flow: the model has no node-count distribution; pass WithNodeCounts")
		}
		sizes = drawSizes(m, total, o.conds, n, tensor.NewRNG(o.seed^0x512e5))
	}
	for i, s := range sizes {
		if s <= 0 {
			return fmt.Errorf("flow: graph %d has %d nodes", i, s)
		}
	}
	for lo, bi := 0, 0; lo < n; lo, bi = lo+o.batch, bi+1 {
		hi := min(lo+o.batch, n)
		r := tensor.NewRNG(o.seed ^ (uint64(bi)+1)*0x9e3779b97f4a7c15)
		o.cf = plan.batch(lo, hi)
		z, err := integrate(ctx, m, sizes[lo:hi], o, r)
		if err != nil {
			return err
		}
		if err := emit(z, sizes[lo:hi], &o); err != nil {
			return err
		}
	}
	return nil
}

// resolveOptions returns the settings of opts for sampling from m: the
// sampler that opts select (the recipe's, an alternative, or with NoRecipe
// or without a recipe the zero Sampler) with
// WithSettings's edits, over Sample's defaults, and the call's own
// choices.
func resolveOptions(m *Model, opts []SampleOption) (settings, error) {
	var c sampleOptions
	for _, f := range opts {
		f(&c)
	}
	o := settings{steps: DefaultSteps, batch: DefaultBatchSize, temp: 1, jumpAt: DefaultFinalJump, shift: 1, cfgW: 1}
	var base Sampler
	switch {
	case c.recipe == NoRecipe:
	case m != nil && m.Recipe != nil:
		s, ok := m.Recipe.Lookup(c.recipe)
		if !ok {
			return o, fmt.Errorf("flow: the model's recipe has no alternative %q (it has: %s)", c.recipe, strings.Join(append([]string{`""`}, m.Recipe.Names()...), ", "))
		}
		base = s.clone()
	case c.recipe != "":
		return o, fmt.Errorf("flow: WithRecipe(%q): the model has no recipe (flow.Open reads one from a bundle's %s)", c.recipe, RecipeFile)
	}
	for _, edit := range c.edits {
		edit(&base)
	}
	if len(c.edits) > 0 {
		base = base.clone() // an edit may have assigned the caller's slices
	}
	if err := base.apply(&o, m); err != nil {
		return o, err
	}
	o.seed, o.sizes, o.conds, o.progress = c.seed, c.sizes, c.conds, c.progress
	if c.batchSet {
		o.batch = c.batch
	}
	if c.cfgW != nil {
		o.cfgW = *c.cfgW
	}
	return o, nil
}

// checkExperts checks the expert denoisers es against m, which must have
// one: the same denoiser shape, latent space and scaling, conditions and
// backend.
func checkExperts(m *Model, es []expert) error {
	// A conditional model's experts see the same conditions.
	for _, e := range es {
		if e.m != nil && e.m.Net != nil && e.m.Cfg.DiT == m.Cfg.DiT && !e.m.Cond.Equal(m.Cond) {
			return errors.New("flow: the experts must have the sampling model's conditions (labels, properties and their standardisation)")
		}
	}
	for i, e := range es {
		switch {
		case e.m == nil || e.m.Net == nil || e.m.Cfg.DiT != m.Cfg.DiT || e.m.Scale != m.Scale || !sameLatentSpace(e.m.VAE, m.VAE):
			return errors.New("flow: the expert must have the sampling model's denoiser shape, latent space and latent scaling")
		case !(e.from > 0 && e.from <= 1):
			return fmt.Errorf("flow: the expert's first time must be in (0, 1], got %g", e.from)
		case e.m.Net.Backend() != m.Net.Backend():
			return errors.New("flow: the expert must be on the sampling model's backend")
		}
		for _, f := range es[:i] {
			if f.from == e.from {
				return fmt.Errorf("flow: two experts from time %g", e.from)
			}
		}
	}
	return nil
}

// sameLatentSpace reports whether two flows' autoencoders encode alike:
// the same model, or encoders with the same weights (nil: not known).
func sameLatentSpace(a, b *vae.Model) bool {
	return a == nil || b == nil || a == b || a.EncoderFingerprint() == b.EncoderFingerprint()
}

// drawSizes draws the node counts of n graphs sampled from m under conds
// (none, one for all, or one per graph; checked): a graph under a
// condition from the training graphs that fit it, p(n | c)
// (m.CondSizes, cond.Sizes.Candidates); one under the null condition, of
// a model without the table, or of a label the table has no graph of,
// from the histogram m.NodeCounts of total graphs.
func drawSizes(m *Model, total int, conds []cond.Value, n int, r *tensor.RNG) []int {
	candidates := func(c cond.Value) []int {
		if m.CondSizes == nil || c.IsZero() {
			return nil
		}
		return m.CondSizes.Candidates(m.Cond, c)
	}
	var shared []int // the candidates of a condition for every graph
	if len(conds) == 1 {
		shared = candidates(conds[0])
	}
	sizes := make([]int, n)
	for i := range sizes {
		cands := shared
		if len(conds) > 1 {
			cands = candidates(conds[i])
		}
		if len(cands) == 0 {
			sizes[i] = drawSize(m.NodeCounts, total, r)
		} else {
			sizes[i] = cands[r.Intn(len(cands))]
		}
	}
	return sizes
}

// drawSize draws a node count from the histogram counts of total graphs.
func drawSize(counts []int, total int, r *tensor.RNG) int {
	k := r.Intn(total)
	for s, c := range counts {
		if k < c {
			return s
		}
		k -= c
	}
	panic("flow: drawSize: total exceeds the histogram's sum")
}

// timeGrid returns steps+1 increasing times from start (0.01 when
// sampling from noise) to 1. With jumpAt > 0 the first steps end at jumpAt
// and the last step goes from jumpAt to 1. The random grid (the
// reference's, Sampler.Grid) draws the inner times from the training
// distribution, clamped to [0.02, end]. shift warps the uniform grid
// (Sampler.TimeShift; 1: none).
func timeGrid(start float64, steps int, random bool, jumpAt, shift float64, r *tensor.RNG) []float64 {
	g := make([]float64, steps+1)
	end, n := 1.0, steps // the integrated part is n steps from start to end
	if jumpAt > 0 {
		end, n = jumpAt, steps-1
	}
	g[steps] = 1
	if !random {
		for i := range n {
			u := float64(i) / float64(n)
			g[i] = start + (end-start)*shift*u/(1+(shift-1)*u)
		}
		g[n] = end
		return g
	}
	mid := sampleTime(r, n-1, 0, 1)
	for i, t := range mid {
		mid[i] = min(max(t, 0.02), end)
	}
	sort.Float64s(mid)
	g[0], g[n] = start, end
	copy(g[1:], mid)
	return g
}

// tokenMask returns the (B, N) mask of the real tokens of graphs with the
// given node counts, padded to N.
func tokenMask(dt tensor.DType, sizes []int, N int) *tensor.Tensor {
	mask := tensor.New(dt, len(sizes), N)
	for b, s := range sizes {
		for j := range min(s, N) {
			mask.Set(1, b, j)
		}
	}
	return mask
}

// integrate solves the flow ODE from noise to data for graphs of the given
// sizes and returns the unscaled latents z = x(1)/s, (B, N, d).
func integrate(ctx context.Context, m *Model, sizes []int, o settings, r *tensor.RNG) (*tensor.Tensor, error) {
	B, d := len(sizes), m.Cfg.DiT.Dim
	N := 0
	for _, s := range sizes {
		N = max(N, s)
	}
	dt, be := m.Net.Params()[0].V.DType(), m.Net.Backend()
	mask := tokenMask(dt, sizes, N)
	x := tensor.RandN(r, dt, B, N, d)
	if o.temp != 1 {
		tensor.MulScalar(x, x, o.temp)
	}
	tensor.Mul(x, x, mask.Reshape(B, N, 1))
	// The noise is drawn on the CPU, so a seed gives the same start on
	// every backend.
	x, mask = x.On(be), mask.On(be)
	return solve(ctx, m, x, mask, timeGrid(0.01, o.steps, o.randomGrid, o.jumpAt, o.shift, r), o)
}

// solve integrates the flow ODE from x (B, N, d), the state at grid[0] on the
// denoiser's backend, over the times of grid with Euler steps and returns
// the unscaled latents z = x(1)/s on the CPU. mask (B, N) marks real
// tokens.
func solve(ctx context.Context, m *Model, x, mask *tensor.Tensor, grid []float64, o settings) (*tensor.Tensor, error) {
	B, N := x.Dim(0), x.Dim(1)
	mask3 := mask.Reshape(B, N, 1)
	var xsc selfCond
	last := len(grid) - 2
	for i := 0; i+1 < len(grid); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ta, tb := grid[i], grid[i+1]
		h := tb - ta
		// te is the time the denoiser sees (Sampler.Offsets). The final
		// step goes to the data estimate of the state taken at te,
		// x + (1-te)·v.
		te := ta
		switch {
		case ta < o.offsets.From:
		case i == last:
			te += o.offsets.Jump
		default:
			te += o.offsets.Step
		}
		if i == last {
			h = 1 - te
		}
		if !(te > 0 && te < 1) {
			return nil, fmt.Errorf("flow: the time offsets move the step at %g to %g, outside (0, 1)", ta, te)
		}
		// The denoiser is chosen by the grid time ta and evaluated at te.
		net, pc, from := m.Net, m.Cfg.Precondition, 0.0
		for _, e := range o.experts {
			if ta >= e.from && e.from > from {
				net, pc, from = e.m.Net, e.m.Cfg.Precondition, e.from
			}
		}
		x0, pred := o.cf.predict(net, pc, x, te, mask, xsc)
		// The velocity (x - x̂0)/te takes the state from te to te+h (tb
		// without offsets).
		v := tensor.Sub(nil, x, x0)
		tensor.MulScalar(v, v, 1/te)
		tensor.AddScaled(x, x, v, h)
		tensor.Mul(x, x, mask3)
		xsc = pred
		if !m.Cfg.DiT.SelfCond {
			xsc = selfCond{}
		}
	}
	tensor.MulScalar(x, x, 1/m.Scale)
	x = x.On(tensor.CPU)
	for _, v := range x.To(tensor.Float64).Data64() {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("flow: sampling diverged (non-finite latents)")
		}
	}
	return x, nil
}

// selfCond holds the self-conditioning inputs of a step: the previous
// step's prediction under the graphs' conditions and under the null
// condition (classifier-free guidance evaluates both), nil before the
// first step or where that prediction is not made. An unconditional
// sampler uses uncond only.
type selfCond struct {
	cond, uncond *tensor.Tensor
}

// predict evaluates net at (x, t) under g, the batch's guidance, with the
// self-conditioning inputs sc and returns the guided prediction and the
// raw predictions for the next step's self-conditioning. Without a
// condition, or with w = 0, it evaluates the null condition (an
// unconditional denoiser as it is); with w = 1 the graphs' conditions;
// otherwise both, in one pass over the batch doubled, and combines them:
// uncond + w·(cond - uncond). The predictions are noise estimates: with
// precond (Config.Precondition) net's outputs mapped to them.
func (g guidance) predict(net *dit.Model, precond bool, x *tensor.Tensor, t float64, mask *tensor.Tensor, sc selfCond) (guided *tensor.Tensor, pred selfCond) {
	eval := func(x, mask, xsc *tensor.Tensor, cond *dit.Cond) *tensor.Tensor {
		tp := autograd.NoGrad()
		defer tp.Release()
		ts := make([]float64, x.Dim(0))
		for i := range ts {
			ts[i] = t
		}
		var scv *autograd.Var
		if xsc != nil {
			scv = autograd.NewConst(xsc)
		}
		out := net.ForwardCond(tp, autograd.NewConst(x), ts, mask, scv, cond).Value.Clone()
		if precond {
			skip, c := preconditioning(t)
			tensor.MulScalar(out, out, c)
			tensor.AddScaled(out, out, x, skip)
		}
		return out
	}
	switch {
	case g.cond == nil:
		pred.uncond = eval(x, mask, sc.uncond, nil)
		return pred.uncond, pred
	case g.w == 1:
		pred.cond = eval(x, mask, sc.cond, g.cond)
		return pred.cond, pred
	}
	B := x.Dim(0)
	var xsc *tensor.Tensor
	if sc.cond != nil {
		xsc = tensor.Concat(nil, 0, sc.cond, sc.uncond)
	}
	both := eval(tensor.Concat(nil, 0, x, x), tensor.Concat(nil, 0, mask, mask), xsc, g.both)
	pred.cond, pred.uncond = both.Slice(0, 0, B).Clone(), both.Slice(0, B, 2*B).Clone()
	return g.combine(pred.cond, pred.uncond), pred
}

// combine returns the guided prediction uncond + w·(cond - uncond).
func (g guidance) combine(cond, uncond *tensor.Tensor) *tensor.Tensor {
	return tensor.AddScaled(nil, uncond, tensor.Sub(nil, cond, uncond), g.w)
}
