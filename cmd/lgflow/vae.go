package main

import (
	"cmp"
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
	"lgflow/internal/bundle"
	"lgflow/internal/cli"
	"lgflow/internal/progress"
	"lgflow/tensor"
	"lgflow/vae"
)

func init() {
	register("train-vae", "train an LG-VAE autoencoder on a dataset", runTrainVAE)
	register("recon", "measure an LG-VAE's reconstruction accuracy", runRecon)
}

// loadPrepared loads a dataset split and computes its LG-VAE features,
// reporting progress on standard error. limit > 0 keeps the first limit
// graphs.
func loadPrepared(ctx context.Context, data *cli.Data, split string, limit int, cfg vae.Config) (*vae.Dataset, error) {
	gs, err := datasets.Load(ctx, data.Dataset, split, data.Options())
	if err != nil {
		return nil, err
	}
	if limit > 0 && limit < len(gs) {
		gs = gs[:limit]
	}
	return vae.Prepare(ctx, gs, cfg, progress.Bar(stderr, fmt.Sprintf("%s %s: eigenpairs", data.Dataset, split)))
}

// addTrainSplit registers -train-split, the split the training commands
// train on.
func addTrainSplit(fs *flag.FlagSet) *string {
	return fs.String("train-split", "train", "split to train on (e.g. val for tpu, whose train split is not distributed)")
}

// addMaxTime registers -max-time, the training commands' time limit.
func addMaxTime(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("max-time", 0, "stop after this long (after a checkpoint; the same command continues), e.g. 90m")
}

// vaeRun holds the settings of a train-vae run that -config sets besides
// the LG-VAE's configuration.
type vaeRun struct {
	// LogEvery is the number of steps between progress lines.
	LogEvery int `json:"log_every"`
	// FreezeEncoder trains the decoder only (with -init or a state): the
	// latent space, and flows trained in it, stay valid.
	FreezeEncoder bool `json:"freeze_encoder"`
	// ValNoise validates with this much latent noise (× the latents'
	// spread), keeping the most tolerant decoder.
	ValNoise float64 `json:"val_noise"`
	// Perturb trains a frozen-encoder decoder on the latents an LG-Flow's
	// sampler brings back from partway (vae.TrainOptions.Perturb).
	Perturb perturbRun `json:"perturb"`
}

// perturbRun is -config's perturb.*: flow.Model.EndpointPerturbation's
// arguments.
type perturbRun struct {
	// Flow is the LG-Flow (in the -init model's latent space); "": none.
	Flow string `json:"flow"`
	// TMin and TMax bound the time the latents are noised to; Steps are
	// the sampler's steps from there to the data; Jump its final jump
	// (0: none).
	TMin  float64 `json:"tmin"`
	TMax  float64 `json:"tmax"`
	Steps int     `json:"steps"`
	Jump  float64 `json:"jump"`
	// Variants perturbs each graph at most this many times and reuses
	// them (0: afresh at every visit).
	Variants int `json:"variants"`
}

// defaultVAERun is a train-vae run's settings before -config.
var defaultVAERun = vaeRun{LogEvery: 50, Perturb: perturbRun{TMin: 0.8, TMax: 0.98, Steps: 4, Jump: 0.95}}

// trainVAEUsage is the synopsis of lgflow train-vae.
const trainVAEUsage = "lgflow train-vae -dataset D [-preset cpu|paper] -out DIR [-init V] [-config KEY=VALUE,...]"

