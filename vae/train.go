package vae

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lgflow/autograd"
	"lgflow/dist"
	"lgflow/graph"
	"lgflow/nn"
	"lgflow/optim"
	"lgflow/tensor"
	"lgflow/trainer"
)

// Progress is reported by Train after every logged step.
type Progress struct {
	Step, Steps int
	// Loss terms of the last step (Total is the sum that was optimised).
	Loss, Edge, Node, KL float64
	LR                   float64
	// Val is the latest validation accuracy (nil before the first one).
	Val *Accuracy
	// BestSample is the best validation sample accuracy so far.
	BestSample     float64
	Elapsed, ETA   time.Duration
	StepsPerSecond float64
}

// TrainOptions controls where Train writes and how it reports.
type TrainOptions struct {
	// Dir receives vae.safetensors (the best model by validation sample
	// accuracy, or the last one without validation data) and
	// state.safetensors (a resumable checkpoint). Empty: nothing is written.
	Dir string
	// Resume continues from Dir/state.safetensors when it exists.
	Resume bool
	// Progress, when not nil, is called every LogEvery steps and after each
	// validation.
	Progress func(Progress)
	// LogEvery is the number of steps between Progress calls (default 50).
	LogEvery int
	// MaxDuration stops training (after a checkpoint) once exceeded; 0 = no limit.
	MaxDuration time.Duration
	// Init, when not nil, supplies the starting weights (fine-tuning, for
	// example with a larger KL weight); its architecture must match the
	// configuration being trained. A resumed state takes precedence.
	Init *Model
	// FreezeEncoder trains the decoder only. The encoder runs in evaluation
	// mode with its weights as Init (or the resumed state) gave them, so
	// the latent space, and any LG-Flow trained in it, stays valid (see
	// Model.EncoderFingerprint). With Config.LatentNoise this makes an
	// existing decoder tolerate a generative model's errors.
	FreezeEncoder bool
	// ValNoise, when positive, validates on latents with Gaussian noise of
	// ValNoise latent standard deviations added (ReconstructNoisy, a fixed
	// seed per validation), so the best checkpoint is the most tolerant
	// decoder rather than the most exact one.
	ValNoise float64
	// Perturb, with FreezeEncoder, replaces the latents the decoder trains
	// on: the frozen encoder's posterior means, padded (B, N, Latent) on
	// the CPU, go through Perturb, and the decoder learns to reconstruct
	// the batch's graphs from the result (Config.LatentNoise is not added
	// on top). flow.(*Model).EndpointPerturbation gives one that moves
	// latents to where a trained flow's sampler takes them, so the decoder
	// learns to correct the flow's errors.
	Perturb LatentPerturbation
	// Backend runs the training steps on another tensor backend, such as
	// the GPU backend that package cuda registers (nil: the CPU). Batches
	// are assembled on the CPU and uploaded; validation runs on a CPU copy
	// of the model, and the model Train returns is on the CPU. Models with
	// BatchNorm (running statistics outside the parameters) train on the
	// CPU only; GraphNorm runs on every backend.
	Backend tensor.Backend
	// Comm, when it has more than one rank (under mpirun, dist.Open),
	// trains data parallel: TrainConfig.BatchSize stays the global batch,
	// each step's batch is chosen as in one process and split into
	// contiguous shares (trainer.Share), and the ranks' gradients are
	// summed so that every rank takes the step one process would take on
	// the whole batch (up to float summation order). Every rank starts
	// from rank 0's state; rank 0 alone validates, reports Progress and
	// writes Dir. Nil: dist.Local(), one process.
	Comm dist.Comm
}

// LatentPerturbation maps padded latents z (B, N, Latent) of graphs with
// the given node counts to the latents the decoder should learn to decode
// into those graphs, drawing any randomness from r.
type LatentPerturbation func(z *tensor.Tensor, sizes []int, r *tensor.RNG) (*tensor.Tensor, error)

// Checkpoint file names inside TrainOptions.Dir.
const (
	ModelFile = "vae.safetensors"
	StateFile = "state.safetensors"
)

