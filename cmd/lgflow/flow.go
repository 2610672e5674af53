package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lgflow/cuda"
	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/mol"
	"lgflow/graph/planar"
	"lgflow/internal/progress"
	"lgflow/metrics"
	"lgflow/tensor"
	"lgflow/vae"
)

func init() {
	register("train-flow", "train LG-Flow in the latent space of a trained LG-VAE", runTrainFlow)
	register("sample", "sample graphs from trained LG-VAE and LG-Flow models", runSample)
}

// validityScore returns the fraction-of-valid-graphs scorer used to pick the
// best flow checkpoint and reported by recon (for "moses": graphs that
// decode to a valid molecule with molOpts), or nil for datasets without a
// validity notion.
func validityScore(dataset string, molOpts ...mol.DecodeOption) func([]*graph.Graph) float64 {
	var valid func(*graph.Graph) bool
	switch dataset {
	case "planar", "planar-128", "planar-256", "planar-512":
		valid = metrics.IsValidPlanar
	case "tree":
		valid = metrics.IsValidTree
	case "price", "tpu":
		valid = metrics.IsValidDAG
	case "moses":
		valid = func(g *graph.Graph) bool {
			_, err := mol.MOSES.DecodeDatasetGraph(g, molOpts...)
			return err == nil
		}
	default:
		return nil
	}
	return func(gs []*graph.Graph) float64 {
		n := 0
		for _, g := range gs {
			if valid(g) {
				n++
			}
		}
		return float64(n) / float64(max(len(gs), 1))
	}
}

// flowPreset returns the LG-Flow recipe for a dataset: flow.PresetFor's
// for the paper's datasets, flow.Preset's for the others ("paper" then
// means the DiT-T recipe).
func flowPreset(dataset, size string, latent int) (flow.Config, error) {
	if slices.Contains(flow.PresetDatasets(), dataset) {
		return flow.PresetFor(dataset, size, latent)
	}
	if size == "paper" {
		size = "T"
	}
	return flow.Preset(size, latent)
}