func runTrainVAE(ctx context.Context, args []string) (err error) {
	fs := newFlagSet("train-vae", trainVAEUsage)
	data := cli.AddData(fs, true)
	trainSplit := addTrainSplit(fs)
	valSplit := fs.String("val-split", "val", "split to validate on")
	extraSeeds := fs.String("extra-train-seeds", "", "synthetic datasets: also train on the -train-split graphs of these data seeds (comma-separated), more graphs from the same distribution; validation stays on -data-seed's")
	maxTrain := cli.AddMaxTrain(fs)
	preset := fs.String("preset", "cpu", "preset: cpu or paper")
	out := fs.String("out", "", "output directory (vae.safetensors; state.safetensors, which a run into the same directory continues)")
	initPath := fs.String("init", "", "start from this LG-VAE's weights (fine-tuning; same architecture)")
	maxTime := addMaxTime(fs)
	device := cli.AddDevice(fs)
	config := cli.AddConfig(fs, "the LG-VAE (vae.Config, vae.TrainConfig) and of the run (log_every: steps between progress lines, 50; freeze_encoder: train the decoder only; val_noise: validate under this latent noise; perturb.flow, perturb.tmin, tmax, steps, jump, variants: train a frozen-encoder decoder on that flow's round trips)",
		nil, &vae.Config{}, &vae.TrainConfig{}, &vaeRun{})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if data.Dataset == "" || *out == "" {
		return usagef("need -dataset and -out")
	}
	comm, backend, done, err := openTraining(device)
	if err != nil {
		return err
	}
	defer done(&err)
	stderr := rankOut(comm, stderr)
	run := defaultVAERun
	config.Apply(nil, nil, &run)
	p, err := vaePreset(*preset, visited(fs)["preset"], data.Dataset, config, filepath.Join(*out, vae.StateFile))
	if err != nil {
		return err
	}
	train, val, err := vaeData(ctx, data, *trainSplit, *valSplit, *extraSeeds, *maxTrain, p.Model)
	if err != nil {
		return err
	}
	opts := vae.TrainOptions{Dir: *out, Resume: true, LogEvery: run.LogEvery, MaxDuration: *maxTime,
		FreezeEncoder: run.FreezeEncoder, ValNoise: run.ValNoise, Backend: backend, Comm: comm,
		Progress: func(pr vae.Progress) {
			line := fmt.Sprintf("step %6d/%d  loss %.4f (edge %.4f node %.4f kl %.1f)  lr %.2e  %.2f steps/s  elapsed %s  eta %s",
				pr.Step, pr.Steps, pr.Loss, pr.Edge, pr.Node, pr.KL, pr.LR, pr.StepsPerSecond, pr.Elapsed.Round(time.Second), pr.ETA.Round(time.Second))
			if pr.Val != nil {
				line += fmt.Sprintf("  val edge %.4f sample %.4f decoded %.4f (best %.4f)", pr.Val.Edge(), pr.Val.Sample(), pr.Val.Decoded(), pr.BestSample)
			}
			fmt.Fprintln(stdout, line+device.Stats())
		}}
	if *initPath != "" {
		if opts.Init, err = vae.Load(*initPath); err != nil {
			return err
		}
	}
	if opts.Perturb, err = run.Perturb.perturbation(opts.Init, run.FreezeEncoder); err != nil {
		return err
	}
	cfgJSON, _ := json.Marshal(p)
	fmt.Fprintf(stderr, "train-vae %s: %d train, %d val graphs; %s\n", data.Dataset, len(train.Graphs), len(val.Graphs), cfgJSON)
	if comm.Size() > 1 {
		fmt.Fprintf(stderr, "data parallel on %d ranks: a global batch of %d graphs\n", comm.Size(), p.Train.BatchSize)
	}
	_, err = vae.Train(ctx, p.Model, p.Train, train, val, opts)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "interrupted; run the same command again to continue (state in %s)\n", filepath.Join(*out, vae.StateFile))
	}
	return err
}

// vaePreset returns the model and training recipe a train-vae run trains
// with: the preset for the dataset with -config's settings, or,
// continuing the state at statePath, the state's with those given; an
// explicit -preset (presetSet) of another model than the state's is
// refused.
func vaePreset(preset string, presetSet bool, dataset string, config *cli.Settings, statePath string) (vae.Preset, error) {
	p, err := vae.PresetFor(dataset, preset)
	if err != nil {
		return p, usagef("%v", err)
	}
	override := func(r *vae.Preset) { config.Apply(&r.Model, &r.Train) }
	override(&p)
	// A resumed run continues with its checkpoint's configuration; only
	// the settings given override it.
	p, err = resumeConfig(p, statePath, vae.CheckpointConfig, func(saved vae.Preset) error {
		if presetSet && p.Model != saved.Model {
			return usagef("-preset %s (with the model settings given) is another model than the one %s was trained with: %s", preset, statePath,
				strings.Join(configDiff(saved.Model, p.Model), ", "))
		}
		return nil
	}, override)
	if err != nil {
		return p, err
	}
	if err := p.Model.Validate(); err != nil {
		return p, usagef("%v", err)
	}
	return p, nil
}

