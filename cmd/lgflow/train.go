package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"lgflow/dist/nccl"
	"lgflow/flow"
	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/internal/bundle"
	"lgflow/internal/cli"
	"lgflow/internal/progress"
	"lgflow/tensor"
)

func init() {
	register("train", "train a model bundle (LG-VAE, LG-Flow, sampler.json) from a file of graphs", runTrain)
}

// trainUsage is the synopsis of lgflow train.
const trainUsage = "lgflow train -graphs FILE -out DIR [-val FILE] [-format g6|edgelist|edgelist-directed|nodelink|smiles] [-validity RULE] [-preset cpu|paper|tiny] [-budget 20m] [-cond FILE | -cond-prop NAMES | -cond-attrs KEYS] [-cond-drop P]"

// trainFlags are lgflow train's flags.
type trainFlags struct {
	graphs, out, val, format, validity, preset *string
	budget                                     *time.Duration
	seed                                       *uint64
	device                                     *cli.Device
	conds                                      *condFlags
	condDrop                                   float64
}

func parseTrain(args []string) (*trainFlags, error) {
	fs := newFlagSet("train", trainUsage)
	f := &trainFlags{
		graphs:   fs.String("graphs", "", "the training graphs: graph6 / digraph6 / sparse6 lines, edge lists (.edges, .edgelist, .el: one graph per block of lines, blocks separated by blank lines), node-link JSON (.json, .jsonl, .ndjson; integer node and edge labels kept) or SMILES (.smi, .smiles, .csv; the moses encoding where every atom is one of its types, else guacamol); .gz allowed"),
		out:      fs.String("out", "", "the bundle's directory: vae.safetensors, flow.safetensors, sampler.json (the recipe and card) and the training and validation graphs, written when training ends; the resumable training state lives in DIR/train"),
		val:      fs.String("val", "", "validation graphs, in a file of the same kinds (default: a tenth of -graphs, at most 256, held out at random)"),
		format:   addInputFormat(fs),
		validity: fs.String("validity", "auto", "the rule V.U.N. counts a sampled graph valid by, stored in the card for lgflow sample, tune and eval: planar (connected and planar), tree, dag, connected, molecule, none, or auto (the strictest of tree, planar, connected and dag that every training graph keeps; molecule for SMILES)"),
		preset:   fs.String("preset", "cpu", "model sizes: cpu (a 6 × 128 LG-VAE and a 4 × 128 DiT for two cores), paper (the paper's widths, for a GPU) or tiny (tests: 6 steps each); k, the latent size and the batches follow from the graphs (docs/bundle.md)"),
		budget:   fs.Duration("budget", 0, "wall time for the whole run, e.g. 20m: the LG-VAE gets 40%, the flow the rest but the final measurement's time (timed on a few samples); the first run fits the steps to it and re-plans them from the measured rate as it trains, and runs that continue it keep that plan (a finished run is final: train longer in a new directory; 0: the presets' steps)"),
		seed:     fs.Uint64("seed", 0, "seed of the validation split, the models and the measurement"),
		device:   cli.AddDevice(fs),
		conds:    addCondFlags(fs, true),
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	var err error
	if f.condDrop, err = f.conds.dropout(visited(fs)["cond-drop"]); err != nil {
		return nil, err
	}
	switch {
	case *f.graphs == "" || *f.out == "":
		return nil, usagef("need -graphs and -out")
	case !slices.Contains(bundle.Sizes, *f.preset):
		return nil, usagef("unknown -preset %q (want cpu, paper or tiny)", *f.preset)
	case *f.validity != "auto" && !slices.Contains(bundle.ValidityRules, *f.validity):
		return nil, usagef("unknown -validity %q (want %s or auto)", *f.validity, strings.Join(bundle.ValidityRules, ", "))
	case *f.budget < 0:
		return nil, usagef("-budget must not be negative")
	}
	return f, nil
}

func runTrain(ctx context.Context, args []string) (err error) {
	f, err := parseTrain(args)
	if err != nil {
		return err
	}
	comm, err := openComm()
	if err != nil {
		return err
	}
	defer closeComm(comm, &err)
	if ws := os.Getenv("WORLD_SIZE"); comm.Size() == 1 && nccl.TorchrunEnv() && ws != "1" {
		return fmt.Errorf("lgflow train runs on one process (started torchrun-style, WORLD_SIZE=%s): train the stages with train-vae and train-flow", ws)
	}
	if comm.Size() > 1 {
		// The bundle pipeline (tuning, sampling, evaluation) runs on one
		// process; its two training stages are data parallel through
		// train-vae and train-flow.
		return fmt.Errorf("lgflow train runs on one process (started on %d ranks): under mpirun, train the stages with train-vae and train-flow", comm.Size())
	}
	fmtName, err := inputFormat(*f.format, *f.graphs)
	if err != nil {
		return err
	}
	data, err := readGraphFile(ctx, *f.graphs, fmtName, "")
	if err != nil {
		return err
	}
	rule, err := f.check(data)
	if err != nil {
		return err
	}
	table, err := f.conds.table(data.graphs, *f.graphs, fmtName)
	if err != nil {
		return err
	}
	train, val, valFile, table, err := f.split(ctx, data, fmtName, table)
	if err != nil {
		return err
	}
	var set *cond.Set
	if table != nil {
		if set, err = table.Conditions(); err != nil {
			return fmt.Errorf("conditions: %w", err)
		}
	}
	backend, err := f.device.Backend(stderr, true)
	if err != nil {
		return err
	}
	hooks := progress.Text(stderr)
	if f.device.Stats() != "" {
		log := hooks.Log
		hooks.Log = func(msg string) { log(msg + f.device.Stats()) }
	}
	r, err := bundle.TrainBundle(ctx, train, val, bundle.BundleOptions{Out: *f.out, Size: *f.preset, Budget: *f.budget,
		Validity: rule, Molecules: data.molecules, Seed: *f.seed,
		Data: flow.Data{File: *f.graphs, Format: fmtName, ValFile: valFile}, Backend: backend, Hooks: hooks, Cond: set, CondDrop: f.condDrop})
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "interrupted; run the same command again to continue (state in %s)\n", *f.out)
		return err
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "%s: %s\n", *f.out, describeRecipe(r))
	return nil
}

