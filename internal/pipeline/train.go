package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/internal/progress"
	"lgflow/vae"
)

// Train trains the models of Options.Train on the splits: the LG-VAE
// preset (Options.Preset, default "cpu") on splits.Train, selected on
// splits.Val, then LG-Flow in its latent space, selected by
// FlowScore(spec) on validation samples. With Options.VAEPath set it
// trains only the flow, in that autoencoder's latent space. Both trainings
// are resumable: their state lives in Options.Out/vae and
// Options.Out/flow, and a second call continues where the first stopped
// (after Options.VAETime / FlowTime, or a cancelled ctx). It returns the
// paths of the checkpoints to sample with.
func Train(ctx context.Context, spec Spec, splits *Splits, o Options) (vaePath, flowPath string, err error) {
	if o.FlowPath != "" {
		return "", "", errors.New("pipeline: training makes its own LG-Flow; drop the flow checkpoint (-flow)")
	}
	if o.Out == "" {
		return "", "", errors.New("pipeline: training needs an output directory")
	}
	size := o.Preset
	if size == "" {
		size = "cpu"
	}
	train := splits.Train
	if o.MaxTrain > 0 && o.MaxTrain < len(train) {
		train = train[:o.MaxTrain]
		o.Hooks.Say(fmt.Sprintf("training on the first %d of %d training graphs", o.MaxTrain, len(splits.Train)))
	}

	var ae *vae.Model
	var trainSet *vae.Dataset
	if o.VAEPath != "" {
		vaePath = o.VAEPath
		if ae, err = vae.Load(vaePath); err != nil {
			return "", "", err
		}
		o.Hooks.Say("training LG-Flow in the latent space of " + vaePath)
	} else {
		if ae, trainSet, err = trainVAE(ctx, spec, size, train, splits.Val, o); err != nil {
			return "", "", err
		}
		vaePath = filepath.Join(o.Out, "vae", vae.ModelFile)
	}
	if trainSet == nil {
		if trainSet, err = vae.Prepare(ctx, train, ae.Cfg, o.Hooks.Stage("eigenpairs (train)")); err != nil {
			return "", "", err
		}
	}
	var cfg flow.Config
	if o.FlowConfig != nil {
		cfg = *o.FlowConfig
	} else if cfg, err = flow.Preset(spec.Name, size, ae.Cfg.Latent); err != nil {
		return "", "", err
	}
	if o.FlowSteps > 0 {
		cfg.Steps = o.FlowSteps
	}
	lat, err := flow.EncodeLatents(ctx, ae, trainSet, 128, o.Hooks.Stage("encoding latents"))
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(o.Out, "flow")
	o.Hooks.Say(fmt.Sprintf("training LG-Flow (%s preset, %d steps of batch %d%s; resumable: state in %s)",
		size, cfg.Steps, cfg.BatchSize, budget(o.FlowTime), dir))
	_, err = flow.Train(ctx, cfg, ae, trainSet, lat, flow.TrainOptions{Dir: dir, Resume: true, MaxDuration: o.FlowTime, LogEvery: 10,
		Backend: o.Backend, Score: FlowScore(ctx, spec, splits), Progress: o.Hooks.Flow})
	if err != nil {
		return "", "", err
	}
	return vaePath, filepath.Join(dir, flow.ModelFile), nil
}

// trainVAE trains the LG-VAE preset on train, validated on val, and
// returns the model to use and the training graphs' features.
func trainVAE(ctx context.Context, spec Spec, size string, train, val []*graph.Graph, o Options) (*vae.Model, *vae.Dataset, error) {
	var p vae.Preset
	if o.VAEPreset != nil {
		p = *o.VAEPreset
	} else {
		var err error
		if p, err = vae.PresetFor(spec.Name, size); err != nil {
			return nil, nil, err
		}
	}
	if o.VAESteps > 0 {
		p.Train.Steps = o.VAESteps
	}
	trainSet, err := vae.Prepare(ctx, train, p.Model, o.Hooks.Stage("eigenpairs (train)"))
	if err != nil {
		return nil, nil, err
	}
	valSet, err := vae.Prepare(ctx, val, p.Model, o.Hooks.Stage("eigenpairs (val)"))
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(o.Out, "vae")
	o.Hooks.Say(fmt.Sprintf("training LG-VAE (%s preset, %d steps of batch %d%s; resumable: state in %s)",
		size, p.Train.Steps, p.Train.BatchSize, budget(o.VAETime), dir))
	m, err := vae.Train(ctx, p.Model, p.Train, trainSet, valSet, vae.TrainOptions{Dir: dir, Resume: true, MaxDuration: o.VAETime,
		LogEvery: 10, Backend: o.Backend, Progress: o.Hooks.VAE})
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, vae.ModelFile)
	if _, err := os.Stat(path); err != nil { // stopped before the first validation
		if err := m.Save(path, map[string]string{"note": "last model; training stopped before the first validation"}); err != nil {
			return nil, nil, err
		}
	}
	ae, err := vae.Load(path)
	if err != nil {
		return nil, nil, err
	}
	return ae, trainSet, nil
}

// FlowScore returns the score that selects LG-Flow checkpoints on
// validation samples, as the reference does: the valid fraction (Planar,
// Tree, DAGs), or for Ego minus the ratio of the samples' MMDs to the
// training graphs' against the validation split (lower ratios are better).
func FlowScore(ctx context.Context, spec Spec, splits *Splits) func([]*graph.Graph) float64 {
	if spec.Valid != nil {
		return func(gs []*graph.Graph) float64 {
			n := 0
			for _, g := range gs {
				if spec.Valid(g) {
					n++
				}
			}
			return float64(n) / float64(max(len(gs), 1))
		}
	}
	// Ego: the validation split is a subset of the training split, so
	// the ratio's denominator uses as many training graphs from the end.
	ref := splits.Val
	base := splits.Train[max(0, len(splits.Train)-len(ref)):]
	return func(gs []*graph.Graph) float64 {
		r, err := Evaluate(ctx, spec, gs, ref, base, progress.Hooks{})
		if err != nil || r.Ratio == nil {
			return -1e300
		}
		return -*r.Ratio
	}
}

// budget describes a training time limit for a log line.
func budget(d time.Duration) string {
	if d > 0 {
		return ", at most " + d.String()
	}
	return ""
}