// vaeData loads train-vae's training graphs (those of the extra data
// seeds too, the first maxTrain of each) and validation graphs, with
// their features for an LG-VAE of configuration cfg.
func vaeData(ctx context.Context, data *cli.Data, trainSplit, valSplit, extraSeeds string, maxTrain int, cfg vae.Config) (train, val *vae.Dataset, err error) {
	seeds, err := parseSeeds(extraSeeds, data.Seed)
	if err != nil {
		return nil, nil, usagef("-extra-train-seeds: %v", err)
	}
	if len(seeds) > 0 && !datasets.Synthetic(data.Dataset) {
		return nil, nil, usagef("-extra-train-seeds is for synthetic datasets (%s is not)", data.Dataset)
	}
	if train, err = loadPrepared(ctx, data, trainSplit, maxTrain, cfg); err != nil {
		return nil, nil, err
	}
	for _, s := range seeds {
		d := *data
		d.Seed = s
		more, err := loadPrepared(ctx, &d, trainSplit, maxTrain, cfg)
		if err != nil {
			return nil, nil, err
		}
		train.Graphs = append(train.Graphs, more.Graphs...)
		train.Features = append(train.Features, more.Features...)
	}
	if val, err = loadPrepared(ctx, data, valSplit, 0, cfg); err != nil {
		return nil, nil, err
	}
	return train, val, nil
}

// perturbation returns the latent perturbation of -config perturb.* (nil
// without perturb.flow), for a frozen-encoder fine-tune of init.
func (r perturbRun) perturbation(init *vae.Model, freeze bool) (vae.LatentPerturbation, error) {
	if r.Flow == "" {
		return nil, nil
	}
	if init == nil || !freeze {
		return nil, usagef("-config perturb.flow needs -init and freeze_encoder=true")
	}
	fm, err := flow.Load(r.Flow, init)
	if err != nil {
		return nil, err
	}
	s := flow.Sampler{FinalJump: 1} // no jump
	if r.Jump > 0 {
		s.FinalJump = r.Jump
	}
	perturb, err := fm.EndpointPerturbation(r.TMin, r.TMax, r.Steps, s)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if r.Variants > 0 {
		perturb = vae.CachePerturbation(perturb, r.Variants)
	}
	return perturb, nil
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
	if *r.output.path != "" && r.output.resolved == formatSMILES {
		if enc, err = molEncoding(m.Cfg); err != nil {
			return err
		}
	}
	d, err := r.load(ctx, m.Cfg)
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
	if score, err := r.validity(); err != nil {
		return err
	} else if score != nil {
		valid = score(gs)
	}
	edges := [2]float64{meanEdges(d.Graphs), meanEdges(gs)}
	if *r.asJSON {
		if err := json.NewEncoder(stdout).Encode(r.figures(acc, scale, valid, edges)); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout, r.summary(acc, scale, valid, edges))
	}
	if *r.output.path == "" {
		return nil
	}
	return r.output.write(gs, enc)
}

// reconRun is one recon command: its flags and what parseRecon derives
// from them.
type reconRun struct {
	// The flags: the model and data,
	path      *string
	data      *cli.Data
	split     *string
	graphs    *string
	validRule *string
	asJSON    *bool
	batch     *int
	// the latents' perturbation,
	noise    *float64
	seed     *uint64
	flowPath *string
	from     *float64
	// the decoding and the round trip's sampler,
	sampler *cli.Sampler
	// and the decoded graphs' file.
	output *outputFlags

	s          flow.Sampler // the -sampler settings
	decodeOpts []vae.DecodeOption
}