// Train trains an LG-VAE on train, validating on val every tc.ValEvery steps
// and keeping the best model by validation sample accuracy. It honours ctx
// cancellation by writing a resumable checkpoint and returning ctx.Err()
// with the model trained so far. A non-finite loss or gradient stops
// training with an error naming the parameter, and a failure of the
// backend's device (out of memory, tensor.ErrDevice) with that error.
func Train(ctx context.Context, cfg Config, tc TrainConfig, train, val *Dataset, opts TrainOptions) (_ *Model, err error) {
	defer tensor.CatchDeviceError(&err)
	if err := checkTrainArgs(tc, train, opts); err != nil {
		return nil, err
	}
	r, err := newTrainRun(cfg, tc, train, val, opts)
	if err != nil {
		return nil, err
	}
	state, err := r.openDir()
	if err != nil {
		return nil, err
	}
	if err := trainer.BroadcastState(r.comm, r.m, r.opt, nil, &state); err != nil {
		return nil, fmt.Errorf("vae: %w", err)
	}
	_, err = trainer.Run(ctx, state, r.loop())
	return r.finish(ctx, err)
}

// checkTrainArgs rejects the training sets, configuration and options that
// Train cannot run with, before anything is built.
func checkTrainArgs(tc TrainConfig, train *Dataset, opts TrainOptions) error {
	if len(train.Graphs) == 0 {
		return errors.New("vae: empty training set")
	}
	if tc.BatchSize <= 0 || tc.Steps <= 0 {
		return fmt.Errorf("vae: BatchSize and Steps must be positive (got %d, %d)", tc.BatchSize, tc.Steps)
	}
	if opts.FreezeEncoder && opts.Init == nil && !opts.Resume {
		return errors.New("vae: FreezeEncoder needs trained weights (Init or Resume)")
	}
	if c := opts.Comm; trainer.Distributed(c) {
		if tc.BatchSize < c.Size() {
			return fmt.Errorf("vae: a batch of %d graphs cannot be split over %d ranks", tc.BatchSize, c.Size())
		}
		if opts.Perturb != nil {
			return errors.New("vae: Perturb is not supported in data-parallel training")
		}
	}
	if opts.ValNoise < 0 || math.IsNaN(opts.ValNoise) || math.IsInf(opts.ValNoise, 0) {
		return fmt.Errorf("vae: ValNoise must be finite and >= 0, got %v", opts.ValNoise)
	}
	return nil
}

// trainRun is one call of Train: the model being trained, its optimiser,
// where it writes, and what its training steps and validations leave for
// progress reports.
type trainRun struct {
	cfg        Config
	tc         TrainConfig
	opts       TrainOptions
	train, val *Dataset
	comm       dist.Comm // opts.Comm, or dist.Local()

	m        *Model
	settings runSettings
	onDevice bool // m lives on opts.Backend, not the CPU
	params   []optim.Param
	opt      *optim.AdamW
	sched    optim.WarmupCosine
	// stepper checks for non-finite values on a GPU every few steps, and
	// before anything is saved.
	stepper              *trainer.Stepper
	meta                 map[string]string // the checkpoints' metadata
	statePath, modelPath string            // empty without TrainOptions.Dir

	// What the steps and validations leave for Progress.
	last    *Loss     // the latest step's loss
	lr      float64   // the latest step's learning rate
	lastVal *Accuracy // the latest validation accuracy
	hm      *Model    // the latest validated model, on the CPU
}

