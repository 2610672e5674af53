package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/graph/mol"
	"lgflow/internal/progress"
	"lgflow/tensor"
	"lgflow/vae"
)

func init() {
	register("train-vae", "train an LG-VAE autoencoder on a dataset", runTrainVAE)
	register("recon", "measure an LG-VAE's reconstruction accuracy", runRecon)
}

// loadPrepared loads a dataset split and computes its LG-VAE features,
// reporting progress on standard error. limit > 0 keeps the first limit graphs.
func loadPrepared(ctx context.Context, name, split, dataDir string, seed uint64, limit int, cfg vae.Config) (*vae.Dataset, error) {
	gs, err := datasets.Load(ctx, name, split, datasets.Options{Seed: seed, Dir: dataDir})
	if err != nil {
		return nil, err
	}
	if limit > 0 && limit < len(gs) {
		gs = gs[:limit]
	}
	return vae.Prepare(ctx, gs, cfg, progress.Bar(stderr, fmt.Sprintf("%s %s: eigenpairs", name, split)))
}

// modelFlags registers flags that override a preset's model and training
// configuration; apply copies the ones that were set.
type modelFlags struct {
	fs                             *flag.FlagSet
	k, latent, width, layers, ds   *int
	steps, batch, valEvery, ntrain *int
	ckptEvery                      *int
	lr, minLR, eta, logvar, kl     *float64
	latentNoise                    *float64
	refine, refineWidth, refineHd  *int
	norm                           *string
	flips, scaleEig                *bool
	noiseSpread, symLogits         *bool
	bucket                         *bool
}

func newModelFlags(fs *flag.FlagSet) *modelFlags {
	return &modelFlags{fs: fs,
		k:           fs.Int("k", 0, "override: number of eigenpairs"),
		latent:      fs.Int("latent", 0, "override: latent dimension"),
		width:       fs.Int("width", 0, "override: phi and rho width"),
		layers:      fs.Int("layers", 0, "override: rho layers"),
		ds:          fs.Int("deepset", 0, "override: DeepSet width"),
		steps:       fs.Int("steps", 0, "override: training steps"),
		batch:       fs.Int("batch", 0, "override: batch size"),
		valEvery:    fs.Int("val-every", 0, "override: steps between validations"),
		ckptEvery:   fs.Int("checkpoint-every", 0, "override: steps between resumable checkpoints (state.safetensors)"),
		ntrain:      fs.Int("ntrain", 0, "use only the first N training graphs (0: all)"),
		lr:          fs.Float64("lr", 0, "override: peak learning rate"),
		minLR:       fs.Float64("min-lr", 0, "override: final learning rate"),
		eta:         fs.Float64("eta", -1, "override: orbit perturbation eta"),
		logvar:      fs.Float64("logvar-init", 0, "override: initial bias of the log-variance head (the cpu presets use -6, posterior std 0.05; the reference 0)"),
		kl:          fs.Float64("kl", 0, "override: KL weight"),
		latentNoise: fs.Float64("latent-noise", 0, "override: decoder noise relative to the latent spread (robustness for the flow)"),
		refine:      fs.Int("refine", 0, "override: blocks of the decoder's latent refinement network (0: none, the reference)"),
		refineWidth: fs.Int("refine-width", 64, "width of the latent refinement network (with -refine)"),
		refineHd:    fs.Int("refine-heads", 4, "attention heads of the latent refinement network (with -refine)"),
		noiseSpread: fs.Bool("latent-noise-spread", false, "override: draw each graph's decoder noise level from [0, latent-noise]"),
		symLogits:   fs.Bool("symmetric-logits", false, "override: average the (i, j) and (j, i) edge logits of undirected graphs"),
		norm:        fs.String("norm", "", "override: layer, graph, batch or none"),
		flips:       fs.Bool("sign-flips", false, "override: random eigenvector sign flips in training"),
		scaleEig:    fs.Bool("scale-eigvecs", false, "override: scale eigenvectors by sqrt(n)"),
		bucket:      fs.Bool("bucket-by-size", false, "override: batches of graphs of similar sizes (less padding; for datasets of very different sizes such as ego and tpu)"),
	}
}