// parseRecon declares recon's flags, parses args and checks them.
func parseRecon(args []string) (*reconRun, error) {
	fs := newFlagSet("recon", "lgflow recon -vae FILE -dataset D [-split test] [-noise S | -flow F -from T] [-sampler KEY=VALUE,...] [-json]")
	r := &reconRun{}
	r.path = fs.String("vae", "", "LG-VAE checkpoint (vae.safetensors)")
	r.data = cli.AddData(fs, true)
	r.split = fs.String("split", "test", "split")
	r.graphs = fs.String("graphs", "", "a file of graphs of one's own in place of -dataset (format by its name, as lgflow train reads them: graph6 / digraph6 / sparse6, edge lists, node-link JSON, SMILES)")
	r.validRule = fs.String("validity", "", "with -graphs: the validity rule the valid fraction counts ("+strings.Join(bundle.ValidityRules, ", ")+"; default none)")
	r.asJSON = fs.Bool("json", false, "print JSON")
	r.batch = fs.Int("batch", 64, "graphs encoded and decoded together")
	r.noise = fs.Float64("noise", 0, "add Gaussian noise of this many latent standard deviations before decoding (decoder robustness)")
	r.seed = fs.Uint64("seed", 0, "seed of the -noise draws and of the -flow round trip's noise")
	r.flowPath = fs.String("flow", "", "round trip through this LG-Flow (in the LG-VAE's latent space) before decoding: the latents noised to time -from and brought back by the sampler (flow.Model.EndpointPerturbation: -sampler's final_jump, time_offsets and experts, and as many of its steps as its grid has after -from), how precisely the flow's data end restores real graphs")
	r.from = fs.Float64("from", 0.9, "with -flow: the time the latents are noised to, in (0, 1)")
	r.sampler = cli.AddSampler(fs, false)
	r.output = addOutputFlags(fs, "also write the decoded graphs, in the split's order, to this file (written atomically; a .gz name is compressed)", "")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

// check checks the parsed flags, in the order their errors are reported,
// and derives the output format and the decode options from them.
func (r *reconRun) check() error {
	if err := r.output.check(); err != nil {
		return err
	}
	switch {
	case *r.output.path == "" && *r.output.format != "":
		return usagef("-format needs -o")
	case *r.output.path == "-":
		return usagef("-o needs a file: standard output carries the figures")
	}
	r.sampler.Edit(&r.s)
	if err := bundle.ValidateSettings(r.s); err != nil {
		return usagef("-sampler: %v", err)
	}
	decoding := r.s
	decoding.Experts = nil // the round trip's, loaded by flowRoundTrip
	var err error
	if r.decodeOpts, err = decoding.DecodeOptions(); err != nil {
		return usagef("-sampler: %v", err)
	}
	switch {
	case *r.path == "" || (r.data.Dataset == "") == (*r.graphs == ""):
		return usagef("need -vae and one of -dataset and -graphs")
	case *r.validRule != "" && *r.graphs == "":
		return usagef("-validity is for -graphs (a built-in dataset has its own rule)")
	case *r.noise < 0:
		return usagef("-noise must be >= 0")
	case *r.flowPath == "" && len(r.s.Experts) > 0:
		return usagef("-sampler experts needs -flow")
	case *r.flowPath != "" && *r.noise > 0:
		return usagef("-noise and -flow are two perturbations; give one")
	}
	return nil
}

// load reads the graphs recon measures (-dataset and -split, or -graphs)
// and computes their LG-VAE features under cfg.
func (r *reconRun) load(ctx context.Context, cfg vae.Config) (*vae.Dataset, error) {
	if *r.graphs == "" {
		return loadPrepared(ctx, r.data, *r.split, 0, cfg)
	}
	format, err := inputFormat("", *r.graphs)
	if err != nil {
		return nil, err
	}
	f, err := readGraphFile(ctx, *r.graphs, format, "")
	if err != nil {
		return nil, err
	}
	d, err := vae.Prepare(ctx, f.graphs, cfg, progress.Bar(stderr, *r.graphs+": eigenpairs"))
	return d, f.explain(err)
}

// validity returns the valid fraction's measure: the built-in dataset's
// rule, or -validity's for -graphs; nil when there is none.
func (r *reconRun) validity() (func([]*graph.Graph) float64, error) {
	if *r.graphs == "" {
		return validityScore(r.data.Dataset, mol.InferAromaticNH(*r.output.inferNH)), nil
	}
	if *r.validRule == "" || *r.validRule == "none" {
		return nil, nil
	}
	valid, err := bundle.ValidityTest(*r.validRule, nil)
	if err != nil {
		return nil, usagef("-validity: %v", err)
	}
	return validFraction(valid), nil
}

// meanEdges is the mean number of edges of gs (0 for none).
func meanEdges(gs []*graph.Graph) float64 {
	if len(gs) == 0 {
		return 0
	}
	n := 0
	for _, g := range gs {
		n += g.M()
	}
	return float64(n) / float64(len(gs))
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
		if lat, err = flowRoundTrip(ctx, m, lat, *r.flowPath, *r.from, r.s, *r.seed, *r.batch); err != nil {
			return nil, 0, err
		}
	}
	return lat, scale, nil
}

