package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/internal/bundle"
	"lgflow/internal/progress"
	"lgflow/metrics"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/vae"
)

// Options configures Run. The zero value (with Dataset set) samples the
// paper's number of graphs from the shipped models with their bundle's
// recipe (pretrained/<dataset>/sampler.json, flow.Open) and evaluates them
// on the CPU. Settings edits the recipe's settings one by one.
type Options struct {
	// Dataset names the dataset (Names lists them).
	Dataset string
	// Out is the output directory (default out/<dataset>).
	Out string

	// VAEPath and FlowPath name the checkpoints to use. Empty: the shipped
	// ones in PretrainedDir()/<dataset>, or the ones Train makes.
	VAEPath, FlowPath string
	// Train trains the models from scratch instead (data, LG-VAE, latents,
	// LG-Flow), resumably, in Out/vae and Out/flow. With VAEPath set it
	// trains only the flow, in that autoencoder's latent space.
	Train bool
	// Preset is the size of the models Train trains: "cpu" (default, two
	// cores) or "paper" (a GPU). VAEPreset and FlowConfig, when not nil,
	// replace the presets (experiments, tests).
	Preset     string
	VAEPreset  *vae.Preset
	FlowConfig *flow.Config
	// VAETime and FlowTime bound the training time (0: the presets'
	// steps); VAESteps and FlowSteps override the presets' steps (which
	// set the learning-rate schedules).
	VAETime, FlowTime   time.Duration
	VAESteps, FlowSteps int
	// MaxTrain trains on the first MaxTrain graphs of the training split
	// only (0: all); novelty is measured against the whole split.
	MaxTrain int
	// Backend runs training steps and the denoiser (nil: the CPU); the
	// program chooses it (cmd/lgflow and the examples: -device). Device
	// names it in the report's hardware line ("": the CPU).
	Backend tensor.Backend
	Device  string

	// N is the number of graphs to sample (0: the paper's, Spec.Samples);
	// Seed the sampling seed.
	N    int
	Seed uint64
	// Recipe names the alternative of the bundle's recipe to sample with
	// (flow.WithRecipe; "": its default; flow.NoRecipe: none, flow.Sample's
	// defaults). For a model without that alternative (trained by the run,
	// given with FlowPath, or a bundle without it), "constrained" decodes
	// under the dataset's Spec.Constraints (with Spec.Fill) and "complete"
	// completes the samples that decode valid (Spec.Fill as the bound)
	// under the default's other settings; neither is the paper's sampler,
	// and the report says so.
	Recipe string
	// Settings, when not nil, edits the settings the recipe gives (or
	// flow.Sample's defaults): the programs' -sampler flag. A batch size
	// of 0 after it is the dataset's Spec.SampleBatch.
	Settings func(*flow.Sampler)

	// Data configures dataset loading (data directory, synthetic seed,
	// split sizes).
	Data datasets.Options
	// Hooks receive progress; nil fields are skipped.
	Hooks progress.Hooks
}

// sampling is what a run samples with: the sampler settings
// (flow.WithSampler) and the recipe of the model's bundle they come from
// ("default", "constrained", "complete", ...; "": none).
type sampling struct {
	s      flow.Sampler
	recipe string
}

// sampling returns what a run with the flow fm samples with: the recipe
// of fm's bundle (flow.Open: Recipe.Sampler, or the alternative
// Options.Recipe names), or flow.Sample's defaults without one, or the
// dataset's constraint or completion for "constrained" and "complete"
// where the bundle has no such alternative; then Options.Settings.
func (o Options) sampling(spec Spec, fm *flow.Model) (*sampling, error) {
	var r sampling
	s := &r.s
	alt, ok := flow.Sampler{}, false
	if fm.Recipe != nil && o.Recipe != flow.NoRecipe {
		if alt, ok = fm.Recipe.Lookup(o.Recipe); ok {
			*s, r.recipe = alt, cmp.Or(o.Recipe, "default")
		}
	}
	if !ok && o.Recipe != "" && o.Recipe != flow.NoRecipe {
		if err := o.specSampler(spec, fm, &r); err != nil {
			return nil, err
		}
	}
	s.Experts = slices.Clone(s.Experts)
	if o.Settings != nil {
		o.Settings(s)
	}
	if s.BatchSize == 0 {
		s.BatchSize = spec.SampleBatch
	}
	if err := bundle.ValidateSettings(*s); err != nil {
		return nil, fmt.Errorf("pipeline: sampler settings: %w", err)
	}
	return &r, nil
}

