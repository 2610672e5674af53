package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lgflow/cuda"
	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/pipeline"
)

func init() {
	register("tune", "search a bundle's sampler settings on validation graphs and write the best into its sampler.json", runTune)
}

func runTune(ctx context.Context, args []string) error {
	fs := newFlagSet("tune", "lgflow tune -model DIR [-val FILE [-train FILE]] [-budget 15m] [-start default|none|NAME] [-constraints] [-write=false]")
	modelDir := fs.String("model", "", "the bundle (lgflow train's, or e.g. pretrained/planar)")
	valPath := fs.String("val", "", "validation graphs to measure against (default: the bundle's own, which lgflow train stores; for a shipped bundle the val split of the dataset its card names)")
	trainPath := fs.String("train", "", "training graphs novelty is counted against (default: the bundle's own, or the dataset's train split; with -val and no -train, none)")
	format := fs.String("format", "", "format of -val and -train: g6, edgelist, nodelink or smiles (default: from the file names)")
	directed := fs.Bool("directed", false, "edge lists: the graphs are directed")
	validity := fs.String("validity", "", "the rule V.U.N. counts a sample valid by: planar, tree, dag, connected, molecule or none (default: the card's, else the strictest every validation graph keeps)")
	startName := fs.String("start", "", "where the search starts: the recipe's default (\"\"), one of its alternatives by name, or none (flow.Sample's defaults)")
	constraints := fs.Bool("constraints", false, "also try decoding under the validity rule's constraints (planar and connected, spanning trees, acyclicity, connectivity; not the paper's sampler)")
	n := fs.Int("n", 256, "graphs sampled for each point, all with -seed")
	mmdWeight := fs.Float64("mmd-weight", pipeline.DefaultMMDWeight, "the score is V.U.N. (%) minus this times log2 of the geometric mean of the MMDs over the start's: the points of V.U.N. that halving every MMD is worth")
	seed := fs.Uint64("seed", 1, "seed of every point's samples (another than the card's figures were measured with)")
	budget := fs.Duration("budget", 15*time.Minute, "time for the search; it stops before a sampling that would not fit (0: the whole search)")
	write := fs.Bool("write", true, "write the best point into sampler.json as the default, the old default kept as the alternative -keep-as (-write=false: print only)")
	keepAs := fs.String("keep-as", "previous", "the name the old default is kept under")
	dataDir := fs.String("data", "", "data directory of the built-in datasets (default ../shared/data)")
	dataSeed := fs.Uint64("data-seed", 0, "seed of a built-in synthetic dataset")
	device := fs.String("device", "cpu", "where the denoiser runs: cpu or cuda")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *modelDir == "":
		return usagef("need -model")
	case *validity != "" && !slices.Contains(flow.ValidityRules, *validity):
		return usagef("unknown -validity %q (want %s)", *validity, strings.Join(flow.ValidityRules, ", "))
	case *n <= 0:
		return usagef("-n must be positive")
	case *budget < 0:
		return usagef("-budget must not be negative")
	case !(*mmdWeight > 0):
		return usagef("-mmd-weight must be positive")
	case *write && (*keepAs == "" || *keepAs == flow.NoRecipe):
		return usagef("-keep-as needs a name other than %q", flow.NoRecipe)
	}
	backend, err := cuda.Select(*device)
	if err != nil {
		return err
	}
	m, err := flow.Open(*modelDir)
	if err != nil {
		return err
	}
	var card flow.Card
	if m.Recipe != nil {
		card = m.Recipe.Card
	}
	val, train, source, err := tuneGraphs(ctx, *modelDir, card, *valPath, *trainPath, *format, *directed, *dataDir, *dataSeed)
	if err != nil {
		return err
	}
	rule := *validity
	if rule == "" {
		rule = card.Validity
	}
	if rule == "" {
		rule = pipeline.DetectValidity(val)
	}
	enc, err := pipeline.MolEncoding(card.Molecules)
	if err != nil {
		return err
	}
	valid, err := pipeline.ValidityTest(rule, enc)
	if err != nil {
		return usagef("%v", err)
	}
	var start flow.Sampler
	switch {
	case *startName == flow.NoRecipe || m.Recipe == nil:
	default:
		s, ok := m.Recipe.Lookup(*startName)
		if !ok {
			return fmt.Errorf("%s: the recipe has no alternative %q (it has %s)", *modelDir, *startName, strings.Join(m.Recipe.Names(), ", "))
		}
		start = s
	}
	if err := m.ToBackend(backend); err != nil {
		return err
	}
	hooks := pipeline.TextHooks(stderr)
	fmt.Fprintf(stderr, "tuning %s on %d validation graphs (%s; %d training graphs for novelty), validity %s, %d samples a point, seed %d, budget %s\n",
		*modelDir, len(val), source, len(train), rule, *n, *seed, *budget)
	res, err := pipeline.Tune(ctx, m, pipeline.TuneOptions{Val: val, Train: train, Valid: valid, Rule: rule, Constraints: *constraints,
		Start: start, Samples: *n, Seed: *seed, Budget: *budget, MMDWeight: *mmdWeight, Hooks: hooks})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d points from %d samplings in %s; V.U.N. in %%, MMD² × 1e3 against the validation graphs\n", res.Points, res.Samplings, res.Elapsed.Round(time.Second))
	fmt.Fprintf(stdout, "start  %s  [%s]\n", res.Start.Figures, describeSampler(res.Start.Sampler))
	fmt.Fprintf(stdout, "best   %s  [%s]  score %+.1f\n", res.Best.Figures, describeSampler(res.Best.Sampler), res.Best.Score-res.Start.Score)
	fmt.Fprintf(stdout, "the trade-off front (no point beats these in V.U.N. and every MMD together):\n")
	for _, p := range res.Front {
		fmt.Fprintf(stdout, "  %s  [%s]\n", p.Figures, describeSampler(p.Sampler))
	}
	if !*write {
		return nil
	}
	r := m.Recipe
	if r == nil {
		r = &flow.Recipe{Format: flow.RecipeFormat}
	}
	updated := tunedRecipe(r, res, *keepAs, fmt.Sprintf("%d samples against %d validation graphs (%s), seed %d; lgflow tune", *n, len(val), source, *seed), rule)
	path := filepath.Join(*modelDir, flow.RecipeFile)
	if err := updated.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: the best point as the default, the old default as %q\n", path, *keepAs)
	return nil
}

