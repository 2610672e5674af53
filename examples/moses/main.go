// Command moses is lgflow's end-to-end example on MOSES molecules: it
// trains (or loads) an LG-VAE and an LG-Flow model on the "moses" dataset,
// samples molecules, decodes them to SMILES and prints the MOSES metrics
// beside the paper's.
//
//	go run ./examples/moses                                   # the shipped models, 1000 samples (~3 min)
//	go run ./examples/moses -train                            # 10 + 10 minutes of training first
//	go run ./examples/moses -train -vae-time 1h -flow-time 3h  # longer training
//	go run ./examples/moses -vae pretrained/moses/vae.safetensors -flow pretrained/moses/flow.safetensors
//
// Without -train it uses pretrained/moses/{vae,flow}.safetensors when both
// exist; otherwise it trains the cpu presets for -vae-time and -flow-time.
// Training resumes from the state files in -out.
//
// The full MOSES training file (1.6 M molecules) is not in the shared data:
// the dataset then trains on test.csv.gz (176,074 molecules, minus 1,000
// held out for validation) and evaluates against test_scaffolds.csv.gz;
// the output says so. FCD needs the ChemNet weights, which are not
// available, so it is not computed.
//
// The encoding carries no hydrogens, so the decoding reads an aromatic
// nitrogen as [nH] where the molecule cannot be kekulised otherwise
// (pyrrole, imidazole, uracil: 10% of MOSES's molecules); -infer-nh 0 is
// the paper's decoding, which rejects them (mol.InferAromaticNH).
//
// The shipped models are a bundle (flow.Open) and sample with its recipe,
// pretrained/moses/sampler.json: temperature 0.8 and the mid-path expert
// denoiser shipped beside the flow (flow-expert.safetensors, from t = 0.4
// to 0.75); -sampler's settings replace the recipe's one by one
// (sampler.json's keys: -sampler temperature=1,experts=null), and
// -recipe none is the paper's sampler.
//
// It writes into -out (default out/moses): report.json and samples.smi
// (one line per sample: canonical SMILES, or "None" if it did not decode
// to a valid molecule).
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/graph/mol"
	"lgflow/internal/cli"
	"lgflow/internal/pipeline"
	"lgflow/internal/progress"
	"lgflow/metrics/moses"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/vae"
)

// options are the command-line flags.
type options struct {
	out, data, vaePath, flowPath string
	n                            int
	sampler                      *cli.Sampler // -recipe, -sampler
	constrained                  bool
	inferNH                      int
	seed                         uint64
	train                        bool
	vaeTime, flowTime            time.Duration
	vaeSteps, flowSteps          int
	maxTrain, refN               int
	bundle                       string // the shipped bundle's directory
	backend                      tensor.Backend
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "out/moses", "output directory")
	flag.StringVar(&o.data, "data", "", "data directory holding moses/ (default: $LGFLOW_DATA, else ../shared/data beside go.mod)")
	flag.StringVar(&o.vaePath, "vae", "", "LG-VAE checkpoint to use instead of training one")
	flag.StringVar(&o.flowPath, "flow", "", "LG-Flow checkpoint to use instead of training one (needs -vae)")
	flag.IntVar(&o.n, "n", 1000, "molecules to sample")
	o.sampler = cli.AddSampler(flag.CommandLine, true)
	flag.BoolVar(&o.constrained, "constrained", false, "decode under the valence bound (no atom with more bonds than its element allows) and read aromatic bonds that cannot be kekulised as single bonds (mol.Encoding.RepairAromaticity); not the paper's sampler")
	flag.IntVar(&o.inferNH, "infer-nh", mol.DefaultInferNH, "read up to N aromatic nitrogens as [nH] where a molecule cannot be kekulised otherwise: the encoding carries no hydrogens (mol.InferAromaticNH; 0: the paper's decoding, which loses 10% of MOSES's own molecules)")
	flag.Uint64Var(&o.seed, "seed", 0, "sampling seed")
	flag.BoolVar(&o.train, "train", false, "train even when pretrained/moses holds models")
	flag.DurationVar(&o.vaeTime, "vae-time", 10*time.Minute, "stop LG-VAE training after this long (0: run the preset's steps)")
	flag.DurationVar(&o.flowTime, "flow-time", 10*time.Minute, "stop LG-Flow training after this long (0: run the preset's steps)")
	flag.IntVar(&o.vaeSteps, "vae-steps", 0, "override the LG-VAE preset's steps (sets the learning-rate schedule's length)")
	flag.IntVar(&o.flowSteps, "flow-steps", 0, "override the LG-Flow preset's steps")
	flag.IntVar(&o.maxTrain, "max-train", 0, "train the models on the first N training molecules only (0: all); novelty is always measured against the whole training split")
	flag.IntVar(&o.refN, "ref-n", 0, "use the first N test_scaffolds molecules as SNN / scaffold reference (0: all 176,225)")
	device := cli.AddDevice(flag.CommandLine)
	flag.Parse()
	var err error
	if o.backend, err = device.Backend(os.Stderr, o.train); err != nil {
		fmt.Fprintln(os.Stderr, "moses:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, o, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "moses:", err)
		os.Exit(1)
	}
}