// newTrainRun builds the model of cfg (on opts.Backend when one is given,
// its weights flattened), its AdamW optimiser and learning-rate schedule,
// and loads opts.Init's weights into it.
func newTrainRun(cfg Config, tc TrainConfig, train, val *Dataset, opts TrainOptions) (*trainRun, error) {
	m, err := New(cfg, tc.Seed)
	if err != nil {
		return nil, err
	}
	r := &trainRun{
		cfg: cfg, tc: tc, opts: opts, train: train, val: val, m: m, comm: opts.Comm,
		settings: runSettings{frozenEncoder: opts.FreezeEncoder, perturb: opts.Perturb},
		last:     &Loss{},
	}
	if opts.Perturb != nil && !opts.FreezeEncoder {
		return nil, errors.New("vae: Perturb needs FreezeEncoder")
	}
	if r.comm == nil {
		r.comm = dist.Local()
	}
	if trainer.Distributed(r.comm) {
		// Statistics over a whole batch would differ between its shares.
		if cfg.Norm == BatchNorm {
			return nil, errors.New("vae: BatchNorm is not supported in data-parallel training (use GraphNorm)")
		}
		if cfg.LatentNoise > 0 {
			return nil, errors.New("vae: LatentNoise is not supported in data-parallel training")
		}
	}
	r.onDevice = opts.Backend != nil && opts.Backend != tensor.CPU
	if r.onDevice {
		if err := nn.ToBackend(m, opts.Backend); err != nil {
			return nil, fmt.Errorf("vae: %w", err)
		}
	}
	if err := trainer.Flatten(m); err != nil {
		return nil, fmt.Errorf("vae: %w", err)
	}
	r.params = trainer.OptimParams(m)
	if opts.FreezeEncoder {
		r.params = slices.DeleteFunc(r.params, func(p optim.Param) bool { return !strings.HasPrefix(p.Name, "decoder.") })
	}
	r.opt, err = optim.NewAdamW(r.params, optim.AdamWConfig{LR: tc.LR, Beta1: tc.Beta1, Beta2: tc.Beta2, Eps: 1e-8, WeightDecay: tc.WeightDecay})
	if err != nil {
		return nil, err
	}
	r.sched = optim.WarmupCosine{Peak: tc.LR, Min: tc.MinLR, Warmup: tc.Warmup, DecaySteps: tc.Steps}
	r.meta = map[string]string{trainer.MetaKind: "lgflow.vae", trainer.MetaConfig: trainer.MarshalMeta(cfg), "train": trainer.MarshalMeta(tc)}
	if opts.Init != nil {
		if err := loadInit(m, opts.Init); err != nil {
			return nil, err
		}
	}
	r.stepper = trainer.NewStepper(r.params, r.opt, tc.ClipNorm)
	r.stepper.Comm = r.comm
	return r, nil
}

// loadInit copies the starting weights of init into m
// (TrainOptions.Init).
func loadInit(m, init *Model) error {
	sd := nn.StateDict(init)
	if init.refine == nil && m.refine != nil {
		// Adding a refinement network to a trained model: it starts
		// as initialised (its output at zero), the rest as Init.
		for _, p := range nn.ParamsOf("decoder.refine", m.refine) {
			sd[p.Name] = p.V.Value
		}
	}
	if err := nn.LoadStateDict(m, sd); err != nil {
		return fmt.Errorf("vae: initial weights: %w", err)
	}
	return nil
}

// openDir creates TrainOptions.Dir and, with Resume, loads the model and
// optimiser from the training state there, returning the state to run
// from (the zero RunState for a new run, or without Dir).
func (r *trainRun) openDir() (trainer.RunState, error) {
	var state trainer.RunState
	if r.opts.Dir == "" {
		return state, nil
	}
	r.statePath, r.modelPath = filepath.Join(r.opts.Dir, StateFile), filepath.Join(r.opts.Dir, ModelFile)
	st, err := trainer.OpenDir(r.opts.Dir, StateFile, r.opts.Resume, r.m, r.opt)
	if err != nil {
		return state, fmt.Errorf("vae: %w", err)
	}
	if st == nil {
		return state, nil // a new run
	}
	var saved Config
	if err := trainer.UnmarshalMeta(st.Meta, trainer.MetaConfig, &saved); err != nil || saved != r.cfg {
		return state, fmt.Errorf("vae: resume: %s was written for a different model configuration", r.statePath)
	}
	if state, err = st.Run("best_val_sample", "best_val_edge"); err != nil {
		return state, fmt.Errorf("vae: resume: %s: %w", r.statePath, err)
	}
	trainer.ForgetLostBest(&state, r.modelPath)
	return state, nil
}

// validating reports whether the run validates: on a non-empty validation
// set, every TrainConfig.ValEvery steps.
func (r *trainRun) validating() bool {
	return r.val != nil && len(r.val.Graphs) > 0 && r.tc.ValEvery > 0
}

// loop returns the trainer.Loop of the run: its cadence and its step,
// checkpoint, progress and (when validating) validation functions.
func (r *trainRun) loop() trainer.Loop {
	tc, opts := r.tc, r.opts
	l := trainer.Loop{
		Seed: tc.Seed, BatchSeed: tc.Seed ^ 0xa5a5a5a5, N: len(r.train.Graphs), BatchSize: tc.BatchSize,
		Steps: tc.Steps, ValEvery: tc.ValEvery, CheckpointEvery: tc.CheckpointEvery, LogEvery: opts.LogEvery,
		MaxDuration: opts.MaxDuration, Sizes: sizesIf(tc.BucketBySize, r.train.Graphs), Comm: r.comm,
		Step:       r.step,
		Checkpoint: r.checkpoint,
		Progress:   r.progress,
	}
	if r.validating() {
		l.Validate = r.validate
		l.SaveBest = r.saveBest
	}
	return l
}

