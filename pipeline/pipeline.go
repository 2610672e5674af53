package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"lgflow/cuda"
	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/metrics"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/vae"
)

// Options configures Run. The zero value (with Dataset set) samples the
// paper's number of graphs from the shipped models with their bundle's
// recipe (pretrained/<dataset>/sampler.json, flow.Open) and evaluates them
// on the CPU. The sampler settings Options sets replace the recipe's one
// by one.
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
	// Backend runs training steps and the denoiser (nil: the CPU), for
	// example the GPU backend of cuda.Select("cuda").
	Backend tensor.Backend

	// N is the number of graphs to sample (0: the paper's, Spec.Samples);
	// Batch the sampling batch (0: Spec.SampleBatch); Seed the sampling
	// seed.
	N, Batch int
	Seed     uint64
	// Steps, EdgeRule, Temperature and FinalJump replace the recipe's
	// settings (flow.Sample's defaults without a recipe) only when set
	// (non-zero, non-empty).
	// EdgeRule is a vae.ParseEdgeRule name: or, and, mean. EdgeMargin is
	// flow.Sampler.EdgeMargin (nil: the decoder's default, the LG-VAE's own
	// margin, or the argmax under a planarity, acyclicity or tree
	// constraint: vae.WithEdgeMargin).
	Steps    int
	EdgeRule string
	// TimeShift warps the time grid (flow.Sampler.TimeShift; 0: uniform). With
	// Steps, it is the grid: either one set replaces the recipe's grid,
	// steps and shift together.
	TimeShift  float64
	EdgeMargin *float64
	// Constrained samples with the recipe's "constrained" alternative,
	// which names the constraints, or, for a model without one, decodes
	// with the dataset's Spec.Constraint (vae.WithEdgeConstraint):
	// planarity or acyclicity enforced while decoding, or spanning trees
	// (vae.WithSpanningTree) where Spec.SpanningTree says so, and
	// components joined (vae.WithConnected) where Spec.Connected does; the
	// paper's sampler does none of these, and the report says so.
	Constrained bool
	// Fill, with Constrained, is vae.WithEdgeFill's confidence bound (nil:
	// the recipe's, else the dataset's Spec.Fill; +Inf: no fill), and with
	// Complete the completion's. Only constraints that are a property of
	// edges (planarity, acyclicity; not spanning trees) can be filled.
	Fill *float64
	// Complete samples with the recipe's "complete" alternative, which
	// completes the samples that decode valid, or, for a model without
	// one, completes them with Spec.Valid: the missing pairs of edge
	// confidence at least Fill (nil: the dataset's Spec.Fill) are added, most confident first, while the sample stays
	// valid (vae.WithEdgeCompletion); invalid samples stay as decoded, so
	// validity is the decoder's own. The paper's decoder does not do it,
	// and the report says so. It excludes Constrained and needs an
	// undirected dataset with a validity test and a fill bound.
	Complete bool
	// Recipe samples with the bundle's recipe alternative of this name
	// (flow.WithRecipe; for example "paper", the paper's decoder where the
	// default decodes under a constraint). "" : the default, or the
	// alternative Constrained or Complete names, which Recipe excludes.
	Recipe      string
	Temperature float64
	FinalJump   float64
	// ExpertPath names an LG-Flow whose denoiser replaces the flow's from
	// time ExpertFrom on (flow.Expert; 0: flow.DefaultExpertFrom), and
	// the run then samples without the bundle's recipe, whose settings are
	// for its own experts. Empty: the recipe's experts, if any; NoExpert:
	// none, and no recipe (the flow alone at flow.Sample's defaults).
	// ExpertFrom without ExpertPath replaces the first time of the
	// recipe's expert.
	ExpertPath string
	ExpertFrom float64
	// Offsets are the denoiser's time offsets (flow.Sampler.Offsets). nil:
	// the recipe's, none without a recipe.
	Offsets *flow.TimeOffsets

	// Data configures dataset loading (data directory, synthetic seed,
	// split sizes).
	Data datasets.Options
	// Hooks receive progress; nil fields are skipped.
	Hooks Hooks
}

// NoExpert is the Options.ExpertPath that samples the flow alone: without
// an expert denoiser and without the bundle's recipe, at flow.Sample's
// defaults and the settings Options sets.
const NoExpert = "none"

// expertFrom returns the first time of Options.ExpertPath's expert.
func (o Options) expertFrom() float64 {
	if o.ExpertFrom != 0 {
		return o.ExpertFrom
	}
	return flow.DefaultExpertFrom
}