// specSampler sets r to the dataset's constrained decoding or completion
// (Options.Recipe "constrained" or "complete") for a model whose bundle
// has no alternative of that name: constrained decoding alone, or
// completion under the recipe's default settings.
func (o Options) specSampler(spec Spec, fm *flow.Model, r *sampling) error {
	switch o.Recipe {
	case "constrained":
		if len(spec.Constraints) == 0 {
			return fmt.Errorf("pipeline: %s has no constraint to decode with", spec.Name)
		}
		r.s = flow.Sampler{Constraints: slices.Clone(spec.Constraints)}
		if spec.Fill != nil && slices.ContainsFunc(spec.Constraints, edgeProperty) {
			r.s.Fill = spec.Fill
		}
	case "complete":
		if spec.Fill == nil || !slices.ContainsFunc(spec.Constraints, edgeProperty) {
			return fmt.Errorf("pipeline: %s samples cannot be completed (completion needs an undirected dataset with a validity test and a bound)", spec.Name)
		}
		if fm.Recipe != nil {
			r.s, r.recipe = fm.Recipe.Sampler, "default"
		}
		r.s.Complete, r.s.Fill = slices.Clone(spec.Constraints), spec.Fill
	case "":
	default:
		if fm.Recipe == nil {
			return fmt.Errorf("pipeline: the recipe %q: the model has no recipe (a bundle's sampler.json)", o.Recipe)
		}
		return fmt.Errorf("pipeline: the bundle's recipe has no alternative %q (it has %s)", o.Recipe, strings.Join(fm.Recipe.Names(), ", "))
	}
	return nil
}

// edgeProperty reports whether a decoding constraint is a property of
// edges that an edge fill or a completion can keep (planar, forest, dag;
// not spanning trees or joined components).
func edgeProperty(c string) bool { return c == "planar" || c == "forest" || c == "dag" }

// options returns the flow.Sample options of the sampling (without
// progress): the settings and the seed.
func (r *sampling) options(o Options) []flow.SampleOption {
	return []flow.SampleOption{flow.WithSettings(func(s *flow.Sampler) { *s = r.s }), flow.WithSeed(o.Seed)}
}

// Splits holds a dataset's graphs as the pipeline uses them.
type Splits struct {
	// Train is what the models learn from; Val selects checkpoints; Test
	// is the evaluation's reference; Novel is what novelty is measured
	// against (Train, or the whole training split when graphs were held
	// out of it).
	Train, Val, Test, Novel []*graph.Graph
}

// LoadSplits loads the splits of spec's dataset: Spec.TrainSplit (without
// its last Spec.HoldOut graphs when Spec.ValSplit is empty), the
// validation graphs and Spec.TestSplit.
func LoadSplits(ctx context.Context, spec Spec, opt datasets.Options, hooks progress.Hooks) (*Splits, error) {
	load := func(split string) ([]*graph.Graph, error) {
		o := opt
		o.Progress = hooks.Stage(spec.Name + " " + split)
		gs, err := datasets.Load(ctx, spec.Name, split, o)
		if err != nil {
			return nil, err
		}
		if len(gs) == 0 {
			return nil, fmt.Errorf("pipeline: %s %s split is empty", spec.Name, split)
		}
		return gs, nil
	}
	var s Splits
	var err error
	if s.Test, err = load(spec.TestSplit); err != nil {
		return nil, err
	}
	if s.Train, err = load(spec.TrainSplit); err != nil {
		return nil, err
	}
	s.Novel = s.Train
	if spec.ValSplit != "" {
		if s.Val, err = load(spec.ValSplit); err != nil {
			return nil, err
		}
	} else {
		k := min(spec.HoldOut, len(s.Train)/2)
		if k <= 0 {
			return nil, fmt.Errorf("pipeline: %s: %d training graphs, too few to hold out a validation set", spec.Name, len(s.Train))
		}
		s.Train, s.Val = s.Train[:len(s.Train)-k], s.Train[len(s.Train)-k:]
	}
	return &s, nil
}