// figures returns the accuracies acc, the valid fraction (when valid >= 0)
// and the settings they were measured with, as -json prints them.
func (r *reconRun) figures(acc vae.Accuracy, scale, valid float64, edges [2]float64) map[string]any {
	out := map[string]any{"edge_acc": acc.Edge(), "node_acc": acc.Node(), "sample_acc": acc.Sample(),
		"decoded_acc": acc.Decoded(), "graphs": acc.Graphs, "edges_in": edges[0], "edges_decoded": edges[1]}
	if *r.noise > 0 {
		out["noise"], out["latent_std"] = *r.noise, scale
	}
	if *r.flowPath != "" {
		out["flow"], out["from"] = *r.flowPath, *r.from
	}
	if r.sampler.Settings.Given() {
		out["sampler"] = r.sampler.Settings.String()
	}
	if valid >= 0 {
		out["valid"], out["edge_rule"] = valid, cmp.Or(r.s.EdgeRule, "or")
	}
	return out
}

// summary returns the line recon prints without -json: the accuracies
// acc, the valid fraction (when valid >= 0), the mean edge counts of the
// input and decoded graphs, and how the latents were perturbed and
// decoded.
func (r *reconRun) summary(acc vae.Accuracy, scale, valid float64, edges [2]float64) string {
	how := ""
	if *r.noise > 0 {
		how = fmt.Sprintf(" with noise %g x latent std %.4g", *r.noise, scale)
	}
	if *r.flowPath != "" {
		how = fmt.Sprintf(" through %s from time %g", *r.flowPath, *r.from)
	}
	if r.sampler.Settings.Given() {
		how += " (sampler " + r.sampler.Settings.String() + ")"
	}
	what := r.data.Dataset + " " + *r.split
	if *r.graphs != "" {
		what = *r.graphs
	}
	s := fmt.Sprintf("%s (%d graphs)%s: edge accuracy %.4f, node accuracy %.4f, sample accuracy %.4f (decoded graph exact: %.4f)",
		what, acc.Graphs, how, acc.Edge(), acc.Node(), acc.Sample(), acc.Decoded())
	if valid >= 0 {
		s += fmt.Sprintf("; valid decoded graphs (edge rule %s): %.4f", cmp.Or(r.s.EdgeRule, "or"), valid)
	}
	return s + fmt.Sprintf("; edges per graph %.2f, decoded %.2f", edges[0], edges[1])
}

// flowRoundTrip noises per-graph latents to time from and brings them back
// with the sampler of the flow at flowPath (flow.Model.EndpointPerturbation
// with the settings s: its final jump, time offsets and experts, which
// are files, and as many steps as its grid of s.Steps, default 100, has
// after from), batch graphs at a time, padded to the batch's largest
// graph.
func flowRoundTrip(ctx context.Context, ae *vae.Model, lat []*tensor.Tensor, flowPath string, from float64, s flow.Sampler, seed uint64, batch int) ([]*tensor.Tensor, error) {
	fm, err := flow.Load(flowPath, ae)
	if err != nil {
		return nil, err
	}
	if err := bundle.LoadExperts(fm, &s, nil); err != nil {
		return nil, err
	}
	steps := max(1, int(math.Round(float64(cmp.Or(s.Steps, flow.DefaultSteps))*(1-from))))
	perturb, err := fm.EndpointPerturbation(from, from, steps, flow.Sampler{FinalJump: s.FinalJump, Offsets: s.Offsets, Experts: s.Experts})
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
		back, err := roundTrip(chunk, perturb, r)
		if err != nil {
			return nil, err
		}
		out = append(out, back...)
	}
	return out, nil
}

// roundTrip pads a batch of per-graph latents, perturbs them and returns
// them per graph again.
func roundTrip(chunk []*tensor.Tensor, perturb func(*tensor.Tensor, []int, *tensor.RNG) (*tensor.Tensor, error), r *tensor.RNG) ([]*tensor.Tensor, error) {
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
	out := make([]*tensor.Tensor, len(sizes))
	for i, s := range sizes {
		out[i] = back.Slice(0, i, i+1).Reshape(N, d).Slice(0, 0, s).Clone()
	}
	return out, nil
}
