package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/internal/bundle"
	"lgflow/internal/cli"
	"lgflow/internal/progress"
)

func init() {
	register("tune", "search a bundle's sampler settings on validation graphs and write the best into its sampler.json", runTune)
}

// tuneUsage is the synopsis of lgflow tune.
const tuneUsage = "lgflow tune -model DIR [-val FILE [-train FILE]] [-budget 15m] [-recipe NAME] [-sampler KEY=VALUE,...] [-constraints] [-write=false]"

// tuneFlags are lgflow tune's flags.
type tuneFlags struct {
	model, val, train, format, validity *string
	sampler                             *cli.Sampler
	constraints, write                  *bool
	n                                   *int
	mmdWeight                           *float64
	seed                                *uint64
	budget                              *time.Duration
	device                              *cli.Device
}

// keepAs is the name of the alternative that keeps the old default when
// tune writes the chosen point as the default.
const keepAs = "previous"

func parseTune(args []string) (*tuneFlags, error) {
	fs := newFlagSet("tune", tuneUsage)
	f := &tuneFlags{
		model:       fs.String("model", "", "the bundle (lgflow train's, or e.g. pretrained/planar)"),
		val:         fs.String("val", "", "validation graphs to measure against (default: the bundle's own, which lgflow train stores; for a shipped bundle the val split of the dataset its card names)"),
		train:       fs.String("train", "", "training graphs novelty is counted against (default: the bundle's own, or the dataset's train split; with -val and no -train, none)"),
		format:      addInputFormat(fs),
		validity:    fs.String("validity", "", "the rule V.U.N. counts a sample valid by: planar, tree, dag, connected, molecule or none (default: the card's, else the strictest every validation graph keeps)"),
		sampler:     cli.AddSampler(fs, true),
		constraints: fs.Bool("constraints", false, "also try decoding under the validity rule's constraints (planar and connected, spanning trees, acyclicity, connectivity; not the paper's sampler)"),
		n:           fs.Int("n", 256, "graphs sampled for each point, all with -seed"),
		mmdWeight:   fs.Float64("mmd-weight", bundle.DefaultMMDWeight, "the score that guides the search is V.U.N. (%) minus this times log2 of the geometric mean of the MMDs over the start's: the points of V.U.N. that halving every MMD is worth (the point chosen is the highest V.U.N. with no MMD more than 10% above the start's)"),
		seed:        fs.Uint64("seed", 1, "seed of every point's samples (another than the card's figures were measured with)"),
		budget:      fs.Duration("budget", 15*time.Minute, "time for the search; it stops before a sampling that would not fit (0: the whole search)"),
		write:       fs.Bool("write", true, "write the chosen point into sampler.json as the default, the old default kept as the alternative \""+keepAs+"\" (-write=false: print only)"),
		device:      cli.AddDevice(fs),
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	switch {
	case *f.model == "":
		return nil, usagef("need -model")
	case *f.validity != "" && !slices.Contains(bundle.ValidityRules, *f.validity):
		return nil, usagef("unknown -validity %q (want %s)", *f.validity, strings.Join(bundle.ValidityRules, ", "))
	case *f.n <= 0:
		return nil, usagef("-n must be positive")
	case *f.budget < 0:
		return nil, usagef("-budget must not be negative")
	case !(*f.mmdWeight > 0):
		return nil, usagef("-mmd-weight must be positive")
	}
	return f, nil
}

func runTune(ctx context.Context, args []string) error {
	f, err := parseTune(args)
	if err != nil {
		return err
	}
	backend, err := f.device.Backend(stderr, false)
	if err != nil {
		return err
	}
	m, err := flow.Open(*f.model)
	if err != nil {
		return err
	}
	var card flow.Card
	if m.Recipe != nil {
		card = m.Recipe.Card
	}
	val, train, source, err := tuneGraphs(ctx, *f.model, card, *f.val, *f.train, *f.format)
	if err != nil {
		return err
	}
	rule, valid, err := tuneRule(*f.validity, card, val)
	if err != nil {
		return err
	}
	start, err := f.start(m)
	if err != nil {
		return err
	}
	if err := m.ToBackend(backend); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "tuning %s on %d validation graphs (%s; %d training graphs for novelty), validity %s, %d samples a point, seed %d, budget %s\n",
		*f.model, len(val), source, len(train), rule, *f.n, *f.seed, *f.budget)
	res, err := bundle.Tune(ctx, m, bundle.TuneOptions{Val: val, Train: train, Valid: valid, Rule: rule, Constraints: *f.constraints,
		Start: start, Samples: *f.n, Seed: *f.seed, Budget: *f.budget, MMDWeight: *f.mmdWeight, Hooks: progress.Text(stderr)})
	if err != nil {
		return err
	}
	printTune(res)
	if !*f.write {
		return nil
	}
	r := m.Recipe
	if r == nil {
		r = &flow.Recipe{Format: flow.RecipeFormat}
	}
	updated := tunedRecipe(r, res, keepAs, fmt.Sprintf("%d samples against %d validation graphs (%s), seed %d; lgflow tune", *f.n, len(val), source, *f.seed), rule)
	path := filepath.Join(*f.model, flow.RecipeFile)
	if err := updated.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: the chosen point as the default, the old default as %q\n", path, keepAs)
	return nil
}