// step takes one optimiser step on the training graphs batch, at the
// scheduled learning rate, drawing the latents' noise from rng.
func (r *trainRun) step(step int, batch []int, rng *tensor.RNG) error {
	r.lr = r.sched.LR(step + 1)
	r.opt.SetLR(r.lr)
	sub := r.train.Subset(batch)
	settings := r.settings
	if trainer.Distributed(r.comm) {
		lo, hi := trainer.Share(len(batch), r.comm.Rank(), r.comm.Size())
		settings.share = newShare(sub.Graphs, sub.Features, lo, hi)
		sub = &Dataset{Graphs: sub.Graphs[lo:hi], Features: sub.Features[lo:hi]}
	}
	tp := autograd.NewTape()
	loss, _, err := r.m.objective(tp, graph.NewBatch(sub.Graphs), sub.Features, Training, rng, settings)
	if err != nil {
		tp.Release()
		return err
	}
	r.last = loss
	terms := []float64{loss.Edge, loss.Node, loss.KL}
	err = r.stepper.StepWith(tp, loss.Total, terms)
	loss.Edge, loss.Node, loss.KL = terms[0], terms[1], terms[2]
	if err != nil {
		return fmt.Errorf("edge %v, node %v, kl %v: %w", loss.Edge, loss.Node, loss.KL, err)
	}
	return nil
}

// checkpoint writes the resumable training state st (when the run has a
// directory), once the weights are known to be finite.
func (r *trainRun) checkpoint(st trainer.RunState) error {
	if err := r.stepper.Check(); err != nil || r.statePath == "" {
		return err
	}
	_, err := trainer.OnRoot(r.comm, func() ([]byte, error) {
		return nil, trainer.SaveState(r.statePath, r.m, r.opt, st.Step, st.Meta(r.meta), nil)
	})
	return err
}

// progress reports s to TrainOptions.Progress with the latest step's loss
// and the latest validation.
func (r *trainRun) progress(s trainer.Status) {
	if r.opts.Progress == nil || r.comm.Rank() != 0 {
		return
	}
	best := -1.0
	if s.Best != nil {
		best = s.Best.Value
	}
	last := r.last
	r.opts.Progress(Progress{Step: s.Step, Steps: s.Steps, Loss: r.stepper.Loss(), Edge: last.Edge, Node: last.Node, KL: last.KL, LR: r.lr,
		Val: r.lastVal, BestSample: best, Elapsed: s.Elapsed, ETA: s.ETA, StepsPerSecond: s.StepsPerSecond})
}

// validate scores the model on the validation set by reconstruction
// (with TrainOptions.ValNoise, of noisy latents) on a CPU copy, which it
// keeps for saveBest: best by sample accuracy, ties (such as 0 early on)
// broken by edge accuracy.
func (r *trainRun) validate(ctx context.Context, step int) (trainer.Score, error) {
	if err := r.stepper.Check(); err != nil {
		return trainer.Score{}, err
	}
	if !trainer.Distributed(r.comm) {
		return r.validateHere(ctx)
	}
	// Rank 0 validates; every rank gets its score.
	data, err := trainer.OnRoot(r.comm, func() ([]byte, error) {
		s, err := r.validateHere(ctx)
		return []byte(trainer.MarshalMeta(s)), err
	})
	if err != nil {
		return trainer.Score{}, err
	}
	var s trainer.Score
	err = trainer.UnmarshalMeta(map[string]string{"score": string(data)}, "score", &s)
	return s, err
}

// validateHere is validate on this process.
func (r *trainRun) validateHere(ctx context.Context) (trainer.Score, error) {
	var err error
	if r.hm, err = r.host(); err != nil {
		return trainer.Score{}, err
	}
	if err := r.hm.RecalibrateBatchNorm(ctx, r.train, r.tc.BatchSize, recalibrateBatches); err != nil {
		return trainer.Score{}, err
	}
	var acc Accuracy
	if r.opts.ValNoise > 0 {
		acc, _, err = ReconstructNoisy(ctx, r.hm, r.val, r.tc.BatchSize, r.opts.ValNoise, 1)
	} else {
		acc, err = Reconstruct(ctx, r.hm, r.val, r.tc.BatchSize)
	}
	if err != nil {
		return trainer.Score{}, err
	}
	r.lastVal = &acc
	return trainer.Score{Value: acc.Sample(), TieBreak: acc.Edge()}, nil
}

