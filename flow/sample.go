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
	"lgflow/graph"
	"lgflow/tensor"
	"lgflow/vae"
)

// Method is an ODE integrator for sampling.
type Method string

const (
	// Euler takes one network evaluation per step (default).
	Euler Method = "euler"
	// Heun takes two evaluations per step (second order).
	Heun Method = "heun"
)

type sampleOptions struct {
	seed       uint64
	steps      int
	batch      int
	method     Method
	sizes      []int
	randomGrid bool
	shift      float64
	guide      *Model
	guideW     float64
	conds      []Cond  // WithCondition
	cfgW       float64 // WithGuidanceScale
	// cf is the classifier-free guidance of the batch being integrated,
	// which sample sets per batch from conds and cfgW; the zero value
	// samples unconditionally.
	cf         guidance
	experts    []expert
	temp       float64
	jumpAt     float64
	eta        float64
	offsets    TimeOffsets
	edgeRule   vae.EdgeRule
	edgeMargin *float64 // nil: the LG-VAE's Config.EdgeMargin
	decode     []vae.DecodeOption
	progress   func(done, total int)

	// recipe and sampler are WithRecipe's and WithSampler's choice of
	// the settings the options start from (Sampler.apply);
	// recipeExperts says experts holds the recipe's, which WithExpert
	// replaces.
	recipe        string
	sampler       *Sampler
	recipeExperts bool
}

// SampleOption configures Sample.
type SampleOption func(*sampleOptions)

// WithSeed sets the seed (default 0): the same seed, model and options give
// the same graphs.
func WithSeed(seed uint64) SampleOption { return func(o *sampleOptions) { o.seed = seed } }

// WithSteps sets the number of integration steps (default 100).
func WithSteps(n int) SampleOption { return func(o *sampleOptions) { o.steps = n } }

// WithBatchSize sets how many graphs are integrated together (default 256).
func WithBatchSize(n int) SampleOption { return func(o *sampleOptions) { o.batch = n } }

// WithMethod selects the integrator (default Euler).
func WithMethod(m Method) SampleOption { return func(o *sampleOptions) { o.method = m } }

// WithNodeCounts fixes the node counts of the sampled graphs instead of
// drawing them from the training distribution; its length must equal n.
func WithNodeCounts(sizes []int) SampleOption { return func(o *sampleOptions) { o.sizes = sizes } }

// WithRandomGrid uses the reference implementation's random time grid
// (sorted logit-normal draws clamped to [0.02, 1], between 0.01 and 1)
// instead of the default uniform grid from 0.01 to 1. The reference
// sampler is WithRandomGrid() with WithFinalJump(1); with a final jump the
// random times are clamped to the jump time.
func WithRandomGrid() SampleOption { return func(o *sampleOptions) { o.randomGrid = true } }

// WithGuidance guides sampling with a weaker version of the same model
// (autoguidance, Karras et al. 2024): every step uses the denoiser's
// prediction extrapolated away from the weak model's,
//
//	pred = pred_m + w·(pred_m - pred_weak),
//
// with w >= 0 (0: no guidance). The weak model must share m's latent space
// and denoiser shape, for example an earlier checkpoint of the same
// training run; each model keeps its own self-conditioning input. Where
// both models err alike, the difference points away from their common
// mistakes. With the shipped planar flow it moves the samples' statistics
// closer to the data's and leaves fewer of them planar, as more training
// does (docs/results.md). It doubles the cost of a step.
func WithGuidance(weak *Model, w float64) SampleOption {
	return func(o *sampleOptions) { o.guide, o.guideW = weak, w }
}

// WithCondition samples under conditions, for a conditional model
// (Model.Cond, trained with Latents.Cond): one condition for every graph,
// or one per graph (as many as graphs are sampled). Each must give every
// part of the model's schema, a label it knows and property values within
// the trained range widened by the schema's tolerance
// (Condition.Range); the zero Cond samples its graph unconditionally.
// Without WithCondition a conditional model samples unconditionally, from
// the null condition, whatever the guidance scale; an unconditional
// model given a condition is an error. The condition does not change
// what the seed draws: the same seed gives the same node counts and noise
// under any condition.
func WithCondition(c ...Cond) SampleOption {
	return func(o *sampleOptions) { o.conds = slices.Clone(c) }
}