func (f *modelFlags) apply(p *vae.Preset) {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	c, t := &p.Model, &p.Train
	for name, dst := range map[string]*int{"k": &c.K, "latent": &c.Latent, "layers": &c.Layers, "deepset": &c.DeepSet,
		"steps": &t.Steps, "batch": &t.BatchSize, "val-every": &t.ValEvery, "checkpoint-every": &t.CheckpointEvery} {
		if set[name] {
			*dst = *map[string]*int{"k": f.k, "latent": f.latent, "layers": f.layers, "deepset": f.ds,
				"steps": f.steps, "batch": f.batch, "val-every": f.valEvery, "checkpoint-every": f.ckptEvery}[name]
		}
	}
	if set["width"] {
		c.PhiWidth, c.Width = *f.width, *f.width
	}
	if set["lr"] {
		t.LR = *f.lr
	}
	if set["min-lr"] {
		t.MinLR = *f.minLR
	}
	if set["eta"] {
		c.Eta = *f.eta
	}
	if set["latent-noise"] {
		c.LatentNoise = *f.latentNoise
	}
	if set["kl"] {
		c.KLWeight = *f.kl
	}
	if set["refine"] {
		c.Refine, c.RefineWidth, c.RefineHeads = *f.refine, *f.refineWidth, *f.refineHd
	}
	if set["latent-noise-spread"] {
		c.LatentNoiseSpread = *f.noiseSpread
	}
	if set["symmetric-logits"] {
		c.SymmetricLogits = *f.symLogits
	}
	if set["logvar-init"] {
		c.LogVarInit = *f.logvar
	}
	if set["norm"] {
		c.Norm = vae.Norm(*f.norm)
	}
	if set["sign-flips"] {
		c.SignFlips = *f.flips
	}
	if set["scale-eigvecs"] {
		c.ScaleEigvecs = *f.scaleEig
	}
	if set["bucket-by-size"] {
		t.BucketBySize = *f.bucket
	}
}