// check checks the graphs read against the preset and the validity rule
// before anything is trained, and returns the rule ("": detect it).
func (f *trainFlags) check(data *graphFile) (string, error) {
	facts, err := bundle.Inspect(data.graphs)
	if err != nil {
		return "", data.explain(err)
	}
	if limit := bundle.MaxNodes[*f.preset]; facts.MaxNodes > limit {
		i := slices.IndexFunc(data.graphs, func(g *graph.Graph) bool { return g.N() == facts.MaxNodes })
		return "", fmt.Errorf("%s: the graph has %d nodes; the %s preset trains on graphs of at most %d nodes (-preset paper: %d)", data.where(i), facts.MaxNodes, *f.preset, limit, bundle.MaxNodes["paper"])
	}
	rule := *f.validity
	if rule == "auto" {
		rule = ""
	}
	if rule == "molecule" && data.molecules == "" {
		return "", usagef("-validity molecule is for SMILES input")
	}
	if err := bundle.CheckRule(rule, facts.Directed, data.molecules != ""); err != nil {
		return "", usagef("-validity: %v", err)
	}
	return rule, nil
}

// split returns the training and validation graphs: -graphs and -val, or
// -graphs with a tenth held out (and the conditions of the graphs kept
// for training).
func (f *trainFlags) split(ctx context.Context, data *graphFile, fmtName string, table *bundle.ConditionTable) (train, val []*graph.Graph, valFile string, _ *bundle.ConditionTable, err error) {
	train = data.graphs
	if *f.val != "" {
		vf, err := readGraphFile(ctx, *f.val, fmtName, data.molecules)
		if err != nil {
			return nil, nil, "", nil, err
		}
		if _, err := bundle.Inspect(vf.graphs); err != nil {
			return nil, nil, "", nil, vf.explain(err)
		}
		return train, vf.graphs, *f.val, table, nil
	}
	if len(train) < 2 {
		return nil, nil, "", nil, fmt.Errorf("%s: one graph; holding out validation graphs needs two or more (or give -val)", *f.graphs)
	}
	var held []bool
	train, val, held = holdOut(train, *f.seed)
	if table != nil {
		table = table.Subset(kept(held))
	}
	return train, val, "", table, nil
}

// holdOut splits gs at random (seeded) into training graphs and a tenth
// of them, at least one and at most 256, for validation. Both keep the
// file's order; held[i] says graph i is a validation graph.
func holdOut(gs []*graph.Graph, seed uint64) (train, val []*graph.Graph, held []bool) {
	k := min(max(1, int(math.Round(float64(len(gs))/10))), 256, len(gs)-1)
	perm := tensor.NewRNG(seed ^ 0x7a1d).Perm(len(gs))
	held = make([]bool, len(gs))
	for _, i := range perm[:k] {
		held[i] = true
	}
	for i, g := range gs {
		if held[i] {
			val = append(val, g)
		} else {
			train = append(train, g)
		}
	}
	return train, val, held
}

// kept returns the indices of the graphs holdOut kept for training (held
// false), in order: the rows of their conditions.
func kept(held []bool) []int {
	var idx []int
	for i, h := range held {
		if !h {
			idx = append(idx, i)
		}
	}
	return idx
}

// describeRecipe summarises a recipe for a last line: the default's
// settings and figures.
func describeRecipe(r *flow.Recipe) string {
	settings := strings.Join(r.Sampler.Describe(), ", ")
	if settings == "" {
		settings = "flow.Sample's defaults"
	}
	f := r.Card.Figures
	var figs []string
	for _, k := range []string{"vun", "valid", "degree", "out_degree", "in_degree", "clustering", "orbit", "spectral", "wavelet"} {
		if v, ok := f[k]; ok {
			figs = append(figs, fmt.Sprintf("%s %g", k, v))
		}
	}
	s := fmt.Sprintf("the recipe samples with %s: %s", settings, strings.Join(figs, ", "))
	if names := r.Names(); len(names) > 0 {
		s += "; alternatives " + strings.Join(names, ", ")
	}
	return s
}