func runTrainFlow(ctx context.Context, args []string) error {
	fs := newFlagSet("train-flow", "lgflow train-flow -vae V -dataset D [-preset cpu|paper|T|S|B] [-train-split S] [-cond FILE | -cond-prop NAMES] [-cond-drop P] -out DIR [-resume]")
	vaePath := fs.String("vae", "", "trained LG-VAE (vae.safetensors)")
	name := fs.String("dataset", "", "dataset the LG-VAE was trained on")
	preset := fs.String("preset", "cpu", "preset: cpu (a small DiT for two cores, sized for the dataset), paper (the reference's DiT, batch and steps for the dataset), or the DiT sizes T, S, B (or tiny)")
	out := fs.String("out", "", "output directory (flow.safetensors: best; last.safetensors: latest EMA; state.safetensors)")
	resume := fs.Bool("resume", false, "continue from OUT/state.safetensors")
	initPath := fs.String("init", "", "start from this flow's denoiser weights and latent scale (same DiT; e.g. a flow for smaller graphs of the dataset, or in the space of the LG-VAE -vae was fine-tuned from: the scale is then adjusted by the ratio of the two encoders' latent spreads)")
	initVAE := fs.String("init-vae", "", "with -init: the LG-VAE that flow was trained with (default: -vae)")
	seed := fs.Uint64("seed", 0, "seed")
	dataSeed := fs.Uint64("data-seed", 0, "seed of the synthetic dataset")
	dataDir := fs.String("data", "", "data directory (default ../shared/data)")
	trainSplit := fs.String("train-split", "train", "split to train on (e.g. val for tpu, whose train split is not distributed)")
	steps := fs.Int("steps", 0, "override: training steps")
	batch := fs.Int("batch", 0, "override: batch size")
	lr := fs.Float64("lr", 0, "override: learning rate")
	cooldown := fs.Int("cooldown", 0, "override: final steps over which the learning rate falls linearly to zero (e.g. resume a constant-rate run with -steps S+N -cooldown N to anneal it; 0: constant, the reference)")
	bucket := fs.Bool("bucket-by-size", false, "override: batches of graphs of similar sizes (less padding; for datasets of very different sizes such as ego and tpu)")
	emaBeta := fs.Float64("ema", 0, "override: EMA decay of the sampling weights (the paper's presets 0.9999, the cpu presets 0.999; short runs want a smaller decay)")
	emaAfter := fs.Int("ema-after", 0, "override: step at which the EMA starts (a copy of the weights)")
	timeMean := fs.Float64("time-mean", 0, "override: location of the logit-normal training-time distribution (0: the reference; > 0 trains more near the data; the dataset cpu presets use 1)")
	timeStd := fs.Float64("time-std", 0, "override: scale of the logit-normal training-time distribution (0 or 1: the reference; the shipped planar data-end expert, used from t = 0.95 on, trained with -time-mean 3.05 -time-std 0.35)")
	decoderWeight := fs.Float64("decoder-weight", 0, "override: add this weight times the frozen LG-VAE decoder's reconstruction loss of the denoiser's data estimate (for a data-end expert; 0: flow matching alone, the reference)")
	valEvery := fs.Int("val-every", 0, "override: steps between validation sampling runs (0: off)")
	valSamples := fs.Int("val-samples", 0, "override: graphs sampled per validation (more: a steadier best-checkpoint choice)")
	valSteps := fs.Int("val-steps", 0, "override: integration steps per validation sample")
	maxTime := fs.Duration("max-time", 0, "stop after this long (resumable), e.g. 60m")
	logEvery := fs.Int("log-every", 50, "steps between progress lines")
	device := fs.String("device", "cpu", "where the training steps run: cpu or cuda (an NVIDIA GPU through the driver, cuBLAS and NVRTC)")
	tf32 := fs.Bool("tf32", true, "with -device cuda on compute capability 8.0 or newer: float32 matrix products in TensorFloat-32 (-tf32=false: exact float32)")
	conds := addCondFlags(fs, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *vaePath == "" || *name == "" || *out == "" {
		return usagef("need -vae, -dataset and -out")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	condDrop, err := conds.dropout(set["cond-drop"])
	if err != nil {
		return err
	}
	backend, gpuStats, err := selectTraining(*device, *tf32)
	if err != nil {
		return err
	}
	ae, err := vae.Load(*vaePath)
	if err != nil {
		return err
	}
	cfg, err := flowPreset(*name, *preset, ae.Cfg.Latent)
	if err != nil {
		return usagef("%v", err)
	}
	cfg.Seed = *seed
	// An override applies when its flag is given, whatever its value (as
	// in train-vae): -val-every 0 turns validation off.
	override := func(c *flow.Config) {
		for name := range set {
			switch name {
			case "steps":
				c.Steps = *steps
			case "batch":
				c.BatchSize = *batch
			case "lr":
				c.LR = *lr
			case "cooldown":
				c.Cooldown = *cooldown
			case "val-every":
				c.ValEvery = *valEvery
			case "val-samples":
				c.ValSamples = *valSamples
			case "val-steps":
				c.ValSteps = *valSteps
			case "bucket-by-size":
				c.BucketBySize = *bucket
			case "ema":
				c.EMABeta = *emaBeta
			case "ema-after":
				c.EMAAfter = *emaAfter
			case "time-mean":
				c.TimeMean = *timeMean
			case "time-std":
				c.TimeStd = *timeStd
			case "decoder-weight":
				c.DecoderWeight = *decoderWeight
			case "seed":
				c.Seed = *seed
			case "cond-drop":
				c.CondDrop = condDrop
			}
		}
	}
	override(&cfg)
	// A resumed run continues with its checkpoint's configuration; only
	// the flags given override it.
	statePath := filepath.Join(*out, flow.StateFile)
	cfg, err = resumeConfig(cfg, statePath, *resume, flow.CheckpointConfig, func(saved flow.Config) error {
		// The conditions' part of the denoiser is compared below, with
		// the conditions.
		a, b := saved.DiT, cfg.DiT
		a.Classes, a.CondDim, b.Classes, b.CondDim = 0, 0, 0, 0
		if set["preset"] && a != b {
			return usagef("-preset %s is another denoiser than the one %s was trained with: %s", *preset, statePath,
				strings.Join(configDiff(a, b), ", "))
		}
		return nil
	}, override)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	var init *flow.Model
	if *initPath != "" {
		if init, err = initDenoiser(*initPath, *initVAE, ae); err != nil {
			return err
		}
	} else if *initVAE != "" {
		return usagef("-init-vae needs -init")
	}
	train, err := loadPrepared(ctx, *name, *trainSplit, *dataDir, *dataSeed, 0, ae.Cfg)
	if err != nil {
		return err
	}
	var cond *flow.Conditions
	table, err := conds.table(train.Graphs, *name+" "+*trainSplit, inG6)
	if err != nil {
		return err
	}
	if table != nil {
		if cond, err = table.Conditions(); err != nil {
			return fmt.Errorf("conditions: %w", err)
		}
		fmt.Fprintf(stderr, "conditioned on %s\n", cond.Schema.Describe())
	}
	var schema *flow.Condition
	if cond != nil {
		schema = cond.Schema
	}
	cfg = cfg.ForCondition(schema)
	if *resume {
		if _, err := os.Stat(statePath); err == nil {
			saved, err := flow.CheckpointCondition(statePath)
			if err != nil {
				return err
			}
			if err := conditionMismatch(statePath, saved, schema); err != nil {
				return err
			}
		}
	}
	lat, err := flow.EncodeLatents(ctx, ae, train, 128, progress.Bar(stderr, "encoding latents"))
	if err != nil {
		return err
	}
	lat.Cond = cond
	_, err = flow.Train(ctx, cfg, ae, train, lat, flow.TrainOptions{Dir: *out, Resume: *resume, Init: init, Score: validityScore(*name, mol.InferAromaticNH(mol.DefaultInferNH)), Backend: backend,
		LogEvery: *logEvery, MaxDuration: *maxTime,
		Progress: func(p flow.Progress) {
			line := fmt.Sprintf("step %6d/%d  loss %.4f  %.2f steps/s  elapsed %s  eta %s", p.Step, p.Steps, p.Loss, p.StepsPerSecond,
				p.Elapsed.Round(time.Second), p.ETA.Round(time.Second))
			if !math.IsNaN(p.Score) {
				line += fmt.Sprintf("  val valid %.3f (best %.3f)", p.Score, p.BestScore)
			}
			fmt.Fprintln(stdout, line+gpuStats())
		}})
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "interrupted; resume with -resume (state in %s)\n", filepath.Join(*out, flow.StateFile))
	}
	return err
}