// saveBest writes the model validate scored s at step as the run's model
// file (when the run has a directory).
func (r *trainRun) saveBest(step int, s trainer.Score) error {
	if r.modelPath == "" {
		return nil
	}
	_, err := trainer.OnRoot(r.comm, func() ([]byte, error) {
		return nil, r.hm.Save(r.modelPath, map[string]string{"val_sample_acc": fmt.Sprint(s.Value), "val_edge_acc": fmt.Sprint(s.TieBreak), "step": fmt.Sprint(step)})
	})
	return err
}

// host returns the trained model itself on the CPU, or a CPU copy of it in
// evaluation mode (for validation, saving, and the model Train returns).
func (r *trainRun) host() (*Model, error) {
	if !r.onDevice {
		return r.m, nil
	}
	c, err := New(r.cfg, r.tc.Seed)
	if err != nil {
		return nil, err
	}
	if err := nn.LoadStateDict(c, nn.StateDict(r.m)); err != nil {
		return nil, err
	}
	return c, nil
}

// finish ends the run whose trainer.Run returned err: it returns the
// model on the CPU and, for a run that completed without validation,
// saves it as the model file (with recalibrated BatchNorm statistics).
func (r *trainRun) finish(ctx context.Context, err error) (*Model, error) {
	h, herr := r.host()
	if herr != nil {
		return r.m, errors.Join(err, herr)
	}
	if err == nil && r.modelPath != "" && !r.validating() {
		_, err = trainer.OnRoot(r.comm, func() ([]byte, error) {
			if err := h.RecalibrateBatchNorm(ctx, r.train, r.tc.BatchSize, recalibrateBatches); err != nil {
				return nil, err
			}
			return nil, h.Save(r.modelPath, nil)
		})
	}
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("vae: %w", err)
	}
	return h, err
}

// recalibrateBatches is the number of training batches whose statistics a
// BatchNorm model's running statistics are set to before each validation
// and the final save (RecalibrateBatchNorm).
const recalibrateBatches = 64

// Reconstruct encodes every graph of d with z = mu and decodes it in
// evaluation mode (Eval), returning edge, node and whole-graph accuracy.
func Reconstruct(ctx context.Context, m *Model, d *Dataset, batch int) (Accuracy, error) {
	acc, _, err := reconstruct(ctx, m, d, batch, nil, decodeOptions{margin: m.Cfg.EdgeMargin}, false)
	return acc, err
}

// ReconstructLatents decodes latents, one (N_i, Latent) tensor per graph of
// d as EncodeGraphs returns them (possibly changed, e.g. by
// AddLatentNoise), and returns the accuracy against d's graphs and the
// decoded graphs. The decode options (edge rule, margin, constraint) shape
// the decoded graphs and so the accuracy's Decoded figure; the edge,
// node and sample accuracies are those of the decoder's argmax.
func ReconstructLatents(ctx context.Context, m *Model, d *Dataset, batch int, latents []*tensor.Tensor, opts ...DecodeOption) (Accuracy, []*graph.Graph, error) {
	if len(latents) != len(d.Graphs) {
		return Accuracy{}, nil, fmt.Errorf("vae: %d latents for %d graphs", len(latents), len(d.Graphs))
	}
	for i, z := range latents {
		if z.Rank() != 2 || z.Dim(0) != d.Graphs[i].N() || z.Dim(1) != m.Cfg.Latent {
			return Accuracy{}, nil, fmt.Errorf("vae: latent %d has shape %v, want (%d, %d)", i, z.Shape(), d.Graphs[i].N(), m.Cfg.Latent)
		}
	}
	o, err := m.decodeOptions(opts)
	if err != nil {
		return Accuracy{}, nil, err
	}
	return reconstruct(ctx, m, d, batch, latents, o, true)
}