func runTrainVAE(ctx context.Context, args []string) error {
	fs := newFlagSet("train-vae", "lgflow train-vae -dataset D [-preset cpu|paper] -out DIR [-resume] [-seed S] [overrides]")
	name := fs.String("dataset", "", "dataset (planar, tree, price, ...)")
	preset := fs.String("preset", "cpu", "preset: cpu or paper")
	out := fs.String("out", "", "output directory (vae.safetensors, state.safetensors)")
	resume := fs.Bool("resume", false, "continue from OUT/state.safetensors")
	seed := fs.Uint64("seed", 0, "seed of initialisation and batching")
	dataSeed := fs.Uint64("data-seed", 0, "seed of the synthetic dataset")
	extraSeeds := fs.String("extra-train-seeds", "", "synthetic datasets: also train on the -train-split graphs of these data seeds (comma-separated), more graphs from the same distribution; validation stays on -data-seed's")
	dataDir := fs.String("data", "", "data directory (default ../shared/data)")
	maxTime := fs.Duration("max-time", 0, "stop (resumably) after this long, e.g. 90m")
	logEvery := fs.Int("log-every", 50, "steps between progress lines")
	trainSplit := fs.String("train-split", "train", "split to train on (e.g. val for tpu, whose train split is not distributed)")
	valSplit := fs.String("val-split", "val", "split to validate on")
	initPath := fs.String("init", "", "start from this LG-VAE's weights (fine-tuning; same architecture)")
	freeze := fs.Bool("freeze-encoder", false, "train the decoder only (with -init or -resume): the latent space, and flows trained in it, stay valid")
	valNoise := fs.Float64("val-noise", 0, "validate with this much latent noise (x latent std), keeping the most tolerant decoder")
	device := fs.String("device", "cpu", "where the training steps run: cpu or cuda (an NVIDIA GPU; layer and graph norms)")
	tf32 := fs.Bool("tf32", true, "with -device cuda on compute capability 8.0 or newer: float32 matrix products in TensorFloat-32 (-tf32=false: exact float32)")
	perturbFlow := fs.String("perturb-flow", "", "with -freeze-encoder: train the decoder on latents this LG-Flow's sampler produces from partway (flow.safetensors trained in the -init model's latent space)")
	perturbMin := fs.Float64("perturb-tmin", 0.8, "with -perturb-flow: earliest time the latents are noised to")
	perturbMax := fs.Float64("perturb-tmax", 0.98, "with -perturb-flow: latest time the latents are noised to")
	perturbSteps := fs.Int("perturb-steps", 4, "with -perturb-flow: sampler steps from that time to the data")
	perturbJump := fs.Float64("perturb-jump", 0.95, "with -perturb-flow: the sampler's final jump time (0: none)")
	perturbCache := fs.Int("perturb-variants", 0, "with -perturb-flow: perturb each graph at most this many times and reuse the results (0: afresh at every visit)")
	mf := newModelFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" || *out == "" {
		return usagef("need -dataset and -out")
	}
	backend, gpuStats, err := selectTraining(*device, *tf32)
	if err != nil {
		return err
	}
	p, err := vae.PresetFor(*name, *preset)
	if err != nil {
		return usagef("%v", err)
	}
	mf.apply(&p)
	p.Train.Seed = *seed
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// A resumed run continues with its checkpoint's configuration; only
	// the flags given override it.
	statePath := filepath.Join(*out, vae.StateFile)
	p, err = resumeConfig(p, statePath, *resume, vae.CheckpointConfig, func(saved vae.Preset) error {
		if set["preset"] && p.Model != saved.Model {
			return usagef("-preset %s (with the model flags given) is another model than the one %s was trained with: %s", *preset, statePath,
				strings.Join(configDiff(saved.Model, p.Model), ", "))
		}
		return nil
	}, func(r *vae.Preset) {
		mf.apply(r)
		if set["seed"] {
			r.Train.Seed = *seed
		}
	})
	if err != nil {
		return err
	}
	if err := p.Model.Validate(); err != nil {
		return usagef("%v", err)
	}
	seeds, err := parseSeeds(*extraSeeds, *dataSeed)
	if err != nil {
		return usagef("-extra-train-seeds: %v", err)
	}
	if len(seeds) > 0 && !datasets.Synthetic(*name) {
		return usagef("-extra-train-seeds is for synthetic datasets (%s is not)", *name)
	}
	train, err := loadPrepared(ctx, *name, *trainSplit, *dataDir, *dataSeed, *mf.ntrain, p.Model)
	if err != nil {
		return err
	}
	for _, s := range seeds {
		more, err := loadPrepared(ctx, *name, *trainSplit, *dataDir, s, *mf.ntrain, p.Model)
		if err != nil {
			return err
		}
		train.Graphs = append(train.Graphs, more.Graphs...)
		train.Features = append(train.Features, more.Features...)
	}
	val, err := loadPrepared(ctx, *name, *valSplit, *dataDir, *dataSeed, 0, p.Model)
	if err != nil {
		return err
	}
	var init *vae.Model
	if *initPath != "" {
		if init, err = vae.Load(*initPath); err != nil {
			return err
		}
	}
	var perturb vae.LatentPerturbation
	if *perturbFlow != "" {
		if init == nil || !*freeze {
			return usagef("-perturb-flow needs -init and -freeze-encoder")
		}
		fm, err := flow.Load(*perturbFlow, init)
		if err != nil {
			return err
		}
		s := flow.Sampler{FinalJump: 1} // no jump
		if *perturbJump > 0 {
			s.FinalJump = *perturbJump
		}
		if perturb, err = fm.EndpointPerturbation(*perturbMin, *perturbMax, *perturbSteps, s); err != nil {
			return usagef("%v", err)
		}
		if *perturbCache > 0 {
			perturb = vae.CachePerturbation(perturb, *perturbCache)
		}
	}
	cfgJSON, _ := json.Marshal(p)
	fmt.Fprintf(stderr, "train-vae %s: %d train, %d val graphs; %s\n", *name, len(train.Graphs), len(val.Graphs), cfgJSON)
	_, err = vae.Train(ctx, p.Model, p.Train, train, val, vae.TrainOptions{Dir: *out, Resume: *resume, Init: init, LogEvery: *logEvery, MaxDuration: *maxTime,
		FreezeEncoder: *freeze, ValNoise: *valNoise, Perturb: perturb, Backend: backend,
		Progress: func(pr vae.Progress) {
			line := fmt.Sprintf("step %6d/%d  loss %.4f (edge %.4f node %.4f kl %.1f)  lr %.2e  %.2f steps/s  elapsed %s  eta %s",
				pr.Step, pr.Steps, pr.Loss, pr.Edge, pr.Node, pr.KL, pr.LR, pr.StepsPerSecond, pr.Elapsed.Round(time.Second), pr.ETA.Round(time.Second))
			if pr.Val != nil {
				line += fmt.Sprintf("  val edge %.4f sample %.4f decoded %.4f (best %.4f)", pr.Val.Edge(), pr.Val.Sample(), pr.Val.Decoded(), pr.BestSample)
			}
			fmt.Fprintln(stdout, line+gpuStats())
		}})
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "interrupted; resume with -resume (state in %s)\n", filepath.Join(*out, vae.StateFile))
	}
	return err
}

