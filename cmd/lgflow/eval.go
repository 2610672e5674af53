package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/iso"
	"lgflow/internal/bundle"
	"lgflow/internal/progress"
	"lgflow/metrics"
)

func init() {
	register("eval", "compare generated graphs with reference graphs (MMD, validity, V.U.N.)", runEval)
}

// evalUsage is the synopsis of lgflow eval.
const evalUsage = "lgflow eval -gen GEN.g6|GEN.jsonl|GEN.smi -ref TEST [-train TRAIN] [-kind generic|planar|tree|ego|dag|moses] [-validity RULE | -model DIR] [-cond-label NAME [-checker RULE]] [-cond-prop NAME=V,...] [-json]"

// evalFlags are lgflow eval's flags.
type evalFlags struct {
	gen, ref, train, kind, validity, model *string
	asJSON, compat                         *bool
	condLabel, checker, condProp           *string
	kindSet                                bool
}

func parseEval(args []string) (*evalFlags, error) {
	fs := newFlagSet("eval", evalUsage)
	f := &evalFlags{
		gen:       fs.String("gen", "", "generated graphs: graph6 / digraph6 lines, node-link JSON (.json/.jsonl, labels kept; isomorphism tests then match node labels), or SMILES (.smi, MOSES metrics, the filters from the data directory's moses/); .gz allowed"),
		ref:       fs.String("ref", "", "reference graphs, the test split in the paper's tables (SMILES: the SNN / scaffold reference, optional)"),
		train:     fs.String("train", "", "training graphs (novelty, V.U.N., Ego ratio; SMILES: novelty)"),
		kind:      fs.String("kind", "generic", "metric set: generic, planar, tree, ego, dag, or moses (SMILES; implied by a .smi -gen)"),
		validity:  fs.String("validity", "", "count V.U.N. by this rule: planar, tree, dag, connected, molecule (with -model: the bundle's molecule encoding) or none (default: the kind's, or the -model bundle card's)"),
		model:     fs.String("model", "", "the bundle the graphs were sampled from: its card's validity rule (and molecule encoding) applies unless -validity is given, and -kind follows from it unless given"),
		asJSON:    fs.Bool("json", false, "print the report as JSON (raw MMD², rates as fractions)"),
		compat:    fs.Bool("directo-compat", false, "dag: reproduce Directo's degree MMD (swapped in/out degree sequences), as the paper's DAG tables"),
		condLabel: fs.String("cond-label", "", "the label -gen was sampled under (lgflow sample -cond label=NAME): report the fraction of samples -checker assigns to that class (-ref: that class's test graphs)"),
		checker:   fs.String("checker", "", "with -cond-label: the test of the requested class: planar (connected and planar), tree, dag, connected, or molecule (with -model) (default: the label, when it is one of these)"),
		condProp:  fs.String("cond-prop", "", "the property values -gen was sampled under, NAME=VALUE,... of the built-in properties ("+strings.Join(metrics.BuiltinProperties, ", ")+"): report each one's mean absolute error between requested and realised values, and the spread (standard deviation) of -ref's"),
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	f.kindSet = visited(fs)["kind"]
	return f, nil
}

func runEval(ctx context.Context, args []string) error {
	f, err := parseEval(args)
	if err != nil {
		return err
	}
	var prog func(stage string, done, total int)
	if progress.IsTerminal(stderr) {
		prog = stageBars()
	}
	if *f.gen != "" && (*f.kind == "moses" || isSMILESPath(*f.gen)) {
		if *f.condLabel != "" || *f.condProp != "" {
			return usagef("-cond-label and -cond-prop measure graphs, not SMILES: sample graphs (-format nodelink) to measure a condition")
		}
		return evalMolecules(ctx, *f.gen, *f.ref, *f.train, "", *f.asJSON, prog)
	}
	rule, molecules, err := f.rule()
	if err != nil {
		return err
	}
	ce, err := parseCondEval(*f.condLabel, *f.checker, *f.condProp, molecules)
	if err != nil {
		return err
	}
	kind, err := metrics.ParseKind(*f.kind)
	switch {
	case err != nil:
		return usagef("%v", err)
	case *f.gen == "":
		return usagef("missing -gen")
	case *f.ref == "":
		return usagef("missing -ref")
	}
	gen, ref, train, err := readEvalGraphs(*f.gen, *f.ref, *f.train)
	if err != nil {
		return err
	}
	opt := metrics.Options{Kind: kind, DirectoCompat: *f.compat, Progress: prog, NodeLabels: slices.ContainsFunc(slices.Concat(gen, ref), func(g *graph.Graph) bool { return g.NodeLabels != nil })}
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
	return writeEval(rep, cf, *f.asJSON, start)
}

// rule returns the validity rule eval counts V.U.N. by (-validity, else
// -model's card's) and the molecule encoding of -model's card; -kind
// follows from the rule unless given.
func (f *evalFlags) rule() (rule, molecules string, err error) {
	rule = *f.validity
	if *f.model != "" {
		r, err := flow.LoadRecipe(filepath.Join(*f.model, flow.RecipeFile))
		if err != nil {
			return "", "", err
		}
		molecules = r.Card.Molecules
		if rule == "" {
			rule = r.Card.Validity
		}
	}
	if rule != "" && !slices.Contains(bundle.ValidityRules, rule) {
		return "", "", usagef("unknown -validity %q (want %s)", rule, strings.Join(bundle.ValidityRules, ", "))
	}
	if !f.kindSet {
		switch rule {
		case "planar", "tree", "dag":
			*f.kind = rule
		}
	}
	return rule, molecules, nil
}

// readEvalGraphs reads eval's generated, reference and (when given)
// training graphs.
func readEvalGraphs(genPath, refPath, trainPath string) (gen, ref, train []*graph.Graph, err error) {
	if gen, err = readGraphs(genPath); err != nil {
		return nil, nil, nil, err
	}
	if ref, err = readGraphs(refPath); err != nil {
		return nil, nil, nil, err
	}
	if trainPath != "" {
		if train, err = readGraphs(trainPath); err != nil {
			return nil, nil, nil, err
		}
	}
	return gen, ref, train, nil
}

// writeEval prints eval's report (and the condition's figures, if any) as
// a table or as JSON.
func writeEval(rep *metrics.Report, cf *condFigures, asJSON bool, start time.Time) error {
	if asJSON {
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
	if err := rep.WriteTable(stdout, 1); err != nil {
		return err
	}
	if cf != nil {
		cf.write(stdout, 1)
	}
	_, err := fmt.Fprintf(stdout, "evaluated in %.1f s\n", time.Since(start).Seconds())
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
// validity rule (bundle.ValidityTest; molecule with the encoding
// molecules names).
func ruleVUN(ctx context.Context, rep *metrics.Report, rule, molecules string, gen, train []*graph.Graph, opt metrics.Options) error {
	enc, err := bundle.MolEncoding(molecules)
	if err != nil {
		return err
	}
	valid, err := bundle.ValidityTest(rule, enc)
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
