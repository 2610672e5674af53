package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/pipeline"
	"lgflow/tensor"
)

func init() {
	register("train", "train a model bundle (LG-VAE, LG-Flow, sampler.json) from a file of graphs", runTrain)
}

// trainUsage is the synopsis of lgflow train.
const trainUsage = "lgflow train -graphs FILE -out DIR [-val FILE] [-format g6|edgelist|nodelink|smiles] [-validity RULE] [-preset cpu|paper] [-budget 20m] [-cond FILE | -cond-prop NAMES | -cond-attrs KEYS] [-cond-drop P]"

func runTrain(ctx context.Context, args []string) error {
	fs := newFlagSet("train", trainUsage)
	graphsPath := fs.String("graphs", "", "the training graphs: graph6 / digraph6 / sparse6 lines, edge lists (.edges, .edgelist, .el: one graph per block of lines, blocks separated by blank lines), node-link JSON (.json, .jsonl, .ndjson; integer node and edge labels kept) or SMILES (.smi, .smiles, .csv); .gz allowed")
	out := fs.String("out", "", "the bundle's directory: vae.safetensors, flow.safetensors, sampler.json (the recipe and card) and the training and validation graphs, written when training ends; the resumable training state lives in DIR/train")
	valPath := fs.String("val", "", "validation graphs, in a file of the same kinds (default: a tenth of -graphs, at most 256, held out at random)")
	format := fs.String("format", "", "format of -graphs and -val: g6, edgelist, nodelink or smiles (default: from the file name, else g6)")
	directed := fs.Bool("directed", false, "edge lists: the graphs are directed (u v is the edge u -> v)")
	molName := fs.String("mol", "", "SMILES: the molecule encoding, moses or guacamol (default: moses where every atom is one of its types, else guacamol)")
	validity := fs.String("validity", "auto", "the rule V.U.N. counts a sampled graph valid by, stored in the card for lgflow sample, tune and eval: planar (connected and planar), tree, dag, connected, molecule, none, or auto (the strictest of tree, planar, connected and dag that every training graph keeps; molecule for SMILES)")
	preset := fs.String("preset", "cpu", "model sizes: cpu (a 6 × 64 LG-VAE and a 4 × 128 DiT for two cores), paper (the paper's widths, for a GPU) or tiny (tests); k, the latent size and the batches follow from the graphs (pipeline.PlanFor)")
	budget := fs.Duration("budget", 0, "wall time for the whole run, e.g. 20m: the LG-VAE gets 40%, the final measurement 5%, the flow the rest; steps are fitted to it at the first run and kept by the runs that continue it (a finished run is final: train longer in a new directory; 0: the presets' steps)")
	vaeSteps := fs.Int("vae-steps", 0, "override: LG-VAE steps (instead of those the budget fits)")
	flowSteps := fs.Int("flow-steps", 0, "override: LG-Flow steps (instead of those the budget fits)")
	seed := fs.Uint64("seed", 0, "seed of the validation split, the models and the measurement")
	samples := fs.Int("samples", 0, "graphs sampled to measure the bundle and choose its default recipe (default: as many as there are validation graphs, within [32, 256])")
	device := fs.String("device", "cpu", "where the training steps and the denoiser run: cpu or cuda")
	tf32 := fs.Bool("tf32", true, "with -device cuda: float32 matrix products in TensorFloat-32 where the GPU has it")
	conds := addCondFlags(fs, true)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	condDrop, err := conds.dropout(set["cond-drop"])
	if err != nil {
		return err
	}
	switch {
	case *graphsPath == "" || *out == "":
		return usagef("need -graphs and -out")
	case !slices.Contains(pipeline.Sizes, *preset):
		return usagef("unknown -preset %q (want cpu, paper or tiny)", *preset)
	case *validity != "auto" && !slices.Contains(flow.ValidityRules, *validity):
		return usagef("unknown -validity %q (want %s or auto)", *validity, strings.Join(flow.ValidityRules, ", "))
	case *budget < 0 || *vaeSteps < 0 || *flowSteps < 0 || *samples < 0:
		return usagef("-budget, -vae-steps, -flow-steps and -samples must not be negative")
	}
	fmtName, err := inputFormat(*format, *graphsPath)
	if err != nil {
		return err
	}
	data, err := readGraphFile(ctx, *graphsPath, fmtName, *directed, *molName)
	if err != nil {
		return err
	}
	facts, err := pipeline.Inspect(data.graphs)
	if err != nil {
		return data.explain(err)
	}
	if limit := pipeline.MaxNodes[*preset]; facts.MaxNodes > limit {
		i := slices.IndexFunc(data.graphs, func(g *graph.Graph) bool { return g.N() == facts.MaxNodes })
		return fmt.Errorf("%s: the graph has %d nodes; the %s preset trains on graphs of at most %d nodes (-preset paper: %d)", data.where(i), facts.MaxNodes, *preset, limit, pipeline.MaxNodes["paper"])
	}
	rule := *validity
	if rule == "auto" {
		rule = ""
	}
	if rule == "molecule" && data.molecules == "" {
		return usagef("-validity molecule is for SMILES input")
	}
	if err := pipeline.CheckRule(rule, facts.Directed, data.molecules != ""); err != nil {
		return usagef("-validity: %v", err)
	}
	table, err := conds.table(data.graphs, *graphsPath, fmtName)
	if err != nil {
		return err
	}
	train, val := data.graphs, []*graph.Graph(nil)
	valFile := ""
	if *valPath != "" {
		vf, err := readGraphFile(ctx, *valPath, fmtName, *directed, data.molecules)
		if err != nil {
			return err
		}
		if _, err := pipeline.Inspect(vf.graphs); err != nil {
			return vf.explain(err)
		}
		val, valFile = vf.graphs, *valPath
	} else {
		if len(train) < 2 {
			return fmt.Errorf("%s: one graph; holding out validation graphs needs two or more (or give -val)", *graphsPath)
		}
		var held []bool
		train, val, held = holdOut(train, *seed)
		if table != nil {
			table = table.Subset(kept(held))
		}
	}
	var cond *flow.Conditions
	if table != nil {
		if cond, err = table.Conditions(); err != nil {
			return fmt.Errorf("conditions: %w", err)
		}
	}
	backend, gpuStats, err := selectTraining(*device, *tf32)
	if err != nil {
		return err
	}
	hooks := pipeline.TextHooks(stderr)
	if stats := gpuStats(); stats != "" {
		log := hooks.Log
		hooks.Log = func(msg string) { log(msg + stats) }
	}
	r, err := pipeline.TrainBundle(ctx, train, val, pipeline.BundleOptions{Out: *out, Size: *preset, Budget: *budget,
		VAESteps: *vaeSteps, FlowSteps: *flowSteps, Validity: rule, Molecules: data.molecules, Seed: *seed, Samples: *samples,
		Data: flow.Data{File: *graphsPath, Format: fmtName, ValFile: valFile}, Backend: backend, Hooks: hooks, Cond: cond, CondDrop: condDrop})
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "interrupted; run the same command again to continue (state in %s)\n", *out)
		return err
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "%s: %s\n", *out, describeRecipe(r))
	return nil
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
