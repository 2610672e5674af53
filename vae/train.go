package vae

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lgflow/autograd"
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
	// BatchNorm train on the CPU only.
	Backend tensor.Backend
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

// stepRNG returns the generator for one training step: a pure function of
// (seed, step), so a resumed run draws the same numbers as an uninterrupted one.
func stepRNG(seed uint64, step int) *tensor.RNG {
	return tensor.NewRNG(seed ^ (uint64(step)+1)*0x9e3779b97f4a7c15)
}

// batchOrder returns the training-set indices of a step's batch: graphs
// are visited epoch by epoch in a seeded random order.
func batchOrder(seed uint64, n, batch, step int) []int {
	per := max(n/batch, 1)
	epoch, pos := step/per, step%per
	perm := tensor.NewRNG(seed ^ 0xa5a5a5a5 ^ uint64(epoch)*0x2545f4914f6cdd1d).Perm(n)
	lo := pos * batch
	idx := make([]int, 0, batch)
	for i := range batch {
		idx = append(idx, perm[(lo+i)%n])
	}
	return idx
}

// Train trains an LG-VAE on train, validating on val every tc.ValEvery steps
// and keeping the best model by validation sample accuracy. It honours ctx
// cancellation by writing a resumable checkpoint and returning ctx.Err()
// with the model trained so far. A non-finite loss or gradient stops
// training with an error naming the parameter, and a failure of the
// backend's device (out of memory, tensor.ErrDevice) with that error.
func Train(ctx context.Context, cfg Config, tc TrainConfig, train, val *Dataset, opts TrainOptions) (_ *Model, err error) {
	defer tensor.CatchDeviceError(&err)
	if len(train.Graphs) == 0 {
		return nil, errors.New("vae: empty training set")
	}
	if tc.BatchSize <= 0 || tc.Steps <= 0 {
		return nil, fmt.Errorf("vae: BatchSize and Steps must be positive (got %d, %d)", tc.BatchSize, tc.Steps)
	}
	if opts.FreezeEncoder && opts.Init == nil && !opts.Resume {
		return nil, errors.New("vae: FreezeEncoder needs trained weights (Init or Resume)")
	}
	if opts.ValNoise < 0 || math.IsNaN(opts.ValNoise) || math.IsInf(opts.ValNoise, 0) {
		return nil, fmt.Errorf("vae: ValNoise must be finite and >= 0, got %v", opts.ValNoise)
	}
	m, err := New(cfg, tc.Seed)
	if err != nil {
		return nil, err
	}
	m.frozenEncoder = opts.FreezeEncoder
	if opts.Perturb != nil {
		if !opts.FreezeEncoder {
			return nil, errors.New("vae: Perturb needs FreezeEncoder")
		}
		m.perturb = opts.Perturb
	}
	onDevice := opts.Backend != nil && opts.Backend != tensor.CPU
	if onDevice {
		if err := nn.ToBackend(m, opts.Backend); err != nil {
			return nil, fmt.Errorf("vae: %w", err)
		}
	}
	// host returns m itself on the CPU, or a CPU copy of it in evaluation
	// mode (for validation, saving, and the model Train returns).
	host := func() (*Model, error) {
		if !onDevice {
			return m, nil
		}
		c, err := New(cfg, tc.Seed)
		if err != nil {
			return nil, err
		}
		if err := nn.LoadStateDict(c, nn.StateDict(m)); err != nil {
			return nil, err
		}
		c.Train(false)
		return c, nil
	}
	if err := trainer.Flatten(m); err != nil {
		return nil, fmt.Errorf("vae: %w", err)
	}
	params := trainer.OptimParams(m)
	if opts.FreezeEncoder {
		params = slices.DeleteFunc(params, func(p optim.Param) bool { return !strings.HasPrefix(p.Name, "decoder.") })
	}
	opt, err := optim.NewAdamW(params, optim.AdamWConfig{LR: tc.LR, Beta1: tc.Beta1, Beta2: tc.Beta2, Eps: 1e-8, WeightDecay: tc.WeightDecay})
	if err != nil {
		return nil, err
	}
	sched := optim.WarmupCosine{Peak: tc.LR, Min: tc.MinLR, Warmup: tc.Warmup, DecaySteps: tc.Steps}
	meta := map[string]string{trainer.MetaKind: "lgflow.vae", trainer.MetaConfig: trainer.MarshalMeta(cfg), "train": trainer.MarshalMeta(tc)}

	if opts.Init != nil {
		sd := nn.StateDict(opts.Init)
		if opts.Init.refine == nil && m.refine != nil {
			// Adding a refinement network to a trained model: it starts
			// as initialised (its output at zero), the rest as Init.
			for _, p := range nn.ParamsOf("decoder.refine", m.refine) {
				sd[p.Name] = p.V.Value
			}
		}
		if err := nn.LoadStateDict(m, sd); err != nil {
			return nil, fmt.Errorf("vae: initial weights: %w", err)
		}
	}
	step, best, bestEdge := 0, -1.0, -1.0
	statePath, modelPath := "", ""
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, err
		}
		statePath, modelPath = filepath.Join(opts.Dir, StateFile), filepath.Join(opts.Dir, ModelFile)
		if opts.Resume {
			if _, err := os.Stat(statePath); err == nil {
				st, err := trainer.LoadState(statePath, m, opt)
				if err != nil {
					return nil, fmt.Errorf("vae: resume: %w", err)
				}
				var saved Config
				if err := trainer.UnmarshalMeta(st.Meta, trainer.MetaConfig, &saved); err != nil || saved != cfg {
					return nil, fmt.Errorf("vae: resume: %s was written for a different model configuration", statePath)
				}
				step = st.Step
				fmt.Sscan(st.Meta["best_val_sample"], &best)
				fmt.Sscan(st.Meta["best_val_edge"], &bestEdge)
			}
		}
	}
	// The stepper checks for non-finite values on a GPU every few steps,
	// and before anything is saved.
	stepper := trainer.NewStepper(params, opt, tc.ClipNorm)
	save := func() error {
		if err := stepper.Check(); err != nil || statePath == "" {
			return err
		}
		meta["best_val_sample"] = fmt.Sprint(best)
		meta["best_val_edge"] = fmt.Sprint(bestEdge)
		return trainer.SaveState(statePath, m, opt, step, meta, nil)
	}
	logEvery := opts.LogEvery
	if logEvery <= 0 {
		logEvery = 50
	}
	// finish returns the model on the CPU with err and the last checkpoint's.
	finish := func(err error) (*Model, error) {
		err = errors.Join(err, save())
		h, herr := host()
		if herr != nil {
			return m, errors.Join(err, herr)
		}
		h.Train(false)
		h.frozenEncoder, h.perturb = false, nil // settings of this training run, not of the model
		return h, err
	}
	clock := trainer.NewClock(step)
	var lastVal *Accuracy
	m.Train(true)
	for step < tc.Steps {
		if err := ctx.Err(); err != nil {
			return finish(err)
		}
		if opts.MaxDuration > 0 && clock.Elapsed() > opts.MaxDuration {
			return finish(nil)
		}
		lr := sched.LR(step + 1)
		opt.SetLR(lr)
		r := stepRNG(tc.Seed, step)
		sub := train.Subset(batchOrder(tc.Seed, len(train.Graphs), tc.BatchSize, step))
		b := graph.NewBatch(sub.Graphs)
		tp := autograd.NewTape()
		loss, _, err := m.objective(tp, b, sub.Features, r)
		if err != nil {
			tp.Release()
			return finish(fmt.Errorf("vae: step %d: %w", step, err))
		}
		if err := stepper.Step(tp, loss.Total); err != nil {
			return m, fmt.Errorf("vae: step %d (edge %v, node %v, kl %v): %w", step, loss.Edge, loss.Node, loss.KL, err)
		}
		step++

		validated := false
		if val != nil && len(val.Graphs) > 0 && tc.ValEvery > 0 && (step%tc.ValEvery == 0 || step == tc.Steps) {
			if err := stepper.Check(); err != nil {
				return m, fmt.Errorf("vae: step %d: %w", step, err)
			}
			m.Train(false)
			hm, err := host()
			if err != nil {
				return m, err
			}
			var acc Accuracy
			if opts.ValNoise > 0 {
				acc, _, err = ReconstructNoisy(ctx, hm, val, tc.BatchSize, opts.ValNoise, 1)
			} else {
				acc, err = Reconstruct(ctx, hm, val, tc.BatchSize)
			}
			m.Train(true)
			if err != nil {
				return finish(err)
			}
			lastVal, validated = &acc, true
			// Best by sample accuracy, ties (such as 0 early on) broken by
			// edge accuracy.
			if acc.Sample() > best || acc.Sample() == best && acc.Edge() > bestEdge || best < 0 {
				best, bestEdge = acc.Sample(), acc.Edge()
				if modelPath != "" {
					if err := hm.Save(modelPath, map[string]string{"val_sample_acc": fmt.Sprint(best), "val_edge_acc": fmt.Sprint(bestEdge), "step": fmt.Sprint(step)}); err != nil {
						return m, err
					}
				}
			}
		}
		if statePath != "" && tc.CheckpointEvery > 0 && step%tc.CheckpointEvery == 0 {
			if err := save(); err != nil {
				return m, err
			}
		}
		if opts.Progress != nil && (step%logEvery == 0 || validated || step == tc.Steps) {
			el := clock.Elapsed()
			opts.Progress(Progress{Step: step, Steps: tc.Steps, Loss: stepper.Loss(), Edge: loss.Edge, Node: loss.Node, KL: loss.KL, LR: lr,
				Val: lastVal, BestSample: best, Elapsed: el, ETA: clock.ETA(step, tc.Steps),
				StepsPerSecond: clock.Rate(step)})
		}
	}
	m.Train(false)
	if err := stepper.Check(); err != nil {
		return m, fmt.Errorf("vae: step %d: %w", step, err)
	}
	if modelPath != "" && (val == nil || len(val.Graphs) == 0 || tc.ValEvery <= 0) {
		hm, err := host()
		if err != nil {
			return m, err
		}
		if err := hm.Save(modelPath, nil); err != nil {
			return m, err
		}
	}
	return finish(nil)
}