// tunedRecipe returns r with res's best point as the default: the old
// default becomes the alternative keepAs, with its figures; the best
// point's figures, measured as measured says, replace the default's.
func tunedRecipe(r *flow.Recipe, res *pipeline.TuneResult, keepAs, measured, rule string) *flow.Recipe {
	out := *r
	out.Alternatives = maps.Clone(r.Alternatives)
	if out.Alternatives == nil {
		out.Alternatives = map[string]flow.Sampler{}
	}
	out.Alternatives[keepAs] = r.Sampler
	out.Sampler = res.Best.Sampler
	figs := map[string]float64{}
	for k, v := range r.Card.Figures {
		if strings.HasPrefix(k, keepAs+".") {
			continue
		}
		if !strings.Contains(k, ".") {
			k = keepAs + "." + k
		}
		figs[k] = v
	}
	res.Best.Figures.Card("", figs)
	out.Card.Figures = figs
	old := r.Card.Measured
	out.Card.Measured = "default: " + measured
	if old != "" {
		out.Card.Measured += "; the others: " + old
	}
	if out.Card.Validity == "" {
		out.Card.Validity = rule
	}
	return &out
}

// describeSampler lists a sampler's settings.
func describeSampler(s flow.Sampler) string {
	if d := s.Describe(); len(d) > 0 {
		return strings.Join(d, ", ")
	}
	return "flow.Sample's defaults"
}

// tuneGraphs returns the validation and training graphs of lgflow tune and
// says where they came from: the files given, else the bundle's own
// (flow.Data), else the splits of the built-in dataset its card names.
func tuneGraphs(ctx context.Context, dir string, card flow.Card, valPath, trainPath, format string, directed bool, dataDir string, dataSeed uint64) (val, train []*graph.Graph, source string, err error) {
	read := func(path string) ([]*graph.Graph, error) {
		f, err := inputFormat(format, path)
		if err != nil {
			return nil, err
		}
		gf, err := readGraphFile(ctx, path, f, directed, card.Molecules)
		if err != nil {
			return nil, err
		}
		return gf.graphs, nil
	}
	switch {
	case valPath != "":
		if val, err = read(valPath); err != nil {
			return nil, nil, "", err
		}
		if trainPath != "" {
			if train, err = read(trainPath); err != nil {
				return nil, nil, "", err
			}
		}
		return val, train, valPath, nil
	case card.Data != nil && card.Data.ValGraphs != "":
		if val, err = graph.ReadAnyFile(filepath.Join(dir, card.Data.ValGraphs)); err != nil {
			return nil, nil, "", err
		}
		if card.Data.TrainGraphs != "" {
			if train, err = graph.ReadAnyFile(filepath.Join(dir, card.Data.TrainGraphs)); err != nil {
				return nil, nil, "", err
			}
		}
		return val, train, "the bundle's " + card.Data.ValGraphs, nil
	}
	name, _, _ := strings.Cut(card.Dataset, " ")
	if !slices.Contains(datasets.Names(), name) {
		return nil, nil, "", usagef("%s: no validation graphs: give -val (the bundle stores none, and its card names no built-in dataset)", dir)
	}
	opt := datasets.Options{Dir: dataDir, Seed: dataSeed}
	if val, err = datasets.Load(ctx, name, "val", opt); err != nil {
		return nil, nil, "", err
	}
	if train, err = datasets.Load(ctx, name, "train", opt); err != nil {
		return nil, nil, "", err
	}
	return val, train, "the " + name + " val split", nil
}