// Run takes a dataset through the whole pipeline: it loads the splits,
// loads the shipped models (or trains them with Options.Train), measures
// the LG-VAE's reconstruction of the test split, samples graphs, evaluates
// them as the paper does, and writes report.json, the samples (graph6 or
// digraph6, and node-link JSON Lines for labelled graphs), samples.svg and
// the test and training splits into Options.Out. It returns the report;
// Report.WriteTable prints it beside the paper's rows. Run stops promptly
// with ctx's error when ctx is cancelled; training then resumes from Out
// on the next run.
func Run(ctx context.Context, o Options) (*Report, error) {
	spec, err := Lookup(o.Dataset)
	if err != nil {
		return nil, err
	}
	if o.Out == "" {
		o.Out = filepath.Join("out", spec.Name)
	}
	if o.Backend == nil {
		o.Backend = tensor.CPU
	}
	if o.N < 0 || o.MaxTrain < 0 {
		return nil, fmt.Errorf("pipeline: negative count (n %d, max train %d)", o.N, o.MaxTrain)
	}
	n := cmp.Or(o.N, spec.Samples)
	// Find the models and check the settings before spending time on
	// data: without training, load the models; with it, the trained
	// models have no recipe.
	var m *models
	if o.Train {
		if _, err := o.sampling(spec, &flow.Model{}); err != nil {
			return nil, err
		}
	} else if m, err = o.load(spec, "", ""); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	rep := newReport(spec, o, n)
	o.Hooks.Say(fmt.Sprintf("%s (%s): models from the %s split, evaluation against the %s split", spec.Title, spec.Name, spec.TrainSplit, spec.TestSplit))
	for _, note := range spec.Notes {
		o.Hooks.Say("note: " + note)
	}
	splits, err := LoadSplits(ctx, spec, o.Data, o.Hooks)
	if err != nil {
		return nil, err
	}
	rep.NTrain, rep.NTest = len(splits.Novel), len(splits.Test)
	if o.Train {
		vaePath, flowPath, err := Train(ctx, spec, splits, o)
		if err != nil {
			return nil, err
		}
		if m, err = o.load(spec, vaePath, flowPath); err != nil {
			return nil, err
		}
		rep.TrainedHere = true
	}
	rep.Models.VAE, rep.Models.Flow = m.vaePath, m.flowPath
	rep.setSampling(m.sm, o, filepath.Dir(m.flowPath))
	if o.Device != "" {
		rep.Hardware += ", denoiser on " + o.Device
	}
	if err := rep.reconstruct(ctx, m.fm.VAE, splits.Test, o.Hooks); err != nil {
		return nil, err
	}
	start := time.Now()
	samples, err := flow.Sample(ctx, m.fm, n, append(m.sm.options(o), flow.WithProgress(o.Hooks.Stage("sampling")))...)
	if err != nil {
		return nil, err
	}
	rep.SampleSeconds = time.Since(start).Seconds()
	mr, err := Evaluate(ctx, spec, samples, splits.Test, splits.Novel, o.Hooks)
	if err != nil {
		return nil, err
	}
	rep.setMetrics(mr)
	if err := writeOutputs(o.Out, spec, samples, splits, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// models are the models a run samples with, and its sampling.
type models struct {
	vaePath, flowPath string
	fm                *flow.Model
	sm                *sampling
}

// load loads the models of a run: those Train wrote (the paths given), or
// else Options.VAEPath and FlowPath with the shipped ones in place of
// those not given; moves the flow and its experts to the backend; and
// works out the sampling.
func (o Options) load(spec Spec, vaePath, flowPath string) (*models, error) {
	if vaePath == "" {
		var err error
		if vaePath, flowPath, err = shippedModels(spec, o.VAEPath, o.FlowPath); err != nil {
			return nil, err
		}
	}
	ae, err := vae.Load(vaePath)
	if err != nil {
		return nil, err
	}
	fm, err := loadFlow(o, flowPath, ae)
	if err != nil {
		return nil, err
	}
	if o.Backend != nil {
		if err := fm.ToBackend(o.Backend); err != nil {
			return nil, err
		}
	}
	sm, err := o.sampling(spec, fm)
	if err != nil {
		return nil, err
	}
	if err := bundle.LoadExperts(fm, &sm.s, o.Backend); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return &models{vaePath: vaePath, flowPath: flowPath, fm: fm, sm: sm}, nil
}

// reconstruct measures ae's reconstruction of the test graphs into r.
func (r *Report) reconstruct(ctx context.Context, ae *vae.Model, test []*graph.Graph, hooks progress.Hooks) error {
	testSet, err := vae.Prepare(ctx, test, ae.Cfg, hooks.Stage("eigenpairs (test)"))
	if err != nil {
		return err
	}
	acc, err := vae.Reconstruct(ctx, ae, testSet, reconBatch(test))
	if err != nil {
		return err
	}
	r.setReconstruction(acc)
	hooks.Say(fmt.Sprintf("LG-VAE reconstruction of the test split: edge %.4f, node %.4f, sample %.4f, decoded graph exact %.4f",
		acc.Edge(), acc.Node(), acc.Sample(), acc.Decoded()))
	return nil
}

// Evaluate computes the paper's metrics for spec's dataset: the MMDs
// against ref (the test split) and, with train, V.U.N. (Planar, Tree and
// DAGs, label-aware for TPU Tile) or the ratio to the training set's MMDs
// (Ego).
func Evaluate(ctx context.Context, spec Spec, gen, ref, train []*graph.Graph, hooks progress.Hooks) (*metrics.Report, error) {
	opt := metrics.Options{Kind: spec.Kind, NodeLabels: spec.NodeLabels, DirectoCompat: spec.DirectoCompat}
	if hooks.Progress != nil {
		bars := map[string]func(int, int){}
		opt.Progress = func(stage string, done, total int) {
			b, ok := bars[stage]
			if !ok {
				b = hooks.Stage("evaluating: " + stage)
				bars[stage] = b
			}
			b(done, total)
		}
	}
	return metrics.Evaluate(ctx, gen, ref, train, opt)
}

// PretrainedDir returns the directory holding the shipped models:
// $LGFLOW_PRETRAINED if set, otherwise the pretrained folder beside the
// go.mod found by walking up from the working directory (the repository
// root when run with go run from inside it).
func PretrainedDir() (string, error) {
	if d := os.Getenv("LGFLOW_PRETRAINED"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "pretrained"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("pipeline: no go.mod above the working directory; set LGFLOW_PRETRAINED to the folder of shipped models")
		}
		dir = parent
	}
}

// MissingModelError reports that a dataset has no shipped model.
type MissingModelError struct {
	Dataset string
	// Path is where the model was looked for; What is "LG-VAE" or
	// "LG-Flow".
	Path, What string
	// VAE is the shipped LG-VAE when only the flow is missing.
	VAE string
}

// Error says what is missing and how to train it.
func (e *MissingModelError) Error() string {
	msg := fmt.Sprintf("no %s is shipped for %s (%s not found): run with -train to train the models from scratch "+
		"(cpu presets; -vae-time and -flow-time bound the training time)", e.What, e.Dataset, e.Path)
	if e.VAE != "" {
		msg += fmt.Sprintf(", or with -train -vae %s to train only the flow on the shipped LG-VAE", e.VAE)
	}
	return msg
}

// Unwrap makes errors.Is(err, fs.ErrNotExist) true.
func (e *MissingModelError) Unwrap() error { return os.ErrNotExist }

// shippedModels resolves the checkpoints to load without training: the
// given paths, and the shipped ones for those not given (a decoder
// fine-tuned with a frozen encoder samples with the shipped flow).
func shippedModels(spec Spec, vaePath, flowPath string) (string, string, error) {
	for _, p := range []string{vaePath, flowPath} {
		if p == "" {
			continue
		}
		if _, err := safetensors.Stat(p); err != nil {
			return "", "", fmt.Errorf("pipeline: %w (run with -train to train models)", err)
		}
	}
	if vaePath != "" && flowPath != "" {
		return vaePath, flowPath, nil
	}
	dir, err := PretrainedDir()
	if err != nil {
		return "", "", err
	}
	if vaePath == "" {
		vaePath = filepath.Join(dir, spec.Name, vae.ModelFile)
		if _, err := safetensors.Stat(vaePath); err != nil {
			return "", "", &MissingModelError{Dataset: spec.Name, Path: vaePath, What: "LG-VAE"}
		}
	}
	if flowPath == "" {
		flowPath = filepath.Join(dir, spec.Name, flow.ModelFile)
		if _, err := safetensors.Stat(flowPath); err != nil {
			return "", "", &MissingModelError{Dataset: spec.Name, Path: flowPath, What: "LG-Flow", VAE: vaePath}
		}
	}
	return vaePath, flowPath, nil
}

// loadFlow loads the flow of a run: the bundle of the shipped models
// (flow.Load of the directory: the flow, its recipe and experts, bound to ae) when the
// run samples with the shipped flow, else the flow at flowPath.
func loadFlow(o Options, flowPath string, ae *vae.Model) (*flow.Model, error) {
	if o.Train || o.FlowPath != "" {
		return flow.Load(flowPath, ae)
	}
	return flow.Load(filepath.Dir(flowPath), ae)
}

// reconBatch is the batch for reconstructing gs: 64 graphs of 64 nodes,
// and as many node pairs for larger graphs (the decoder's activations
// grow with the square of the node count), at least one graph.
func reconBatch(gs []*graph.Graph) int {
	n := 1
	for _, g := range gs {
		n = max(n, g.N())
	}
	return max(1, 64*64*64/(n*n))
}

// hardware describes the machine for reports.
func hardware() string {
	return fmt.Sprintf("%s/%s, %d CPU threads (GOMAXPROCS)", runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
}