// sampler returns the sampler settings of a run with the flow fm: the
// recipe of the shipped bundle (flow.Open; -recipe none: none) unless
// decoding is constrained, else flow.Sample's defaults, with -sampler's
// settings in place of its own; and the description of the experts.
func sampler(o options, fm *flow.Model, shipped bool) (flow.Sampler, string, error) {
	var s flow.Sampler
	if shipped && !o.constrained && fm.Recipe != nil && o.sampler.Recipe != flow.NoRecipe {
		var ok bool
		if s, ok = fm.Recipe.Lookup(o.sampler.Recipe); !ok {
			return s, "", fmt.Errorf("the recipe has no alternative %q", o.sampler.Recipe)
		}
	}
	s.Experts = slices.Clone(s.Experts)
	if err := o.sampler.LoadExperts(fm, o.backend); err != nil {
		return s, "", err
	}
	o.sampler.Edit(&s)
	if err := s.Validate(); err != nil {
		return s, "", err
	}
	var desc []string
	for _, e := range s.Experts {
		file := e.File
		if e.Model == nil { // the bundle's
			file = filepath.Join(o.bundle, e.File)
		}
		d := fmt.Sprintf("expert %s from %g", file, e.From)
		if e.Until > 0 {
			d += fmt.Sprintf(" until %g", e.Until)
		}
		desc = append(desc, d)
	}
	return s, strings.Join(desc, ", "), nil
}