// WithGuidanceScale sets the classifier-free guidance scale w (default 1)
// of sampling under a condition (WithCondition): every step uses
//
//	pred = pred_uncond + w·(pred_cond - pred_uncond),
//
// the denoiser's prediction under the null condition moved w times its
// difference to the prediction under the graph's condition. w = 1 is
// plain conditional sampling and w = 0 unconditional sampling, each one
// evaluation a step; w > 1 follows the condition more strongly, at the
// cost of two evaluations a step (batched in one pass) and of diversity.
// Each prediction keeps its own self-conditioning input. Unrelated to
// WithGuidance, autoguidance by a weaker model, which applies on top of
// it. A guidance scale other than 1 for an unconditional model is an
// error; w must be finite and >= 0.
func WithGuidanceScale(w float64) SampleOption { return func(o *sampleOptions) { o.cfgW = w } }

// WithExpert evaluates the denoiser of e instead of the model's at the
// steps that start at time from or later (0 < from <= 1): a second
// denoiser trained for the data end of the path (for example fine-tuned
// from the model with training times concentrated there, lgflow
// train-flow -time-mean 3), as in ensembles of expert denoisers (eDiff-I,
// Balaji et al. 2022). The final jump's estimate at from or later comes
// from the expert too. A step costs what it costs without it. Given more
// than once, it adds experts: a step uses the one with the latest first
// time not after the step's start (two with the same first time are an
// error). An expert must share the model's latent space and scaling,
// denoiser shape and target; its self-conditioning input is the previous
// step's prediction, whichever denoiser made it.
//
// With a recipe (Open), the first WithExpert replaces the recipe's experts.
func WithExpert(e *Model, from float64) SampleOption {
	return func(o *sampleOptions) {
		if o.recipeExperts {
			o.experts, o.recipeExperts = nil, false
		}
		o.experts = append(o.experts, expert{e, from})
	}
}

// WithRecipe samples with the model's recipe alternative of this name
// (Recipe.Alternatives, for example "constrained"; "": the recipe's
// Sampler, the default) instead of its default settings; NoRecipe ignores
// the recipe: Sample's own defaults, the paper's sampler. The other
// options apply after the recipe's settings, each replacing one of them.
// A name the recipe lacks is an error, and so is any name but "" and
// NoRecipe for a model without a recipe.
func WithRecipe(name string) SampleOption {
	return func(o *sampleOptions) { o.recipe, o.sampler = name, nil }
}

// WithSampler samples with the settings s in place of the model's recipe
// (the last of WithRecipe and WithSampler applies): s's experts name
// files of the model's bundle (Open). The other options apply after s's
// settings, as after a recipe's. With it, one can try settings before
// writing them into a bundle's sampler.json.
func WithSampler(s Sampler) SampleOption {
	return func(o *sampleOptions) { o.sampler, o.recipe = &s, "" }
}

// expert is a denoiser of WithExpert and its first time.
type expert struct {
	m    *Model
	from float64
}

// DefaultExpertFrom is the expert's first time that lgflow sample and the
// pipeline use unless told otherwise: chosen with the shipped planar flow
// and its expert on the validation split (docs/results.md).
// With the default grid and final jump the expert then makes the one
// evaluation at t = 0.95, the jump to the data.
const DefaultExpertFrom = 0.95

// WithTimeShift warps the uniform time grid by t = s·u/(1 + (s-1)·u), u the
// uniform fraction of the integrated interval (default s = 1: uniform).
// s > 1 makes the steps near the noise longer and those near the data
// shorter (by s at either end), where a flow's latents get their final
// precision.
func WithTimeShift(s float64) SampleOption { return func(o *sampleOptions) { o.shift = s } }

// WithTemperature scales the initial noise by tau (default 1, the
// reference). tau < 1 starts closer to the mode of the prior: samples become
// more often valid but less diverse.
func WithTemperature(tau float64) SampleOption { return func(o *sampleOptions) { o.temp = tau } }

// WithFinalJump integrates the ODE from 0.01 only to time t with steps-1
// Euler steps and then outputs the denoiser's data estimate at t, a single
// final step from t to 1. The default is DefaultFinalJump; t = 1 integrates
// all the way with steps equal steps (the reference sampler). A small flow's
// velocity is least accurate near the data end, which training visits
// rarely, and its one-step estimate there is better than many small biased
// steps: with the shipped planar models the jump at 0.95 raises V.U.N. from
// 30% to 43-46% and lowers every MMD (docs/results.md).
func WithFinalJump(t float64) SampleOption { return func(o *sampleOptions) { o.jumpAt = t } }

