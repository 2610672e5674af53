// Package flow implements LG-Flow: flow matching in the frozen latent space
// of an LG-VAE with a Diffusion Transformer denoiser, and sampling of new
// graphs from it.
//
// Time runs from t = 0 (noise x0 ~ N(0, I)) to t = 1 (data x1 = s·z, with
// z the LG-VAE latents and s a global scale), along x_t = (1-t)x0 + t·x1.
// The network predicts the noise x0 and is trained with the 1/max(t, 0.1)
// weighting of the reference implementation (equal to the velocity loss
// for t >= 0.1). Training times are logit-normal, mixed 2% with uniform,
// in [0.01, 0.99].
// Self-conditioning feeds the previous x0 prediction back as input. A
// preconditioned flow (Config.Precondition, the default of bundles that
// lgflow train writes) reads the network's output as a scaled residual
// of that estimate, which keeps its velocity finite near t = 0.
//
// A trained Model holds everything sampling needs: the EMA weights of the
// DiT, its configuration, the latent scale and the node-count distribution
// of the training split. Sample is safe for concurrent use.
//
// Trained models travel as bundles: a directory with the LG-VAE, the flow,
// its expert denoisers and sampler.json, the sampling recipe chosen for
// them (Recipe; docs/bundle.md). Open loads one, and Sample without options
// then samples with the recipe; WithRecipe picks a named alternative and
// WithSettings changes single settings:
//
//	m, err := flow.Open("pretrained/planar")
//	graphs, err := flow.Sample(ctx, m, 16, flow.WithSeed(42))
//	graphs, err = flow.Sample(ctx, m, 16, flow.WithSettings(func(s *flow.Sampler) { s.Steps = 100 }))
//
// A conditional flow, trained with a label or property values per graph
// (Latents.Cond, cond.NewSet), samples graphs of a requested label or
// properties, with classifier-free guidance (docs/design.md,
// "Conditioning"):
//
//	graphs, err := flow.Sample(ctx, m, 16, flow.WithCondition(cond.Value{Label: "tree"}), flow.WithGuidanceScale(2))
//
// On a machine with an NVIDIA GPU, TrainOptions.Backend trains the DiT
// there and Model.ToBackend samples there; the backend comes from package
// cuda (cuda.Init or cuda.Select("cuda")), which flow does not import:
//
//	gpu, err := cuda.Init()
//	...
//	m, err := flow.Train(ctx, cfg, ae, train, lat, flow.TrainOptions{Backend: gpu, Dir: "runs/flow"})
//	err = m.ToBackend(gpu)
//	graphs, err := flow.Sample(ctx, m, 256)
package flow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"lgflow/dit"
	"lgflow/flow/cond"
	"lgflow/nn"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// Sample's defaults where neither the sampler (Sampler) nor an option
// sets a value, the defaults of training, and the limit of a recipe.
const (
	// DefaultSteps is the number of integration steps.
	DefaultSteps = 100
	// DefaultBatchSize is the number of graphs integrated together.
	DefaultBatchSize = 256
	// DefaultFinalJump is the final jump's time (Sampler.FinalJump).
	DefaultFinalJump = 0.95
	// DefaultExpertFrom is the expert's first time that lgflow sample and
	// the pipeline use unless told otherwise, chosen with the shipped
	// planar flow and its expert on the validation split
	// (docs/results.md): with the default grid and final jump the expert
	// makes the one evaluation at t = 0.95, the jump to the data.
	DefaultExpertFrom = 0.95
	// DefaultCondDrop is the condition dropout of a conditional flow
	// whose Config.CondDrop is 0, the usual choice for classifier-free
	// guidance.
	DefaultCondDrop = 0.1
	// MaxGuidanceScale is the largest guidance scale a recipe may set:
	// far beyond where classifier-free guidance stops helping (1 to a
	// few), so a larger one is a mistake, not a setting.
	MaxGuidanceScale = 100
)