// Report is what report.json holds. Rates are fractions in [0, 1];
// metrics that were not computed are null.
type Report struct {
	Dataset string `json:"dataset"`
	// TrainingSet says which file the models were trained on.
	TrainingSet string `json:"training_set"`
	NTrain      int    `json:"n_train"`
	// NTrainUsed is the number of molecules the models were trained on
	// here (0 when they were loaded).
	NTrainUsed    int     `json:"n_train_used"`
	NVal          int     `json:"n_val"`
	NRef          int     `json:"n_ref"`
	NSamples      int     `json:"n_samples"`
	SampleSeconds float64 `json:"sample_seconds"`
	Steps         int     `json:"steps"`
	Temperature   float64 `json:"temperature"`
	// Constrained is true when samples were decoded under the valence
	// bound (mol.Encoding.DatasetValenceOK) with aromaticity repaired
	// (mol.Encoding.RepairAromaticity), which the paper does not do.
	Constrained bool `json:"constrained,omitempty"`
	// InferNH is the mol.InferAromaticNH bound the samples were decoded
	// with (0: the paper's decoding).
	InferNH  int    `json:"infer_nh"`
	Seed     uint64 `json:"seed"`
	Hardware string `json:"hardware"`
	// Reconstruction is the LG-VAE's accuracy on the held-out validation
	// molecules (z = mu).
	Reconstruction struct {
		EdgeAcc   float64 `json:"edge_acc"`
		NodeAcc   float64 `json:"node_acc"`
		SampleAcc float64 `json:"sample_acc"`
	} `json:"reconstruction"`
	Valid   float64  `json:"valid"`
	Unique  *float64 `json:"unique"`
	Novel   *float64 `json:"novel"`
	Filters *float64 `json:"filters"`
	FCD     *float64 `json:"fcd"`
	SNN     *float64 `json:"snn"`
	Scaf    *float64 `json:"scaf"`
	Notes   []string `json:"notes"`
	Models  struct {
		VAE  string `json:"vae"`
		Flow string `json:"flow"`
		// Expert is the expert denoiser, its file and time band, if the
		// samples used one.
		Expert string `json:"expert,omitempty"`
	} `json:"models"`
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.backend == nil {
		o.backend = tensor.CPU
	}
	if o.n <= 0 {
		return fmt.Errorf("-n must be positive, got %d", o.n)
	}
	if o.flowPath != "" && o.vaePath == "" {
		return errors.New("-flow needs -vae (the LG-Flow model is bound to its LG-VAE)")
	}
	dir := o.data
	if dir == "" {
		var err error
		if dir, err = datasets.DataDir(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var rep Report
	rep.Dataset, rep.NSamples, rep.Seed = "moses", o.n, o.seed
	rep.Hardware = fmt.Sprintf("%s/%s, %d CPU threads (GOMAXPROCS)", runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	note := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		rep.Notes = append(rep.Notes, s)
		fmt.Fprintln(stdout, "note: "+s)
	}
	trainSMILES, valSMILES, refSMILES, used, err := loadSMILES(o, dir, &rep, note)
	if err != nil {
		return err
	}

	vaePath, flowPath, shipped := o.models()
	valGraphs, err := mol.MOSES.ParseGraphs(ctx, valSMILES, 0, nil)
	if err != nil {
		return err
	}
	var ae *vae.Model
	var trainGraphs []*graph.Graph
	var trainSet *vae.Dataset // the training graphs' features for the LG-VAE trained here
	if vaePath == "" || flowPath == "" {
		trainGraphs, err = mol.MOSES.ParseGraphs(ctx, used, 0, bar(stderr, "molecules -> graphs"))
		if err != nil {
			return err
		}
		rep.NTrainUsed = len(used)
	}
	if vaePath == "" {
		if vaePath, trainSet, err = trainVAE(ctx, o, trainGraphs, valGraphs, stderr); err != nil {
			return err
		}
	}
	if ae, err = vae.Load(vaePath); err != nil {
		return err
	}
	if err := measureRecon(ctx, ae, valGraphs, &rep, stderr); err != nil {
		return err
	}

	if flowPath == "" {
		if trainSet == nil { // the LG-VAE was loaded, not trained here

			if trainSet, err = vae.Prepare(ctx, trainGraphs, ae.Cfg, bar(stderr, "eigenpairs (train)")); err != nil {
				return err
			}
		}
		if flowPath, err = trainFlow(ctx, o, ae, trainSet, stderr); err != nil {
			return err
		}
	}
	var fm *flow.Model
	if shipped {
		fm, err = flow.Load(o.bundle, ae)
	} else {
		fm, err = flow.Load(flowPath, ae)
	}
	if err != nil {
		return err
	}
	if err := fm.ToBackend(o.backend); err != nil {
		return err
	}
	rep.Models.VAE, rep.Models.Flow = vaePath, flowPath
	s, expertDesc, err := sampler(o, fm, shipped)
	if err != nil {
		return err
	}
	rep.Steps, rep.Temperature = cmp.Or(s.Steps, flow.DefaultSteps), cmp.Or(s.Temperature, 1)
	if shipped && !o.constrained && !o.sampler.Settings.Has("temperature") && s.Temperature > 0 && s.Temperature != 1 {
		note("temperature %g: the shipped models' recipe (%s; chosen on seed 10; -sampler temperature=1 for the paper's sampler)", s.Temperature, filepath.Join(o.bundle, flow.RecipeFile))
	}

	if expertDesc != "" {
		rep.Models.Expert = expertDesc
		note("%s (not the paper's sampler; -sampler experts=null samples without it)", expertDesc)
	}
	rep.Constrained = o.constrained
	rep.InferNH = max(o.inferNH, 0)
	start := time.Now()
	gen, err := sampleSMILES(ctx, o, fm, s, stderr)
	if err != nil {
		return err
	}
	rep.SampleSeconds = time.Since(start).Seconds()
	if err := writeSMILES(filepath.Join(o.out, "samples.smi"), gen); err != nil {
		return err
	}
	if err := evaluate(ctx, gen, trainSMILES, refSMILES, dir, &rep, stderr); err != nil {
		return err
	}
	if err := pipeline.WriteJSON(filepath.Join(o.out, "report.json"), rep); err != nil {
		return err
	}
	printTable(stdout, rep)
	fmt.Fprintf(stdout, "\nwrote %s/{report.json,samples.smi}\n", o.out)
	return nil
}

// loadSMILES reads the MOSES splits from the data directory dir: the
// training, validation and reference (test_scaffolds, the first -ref-n)
// SMILES, and the training SMILES the models train on (the first
// -max-train), noting in rep where they come from.
func loadSMILES(o options, dir string, rep *Report, note func(string, ...any)) (train, val, ref, used []string, err error) {
	if p, ok := mol.MOSESTrainFile(dir); ok {
		rep.TrainingSet = p
		note("training on the official MOSES training file %s; validation on test.csv.gz", p)
	} else {
		rep.TrainingSet = filepath.Join(dir, mol.MOSESDir, "test.csv.gz") + fmt.Sprintf(" minus %d held out", mol.MOSESValSize)
		note("the full MOSES training file (train.csv.gz, 1,584,663 molecules) is not available here: "+
			"test.csv.gz (176,074 molecules) is used as the training set, minus %d molecules held out for validation; "+
			"novelty is measured against that training set", mol.MOSESValSize)
	}
	note("FCD needs the ChemNet weights, which are not available here: it is not computed")
	if train, err = mol.MOSESSMILES(dir, "train", 0); err != nil {
		return nil, nil, nil, nil, err
	}
	if val, err = mol.MOSESSMILES(dir, "val", 0); err != nil {
		return nil, nil, nil, nil, err
	}
	if ref, err = mol.MOSESSMILES(dir, "test", 0); err != nil {
		return nil, nil, nil, nil, err
	}
	if o.refN > 0 && o.refN < len(ref) {
		ref = ref[:o.refN]
		note("SNN and scaffold similarity use the first %d of the 176,225 test_scaffolds molecules (-ref-n)", o.refN)
	}
	rep.NTrain, rep.NVal, rep.NRef = len(train), len(val), len(ref)
	used = train
	if o.maxTrain > 0 && o.maxTrain < len(used) {
		used = used[:o.maxTrain]
		note("the models are trained on the first %d training molecules only (-max-train)", o.maxTrain)
	}
	return train, val, ref, used, nil
}

// models returns the checkpoints -vae and -flow name or, without them
// and -train, those of the shipped bundle pretrained/moses (o.bundle),
// when it holds both; shipped says the latter.
func (o *options) models() (vaePath, flowPath string, shipped bool) {
	vaePath, flowPath = o.vaePath, o.flowPath
	if vaePath != "" || o.train {
		return vaePath, flowPath, false
	}
	if dir, err := pipeline.PretrainedDir(); err == nil { // $LGFLOW_PRETRAINED, else pretrained beside go.mod
		o.bundle = filepath.Join(dir, "moses")
		v, f := filepath.Join(o.bundle, vae.ModelFile), filepath.Join(o.bundle, flow.ModelFile)
		if exists(v) && exists(f) {
			return v, f, true
		}
	}
	return vaePath, flowPath, false
}

// measureRecon measures ae's reconstruction of the held-out molecules
// into rep.
func measureRecon(ctx context.Context, ae *vae.Model, valGraphs []*graph.Graph, rep *Report, stderr io.Writer) error {
	valSet, err := vae.Prepare(ctx, valGraphs, ae.Cfg, nil)
	if err != nil {
		return err
	}
	acc, err := vae.Reconstruct(ctx, ae, valSet, 64)
	if err != nil {
		return err
	}
	rep.Reconstruction.EdgeAcc, rep.Reconstruction.NodeAcc, rep.Reconstruction.SampleAcc = acc.Edge(), acc.Node(), acc.Sample()
	fmt.Fprintf(stderr, "LG-VAE reconstruction of %d held-out molecules: edge %.4f, node %.4f, sample %.4f (paper, MOSES test: sample 0.9967, node 1.0)\n",
		len(valGraphs), acc.Edge(), acc.Node(), acc.Sample())
	return nil
}

// sampleSMILES samples o.n molecular graphs from fm with the settings s
// (under the valence bound with -constrained, aromaticity then repaired)
// and decodes them to SMILES ("" for a sample that is no molecule).
func sampleSMILES(ctx context.Context, o options, fm *flow.Model, s flow.Sampler, stderr io.Writer) ([]string, error) {
	if o.constrained {
		s.Decode = append(s.Decode, vae.WithEdgeConstraint(mol.MOSES.DatasetValenceOK))
	}
	nh := mol.InferAromaticNH(o.inferNH)
	samples, err := flow.Sample(ctx, fm, o.n, flow.WithSettings(func(p *flow.Sampler) { *p = s }), flow.WithSeed(o.seed), flow.WithProgress(bar(stderr, "sampling")))
	if err != nil {
		return nil, err
	}
	gen := make([]string, len(samples))
	for i, g := range samples {
		if o.constrained {
			g, _ = mol.MOSES.RepairAromaticity(g, nh)
		}
		if s, err := mol.MOSES.DecodeDatasetGraph(g, nh); err == nil {
			gen[i] = s
		}
	}
	return gen, nil
}

// evaluate computes the MOSES metrics of gen against the training and
// reference SMILES, with the filters of the data directory dir, into rep.
func evaluate(ctx context.Context, gen, trainSMILES, refSMILES []string, dir string, rep *Report, stderr io.Writer) error {
	filters, err := moses.LoadFilters(filepath.Join(dir, mol.MOSESDir))
	if err != nil {
		return err
	}
	r, err := moses.Evaluate(ctx, gen, moses.Options{Train: trainSMILES, Ref: refSMILES, Filters: filters, Progress: progressByStage(stderr)})
	if err != nil {
		return err
	}
	rep.Valid = r.Valid
	rep.Unique, rep.Novel, rep.Filters = num(r.Unique[0]), num(r.Novelty), num(r.Filters)
	rep.SNN, rep.Scaf = num(r.SNN), num(r.Scaf)
	return nil
}

// trainVAE trains the "moses/cpu" LG-VAE preset and returns the path of
// the model to use (the best by validation sample accuracy, or the last
// one if training stopped before the first validation) and the training
// graphs' features.
func trainVAE(ctx context.Context, o options, train, val []*graph.Graph, stderr io.Writer) (string, *vae.Dataset, error) {
	p, err := vae.PresetFor("moses", "cpu")
	if err != nil {
		return "", nil, err
	}
	if o.vaeSteps > 0 {
		p.Train.Steps = o.vaeSteps
	}
	trainSet, err := vae.Prepare(ctx, train, p.Model, bar(stderr, "eigenpairs (train)"))
	if err != nil {
		return "", nil, err
	}
	valSet, err := vae.Prepare(ctx, val, p.Model, nil)
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(o.out, "vae")
	fmt.Fprintf(stderr, "training LG-VAE (moses/cpu, %d steps of batch %d, at most %s; resumable: state in %s)\n",
		p.Train.Steps, p.Train.BatchSize, o.vaeTime, dir)
	m, err := vae.Train(ctx, p.Model, p.Train, trainSet, valSet, vae.TrainOptions{Dir: dir, Resume: true, MaxDuration: o.vaeTime, LogEvery: 10, Backend: o.backend,
		Progress: func(pr vae.Progress) {
			fmt.Fprintf(stderr, "\rLG-VAE step %d/%d loss %.4f (edge %.4f node %.4f) best val sample acc %.3f, %.1f steps/s   ",
				pr.Step, pr.Steps, pr.Loss, pr.Edge, pr.Node, max(pr.BestSample, 0), pr.StepsPerSecond)
		}})
	fmt.Fprintln(stderr)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, vae.ModelFile)
	if !exists(path) { // stopped before the first validation
		if err := m.Save(path, map[string]string{"note": "last model; training stopped before the first validation"}); err != nil {
			return "", nil, err
		}
	}
	return path, trainSet, nil
}

// trainFlow trains the "cpu" LG-Flow preset in the latent space of ae on
// the prepared training set and returns the path of its checkpoint.
func trainFlow(ctx context.Context, o options, ae *vae.Model, trainSet *vae.Dataset, stderr io.Writer) (string, error) {
	cfg, err := flow.Preset("", "cpu", ae.Cfg.Latent)
	if err != nil {
		return "", err
	}
	if o.flowSteps > 0 {
		cfg.Steps = o.flowSteps
	}
	lat, err := flow.EncodeLatents(ctx, ae, trainSet, 256, bar(stderr, "encoding latents"))
	if err != nil {
		return "", err
	}
	dir := filepath.Join(o.out, "flow")
	fmt.Fprintf(stderr, "training LG-Flow (cpu preset, %d steps of batch %d, at most %s; resumable: state in %s)\n",
		cfg.Steps, cfg.BatchSize, o.flowTime, dir)
	_, err = flow.Train(ctx, cfg, ae, trainSet, lat, flow.TrainOptions{Dir: dir, Resume: true, MaxDuration: o.flowTime, LogEvery: 10, Backend: o.backend,
		Score: validFraction,
		Progress: func(pr flow.Progress) {
			fmt.Fprintf(stderr, "\rLG-Flow step %d/%d loss %.4f best val validity %.3f, %.1f steps/s   ",
				pr.Step, pr.Steps, pr.Loss, max(pr.BestScore, 0), pr.StepsPerSecond)
		}})
	fmt.Fprintln(stderr)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, flow.ModelFile), nil
}