// DefaultFinalJump is the final-jump time Sample uses unless WithFinalJump
// says otherwise.
const DefaultFinalJump = 0.95

// WithStochasticity makes each Euler step stochastic (0 <= eta <= 1,
// default 0, the deterministic ODE): the step from t to t' goes to
// t'·x̂1 + (1-t')·(sqrt(1-eta²)·x̂0 + eta·ε) with fresh noise ε, where x̂0 and
// x̂1 are the denoiser's noise and data estimates at t (under
// WithTimeOffsets, t is the time the denoiser sees and t' = t plus the
// step). With eta = 0 this is the Euler step. Fresh noise replaces part
// of the estimated noise, so errors of earlier steps are partly forgotten
// instead of carried to the end, as in stochastic diffusion samplers.
// Euler only.
func WithStochasticity(eta float64) SampleOption { return func(o *sampleOptions) { o.eta = eta } }

// TimeOffsets relabel the times at which the sampler evaluates the
// denoiser (WithTimeOffsets). The zero value changes nothing.
type TimeOffsets struct {
	// Step is added to the time of every step that starts at From or
	// later, except the final one: the denoiser sees the state as if it
	// were at t+Step, and the step's velocity is (x - x̂0)/(t+Step) for a
	// noise-predicting flow (a velocity-predicting one's prediction is
	// the velocity). Positive: the state is taken to be less noisy than
	// the grid says.
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

// valid reports whether the offsets are finite and in range.
func (t TimeOffsets) valid() bool {
	for _, v := range []float64{t.Step, t.From, t.Jump} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return t.Step > -1 && t.Step < 1 && t.Jump > -1 && t.Jump < 1 && t.From >= 0 && t.From < 1
}

// Zero reports whether the offsets change nothing.
func (t TimeOffsets) Zero() bool { return t == TimeOffsets{} }

// WithTimeOffsets evaluates the denoiser at times shifted from the grid's
// (default: none, the reference sampler). An ODE sampler's states drift
// from the noise level the grid assigns them (exposure bias), and a
// denoiser asked at the time whose noise level matches the state does
// better: the idea of Li et al. 2024, "Alleviating exposure bias in
// diffusion models through sampling with shifted time steps". With the
// shipped planar flow and its expert, Step +0.015 from 0.5 and Jump
// -0.035 lower every MMD but the spectral one, V.U.N. within about a point
// (docs/results.md). Euler only; every shifted time must stay inside
// (0, 1).
func WithTimeOffsets(t TimeOffsets) SampleOption { return func(o *sampleOptions) { o.offsets = t } }

// WithEdgeRule sets how the LG-VAE decoder decides undirected edges
// (default vae.EitherDirection, the reference rule).
func WithEdgeRule(r vae.EdgeRule) SampleOption { return func(o *sampleOptions) { o.edgeRule = r } }

// WithDecodeOptions passes further options to the LG-VAE's decoding (for
// example vae.WithEdgeConstraint), after WithEdgeRule's and WithEdgeMargin's.
func WithDecodeOptions(opts ...vae.DecodeOption) SampleOption {
	return func(o *sampleOptions) { o.decode = append(o.decode, opts...) }
}

// WithEdgeMargin sets the decoder's edge margin (vae.WithEdgeMargin; default
// the LG-VAE's Config.EdgeMargin): a larger margin decodes fewer spurious
// edges and more missing ones, which raises planar validity and lowers the
// statistics' agreement with the data (docs/results.md).
func WithEdgeMargin(m float64) SampleOption { return func(o *sampleOptions) { o.edgeMargin = &m } }

// WithProgress reports the number of graphs finished.
func WithProgress(f func(done, total int)) SampleOption {
	return func(o *sampleOptions) { o.progress = f }
}

// Sample generates n graphs. A model opened from a bundle (Open) samples
// with its recipe's settings (Model.Recipe; WithRecipe selects another of
// them), the options given replacing them one by one; a model without a
// recipe (Load, Train) with Sample's defaults: DefaultSteps uniform Euler
// steps with the final jump at DefaultFinalJump, the paper's sampler
// otherwise. It is safe to call from several goroutines at once on the
// same Model, and returns ctx.Err() promptly when ctx is cancelled.
func Sample(ctx context.Context, m *Model, n int, opts ...SampleOption) ([]*graph.Graph, error) {
	out := make([]*graph.Graph, 0, max(n, 0))
	err := sample(ctx, m, n, opts, func(z *tensor.Tensor, sizes []int, o *sampleOptions) error {
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
// exactly these latents (WithEdgeRule is ignored here). It is safe for
// concurrent use like Sample.
func SampleLatents(ctx context.Context, m *Model, n int, opts ...SampleOption) ([]*tensor.Tensor, error) {
	out := make([]*tensor.Tensor, 0, max(n, 0))
	err := sample(ctx, m, n, opts, func(z *tensor.Tensor, sizes []int, o *sampleOptions) error {
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
func sample(ctx context.Context, m *Model, n int, opts []SampleOption, emit func(z *tensor.Tensor, sizes []int, o *sampleOptions) error) (err error) {
	defer tensor.CatchDeviceError(&err)
	o, err := resolveOptions(m, opts)
	if err != nil {
		return err
	}
	switch {
	case n < 0:
		return fmt.Errorf("flow: cannot sample %d graphs", n)
	case o.steps <= 0:
		return fmt.Errorf("flow: steps must be positive, got %d", o.steps)
	case o.batch <= 0:
		return fmt.Errorf("flow: batch size must be positive, got %d", o.batch)
	case !(o.temp > 0) || math.IsInf(o.temp, 0):
		return fmt.Errorf("flow: temperature must be positive and finite, got %g", o.temp)
	case !(o.jumpAt > 0.01 && o.jumpAt <= 1):
		return fmt.Errorf("flow: final jump time must be in (0.01, 1] (1: none), got %g", o.jumpAt)
	case !(o.eta >= 0 && o.eta <= 1):
		return fmt.Errorf("flow: stochasticity must be in [0, 1], got %g", o.eta)
	case o.eta > 0 && o.method != Euler:
		return fmt.Errorf("flow: stochastic steps need the Euler method, not %q", o.method)
	case o.method != Euler && o.method != Heun:
		return fmt.Errorf("flow: unknown method %q", o.method)
	case !o.offsets.valid():
		return fmt.Errorf("flow: time offsets must be finite, Step and Jump in (-1, 1) and From in [0, 1), got %+v", o.offsets)
	case !o.offsets.Zero() && o.method != Euler:
		return fmt.Errorf("flow: time offsets need the Euler method, not %q", o.method)
	case o.guide != nil && o.method != Euler:
		return fmt.Errorf("flow: guidance needs the Euler method, not %q", o.method)
	case !(o.shift > 0) || math.IsInf(o.shift, 0):
		return fmt.Errorf("flow: time shift must be positive and finite, got %g", o.shift)
	case o.shift != 1 && o.randomGrid:
		return errors.New("flow: a time shift warps the uniform grid, not the random one")
	case !o.edgeRule.Valid():
		return fmt.Errorf("flow: unknown edge rule %v", o.edgeRule)
	case o.edgeMargin != nil && (math.IsNaN(*o.edgeMargin) || math.IsInf(*o.edgeMargin, 0)):
		return fmt.Errorf("flow: edge margin must be finite, got %v", *o.edgeMargin)
	case o.sizes != nil && len(o.sizes) != n:
		return fmt.Errorf("flow: %d node counts for %d graphs", len(o.sizes), n)
	case m == nil || m.Net == nil || m.VAE == nil:
		return errors.New("flow: Sample needs a trained model")
	}
	if err := o.checkDenoisers(m); err != nil {
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
		sizes = drawSizes(m.NodeCounts, n, tensor.NewRNG(o.seed^0x512e5))
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

// resolveOptions returns the settings of opts for sampling from m: Sample's
// defaults, then the settings of the recipe (or of WithSampler) that opts
// select, then opts.
func resolveOptions(m *Model, opts []SampleOption) (sampleOptions, error) {
	var choice sampleOptions
	for _, f := range opts {
		f(&choice)
	}
	o := sampleOptions{steps: DefaultSteps, batch: DefaultBatchSize, method: Euler, temp: 1, jumpAt: DefaultFinalJump, shift: 1, cfgW: 1}
	var base *Sampler
	switch {
	case choice.sampler != nil:
		base = choice.sampler
	case choice.recipe == NoRecipe:
	case m != nil && m.Recipe != nil:
		s, ok := m.Recipe.Lookup(choice.recipe)
		if !ok {
			return o, fmt.Errorf("flow: the model's recipe has no alternative %q (it has: %s)", choice.recipe, strings.Join(append([]string{`""`}, m.Recipe.Names()...), ", "))
		}
		base = &s
	case choice.recipe != "":
		return o, fmt.Errorf("flow: WithRecipe(%q): the model has no recipe (flow.Open reads one from a bundle's %s)", choice.recipe, RecipeFile)
	}
	if base != nil {
		if m == nil {
			return o, errors.New("flow: Sample needs a trained model")
		}
		if err := base.apply(&o, m); err != nil {
			return o, err
		}
	}
	for _, f := range opts {
		f(&o)
	}
	return o, nil
}

// checkDenoisers checks the denoisers that WithGuidance and WithExpert add
// against m, which must have one.
func (o *sampleOptions) checkDenoisers(m *Model) error {
	compatible := func(other *Model) bool {
		return other.Net != nil && other.Cfg.DiT == m.Cfg.DiT && other.Cfg.Target == m.Cfg.Target &&
			other.Scale == m.Scale && other.Cfg.Standardize == m.Cfg.Standardize &&
			slices.Equal(other.Mean, m.Mean) && slices.Equal(other.Std, m.Std) && sameLatentSpace(other.VAE, m.VAE)
	}
	// A conditional model's other denoisers see the same conditions.
	for _, other := range append([]*Model{o.guide}, expertModels(o.experts)...) {
		if other != nil && other.Net != nil && other.Cfg.DiT == m.Cfg.DiT && !other.Cond.equal(m.Cond) {
			return errors.New("flow: the guiding model and the experts must have the sampling model's conditions (labels, properties and their standardisation)")
		}
	}
	switch {
	case o.guide != nil && (!(o.guideW >= 0) || math.IsInf(o.guideW, 0)):
		return fmt.Errorf("flow: guidance weight must be finite and >= 0, got %g", o.guideW)
	case o.guide != nil && !compatible(o.guide):
		return errors.New("flow: the guiding model must have the sampling model's denoiser shape, target, latent space and latent scaling")
	case o.guide != nil && o.guide.Net.Backend() != m.Net.Backend():
		return errors.New("flow: the guiding model must be on the sampling model's backend")
	}
	for i, e := range o.experts {
		switch {
		case e.m == nil || !compatible(e.m):
			return errors.New("flow: the expert must have the sampling model's denoiser shape, target, latent space and latent scaling")
		case !(e.from > 0 && e.from <= 1):
			return fmt.Errorf("flow: the expert's first time must be in (0, 1], got %g", e.from)
		case e.m.Net.Backend() != m.Net.Backend():
			return errors.New("flow: the expert must be on the sampling model's backend")
		}
		for _, f := range o.experts[:i] {
			if f.from == e.from {
				return fmt.Errorf("flow: two experts from time %g", e.from)
			}
		}
	}
	return nil
}

// expertModels returns the denoisers of es.
func expertModels(es []expert) []*Model {
	ms := make([]*Model, len(es))
	for i, e := range es {
		ms[i] = e.m
	}
	return ms
}

// sameLatentSpace reports whether two flows' autoencoders encode alike:
// the same model, or encoders with the same weights (nil: not known).
func sameLatentSpace(a, b *vae.Model) bool {
	return a == nil || b == nil || a == b || a.EncoderFingerprint() == b.EncoderFingerprint()
}

// drawSizes draws n node counts from the histogram counts.
func drawSizes(counts []int, n int, r *tensor.RNG) []int {
	total := 0
	for _, c := range counts {
		total += c
	}
	sizes := make([]int, n)
	for i := range sizes {
		k := r.Intn(total)
		for s, c := range counts {
			if k < c {
				sizes[i] = s
				break
			}
			k -= c
		}
	}
	return sizes
}

// timeGrid returns steps+1 increasing times from start (0.01 when
// sampling from noise) to 1. With jumpAt > 0 the first steps end at jumpAt
// and the last step goes from jumpAt to 1. The random grid (the
// reference's) draws the inner times from the training distribution,
// clamped to [0.02, end]. shift warps the uniform grid (WithTimeShift; 1:
// none).
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
func integrate(ctx context.Context, m *Model, sizes []int, o sampleOptions, r *tensor.RNG) (*tensor.Tensor, error) {
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
	return solve(ctx, m, x, mask, timeGrid(0.01, o.steps, o.randomGrid, o.jumpAt, o.shift, r), o, r)
}

// solve integrates the flow ODE from x (B, N, d), the state at grid[0] on the
// denoiser's backend, over the times of grid and returns the unscaled
// latents z = x(1)/s on the CPU. mask (B, N) marks real tokens.
func solve(ctx context.Context, m *Model, x, mask *tensor.Tensor, grid []float64, o sampleOptions, r *tensor.RNG) (*tensor.Tensor, error) {
	B, N, d := x.Dim(0), x.Dim(1), x.Dim(2)
	dt, be := x.DType(), x.Backend()
	mask3 := mask.Reshape(B, N, 1)
	var xsc, guideSC selfCond
	// velocity evaluates the network at (x, t) and returns the velocity and
	// the raw predictions (fed back for self-conditioning). With guidance the
	// velocity comes from the guided prediction.
	// The denoiser is chosen by the grid time t and evaluated at te
	// (WithTimeOffsets; te = t without offsets).
	velocity := func(x *tensor.Tensor, t, te float64, xsc selfCond) (v *tensor.Tensor, pred selfCond) {
		net, from := m.Net, 0.0
		for _, e := range o.experts {
			if t >= e.from && e.from > from {
				net, from = e.m.Net, e.from
			}
		}
		guided, pred := o.cf.predict(net, x, te, mask, xsc)
		if o.guide != nil && o.guideW != 0 {
			weak, weakSC := o.cf.predict(o.guide.Net, x, te, mask, guideSC)
			guided = tensor.AddScaled(nil, guided, tensor.Sub(nil, guided, weak), o.guideW)
			if m.Cfg.DiT.SelfCond {
				guideSC = weakSC
			}
		}
		if m.Cfg.Target == PredictVelocity {
			return guided, pred
		}
		v = tensor.Sub(nil, x, guided) // (x - x0hat) / t
		tensor.MulScalar(v, v, 1/te)
		return v, pred
	}
	last := len(grid) - 2
	for i := 0; i+1 < len(grid); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ta, tb := grid[i], grid[i+1]
		h := tb - ta
		// te is the time the denoiser sees (WithTimeOffsets). The final
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
		v, pred := velocity(x, ta, te, xsc)
		if o.method == Heun {
			xe := tensor.AddScaled(nil, x, v, h)
			v2, _ := velocity(xe, tb, tb, pred)
			tensor.Add(v, v, v2)
			tensor.MulScalar(v, v, 0.5)
		}
		// The step takes the state from the denoiser's time te to te+h
		// (tb without offsets).
		if tn := te + h; o.eta > 0 && tn < 1 {
			// x̂1 = x + (1-te)·v and x̂0 = x - te·v for either target; with
			// eta = 0, tn·x̂1 + (1-tn)·x̂0 = x + h·v, the Euler step.
			x1 := tensor.AddScaled(nil, x, v, 1-te)
			x0 := tensor.AddScaled(nil, x, v, -te)
			eps := tensor.RandN(r, dt, B, N, d).On(be)
			tensor.MulScalar(x0, x0, math.Sqrt(1-o.eta*o.eta))
			tensor.AddScaled(x0, x0, eps, o.eta)
			tensor.MulScalar(x, x1, tn)
			tensor.AddScaled(x, x, x0, 1-tn)
		} else {
			tensor.AddScaled(x, x, v, h)
		}
		tensor.Mul(x, x, mask3)
		xsc = pred
		if !m.Cfg.DiT.SelfCond {
			xsc = selfCond{}
		}
	}
	m.fromFlow(x, mask)
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
// uncond + w·(cond - uncond).
func (g guidance) predict(net *dit.Model, x *tensor.Tensor, t float64, mask *tensor.Tensor, sc selfCond) (guided *tensor.Tensor, pred selfCond) {
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
		return net.ForwardCond(tp, autograd.NewConst(x), ts, mask, scv, cond).Value.Clone()
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