// fill returns the edge-fill bound of runs without a recipe for their
// decoding: Options.Fill, else the dataset's under constrained decoding or
// completion, else nil.
func (o Options) fill(spec Spec) *float64 {
	if o.Fill != nil {
		return o.Fill
	}
	if o.Constrained || o.Complete {
		return spec.Fill
	}
	return nil
}

// check reports the sampler settings of o that cannot be honoured for
// spec's dataset, before any data or model is loaded.
func (o Options) check(spec Spec) error {
	switch {
	case o.Steps < 0 || o.Temperature < 0 || o.FinalJump < 0 || o.ExpertFrom < 0 || o.TimeShift < 0 || o.Batch < 0:
		return fmt.Errorf("pipeline: negative sampler setting (steps %d, time shift %g, temperature %g, final jump %g, expert from %g, batch %d)", o.Steps, o.TimeShift, o.Temperature, o.FinalJump, o.ExpertFrom, o.Batch)
	case o.Constrained && o.Complete:
		return errors.New("pipeline: completion and constrained decoding exclude each other (constrained decoding fills every sample)")
	case o.Recipe != "" && (o.Constrained || o.Complete):
		return fmt.Errorf("pipeline: the recipe %q and -constrained or -complete exclude each other (they name the recipes constrained and complete)", o.Recipe)
	case o.Recipe != "" && o.ExpertPath != "":
		return fmt.Errorf("pipeline: the recipe %q and an expert of one's own exclude each other (the run then samples without the recipe)", o.Recipe)
	case o.Constrained && spec.Constraint == nil && !spec.Connected:
		return fmt.Errorf("pipeline: %s has no constraint to decode with", spec.Name)
	case o.Fill != nil && !o.Constrained && !o.Complete:
		return fmt.Errorf("pipeline: an edge fill needs constrained decoding under a property of edges (-constrained; %s: %s) or completion (-complete)", spec.Name, cmp.Or(spec.ConstraintName, "none"))
	case o.Fill != nil && math.IsNaN(*o.Fill):
		return errors.New("pipeline: the edge fill's bound is NaN")
	}
	if o.EdgeRule != "" {
		if _, err := vae.ParseEdgeRule(o.EdgeRule); err != nil {
			return err
		}
	}
	if o.ExpertPath != "" && o.ExpertPath != NoExpert {
		if _, err := safetensors.Stat(o.ExpertPath); err != nil {
			return fmt.Errorf("pipeline: expert denoiser: %w", err)
		}
	}
	return nil
}

// sampling is what a run samples with.
type sampling struct {
	// s are the sampler settings (flow.WithSampler).
	s flow.Sampler
	// recipe names the recipe of the model's bundle s comes from
	// ("default", "constrained", "complete"; "": none).
	recipe string
	// decode are the decode options of the dataset's constraint or
	// completion (Spec) for runs whose recipe does not name them.
	decode []vae.DecodeOption
	// fill is the bound of the edge fill or of the completion, if any.
	fill *float64
	// expert is Options.ExpertPath's denoiser, if any.
	expert *flow.Model
}