// parseSeeds parses a comma-separated list of data seeds, refusing
// duplicates and the run's own data seed (whose graphs are already there).
func parseSeeds(list string, own uint64) ([]uint64, error) {
	var out []uint64
	for _, f := range splitList(list) {
		s, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed", f)
		}
		switch {
		case s == own:
			return nil, fmt.Errorf("seed %d is the run's -data-seed, whose graphs are already there", s)
		case slices.Contains(out, s):
			return nil, fmt.Errorf("seed %d given twice", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// runRecon is lgflow recon: it encodes a dataset split with an LG-VAE,
// perturbs the latents as asked, decodes them and prints the
// reconstruction accuracies (and the decoded graphs' validity).
func runRecon(ctx context.Context, args []string) error {
	r, err := parseRecon(args)
	if err != nil {
		return err
	}
	m, err := vae.Load(*r.path)
	if err != nil {
		return err
	}
	var enc *mol.Encoding
	if *r.outPath != "" && r.format == formatSMILES {
		if enc, err = molEncoding(*r.molName, m.Cfg); err != nil {
			return err
		}
	}
	d, err := loadPrepared(ctx, *r.name, *r.split, *r.dataDir, *r.dataSeed, 0, m.Cfg)
	if err != nil {
		return err
	}
	// One encoding and one decoding give the accuracies and, for datasets
	// with a validity notion, the valid fraction under the edge rule.
	lat, scale, err := r.latents(ctx, m, d)
	if err != nil {
		return err
	}
	acc, gs, err := vae.ReconstructLatents(ctx, m, d, *r.batch, lat, r.decodeOpts...)
	if err != nil {
		return err
	}
	valid := -1.0
	if score := validityScore(*r.name, mol.InferAromaticNH(*r.inferNH)); score != nil {
		valid = score(gs)
	}
	if *r.asJSON {
		if err := json.NewEncoder(stdout).Encode(r.figures(acc, scale, valid)); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout, r.summary(acc, scale, valid))
	}
	return writeRecon(*r.outPath, gs, r.format, enc, mol.InferAromaticNH(*r.inferNH))
}

// reconRun is one recon command: its flags and what parseRecon derives
// from them.
type reconRun struct {
	// The flags: the model and data,
	path, name, split *string
	dataSeed          *uint64
	dataDir           *string
	asJSON            *bool
	batch             *int
	// the latents' perturbation,
	noise     *float64
	seed      *uint64
	flowPath  *string
	from      *float64
	flowSteps *int
	experts   expertFlags
	offsets   offsetFlags
	// the decoding,
	edgeRule   *string
	edgeMargin *float64
	constraint *string
	fill       *float64
	complete   *string
	// and the decoded graphs' file.
	outPath, formatName, molName *string
	inferNH                      *int

	format      string // the -o file's format (sampleFormat)
	rule        vae.EdgeRule
	decodeOpts  []vae.DecodeOption
	fillSet     bool // -fill was given
	expertSpecs []expertSpec
}

// parseRecon declares recon's flags, parses args and checks them.
func parseRecon(args []string) (*reconRun, error) {
	fs := newFlagSet("recon", "lgflow recon -vae FILE -dataset D [-split test] [-json]")
	r := &reconRun{}
	r.path = fs.String("vae", "", "LG-VAE checkpoint (vae.safetensors)")
	r.name = fs.String("dataset", "", "dataset")
	r.split = fs.String("split", "test", "split")
	r.dataSeed = fs.Uint64("data-seed", 0, "seed of the synthetic dataset")
	r.dataDir = fs.String("data", "", "data directory (default ../shared/data)")
	r.asJSON = fs.Bool("json", false, "print JSON")
	r.batch = fs.Int("batch", 64, "batch size")
	r.noise = fs.Float64("noise", 0, "add Gaussian noise of this many latent standard deviations before decoding (decoder robustness)")
	r.seed = fs.Uint64("seed", 0, "seed of the -noise draws and of the -flow round trip's noise")
	r.flowPath = fs.String("flow", "", "round trip through this LG-Flow (in the LG-VAE's latent space) before decoding: the latents noised to time -from and brought back by the sampler (flow.Model.EndpointPerturbation), how precisely the flow's data end restores real graphs")
	r.from = fs.Float64("from", 0.9, "with -flow: the time the latents are noised to, in (0, 1)")
	r.flowSteps = fs.Int("flow-steps", 0, "with -flow: sampler steps from -from to the data (default: as many as the sampler's 100-step grid has there, at least 1), the last one the final jump from 0.95 when -from is before it")
	r.experts = addExpertFlags(fs, "with -flow: ")
	r.offsets = addOffsetFlags(fs)
	r.edgeRule = fs.String("edge-rule", "or", "decoding of undirected edges for the decoded-exact and validity figures: or, and, mean")
	r.edgeMargin = fs.Float64("edge-margin", 0, "logit margin an edge must beat no-edge by, for the decoded-exact and validity figures (default: the LG-VAE's own; 0: the argmax)")
	r.constraint = fs.String("constraint", "", "for the decoded-exact and validity figures: "+constraintUsage)
	r.fill = fs.Float64("fill", 0, fillUsage)
	r.complete = fs.String("complete", "", "for the decoded-exact and validity figures: "+completeUsage)
	r.outPath = fs.String("o", "", "also write the decoded graphs, in the split's order, to this file (written atomically; a .gz name is compressed)")
	r.formatName = fs.String("format", "", "with -o: g6, nodelink or smiles (default: from the -o name, as lgflow sample)")
	r.molName = fs.String("mol", "moses", "with -format smiles: the molecule encoding the LG-VAE was trained with (moses or guacamol)")
	r.inferNH = inferNHFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if err := r.check(fs); err != nil {
		return nil, err
	}
	return r, nil
}

// check checks the parsed flags of fs, in the order their errors are
// reported, and derives the output format, edge rule, decode options and
// expert denoisers from them.
func (r *reconRun) check(fs *flag.FlagSet) error {
	var err error
	if r.format, err = sampleFormat(*r.formatName, *r.outPath); err != nil {
		return usagef("%v", err)
	}
	if *r.outPath == "" && *r.formatName != "" {
		return usagef("-format needs -o")
	}
	if *r.outPath == "-" {
		return usagef("-o needs a file: standard output carries the figures")
	}
	if err := r.decodeOptions(fs); err != nil {
		return err
	}
	if *r.path == "" || *r.name == "" {
		return usagef("need -vae and -dataset")
	}
	if *r.noise < 0 {
		return usagef("-noise must be >= 0")
	}
	if r.expertSpecs, err = r.experts.parse(); err != nil {
		return err
	}
	if *r.flowPath == "" && len(r.expertSpecs) > 0 {
		return usagef("-expert needs -flow")
	}
	if *r.flowPath != "" && *r.noise > 0 {
		return usagef("-noise and -flow are two perturbations; give one")
	}
	return nil
}

// decodeOptions sets the edge rule and the decode options of the
// decoded-exact and validity figures from the flags of fs: the rule, the
// constraint, the margin (when given) and the fill.
func (r *reconRun) decodeOptions(fs *flag.FlagSet) error {
	var err error
	if r.rule, err = vae.ParseEdgeRule(*r.edgeRule); err != nil {
		return usagef("%v", err)
	}
	r.decodeOpts = []vae.DecodeOption{vae.WithEdgeRule(r.rule)}
	if *r.constraint != "" {
		o, err := constraintOptions(*r.constraint)
		if err != nil {
			return err
		}
		r.decodeOpts = append(r.decodeOpts, o...)
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "edge-margin":
			r.decodeOpts = append(r.decodeOpts, vae.WithEdgeMargin(*r.edgeMargin))
		case "fill":
			r.fillSet = true
		}
	})
	fillOpt, err := fillOption(r.fillSet, *r.fill, *r.constraint, *r.complete)
	if err != nil {
		return err
	}
	if fillOpt != nil {
		r.decodeOpts = append(r.decodeOpts, fillOpt)
	}
	return nil
}