// initDenoiser loads the flow at path, bound to the LG-VAE at vaePath (ae
// when empty), for its denoiser's weights.
func initDenoiser(path, vaePath string, ae *vae.Model) (*flow.Model, error) {
	if vaePath != "" {
		var err error
		if ae, err = vae.Load(vaePath); err != nil {
			return nil, err
		}
	}
	m, err := flow.Load(path, ae)
	if err != nil {
		return nil, fmt.Errorf("-init: %w", err)
	}
	return m, nil
}

// selectTraining returns the backend of a training command's -device flag.
// On a GPU it sets TensorFloat-32 as -tf32 asks where the GPU has it,
// reports the device on stderr, and returns a function giving the
// allocator's figures for progress lines (empty on the CPU).
func selectTraining(device string, tf32 bool) (tensor.Backend, func() string, error) {
	be, err := cuda.Select(device)
	if err != nil {
		return nil, nil, err
	}
	gpu, ok := be.(*cuda.Backend)
	if !ok {
		return be, func() string { return "" }, nil
	}
	gpu.SetTF32(tf32 && gpu.SupportsTF32())
	d := gpu.Device()
	fmt.Fprintf(stderr, "cuda: %s (sm_%d%d, %.1f GiB), kernels for %s, TF32 %v\n", d.Name, d.ComputeCapability[0], d.ComputeCapability[1],
		float64(d.TotalMemory)/(1<<30), d.Arch, gpu.TF32())
	return be, func() string { return "  gpu " + gpu.MemStats().String() }, nil
}

