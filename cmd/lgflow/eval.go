package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/iso"
	"lgflow/internal/progress"
	"lgflow/metrics"
	"lgflow/pipeline"
)

func init() {
	register("eval", "compare generated graphs with reference graphs (MMD, validity, V.U.N.)", runEval)
}

func runEval(ctx context.Context, args []string) error {
	fs := newFlagSet("eval", "lgflow eval -gen GEN.g6|GEN.jsonl|GEN.smi -ref TEST [-train TRAIN] [-kind generic|planar|tree|ego|dag|moses] [-validity RULE | -model DIR] [-cond-label NAME [-checker RULE]] [-cond-prop NAME=V,...] [-json]")
	genPath := fs.String("gen", "", "generated graphs: graph6 / digraph6 lines, node-link JSON (.json/.jsonl, labels kept), or SMILES (.smi, MOSES metrics); .gz allowed")
	refPath := fs.String("ref", "", "reference graphs, the test split in the paper's tables (SMILES: the SNN / scaffold reference, optional)")
	trainPath := fs.String("train", "", "training graphs (novelty, V.U.N., Ego ratio; SMILES: novelty)")
	kindName := fs.String("kind", "generic", "metric set: generic, planar, tree, ego, dag, or moses (SMILES; implied by a .smi -gen)")
	filters := fs.String("filters", "", "moses: directory holding mcf.csv and wehi_pains.csv for the Filters metric (default: the data directory's moses/ when present)")
	asJSON := fs.Bool("json", false, "print the report as JSON (raw MMD², rates as fractions)")
	emd := fs.Bool("emd", false, "use GRAN's Gaussian-EMD kernels instead of Gaussian-TV")
	compat := fs.Bool("directo-compat", false, "dag: reproduce Directo's degree MMD (swapped in/out degree sequences)")
	labels := fs.Bool("node-labels", false, "isomorphism tests respect node labels (TPU Tile)")
	isoTimeout := fs.Duration("iso-timeout", 0, "time limit per isomorphism look-up (0: 5s for dag, none otherwise; <0: none)")
	validity := fs.String("validity", "", "count V.U.N. by this rule: planar, tree, dag, connected, molecule (with -model: the bundle's molecule encoding) or none (default: the kind's, or the -model bundle card's)")
	modelDir := fs.String("model", "", "the bundle the graphs were sampled from: its card's validity rule (and molecule encoding) applies unless -validity is given, and -kind follows from it unless given")
	decimals := fs.Int("decimals", 1, "decimals in the table")
	showProgress := fs.Bool("progress", false, "report progress on standard error")
	condLabel := fs.String("cond-label", "", "the label -gen was sampled under (lgflow sample -cond label=NAME): report the fraction of samples -checker assigns to that class (-ref: that class's test graphs)")
	checker := fs.String("checker", "", "with -cond-label: the test of the requested class: planar (connected and planar), tree, dag, connected, or molecule (with -model) (default: the label, when it is one of these)")
	condProp := fs.String("cond-prop", "", "the property values -gen was sampled under, NAME=VALUE,... of the built-in properties ("+strings.Join(metrics.BuiltinProperties, ", ")+"): report each one's mean absolute error between requested and realised values, and the spread (standard deviation) of -ref's")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *genPath != "" && (*kindName == "moses" || isSMILESPath(*genPath)) {
		if *condLabel != "" || *condProp != "" {
			return usagef("-cond-label and -cond-prop measure graphs, not SMILES: sample graphs (-format nodelink) to measure a condition")
		}
		var prog func(stage string, done, total int)
		if *showProgress {
			prog = stageBars()
		}
		return evalMolecules(ctx, *genPath, *refPath, *trainPath, *filters, *asJSON, prog)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	rule, molecules := *validity, ""
	if *modelDir != "" {
		r, err := flow.LoadRecipe(filepath.Join(*modelDir, flow.RecipeFile))
		if err != nil {
			return err
		}
		molecules = r.Card.Molecules
		if rule == "" {
			rule = r.Card.Validity
		}
	}
	ce, err := parseCondEval(*condLabel, *checker, *condProp, molecules)
	if err != nil {
		return err
	}
	if rule != "" && !slices.Contains(flow.ValidityRules, rule) {
		return usagef("unknown -validity %q (want %s)", rule, strings.Join(flow.ValidityRules, ", "))
	}
	if !set["kind"] {
		switch rule {
		case "planar", "tree", "dag":
			*kindName = rule
		}
	}
	kind, err := metrics.ParseKind(*kindName)
	switch {
	case err != nil:
		return usagef("%v", err)
	case *genPath == "":
		return usagef("missing -gen")
	case *refPath == "":
		return usagef("missing -ref")
	case *decimals < 0:
		return usagef("-decimals must be >= 0")
	}
	read := func(path string) ([]*graph.Graph, error) {
		if path == "" {
			return nil, nil
		}
		return readGraphs(path)
	}
	gen, err := read(*genPath)
	if err != nil {
		return err
	}
	ref, err := read(*refPath)
	if err != nil {
		return err
	}
	train, err := read(*trainPath)
	if err != nil {
		return err
	}
	opt := metrics.Options{Kind: kind, EMD: *emd, DirectoCompat: *compat, NodeLabels: *labels, IsoTimeout: *isoTimeout}
	if *showProgress {
		opt.Progress = stageBars()
	}
	start := time.Now()
	if kind == metrics.Generic && len(gen) > 0 && gen[0].Directed() && rule != "" {
		opt.Kind = metrics.DAG // the statistics of directed graphs
	}
	rep, err := metrics.Evaluate(ctx, gen, ref, train, opt)
	if err != nil {
		return err
	}
	if rule != "" {
		if err := ruleVUN(ctx, rep, rule, molecules, gen, train, opt); err != nil {
			return err
		}
	}
	cf, err := ce.measure(gen, ref)
	if err != nil {
		return err
	}
	if *asJSON {
		var v any = rep
		if cf != nil {
			v = struct {
				*metrics.Report
				Condition *condFigures `json:"condition"`
			}{rep, cf}
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	if err := rep.WriteTable(stdout, *decimals); err != nil {
		return err
	}
	if cf != nil {
		cf.write(stdout, *decimals)
	}
	_, err = fmt.Fprintf(stdout, "evaluated in %.1f s\n", time.Since(start).Seconds())
	return err
}

// stageBars returns a progress callback drawing one bar per stage on
// standard error.
func stageBars() func(stage string, done, total int) {
	var mu sync.Mutex
	bars := map[string]func(done, total int){}
	return func(stage string, done, total int) {
		mu.Lock()
		bar, ok := bars[stage]
		if !ok {
			bar = progress.Bar(stderr, stage)
			bars[stage] = bar
		}
		mu.Unlock()
		bar(done, total)
	}
}

// ruleVUN replaces the report's validity and V.U.N. by those of a
// validity rule (pipeline.ValidityTest; molecule with the encoding
// molecules names).
func ruleVUN(ctx context.Context, rep *metrics.Report, rule, molecules string, gen, train []*graph.Graph, opt metrics.Options) error {
	enc, err := pipeline.MolEncoding(molecules)
	if err != nil {
		return err
	}
	valid, err := pipeline.ValidityTest(rule, enc)
	if err != nil {
		return usagef("%v", err)
	}
	vopt := metrics.VUNOptions{Iso: iso.Options{NodeLabels: opt.NodeLabels}, Timeout: opt.IsoTimeout}
	if opt.Kind == metrics.DAG && opt.IsoTimeout == 0 {
		vopt.Timeout = 5 * time.Second
	}
	v, err := metrics.VUN(ctx, gen, train, valid, vopt)
	if err != nil {
		return err
	}
	rep.Valid, rep.Unique = &v.Valid, &v.Unique
	if len(train) > 0 {
		rep.Novel, rep.VUN = &v.Novel, &v.VUN
	}
	return nil
}