// latents encodes d's graphs with m and perturbs their latents as the
// flags say: Gaussian noise (-noise, in units of scale, the latents'
// standard deviation) or a round trip through a flow (-flow).
func (r *reconRun) latents(ctx context.Context, m *vae.Model, d *vae.Dataset) (lat []*tensor.Tensor, scale float64, err error) {
	if lat, err = m.EncodeGraphs(ctx, d.Graphs, *r.batch); err != nil {
		return nil, 0, err
	}
	if scale, err = vae.AddLatentNoise(lat, *r.noise, *r.seed); err != nil {
		return nil, 0, err
	}
	if *r.flowPath != "" {
		if lat, err = flowRoundTrip(ctx, m, lat, *r.flowPath, *r.from, *r.flowSteps, r.expertSpecs, r.offsets.offsets(), *r.seed, *r.batch); err != nil {
			return nil, 0, err
		}
	}
	return lat, scale, nil
}

// figures returns the accuracies acc, the valid fraction (when valid >= 0)
// and the settings they were measured with, as -json prints them.
func (r *reconRun) figures(acc vae.Accuracy, scale, valid float64) map[string]any {
	out := map[string]any{"edge_acc": acc.Edge(), "node_acc": acc.Node(), "sample_acc": acc.Sample(),
		"decoded_acc": acc.Decoded(), "graphs": acc.Graphs}
	if *r.noise > 0 {
		out["noise"], out["latent_std"] = *r.noise, scale
	}
	if *r.flowPath != "" {
		out["flow"], out["from"] = *r.flowPath, *r.from
		if len(r.expertSpecs) > 0 {
			out["experts"] = describeExperts(r.expertSpecs)
		}
		if off := r.offsets.offsets(); !off.Zero() {
			out["time_offsets"] = off
		}
	}
	if valid >= 0 {
		out["valid"], out["edge_rule"] = valid, r.rule.String()
	}
	if *r.constraint != "" {
		out["constraint"] = *r.constraint
	}
	if *r.complete != "" {
		out["complete"] = *r.complete
	}
	if r.fillSet && !math.IsInf(*r.fill, 1) {
		out["fill"] = *r.fill
	}
	return out
}