// ReconstructNoisy is Reconstruct with Gaussian noise added to the latents
// before decoding (AddLatentNoise: standard deviation sigma·s, s the
// standard deviation of all latent entries of d, returned). It measures how
// far the decoder tolerates the errors of a generative model in the latent
// space: a flow whose samples land within sigma·s of real latents decodes
// about as well as the returned accuracy.
func ReconstructNoisy(ctx context.Context, m *Model, d *Dataset, batch int, sigma float64, seed uint64) (Accuracy, float64, error) {
	lat, err := m.EncodeGraphs(ctx, d.Graphs, batch)
	if err != nil {
		return Accuracy{}, 0, err
	}
	s, err := AddLatentNoise(lat, sigma, seed)
	if err != nil {
		return Accuracy{}, 0, err
	}
	acc, _, err := reconstruct(ctx, m, d, batch, lat, decodeOptions{margin: m.Cfg.EdgeMargin}, false)
	return acc, s, err
}

// AddLatentNoise adds Gaussian noise of standard deviation sigma·s to every
// entry of latents (as EncodeGraphs returns them) in place, where s is the
// standard deviation of all their entries, and returns s. The draws come
// from a generator seeded by seed.
func AddLatentNoise(latents []*tensor.Tensor, sigma float64, seed uint64) (float64, error) {
	if sigma < 0 || math.IsNaN(sigma) || math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("vae: noise level %v must be finite and >= 0", sigma)
	}
	s := stdAll(latents...)
	if sigma == 0 {
		return s, nil
	}
	r := tensor.NewRNG(seed)
	for _, z := range latents {
		noise := tensor.RandN(r, z.DType(), z.Shape()...)
		tensor.AddScaled(z, z, noise, sigma*s)
	}
	return s, nil
}

// reconstruct decodes d batch by batch and scores the result: from the
// given per-graph latents, or from z = mu encoded here when latents is nil.
// With keep it also returns the decoded graphs under o's edge rule.
func reconstruct(ctx context.Context, m *Model, d *Dataset, batch int, latents []*tensor.Tensor, o decodeOptions, keep bool) (Accuracy, []*graph.Graph, error) {
	var acc Accuracy
	var out []*graph.Graph
	if batch <= 0 {
		batch = 64
	}
	for lo := 0; lo < len(d.Graphs); lo += batch {
		if err := ctx.Err(); err != nil {
			return acc, nil, err
		}
		hi := min(lo+batch, len(d.Graphs))
		b := graph.NewBatch(d.Graphs[lo:hi])
		tp := autograd.NoGrad()
		var z *autograd.Var
		if latents == nil {
			z, _ = m.Encode(tp, b, d.Features[lo:hi], Eval, nil)
		} else {
			z = autograd.NewConst(tensor.Concat(nil, 0, latents[lo:hi]...).To(m.DType()))
		}
		zp := Pad(tp, z, b)
		dec := m.DecodeDense(tp, zp, sizes(b))
		a := accuracy(dec, b)
		decoded, err := m.decodedGraphs(ctx, dec, zp.Value, o)
		if err != nil {
			tp.Release()
			return acc, nil, err
		}
		for i, g := range decoded {
			if sameGraph(g, b.Graphs[i]) {
				a.GraphsDecoded++
			}
		}
		if keep {
			out = append(out, decoded...)
		}
		acc.Add(a)
		tp.Release()
	}
	return acc, out, nil
}

// CheckpointConfig returns the model and training configuration the
// training state at path (a StateFile written by Train) was written with,
// reading only the file's header. A resumed run continues with it;
// train-vae applies the flags a user sets on top.
func CheckpointConfig(path string) (Preset, error) {
	meta, err := trainer.ReadStateMeta(path, "lgflow.vae")
	if err != nil {
		return Preset{}, fmt.Errorf("vae: %w", err)
	}
	var p Preset
	if err := trainer.UnmarshalMeta(meta, trainer.MetaConfig, &p.Model); err != nil {
		return Preset{}, fmt.Errorf("vae: %s: %w", path, err)
	}
	if err := trainer.UnmarshalMeta(meta, "train", &p.Train); err != nil {
		return Preset{}, fmt.Errorf("vae: %s: %w", path, err)
	}
	return p, nil
}

// sizesIf returns the node counts of gs when bucket is set (batches of
// similar sizes, trainer.Loop.Sizes), else nil.
func sizesIf(bucket bool, gs []*graph.Graph) []int {
	if !bucket {
		return nil
	}
	sizes := make([]int, len(gs))
	for i, g := range gs {
		sizes[i] = g.N()
	}
	return sizes
}