// sampling returns what a run with the flow fm samples with: the recipe
// of fm's bundle (flow.Open: Recipe.Sampler, or its "constrained" or
// "complete" alternative under Constrained or Complete), unless an
// ExpertPath is set, with each setting that Options sets in its place
// (Steps and TimeShift together: the grid); without a recipe,
// flow.Sample's defaults with the settings Options sets. Constrained
// decoding without a "constrained" recipe decodes under the dataset's
// Spec.Constraint, without the recipe's other settings; completion without
// a "complete" recipe completes with Spec.Valid under the recipe's other
// settings.
func (o Options) sampling(spec Spec, fm *flow.Model) (*sampling, error) {
	if err := o.check(spec); err != nil {
		return nil, err
	}
	name := ""
	switch {
	case o.Constrained:
		name = "constrained"
	case o.Complete:
		name = "complete"
	case o.Recipe == flow.NoRecipe:
	case o.Recipe != "":
		name = o.Recipe
		if fm.Recipe == nil {
			return nil, fmt.Errorf("pipeline: the recipe %q: the model has no recipe (a bundle's sampler.json)", name)
		}
		if _, ok := fm.Recipe.Lookup(name); !ok {
			return nil, fmt.Errorf("pipeline: the bundle's recipe has no alternative %q (it has %s)", name, strings.Join(fm.Recipe.Names(), ", "))
		}
	}
	var r sampling
	decodeNamed := false // the recipe names the run's constraint or completion
	if fm.Recipe != nil && o.ExpertPath == "" && o.Recipe != flow.NoRecipe {
		if s, ok := fm.Recipe.Lookup(name); ok {
			r.s, r.recipe, decodeNamed = s, cmp.Or(name, "default"), true
		} else if o.Complete {
			r.s, r.recipe = fm.Recipe.Sampler, "default"
		}
	}
	s := &r.s
	if decodeNamed {
		if o.Fill != nil {
			s.Fill = o.Fill
			if len(s.Complete) == 0 && math.IsInf(*o.Fill, 1) {
				s.Fill = nil
			}
		}
		r.fill = s.Fill
	} else {
		var err error
		if r.decode, err = o.specDecode(spec); err != nil {
			return nil, err
		}
		if f := o.fill(spec); f != nil && !math.IsInf(*f, 1) {
			r.fill = f
		}
	}
	s.Experts = slices.Clone(s.Experts)
	switch {
	case o.ExpertPath == NoExpert:
	case o.ExpertPath != "":
		e, err := flow.Load(o.ExpertPath, fm.VAE)
		if err != nil {
			return nil, fmt.Errorf("pipeline: expert denoiser: %w", err)
		}
		r.expert = e
	case o.ExpertFrom != 0 && len(s.Experts) == 1:
		s.Experts[0].From = o.ExpertFrom
	case o.ExpertFrom != 0 && len(s.Experts) > 1:
		return nil, fmt.Errorf("pipeline: -expert-from: the recipe has %d experts; give -expert", len(s.Experts))
	}
	switch {
	case o.Batch > 0:
		s.BatchSize = o.Batch
	case s.BatchSize == 0:
		s.BatchSize = spec.SampleBatch
	}
	if o.Steps > 0 || o.TimeShift > 0 {
		s.Steps, s.TimeShift = o.Steps, o.TimeShift
	}
	if o.EdgeRule != "" {
		s.EdgeRule = o.EdgeRule
	}
	if o.EdgeMargin != nil {
		s.EdgeMargin = o.EdgeMargin
	}
	if o.Temperature > 0 {
		s.Temperature = o.Temperature
	}
	if o.FinalJump > 0 {
		s.FinalJump = o.FinalJump
	}
	if o.Offsets != nil {
		s.Offsets = *o.Offsets
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("pipeline: sampler settings: %w", err)
	}
	return &r, nil
}

// options returns the flow.Sample options of the sampling (without
// progress): the settings, with the dataset's decoding and the expert of
// one's own where the run has them.
func (r *sampling) options(o Options) []flow.SampleOption {
	s := r.s
	s.Decode = r.decode
	if r.expert != nil {
		s.Experts = []flow.Expert{{File: o.ExpertPath, From: o.expertFrom(), Model: r.expert}}
	}
	return []flow.SampleOption{flow.WithSampler(s), flow.WithSeed(o.Seed)}
}