// summary returns the line recon prints without -json: the accuracies
// acc, the valid fraction (when valid >= 0) and how the latents were
// perturbed and decoded.
func (r *reconRun) summary(acc vae.Accuracy, scale, valid float64) string {
	how := ""
	if *r.noise > 0 {
		how = fmt.Sprintf(" with noise %g x latent std %.4g", *r.noise, scale)
	}
	if *r.flowPath != "" {
		how = fmt.Sprintf(" through %s from time %g", *r.flowPath, *r.from)
		if len(r.expertSpecs) > 0 {
			how += " (experts " + describeExperts(r.expertSpecs) + ")"
		}
		if off := r.offsets.offsets(); !off.Zero() {
			how += fmt.Sprintf(" (time offsets %+v)", off)
		}
	}
	if *r.constraint != "" {
		how += ", decoded under the " + *r.constraint + " constraint"
	}
	if r.fillSet {
		how += fmt.Sprintf(", edge fill from confidence %g", *r.fill)
	}
	s := fmt.Sprintf("%s %s (%d graphs)%s: edge accuracy %.4f, node accuracy %.4f, sample accuracy %.4f (decoded graph exact: %.4f)",
		*r.name, *r.split, acc.Graphs, how, acc.Edge(), acc.Node(), acc.Sample(), acc.Decoded())
	if valid >= 0 {
		s += fmt.Sprintf("; valid decoded graphs (edge rule %s): %.4f", r.rule, valid)
	}
	return s
}