// validFraction is the fraction of graphs that decode to valid molecules
// (LG-Flow's checkpoint selection for molecules), with the [nH] inference
// of the tools' default.
func validFraction(gs []*graph.Graph) float64 {
	n := 0
	for _, g := range gs {
		if _, err := mol.MOSES.DecodeDatasetGraph(g, mol.InferAromaticNH(mol.DefaultInferNH)); err == nil {
			n++
		}
	}
	return float64(n) / float64(max(len(gs), 1))
}

// num returns a pointer to v, or nil for NaN (JSON null).
func num(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// printTable prints the MOSES metrics beside the paper's (rates in %).
func printTable(w io.Writer, r Report) {
	pct := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", 100**p)
	}
	frac := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.3f", *p)
	}
	valid := r.Valid
	constrained := ""
	if r.Constrained {
		constrained = ", decoded under the valence bound with aromaticity repaired (not the paper's sampler)"
	}
	if r.InferNH > 0 {
		constrained += fmt.Sprintf(", up to %d aromatic N read as [nH] (not the paper's decoding; -infer-nh 0 for it)", r.InferNH)
	}
	fmt.Fprintf(w, "\nMOSES, %d samples, %d Euler steps, temperature %g%s (Val/Uniq/Novel/Filters/Scaf in %%; SNN and Scaf against test_scaffolds)\n\n", r.NSamples, r.Steps, r.Temperature, constrained)
	fmt.Fprintf(w, "%-22s %7s %7s %7s %8s %7s %7s %7s %10s\n", "", "Val", "Uniq", "Novel", "Filters", "FCD", "SNN", "Scaf", "Time (s)")
	fmt.Fprintf(w, "%-22s %7s %7s %7s %8s %7s %7s %7s %10.1f\n", "lgflow (this run)",
		pct(&valid), pct(r.Unique), pct(r.Novel), pct(r.Filters), "n/a", frac(r.SNN), pct(r.Scaf), r.SampleSeconds)
	fmt.Fprintf(w, "%-22s %7.1f %7.1f %7.1f %8.1f %7.2f %7.2f %7.1f %10.0f\n", "LG-Flow (paper)", 88.4, 99.9, 90.5, 98.9, 1.43, 0.55, 12.3, 310.0)
	fmt.Fprintf(w, "%-22s %7.1f %7.1f %7.1f %8.1f %7.2f %7.2f %7.1f %10.0f\n", "DeFoG (paper)", 92.8, 99.9, 92.1, 98.9, 1.95, 0.55, 14.4, 1.8e4)
	fmt.Fprintf(w, "\nLG-VAE reconstruction (held-out): edge %.4f, node %.4f, sample %.4f\n",
		r.Reconstruction.EdgeAcc, r.Reconstruction.NodeAcc, r.Reconstruction.SampleAcc)
	if r.NTrainUsed > 0 {
		fmt.Fprintf(w, "models trained here on %d of the %d training molecules (%s)\n", r.NTrainUsed, r.NTrain, r.TrainingSet)
	} else {
		fmt.Fprintf(w, "models loaded from %s and %s; novelty against %d training molecules (%s)\n", r.Models.VAE, r.Models.Flow, r.NTrain, r.TrainingSet)
	}
	fmt.Fprintf(w, "reference (SNN, Scaf): %d test_scaffolds molecules; hardware: %s\n", r.NRef, r.Hardware)
	fmt.Fprintln(w, "FCD: n/a (needs the ChemNet weights, not available). The paper trained on the full MOSES train split (1.6 M molecules) on GPUs.")
}

// exists reports whether path holds a checkpoint (a file, or a sharded
// checkpoint's index beside it).
func exists(path string) bool {
	_, err := safetensors.Stat(path)
	return err == nil
}

// bar returns a progress callback that draws one bar labelled label on w
// (redrawn in place on a terminal, a line per tenth of the work in a log).
func bar(w io.Writer, label string) func(done, total int) { return progress.Bar(w, label) }

// progressByStage returns a moses.Options.Progress callback with one bar
// per stage.
func progressByStage(w io.Writer) func(stage string, done, total int) {
	bars := map[string]func(int, int){}
	return func(stage string, done, total int) {
		b, ok := bars[stage]
		if !ok {
			b = bar(w, "metrics: "+stage)
			bars[stage] = b
		}
		b(done, total)
	}
}

// writeSMILES writes one SMILES per line, "None" for an invalid sample.
func writeSMILES(path string, smiles []string) error {
	return graph.WriteFileAtomic(path, func(w io.Writer) error {
		for _, s := range smiles {
			if s == "" {
				s = "None"
			}
			if _, err := io.WriteString(w, s+"\n"); err != nil {
				return err
			}
		}
		return nil
	})
}