// specDecode returns the decode options of the dataset's constraint
// (Constrained) or completion (Complete) and of the edge fill, for runs
// whose recipe does not name them.
func (o Options) specDecode(spec Spec) ([]vae.DecodeOption, error) {
	var opts []vae.DecodeOption
	if o.Constrained {
		switch {
		case spec.SpanningTree:
			opts = append(opts, vae.WithSpanningTree())
		case spec.Constraint != nil:
			opts = append(opts, vae.WithEdgeConstraint(spec.Constraint))
		}
		if spec.Connected {
			opts = append(opts, vae.WithConnected())
		}
	}
	if o.Complete {
		c, err := o.completion(spec)
		if err != nil {
			return nil, err
		}
		return append(opts, c), nil
	}
	if fill := o.fill(spec); fill != nil {
		if !o.Constrained || spec.Constraint == nil || spec.SpanningTree {
			return nil, fmt.Errorf("pipeline: an edge fill needs constrained decoding under a property of edges (-constrained; %s: %s)", spec.Name, cmp.Or(spec.ConstraintName, "none"))
		}
		if !math.IsInf(*fill, 1) {
			opts = append(opts, vae.WithEdgeFill(*fill))
		}
	}
	return opts, nil
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
func LoadSplits(ctx context.Context, spec Spec, opt datasets.Options, hooks Hooks) (*Splits, error) {
	load := func(split string) ([]*graph.Graph, error) {
		o := opt
		o.Progress = hooks.bar(spec.Name + " " + split)
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
	if o.N < 0 || o.Batch < 0 || o.MaxTrain < 0 {
		return nil, fmt.Errorf("pipeline: negative count (n %d, batch %d, max train %d)", o.N, o.Batch, o.MaxTrain)
	}
	n := o.N
	if n == 0 {
		n = spec.Samples
	}
	if err := o.check(spec); err != nil {
		return nil, err
	}
	// Without training, find the models before spending time on data.
	vaePath, flowPath := o.VAEPath, o.FlowPath
	if !o.Train {
		if vaePath, flowPath, err = shippedModels(spec, vaePath, flowPath); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	rep := newReport(spec, o, n)
	o.Hooks.log(fmt.Sprintf("%s (%s): models from the %s split, evaluation against the %s split", spec.Title, spec.Name, spec.TrainSplit, spec.TestSplit))
	for _, note := range spec.Notes {
		o.Hooks.log("note: " + note)
	}
	splits, err := LoadSplits(ctx, spec, o.Data, o.Hooks)
	if err != nil {
		return nil, err
	}
	rep.NTrain, rep.NTest = len(splits.Novel), len(splits.Test)

	if o.Train {
		if vaePath, flowPath, err = Train(ctx, spec, splits, o); err != nil {
			return nil, err
		}
		rep.TrainedHere = true
	}
	ae, err := vae.Load(vaePath)
	if err != nil {
		return nil, err
	}
	fm, err := loadFlow(o, flowPath, ae)
	if err != nil {
		return nil, err
	}
	if err := fm.ToBackend(o.Backend); err != nil {
		return nil, err
	}
	rep.Models.VAE, rep.Models.Flow = vaePath, flowPath
	sm, err := o.sampling(spec, fm)
	if err != nil {
		return nil, err
	}
	if sm.expert != nil {
		if err := sm.expert.ToBackend(o.Backend); err != nil {
			return nil, err
		}
	}
	rep.setSampling(sm, o, filepath.Dir(flowPath))
	if g, ok := o.Backend.(*cuda.Backend); ok {
		rep.Hardware += ", denoiser on " + g.Device().Name
	}

	testSet, err := vae.Prepare(ctx, splits.Test, ae.Cfg, o.Hooks.bar("eigenpairs (test)"))
	if err != nil {
		return nil, err
	}
	acc, err := vae.Reconstruct(ctx, ae, testSet, reconBatch(splits.Test))
	if err != nil {
		return nil, err
	}
	rep.setReconstruction(acc)
	o.Hooks.log(fmt.Sprintf("LG-VAE reconstruction of the test split: edge %.4f, node %.4f, sample %.4f, decoded graph exact %.4f",
		acc.Edge(), acc.Node(), acc.Sample(), acc.Decoded()))

	start := time.Now()
	samples, err := flow.Sample(ctx, fm, n, append(sm.options(o), flow.WithProgress(o.Hooks.bar("sampling")))...)
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

// Evaluate computes the paper's metrics for spec's dataset: the MMDs
// against ref (the test split) and, with train, V.U.N. (Planar, Tree and
// DAGs, label-aware for TPU Tile) or the ratio to the training set's MMDs
// (Ego).
func Evaluate(ctx context.Context, spec Spec, gen, ref, train []*graph.Graph, hooks Hooks) (*metrics.Report, error) {
	opt := metrics.Options{Kind: spec.Kind, NodeLabels: spec.NodeLabels, DirectoCompat: spec.DirectoCompat}
	if hooks.Progress != nil {
		bars := map[string]func(int, int){}
		opt.Progress = func(stage string, done, total int) {
			b, ok := bars[stage]
			if !ok {
				b = hooks.bar("evaluating: " + stage)
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
// (flow.OpenWith: the flow, its recipe and experts, bound to ae) when the
// run samples with the shipped flow, else the flow at flowPath.
func loadFlow(o Options, flowPath string, ae *vae.Model) (*flow.Model, error) {
	if o.Train || o.FlowPath != "" {
		return flow.Load(flowPath, ae)
	}
	return flow.OpenWith(filepath.Dir(flowPath), ae)
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

// CanComplete reports whether the dataset's samples can be completed with
// its own bound (Options.Complete without Options.Fill): an undirected
// dataset with a validity test and Spec.Fill.
func (s Spec) CanComplete() bool { return s.completable() && s.Fill != nil }

// completable reports whether the dataset's samples can be completed under
// some bound: undirected, with a validity test.
func (s Spec) completable() bool { return s.Valid != nil && s.Kind != metrics.DAG }

// completion returns the decode option of Options.Complete for spec.
func (o Options) completion(spec Spec) (vae.DecodeOption, error) {
	fill := o.fill(spec)
	switch {
	case o.Constrained:
		return nil, errors.New("pipeline: completion and constrained decoding exclude each other (constrained decoding fills every sample)")
	case !spec.completable():
		return nil, fmt.Errorf("pipeline: %s samples cannot be completed (completion needs an undirected dataset with a validity test)", spec.Name)
	case fill == nil:
		return nil, fmt.Errorf("pipeline: %s has no completion bound; set Options.Fill (-fill)", spec.Name)
	}
	return vae.WithEdgeCompletion(spec.Valid, *fill), nil
}