// writeRecon writes recon's decoded graphs to path in format (nothing when
// path is empty).
func writeRecon(path string, gs []*graph.Graph, format string, enc *mol.Encoding, opts ...mol.DecodeOption) error {
	if path == "" {
		return nil
	}
	return writeSamples(path, gs, format, enc, opts...)
}

// flowRoundTrip noises per-graph latents to time from and brings them back
// with the sampler of the flow at flowPath (and the expert denoisers, if
// any): flow.Model.EndpointPerturbation, batch
// graphs at a time, padded to the batch's largest graph. steps 0 takes as
// many steps as the sampler's default 100-step grid has after from.
func flowRoundTrip(ctx context.Context, ae *vae.Model, lat []*tensor.Tensor, flowPath string, from float64, steps int, experts []expertSpec, offsets flow.TimeOffsets, seed uint64, batch int) ([]*tensor.Tensor, error) {
	fm, err := flow.Load(flowPath, ae)
	if err != nil {
		return nil, err
	}
	if steps < 0 {
		return nil, usagef("-flow-steps must be >= 0")
	}
	if steps == 0 {
		steps = max(1, int(math.Round(100*(1-from))))
	}
	es, err := loadExperts(experts, ae, nil)
	if err != nil {
		return nil, err
	}
	perturb, err := fm.EndpointPerturbation(from, from, steps, flow.Sampler{FinalJump: flow.DefaultFinalJump, Offsets: offsets, Experts: es})
	if err != nil {
		return nil, err
	}
	if batch <= 0 {
		batch = 64
	}
	r := tensor.NewRNG(seed)
	out := make([]*tensor.Tensor, 0, len(lat))
	for lo := 0; lo < len(lat); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chunk := lat[lo:min(lo+batch, len(lat))]
		sizes := make([]int, len(chunk))
		N := 0
		for i, z := range chunk {
			sizes[i] = z.Dim(0)
			N = max(N, sizes[i])
		}
		d := chunk[0].Dim(1)
		z := tensor.New(tensor.Float32, len(chunk), N, d)
		for i, zi := range chunk {
			tensor.Copy(z.Slice(0, i, i+1).Reshape(N, d).Slice(0, 0, sizes[i]), zi)
		}
		back, err := perturb(z, sizes, r)
		if err != nil {
			return nil, err
		}
		back = back.To(tensor.Float32)
		for i, s := range sizes {
			out = append(out, back.Slice(0, i, i+1).Reshape(N, d).Slice(0, 0, s).Clone())
		}
	}
	return out, nil
}