// Config is the recipe of an LG-Flow model and its training.
type Config struct {
	DiT dit.Config `json:"dit"`
	// SelfCondProb is the probability that a training batch uses
	// self-conditioning (0.5).
	SelfCondProb float64 `json:"self_cond_prob"`
	// TimeMean is the location m of the logit-normal training-time
	// distribution, t = sigmoid(m + u) with u ~ N(0, 1) (0, the reference).
	// A positive m trains more on the data end (t near 1), where the final
	// precision of the latents is decided: with m = 0 fewer than 2% of
	// training draws have t > 0.9.
	TimeMean float64 `json:"time_mean,omitempty"`
	// TimeStd is the scale s of the logit-normal training-time
	// distribution, t = sigmoid(m + s·u) (0 means 1, the reference). A
	// small s concentrates training on a narrow band of times: the shipped
	// planar data-end expert (Expert), evaluated only from t = 0.95
	// on, trained with m = 3.05 and s = 0.35 (t ≈ 0.93-0.96).
	TimeStd float64 `json:"time_std,omitempty"`
	// DecoderWeight adds, with this weight, the frozen LG-VAE decoder's
	// reconstruction loss of the denoiser's data estimate x̂1 (the point
	// the final jump would output; vae.Model.DecoderLoss against the
	// training graph) to the flow-matching loss: the denoiser then learns
	// what the decoder needs of its estimate, which the latents' squared
	// error weighs equally in every direction. It is meant for a data-end
	// expert (Expert, trained with TimeMean ≈ 3), whose one-step
	// estimates become the samples. 0 (the reference): flow matching alone.
	DecoderWeight float64 `json:"decoder_weight,omitempty"`
	// Precondition makes the denoiser's output F a scaled residual of the
	// noise estimate, x̂0 = c_skip(t)·x_t + c_out(t)·F with c_skip =
	// (1−t)/((1−t)²+t²) and c_out = t/√((1−t)²+t²) (the preconditioning of
	// Karras et al., 2022, for latents of unit spread, which the global
	// scale gives): F's target has unit variance at every time, and the
	// velocity (x_t − x̂0)/t stays finite as t → 0, where a plain noise
	// estimate's errors are divided by t. A flow trained briefly (a custom
	// bundle's) predicts its first steps badly without it: its samples
	// leave the latents' range and decode far too dense. Loss, sampler and
	// self-conditioning input stay those of the noise estimate x̂0.
	// false (the reference): the output is x̂0 itself.
	Precondition bool `json:"precondition,omitempty"`
	// BucketBySize makes each training batch hold graphs of similar node
	// counts (trainer.BatchesBySize) instead of random ones: the same
	// epochs with less padding, much faster for datasets of very different
	// sizes (Ego, TPU Tile). false: the reference's random batches.
	BucketBySize bool `json:"bucket_by_size,omitempty"`
	// CondDrop is the probability that a training graph's condition
	// (label and properties together) is replaced by the null condition,
	// for a conditional flow (DiT.Classes or DiT.CondDim; Latents.Cond):
	// the denoiser then learns the unconditional distribution too, which
	// sampling without a condition and classifier-free guidance
	// (WithGuidanceScale) need. 0 means DefaultCondDrop; a negative value
	// never drops, which leaves the null condition untrained.
	CondDrop float64 `json:"cond_drop,omitempty"`
	// SampleLatents draws z = mu + sigma*eps afresh every step instead of
	// using z = mu.
	SampleLatents bool    `json:"sample_latents"`
	BatchSize     int     `json:"batch_size"`
	Steps         int     `json:"steps"`
	LR            float64 `json:"lr"`
	// Cooldown is the number of final steps over which the learning rate
	// falls linearly from LR towards zero (optim.StableDecay): a run
	// trained at a constant rate is resumed with it to anneal, its
	// constant-rate state kept to continue from. 0 (the reference): the
	// rate stays LR.
	Cooldown    int     `json:"cooldown,omitempty"`
	WeightDecay float64 `json:"weight_decay"`
	Beta1       float64 `json:"beta1"`
	Beta2       float64 `json:"beta2"`
	// EMABeta and EMAAfter configure the EMA (0.9999 after 1000 steps).
	EMABeta  float64 `json:"ema_beta"`
	EMAAfter int     `json:"ema_after"`
	// ValEvery is the number of steps between validation sampling runs;
	// ValSamples the number of graphs sampled then; ValSteps the number of
	// sampler steps used.
	ValEvery   int `json:"val_every"`
	ValSamples int `json:"val_samples"`
	ValSteps   int `json:"val_steps"`
	// CheckpointEvery is the number of steps between resumable checkpoints.
	CheckpointEvery int    `json:"checkpoint_every"`
	Seed            uint64 `json:"seed"`
}