// start returns the search's starting point: the recipe's alternative
// -recipe names (its default without; none: flow.Sample's defaults) with
// -sampler's settings.
func (f *tuneFlags) start(m *flow.Model) (flow.Sampler, error) {
	var s flow.Sampler
	if r := f.sampler.Recipe; r != flow.NoRecipe && m.Recipe != nil {
		var ok bool
		if s, ok = m.Recipe.Lookup(r); !ok {
			return s, fmt.Errorf("%s: the recipe has no alternative %q (it has %s)", *f.model, r, strings.Join(m.Recipe.Names(), ", "))
		}
	}
	if err := f.sampler.LoadExperts(m, nil); err != nil {
		return s, err
	}
	f.sampler.Edit(&s)
	if err := s.Validate(); err != nil {
		return s, usagef("-sampler: %v", err)
	}
	return s, nil
}

// tuneRule returns the validity rule tune scores by (-validity, else the
// card's, else the strictest every validation graph keeps) and its test.
func tuneRule(validity string, card flow.Card, val []*graph.Graph) (string, func(*graph.Graph) bool, error) {
	rule := cmp.Or(validity, card.Validity)
	if rule == "" {
		rule = bundle.DetectValidity(val)
	}
	enc, err := bundle.MolEncoding(card.Molecules)
	if err != nil {
		return "", nil, err
	}
	valid, err := bundle.ValidityTest(rule, enc)
	if err != nil {
		return "", nil, usagef("%v", err)
	}
	return rule, valid, nil
}

// printTune prints what the search found: the start, the point chosen
// and the trade-off front.
func printTune(res *bundle.TuneResult) {
	fmt.Fprintf(stdout, "%d points from %d samplings in %s; V.U.N. in %%, MMD² × 1e3 against the validation graphs\n", res.Points, res.Samplings, res.Elapsed.Round(time.Second))
	fmt.Fprintf(stdout, "start  %s  [%s]\n", res.Start.Figures, describeSampler(res.Start.Sampler))
	fmt.Fprintf(stdout, "chosen %s  [%s]  score %+.1f\n", res.Best.Figures, describeSampler(res.Best.Sampler), res.Best.Score-res.Start.Score)
	fmt.Fprintf(stdout, "the trade-off front (no point beats these in V.U.N. and every MMD together):\n")
	for _, p := range res.Front {
		fmt.Fprintf(stdout, "  %s  [%s]\n", p.Figures, describeSampler(p.Sampler))
	}
}

// tunedRecipe returns r with res's chosen point as the default: the old
// default becomes the alternative keepAs, with its figures; the chosen
// point's figures, measured as measured says, replace the default's.
func tunedRecipe(r *flow.Recipe, res *bundle.TuneResult, keepAs, measured, rule string) *flow.Recipe {
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
func tuneGraphs(ctx context.Context, dir string, card flow.Card, valPath, trainPath, format string) (val, train []*graph.Graph, source string, err error) {
	read := func(path string) ([]*graph.Graph, error) {
		f, err := inputFormat(format, path)
		if err != nil {
			return nil, err
		}
		gf, err := readGraphFile(ctx, path, f, card.Molecules)
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
	var opt datasets.Options // the data directory: $LGFLOW_DATA, else ../shared/data
	if val, err = datasets.Load(ctx, name, "val", opt); err != nil {
		return nil, nil, "", err
	}
	if train, err = datasets.Load(ctx, name, "train", opt); err != nil {
		return nil, nil, "", err
	}
	return val, train, "the " + name + " val split", nil
}