func runSample(ctx context.Context, args []string) error {
	fs := newFlagSet("sample", "lgflow sample (-model DIR [-recipe NAME] | -vae V -flow F) -n N [-cond label=NAME|prop=V|NAME=V,... [-guidance W]] [-steps S] [-final-jump T] [-temperature τ] [-seed S] [-edge-rule or|and|mean] [-format g6|nodelink|smiles] -o OUT")
	modelDir := fs.String("model", "", "model bundle: a directory holding vae.safetensors, flow.safetensors, its experts and sampler.json, the sampling recipe, which the flags given override one by one (flow.Open; e.g. pretrained/planar)")
	recipe := fs.String("recipe", "", "with -model: the recipe's alternative to sample with (e.g. constrained, complete; none: flow.Sample's defaults, the recipe ignored)")
	vaePath := fs.String("vae", "", "trained LG-VAE (vae.safetensors); with -model: instead of the bundle's (a decoder fine-tuned since)")
	flowPath := fs.String("flow", "", "trained LG-Flow (flow.safetensors), without a recipe")
	n := fs.Int("n", 256, "number of graphs")
	steps := fs.Int("steps", 0, "integration steps (default: the recipe's, else flow.Sample's)")
	finalJump := fs.Float64("final-jump", 0, "integrate to this time in (0.01, 1], then take the denoiser's one-step estimate of the data (default: flow.Sample's, 0.95; 1: none, the reference sampler)")
	temperature := fs.Float64("temperature", 0, "scale of the initial noise (default 1; below 1: more often valid, less diverse)")
	timeShift := fs.Float64("time-shift", 0, "warp the time grid toward shorter steps near the data, t = s·u/(1+(s-1)·u) (default 1: uniform)")
	seed := fs.Uint64("seed", 0, "seed")
	batch := fs.Int("batch", 256, "graphs integrated together (not given: the recipe's, else 256)")
	edgeRule := fs.String("edge-rule", "", "undirected edges where either direction (or), both (and), or the mean score (mean) predicts one (default: flow.Sample's)")
	edgeMargin := fs.Float64("edge-margin", 0, "logit margin an edge must beat no-edge by (default: the LG-VAE's own, 0 under a planar, forest, dag or tree constraint; 0: the argmax; larger: fewer spurious edges)")
	constraint := fs.String("constraint", "", constraintUsage)
	fill := fs.Float64("fill", 0, fillUsage)
	complete := fs.String("complete", "", completeUsage)
	out := fs.String("o", "-", "output file, written atomically (\"-\": standard output; a .gz name is compressed)")
	format := fs.String("format", "", "output format: g6 (graph6 / digraph6 lines, no labels), nodelink (networkx node-link JSON, one graph per line, with node and edge labels) or smiles (one SMILES per line, \"None\" for a sample that is no valid molecule); default: from the -o name (.jsonl/.json: nodelink, .smi: smiles, .g6/.d6: g6), else the format that fits the model's graphs (a bundle's card says it: smiles for molecules; else nodelink for labelled graphs, g6 for others)")
	molName := fs.String("mol", "moses", "with -format smiles: the molecule encoding the LG-VAE was trained with (moses or guacamol; default: the bundle card's)")
	inferNH := inferNHFlag(fs)
	device := fs.String("device", "cpu", "where the denoiser runs: cpu or cuda (the LG-VAE decodes on the CPU)")
	experts := addExpertFlags(fs, "")
	offsets := addOffsetFlags(fs)
	condText := fs.String("cond", "", "conditional models (trained with -cond): sample every graph under this condition, label=NAME, prop=VALUE (a model of one property), NAME=VALUE, or comma-separated pairs for a model of several (label=planar,edges=170); null: none (default: none, the training graphs' whole distribution)")
	guidance := fs.Float64("guidance", 1, "with -cond: the classifier-free guidance scale w, pred_uncond + w·(pred_cond - pred_uncond) (1: plain conditional sampling; 0: unconditional; > 1: follows the condition more strongly, at twice the cost a step; default: the recipe's guidance_scale, else 1)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	backend, err := cuda.Select(*device)
	if err != nil {
		return err
	}
	switch {
	case *modelDir != "" && *flowPath != "":
		return usagef("-model and -flow exclude each other (a bundle holds its flow)")
	case *modelDir == "" && (*vaePath == "" || *flowPath == ""):
		return usagef("need -model, or -vae and -flow")
	case *modelDir == "" && *recipe != "":
		return usagef("-recipe needs -model")
	}
	expertSpecs, err := experts.parse()
	if err != nil {
		return err
	}
	fmtName, err := sampleFormat(*format, *out)
	if err != nil {
		return usagef("%v", err)
	}
	opts := []flow.SampleOption{flow.WithSeed(*seed), flow.WithProgress(progress.Bar(stderr, "sampling"))}
	if set["recipe"] {
		opts = append(opts, flow.WithRecipe(*recipe))
	}
	if set["batch"] {
		opts = append(opts, flow.WithBatchSize(*batch))
	}
	if set["edge-rule"] {
		if _, err := vae.ParseEdgeRule(*edgeRule); err != nil {
			return usagef("%v", err)
		}
	}
	var decode []vae.DecodeOption
	if *constraint != "" {
		if decode, err = constraintOptions(*constraint); err != nil {
			return err
		}
	}
	fillOpt, err := fillOption(set["fill"], *fill, *constraint, *complete)
	if err != nil {
		return err
	}
	if fillOpt != nil {
		decode = append(decode, fillOpt)
	}
	// Each flag given replaces one setting of the recipe (or of
	// flow.Sample's defaults); -constraint, -fill and -complete add to its
	// decoding.
	opts = append(opts, flow.WithSettings(func(s *flow.Sampler) {
		for name := range set {
			switch name {
			case "steps":
				s.Steps = *steps
			case "final-jump":
				s.FinalJump = *finalJump
			case "temperature":
				s.Temperature = *temperature
			case "time-shift":
				s.TimeShift = *timeShift
			case "step-offset", "step-offset-from", "jump-offset":
				s.Offsets = offsets.offsets()
			case "edge-rule":
				s.EdgeRule = *edgeRule
			case "edge-margin":
				s.EdgeMargin = edgeMargin
			}
		}
		s.Decode = append(s.Decode, decode...)
	}))
	var ae *vae.Model
	if *vaePath != "" {
		if ae, err = vae.Load(*vaePath); err != nil {
			return err
		}
	}
	var m *flow.Model
	if *modelDir != "" {
		m, err = flow.OpenWith(*modelDir, ae)
	} else {
		m, err = flow.Load(*flowPath, ae)
	}
	if err != nil {
		return err
	}
	if *format == "" && !graph.IsNodeLinkPath(*out) && !isSMILESPath(*out) && !isG6Path(*out) {
		fmtName = modelFormat(m)
	}
	var enc *mol.Encoding
	if fmtName == formatSMILES {
		if m.Recipe != nil && m.Recipe.Card.Molecules != "" && !set["mol"] {
			enc, err = cardMolEncoding(m.Recipe.Card.Molecules, m.VAE.Cfg)
		} else {
			enc, err = molEncoding(*molName, m.VAE.Cfg)
		}
		if err != nil {
			return err
		}
	}
	condOpts, err := conditionOptions(m, *recipe, *condText, set["cond"], *guidance, set["guidance"])
	if err != nil {
		return err
	}
	opts = append(opts, condOpts...)
	if err := m.ToBackend(backend); err != nil {
		return err
	}
	if len(expertSpecs) > 0 {
		es, err := loadExperts(expertSpecs, m.VAE, backend)
		if err != nil {
			return err
		}
		opts = append(opts, flow.WithSettings(func(s *flow.Sampler) { s.Experts = es }))
	}
	gs, err := flow.Sample(ctx, m, *n, opts...)
	if err != nil {
		return err
	}
	return writeSamples(*out, gs, fmtName, enc, mol.InferAromaticNH(*inferNH))
}

// modelFormat returns the output format that fits m's graphs: its
// bundle card's (flow.Card.Output), else nodelink for an LG-VAE of
// labelled graphs and g6 (graph6, digraph6 for directed graphs) for
// others.
func modelFormat(m *flow.Model) string {
	if m.Recipe != nil && m.Recipe.Card.Output != "" {
		return m.Recipe.Card.Output
	}
	if m.VAE.Cfg.NodeClasses > 0 || m.VAE.Cfg.EdgeClasses > 1 {
		return formatNodeLink
	}
	return formatG6
}

// cardMolEncoding returns the molecule encoding a bundle's card names,
// checking that the LG-VAE's node and edge classes are among its atom and
// bond types (a model trained by lgflow train on SMILES has the classes
// its molecules have).
func cardMolEncoding(name string, cfg vae.Config) (*mol.Encoding, error) {
	var enc *mol.Encoding
	switch name {
	case "moses":
		enc = mol.MOSES
	case "guacamol":
		enc = mol.GuacaMol
	default:
		return nil, fmt.Errorf("the card's molecule encoding %q is neither moses nor guacamol", name)
	}
	if cfg.Directed || cfg.NodeClasses == 0 || cfg.NodeClasses > enc.NumAtomTypes() || cfg.EdgeClasses > enc.NumBondTypes()-1 {
		return nil, fmt.Errorf("the LG-VAE decodes %d node and %d edge classes (directed %v), not atom and bond types of the %s encoding", cfg.NodeClasses, cfg.EdgeClasses, cfg.Directed, enc.Name)
	}
	return enc, nil
}

// constraintUsage documents -constraint (sample, recon).
const constraintUsage = "decode under constraints, valid by construction there (not the paper's sampler), comma-separated: planar, forest, tree (maximum-confidence spanning trees), dag, connected (components joined by their most confident pairs); planar graphs: planar,connected"

// fillUsage documents -fill (sample, recon).
const fillUsage = "with -constraint: add the missing pairs of edge confidence (logit over no-edge) at least this, most confident first, while the constraint holds (vae.WithEdgeFill; not the paper's sampler; default: none; examples/planar -constrained uses -4 for planar, -8 for planar-128/256/512); with -complete: the same for the valid graphs only (default -4)"

// completeUsage documents -complete (sample, recon).
const completeUsage = "complete the decoded graphs that have these properties (comma-separated: planar, connected, forest, dag; planar graphs: planar,connected): add the missing pairs of edge confidence at least -fill, most confident first, while they still hold; other graphs stay as decoded, so no sample is made valid (vae.WithEdgeCompletion; not the paper's decoder)"

// defaultCompletionBound is -complete's confidence bound when -fill is not
// given: pairs of edge probability down to about 0.018, as the planar fill
// of examples/planar -constrained.
const defaultCompletionBound = -4

// fillOption returns the decode option of -fill and -complete: nil when
// neither was given, vae.WithEdgeFill for -fill with -constraint, and
// vae.WithEdgeCompletion for -complete.
func fillOption(set bool, fill float64, constraint, complete string) (vae.DecodeOption, error) {
	if complete != "" {
		if constraint != "" {
			return nil, usagef("-complete and -constraint exclude each other (a constraint completes every graph with -fill)")
		}
		valid, err := properties(complete, "-complete")
		if err != nil {
			return nil, err
		}
		if !set {
			fill = defaultCompletionBound
		}
		return vae.WithEdgeCompletion(valid, fill), nil
	}
	if !set {
		return nil, nil
	}
	if constraint == "" {
		return nil, usagef("-fill needs -constraint or -complete")
	}
	return vae.WithEdgeFill(fill), nil
}

// properties returns the conjunction of the comma-separated graph
// properties in list (planar, connected, forest, dag); flag names the flag
// in errors.
func properties(list, flagName string) (func(*graph.Graph) bool, error) {
	var tests []func(*graph.Graph) bool
	for _, name := range splitList(list) {
		test, ok := propertyTests[name]
		if !ok {
			return nil, usagef("%s %q: want planar, connected, forest or dag, or a comma-separated list", flagName, name)
		}
		tests = append(tests, test)
	}
	return func(g *graph.Graph) bool {
		for _, test := range tests {
			if !test(g) {
				return false
			}
		}
		return true
	}, nil
}

// propertyTests are the graph properties -complete checks.
var propertyTests = map[string]func(*graph.Graph) bool{
	"planar": planar.IsPlanar, "connected": graph.IsConnected, "forest": graph.IsForest, "dag": graph.IsDAG,
}

// constraintOptions returns the decode options of -constraint's list.
func constraintOptions(list string) ([]vae.DecodeOption, error) {
	var opts []vae.DecodeOption
	var keeps []func(*graph.Graph) bool
	for _, name := range strings.Split(list, ",") {
		switch name = strings.TrimSpace(name); name {
		case "tree":
			opts = append(opts, vae.WithSpanningTree())
		case "connected":
			opts = append(opts, vae.WithConnected())
		default:
			keep, ok := propertyTests[name] // "connected" joins components instead
			if !ok {
				return nil, usagef("-constraint %q: want planar, forest, tree, dag or connected, or a comma-separated list", name)
			}
			keeps = append(keeps, keep)
		}
	}
	if len(keeps) > 0 {
		opts = append(opts, vae.WithEdgeConstraint(func(g *graph.Graph) bool {
			for _, keep := range keeps {
				if !keep(g) {
					return false
				}
			}
			return true
		}))
	}
	return opts, nil
}