// Validate reports whether c is usable.
func (c Config) Validate() error {
	if err := c.DiT.Validate(); err != nil {
		return err
	}
	switch {
	case c.BatchSize <= 0 || c.Steps <= 0:
		return fmt.Errorf("flow: BatchSize and Steps must be positive (got %d, %d)", c.BatchSize, c.Steps)
	case c.SelfCondProb < 0 || c.SelfCondProb > 1:
		return fmt.Errorf("flow: SelfCondProb must be in [0, 1], got %g", c.SelfCondProb)
	case c.LR <= 0:
		return fmt.Errorf("flow: LR must be positive, got %g", c.LR)
	case !(c.EMABeta >= 0 && c.EMABeta <= 1) || c.EMAAfter < 0:
		return fmt.Errorf("flow: EMABeta must be in [0, 1] and EMAAfter not negative, got %g and %d", c.EMABeta, c.EMAAfter)
	case c.Cooldown < 0 || c.Cooldown > c.Steps:
		return fmt.Errorf("flow: Cooldown must be in [0, Steps = %d], got %d", c.Steps, c.Cooldown)
	case math.IsNaN(c.TimeMean) || math.IsInf(c.TimeMean, 0):
		return fmt.Errorf("flow: TimeMean must be finite, got %g", c.TimeMean)
	case !(c.DecoderWeight >= 0) || math.IsInf(c.DecoderWeight, 0):
		return fmt.Errorf("flow: DecoderWeight must be finite and not negative, got %g", c.DecoderWeight)
	case !(c.TimeStd >= 0) || math.IsInf(c.TimeStd, 0):
		return fmt.Errorf("flow: TimeStd must be finite and not negative, got %g", c.TimeStd)
	case !(c.CondDrop < 1) || math.IsInf(c.CondDrop, 0):
		return fmt.Errorf("flow: CondDrop must be below 1 (0: %g, negative: none), got %g", DefaultCondDrop, c.CondDrop)
	}
	return nil
}