// Reconstruct encodes every graph of d with z = mu and decodes it in
// evaluation mode, returning edge, node and whole-graph accuracy. The model
// must be in evaluation mode.
func Reconstruct(ctx context.Context, m *Model, d *Dataset, batch int) (Accuracy, error) {
	acc, _, err := reconstruct(ctx, m, d, batch, nil, decodeOptions{}, false)
	return acc, err
}

// ReconstructLatents decodes latents, one (N_i, Latent) tensor per graph of
// d as EncodeGraphs returns them (possibly changed, e.g. by
// AddLatentNoise), and returns the accuracy against d's graphs and the
// decoded graphs (undirected edges by the WithEdgeRule option; the
// accuracy's Decoded figure always uses EitherDirection).
func ReconstructLatents(ctx context.Context, m *Model, d *Dataset, batch int, latents []*tensor.Tensor, opts ...DecodeOption) (Accuracy, []*graph.Graph, error) {
	if len(latents) != len(d.Graphs) {
		return Accuracy{}, nil, fmt.Errorf("vae: %d latents for %d graphs", len(latents), len(d.Graphs))
	}
	for i, z := range latents {
		if z.Rank() != 2 || z.Dim(0) != d.Graphs[i].N() || z.Dim(1) != m.Cfg.Latent {
			return Accuracy{}, nil, fmt.Errorf("vae: latent %d has shape %v, want (%d, %d)", i, z.Shape(), d.Graphs[i].N(), m.Cfg.Latent)
		}
	}
	o, err := buildDecodeOptions(opts)
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
	acc, _, err := reconstruct(ctx, m, d, batch, lat, decodeOptions{}, false)
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
			z, _ = m.Encode(tp, b, d.Features[lo:hi], nil)
		} else {
			z = autograd.NewConst(tensor.Concat(nil, 0, latents[lo:hi]...).To(m.DType()))
		}
		dec := m.DecodeDense(tp, Pad(tp, z, b), sizes(b))
		a := accuracy(dec, b)
		decoded := m.graphs(dec, EitherDirection)
		for i, g := range decoded {
			if sameGraph(g, b.Graphs[i]) {
				a.GraphsDecoded++
			}
		}
		if keep {
			if o.rule != EitherDirection {
				decoded = m.graphs(dec, o.rule)
			}
			out = append(out, decoded...)
		}
		acc.Add(a)
		tp.Release()
	}
	return acc, out, nil
}