// UnmarshalJSON decodes a configuration, also one written by an earlier
// version with settings since removed (issue #46; docs/results.md has the
// evidence): "target" "x0" (the noise prediction every flow makes),
// "standardize" false, and the training-only "ot_coupling", "path_lead"
// and "path_steps", whatever their values (they chose the training
// points, which a resumed run may change, not the model). Velocity
// prediction and standardised latents, which would change what the
// denoiser's outputs mean, are errors.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	var v struct {
		plain
		Target      *string `json:"target"`
		Standardize bool    `json:"standardize"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch {
	case v.Target != nil && *v.Target != "x0":
		return fmt.Errorf("flow: the configuration's target %q: velocity prediction was removed; lgflow's flows predict the noise x0 (a flow of another target cannot be sampled)", *v.Target)
	case v.Standardize:
		return errors.New("flow: the configuration standardises latents per dimension (standardize), which was removed; lgflow's flows scale them globally")
	}
	*c = Config(v.plain)
	return nil
}

// condDrop returns the probability of dropping a training graph's
// condition (Config.CondDrop).
func (c Config) condDrop() float64 {
	switch {
	case c.CondDrop == 0:
		return DefaultCondDrop
	case c.CondDrop < 0:
		return 0
	}
	return c.CondDrop
}

// sizePreset returns the training recipe of a size, whatever the data:
// "T", "S", "B" are the paper's DiT sizes with its optimiser settings
// (docs/design.md, "Training recipes"); "cpu" is a small DiT that trains
// on two cores; "tiny" is for tests.
func sizePreset(name string, latentDim int) (Config, error) {
	size := name
	if name == "cpu" {
		size = "small"
	}
	d, err := dit.Preset(size, latentDim)
	if err != nil {
		return Config{}, fmt.Errorf("flow: unknown preset %q (want cpu, T, S, B or tiny)", name)
	}
	c := Config{DiT: d, SelfCondProb: 0.5, SampleLatents: true,
		BatchSize: 256, Steps: 500000, LR: 2e-4, WeightDecay: 1e-12, Beta1: 0.9, Beta2: 0.95,
		EMABeta: 0.9999, EMAAfter: 1000, ValEvery: 5000, ValSamples: 256, ValSteps: 100, CheckpointEvery: 1000}
	switch name {
	case "cpu":
		c.BatchSize, c.Steps, c.LR, c.ValEvery, c.CheckpointEvery = 64, 40000, 5e-4, 2000, 500
		c.EMABeta, c.EMAAfter = 0.999, 200
		c.ValSamples, c.ValSteps = 64, 50
	case "tiny":
		c.BatchSize, c.Steps, c.LR, c.ValEvery, c.CheckpointEvery = 8, 100, 1e-3, 0, 0
		c.EMABeta, c.EMAAfter = 0.99, 10
		c.ValSamples, c.ValSteps = 8, 10
	}
	return c, c.Validate()
}

// Model is a trained LG-Flow model bound to its LG-VAE.
type Model struct {
	Cfg Config
	// VAE is the frozen autoencoder whose decoder turns latents into graphs.
	VAE *vae.Model
	// Net holds the EMA weights used for sampling.
	Net *dit.Model
	// Scale is the latent scale s: the network works on s·z.
	Scale float64
	// NodeCounts[n] is the number of training graphs with n nodes; sampled
	// graphs draw their sizes from this histogram.
	NodeCounts []int
	// Cond is the schema of a conditional flow's conditions (its labels,
	// its properties and their standardisation); nil for an unconditional
	// flow. WithCondition samples under one.
	Cond *cond.Schema
	// CondSizes holds a conditional flow's training graphs' node counts
	// with their conditions: a graph sampled under a condition draws its
	// node count from the training graphs that fit it
	// (cond.Sizes.Candidates) instead of from NodeCounts. nil for an
	// unconditional flow, and for a conditional one saved before it was
	// stored, whose graphs draw from NodeCounts whatever the condition.
	CondSizes *cond.Sizes
	// Recipe is the sampling recipe of a model opened from a bundle
	// (Open): the settings Sample starts from. nil for a model from Load
	// or Train, which samples with Sample's own defaults.
	Recipe *Recipe

	// experts are the expert denoisers of the bundle by file name, which
	// the recipe's experts name.
	experts map[string]*Model
}

// Metadata keys of a flow checkpoint.
const (
	metaScale      = "latent_scale"
	metaNodeCounts = "node_counts"
	metaVAEConfig  = "vae_config"
	metaVAEPrint   = "vae_fingerprint"
	metaEncPrint   = "vae_encoder_fingerprint"
	metaCondition  = "condition"
	metaCondSizes  = "condition_sizes"
	kindFlow       = "lgflow.flow"
)

// Save writes the sampling model (EMA weights, configuration, latent scale,
// node-count distribution, the condition schema of a conditional flow, and
// the configuration and weight fingerprint of the LG-VAE it was trained
// with) to path atomically.
func (m *Model) Save(path string, extra map[string]string) error {
	meta := map[string]string{
		trainer.MetaKind:   kindFlow,
		trainer.MetaConfig: trainer.MarshalMeta(m.Cfg),
		metaScale:          trainer.MarshalMeta(m.Scale),
		metaNodeCounts:     trainer.MarshalMeta(m.NodeCounts),
		metaVAEConfig:      trainer.MarshalMeta(m.VAE.Cfg),
		metaVAEPrint:       nn.Fingerprint(m.VAE),
		metaEncPrint:       m.VAE.EncoderFingerprint(),
	}
	if m.Cond != nil {
		meta[metaCondition] = trainer.MarshalMeta(m.Cond)
	}
	if m.CondSizes != nil {
		meta[metaCondSizes] = trainer.MarshalMeta(m.CondSizes)
	}
	for k, v := range extra {
		meta[k] = v
	}
	return safetensors.Save(path, nn.StateDict(m.Net), meta)
}

// Load reads a flow checkpoint written by Save and binds it to the given
// LG-VAE, which must encode as the one the flow was trained with did: the
// same architecture and the same encoder weights (vae.Model.EncoderFingerprint;
// the decoder may have been fine-tuned since). Checkpoints written before
// encoder fingerprints were stored require the same weights throughout
// (nn.Fingerprint).
//
// A directory path is a bundle, opened as Open opens it (recipe and
// experts included) but with ae in place of the bundle's LG-VAE (nil: the
// bundle's): for example the bundle's autoencoder with a decoder
// fine-tuned since, whose encoder the flow was trained with.
func Load(path string, ae *vae.Model) (*Model, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return openBundle(path, ae)
	}
	if ae == nil {
		return nil, fmt.Errorf("flow: %s: a flow file needs its LG-VAE (a bundle's directory has its own)", path)
	}
	f, err := safetensors.LoadModel(path)
	if err != nil {
		return nil, err
	}
	m, err := fromFile(f, ae)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// fromFile builds a Model from decoded safetensors contents.
func fromFile(f *safetensors.File, ae *vae.Model) (*Model, error) {
	if k := f.Metadata[trainer.MetaKind]; k != kindFlow {
		return nil, fmt.Errorf("not an LG-Flow checkpoint (kind %q)", k)
	}
	m := &Model{VAE: ae}
	if err := trainer.UnmarshalMeta(f.Metadata, trainer.MetaConfig, &m.Cfg); err != nil {
		return nil, err
	}
	if err := m.Cfg.Validate(); err != nil {
		return nil, err
	}
	if err := trainer.UnmarshalMeta(f.Metadata, metaScale, &m.Scale); err != nil {
		return nil, err
	}
	if err := trainer.UnmarshalMeta(f.Metadata, metaNodeCounts, &m.NodeCounts); err != nil {
		return nil, err
	}
	var vc vae.Config
	if err := trainer.UnmarshalMeta(f.Metadata, metaVAEConfig, &vc); err != nil {
		return nil, err
	}
	if vc.EncoderArchitecture() != ae.Cfg.EncoderArchitecture() {
		return nil, fmt.Errorf("trained with LG-VAE config %+v, given %+v", vc, ae.Cfg)
	}
	if m.Cfg.DiT.Dim != ae.Cfg.Latent {
		return nil, fmt.Errorf("the denoiser works on %d-dimensional tokens, the LG-VAE's latents have %d dimensions", m.Cfg.DiT.Dim, ae.Cfg.Latent)
	}
	// Checkpoints written before fingerprints were stored have none.
	if want, ok := f.Metadata[metaEncPrint]; ok {
		if got := ae.EncoderFingerprint(); got != want {
			return nil, fmt.Errorf("trained in the latent space of LG-VAE encoder weights %.12s..., given encoder weights %.12s... (same configuration, different weights: use the autoencoder the flow was trained with)", want, got)
		}
	} else if want, ok := f.Metadata[metaVAEPrint]; ok {
		if got := nn.Fingerprint(ae); got != want {
			return nil, fmt.Errorf("trained in the latent space of LG-VAE weights %.12s..., given weights %.12s... (same configuration, different weights: use the autoencoder the flow was trained with)", want, got)
		}
	}
	if m.Scale <= 0 {
		return nil, fmt.Errorf("latent scale %g is not positive", m.Scale)
	}
	if _, ok := f.Metadata[metaCondition]; ok || m.Cfg.DiT.Conditional() {
		if !m.Cfg.DiT.Conditional() {
			return nil, errors.New("a condition schema for an unconditional denoiser")
		}
		m.Cond = &cond.Schema{}
		if err := trainer.UnmarshalMeta(f.Metadata, metaCondition, m.Cond); err != nil {
			return nil, err
		}
		if err := checkSchema(m.Cond, m.Cfg.DiT); err != nil {
			return nil, err
		}
	}
	if _, ok := f.Metadata[metaCondSizes]; ok {
		if m.Cond == nil {
			return nil, errors.New("a table of conditioned node counts for an unconditional flow")
		}
		m.CondSizes = &cond.Sizes{}
		if err := trainer.UnmarshalMeta(f.Metadata, metaCondSizes, m.CondSizes); err != nil {
			return nil, err
		}
		if err := m.CondSizes.Check(m.Cond); err != nil {
			return nil, fmt.Errorf("conditioned node counts: %w", err)
		}
	}
	if len(m.NodeCounts) == 0 || slices.Max(m.NodeCounts) <= 0 {
		return nil, fmt.Errorf("empty node-count distribution")
	}
	if n := slices.Min(m.NodeCounts); n < 0 {
		return nil, fmt.Errorf("node-count distribution has a negative count %d (for %d nodes)", n, slices.Index(m.NodeCounts, n))
	}
	// Check the sizes the configuration claims against the file before
	// allocating a network from it.
	if err := checkDiT(m.Cfg.DiT, f); err != nil {
		return nil, err
	}
	net, err := dit.New(m.Cfg.DiT, tensor.NewRNG(0), nn.WithDType(f.Tensors["x_embed.weight"].DType()))
	if err != nil {
		return nil, err
	}
	if err := nn.LoadStateDict(net, f.Tensors); err != nil {
		return nil, err
	}
	m.Net = net
	return m, nil
}

// checkDiT compares the shapes of one tensor for every size cfg sets
// (Dim, Width, TimeFreqDim, MLPRatio·Width) and of one Width x Width
// tensor per block with the file, so that a configuration claiming more
// than the file holds is an error before anything of its size is
// allocated. The loop stops at the first block the file lacks.
func checkDiT(cfg dit.Config, f *safetensors.File) error {
	in := cfg.Dim
	if cfg.SelfCond {
		in = 2 * cfg.Dim
	}
	E := cfg.Width
	hidden := int(math.Round(cfg.MLPRatio * float64(E)))
	check := func(name string, shape ...int) error {
		t, ok := f.Tensors[name]
		if !ok {
			return fmt.Errorf("tensor %q missing: the file does not match its configuration", name)
		}
		if !slices.Equal(t.Shape(), shape) {
			return fmt.Errorf("tensor %q has shape %v, the configuration implies %v", name, t.Shape(), shape)
		}
		return nil
	}
	for _, c := range []struct {
		name  string
		shape []int
	}{
		{"x_embed.weight", []int{E, in}},
		{"t_embed.0.weight", []int{E, cfg.TimeFreqDim}},
		{"final.weight", []int{cfg.Dim, E}},
	} {
		if err := check(c.name, c.shape...); err != nil {
			return err
		}
	}
	if cfg.Classes > 0 {
		if err := check("y_embed.weight", cfg.Classes+1, E); err != nil {
			return err
		}
	}
	if cfg.CondDim > 0 {
		if err := check("cond_embed.0.weight", E, cfg.CondDim); err != nil {
			return err
		}
	}
	for b := range cfg.Depth {
		if err := check(fmt.Sprintf("blocks.%d.attn.out.weight", b), E, E); err != nil {
			return err
		}
		if err := check(fmt.Sprintf("blocks.%d.mlp.0.weight", b), hidden, E); err != nil {
			return err
		}
	}
	return nil
}

// ToBackend moves the denoiser, and the expert denoisers of its bundle, to
// backend b (for example the GPU backend that package cuda registers),
// where Sample then integrates; the LG-VAE decodes on the CPU. Call it
// before sampling starts, not during.
func (m *Model) ToBackend(b tensor.Backend) error {
	if m == nil || m.Net == nil {
		return errors.New("flow: ToBackend needs a loaded model")
	}
	for _, name := range sortedKeys(m.experts) {
		if err := nn.ToBackend(m.experts[name].Net, b); err != nil {
			return err
		}
	}
	return nn.ToBackend(m.Net, b)
}
