package pipeline

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"lgflow/graph"
	"lgflow/metrics"
)

// Column is one column of a results table: a metric of the paper's tables.
type Column string

// The columns of the paper's tables.
const (
	ColSampleAcc Column = "sample_acc" // LG-VAE sample accuracy on the test split
	ColDegree    Column = "degree"     // MMD² × 1e3
	ColOutDegree Column = "out_degree"
	ColInDegree  Column = "in_degree"
	ColOrbit     Column = "orbit"
	ColClust     Column = "clustering"
	ColSpectral  Column = "spectral"
	ColWavelet   Column = "wavelet"
	ColRatio     Column = "ratio" // the Ego ratio (a plain number)
	ColValid     Column = "valid" // rates in %
	ColUnique    Column = "unique"
	ColNovel     Column = "novel"
	ColVUN       Column = "vun"
	ColTime      Column = "time" // sampling time in seconds
)

// PaperRow is one row of a table of the paper: a label and the values it
// reports, in the units the table prints (MMD² × 1e3, rates in %, seconds).
// Columns it leaves empty are missing from Values.
type PaperRow struct {
	Label  string
	Values map[Column]float64
}

// Spec says how a dataset goes through the pipeline: which splits train,
// validate and test the models, how samples are evaluated, and what the
// paper reports for it (docs/design.md, "Datasets", "Evaluation" and "The
// paper's figures").
type Spec struct {
	// Name is the datasets.Load name ("planar", "tpu", ...).
	Name string
	// Title is the dataset's name in the paper ("Extended Planar").
	Title string
	// Kind selects the metrics (metrics.Planar, Tree, Ego or DAG).
	Kind metrics.Kind
	// NodeLabels makes the V.U.N. isomorphism tests match node labels, and
	// samples are also written as node-link JSON (TPU Tile op types).
	NodeLabels bool
	// DirectoCompat computes the DAG degree MMDs as Directo's code, and so
	// the paper's tables, do (metrics.Options.DirectoCompat).
	DirectoCompat bool
	// TrainSplit is the split the models learn from; ValSplit the one
	// that selects checkpoints, or "" to hold out the last HoldOut graphs
	// of TrainSplit instead; TestSplit the reference of the evaluation.
	TrainSplit, ValSplit, TestSplit string
	HoldOut                         int
	// Samples is the number of graphs the paper samples; SampleBatch the
	// default sampling batch (smaller for large graphs, to bound memory).
	Samples, SampleBatch int
	// Valid is the validity test (nil for Ego), also the flow's
	// checkpoint-selection score.
	Valid func(*graph.Graph) bool
	// Constraints are the decoding constraints (flow.Sampler.Constraints:
	// planar, forest, tree, dag, connected) that make samples valid by
	// construction where the dataset has some: the recipe "constrained"
	// (Options.Recipe) of a model without one decodes under them, and
	// "complete" completes the samples that decode valid (with Fill as its
	// bound) where they are properties of edges. None of this is the
	// paper's sampler, and the report says so.
	Constraints []string
	// Fill, when not nil, is the edge fill of those constrained samples
	// (flow.Sampler.Fill): the missing pairs of edge confidence at least
	// *Fill are added back, most confident first, while the constraints
	// hold; and the bound of the completion. The shipped models' bounds
	// are in their recipes (pretrained/<dataset>/sampler.json).
	Fill *float64
	// ConstraintName says in reports what constrained decoding enforces.
	ConstraintName string
	// Columns are the table's columns in the paper's order, Paper its rows.
	Columns []Column
	Paper   []PaperRow
	// Notes are printed under the table and stored in report.json: where
	// this setting differs from the paper's.
	Notes []string
}

// row builds a PaperRow from values given in the order of cols; NaN
// leaves a cell empty.
func row(label string, cols []Column, vals ...float64) PaperRow {
	if len(vals) != len(cols) {
		panic(fmt.Sprintf("pipeline: row %q has %d values for %d columns", label, len(vals), len(cols)))
	}
	r := PaperRow{Label: label, Values: map[Column]float64{}}
	for i, v := range vals {
		if v == v { // not NaN
			r.Values[cols[i]] = v
		}
	}
	return r
}

// none marks a cell a paper row leaves empty.
var none = math.NaN()

var (
	synthCols   = []Column{ColDegree, ColOrbit, ColClust, ColSpectral, ColVUN, ColTime, ColSampleAcc}
	planarNCols = []Column{ColSampleAcc, ColDegree, ColOrbit, ColClust, ColSpectral, ColVUN, ColTime}
	egoCols     = []Column{ColDegree, ColOrbit, ColClust, ColSpectral, ColRatio, ColTime}
	dagCols     = []Column{ColOutDegree, ColInDegree, ColClust, ColSpectral, ColWavelet, ColValid, ColUnique, ColNovel, ColVUN, ColTime}
)

// planarFill is Extended Planar's Spec.Fill: pairs of edge probability
// down to about 0.018 may fill a constrained sample. planarNFill is the
// larger planar datasets' (about 0.0003), whose autoencoders are less sure
// of their edges; chosen on Planar-128's validation split (docs/results.md,
// "Constrained decoding: the edge fill").
var planarFill, planarNFill = -4.0, -8.0

// specs holds the datasets of the paper (docs/design.md, "The paper's
// figures").
var specs = map[string]Spec{
	"planar": {Name: "planar", Title: "Extended Planar", Kind: metrics.Planar, Valid: metrics.IsValidPlanar, Constraints: []string{"planar", "connected"}, ConstraintName: "planarity and connectivity",
		// The bound chosen on the validation split (docs/results.md,
		// "Constrained decoding: the edge fill").
		Fill:       &planarFill,
		TrainSplit: "train", ValSplit: "val", TestSplit: "test", Samples: 256, SampleBatch: 256,
		Columns: synthCols,
		Paper: []PaperRow{
			row("LG-Flow (paper, L40)", synthCols, 0.3, 0.4, 10.0, 1.3, 99.4, 8.9, 0.9961),
			row("DeFoG (paper)", synthCols, 0.3, 0.1, 9.7, 1.3, 99.6, 890, none),
		}},
	"tree": {Name: "tree", Title: "Extended Tree", Kind: metrics.Tree, Valid: metrics.IsValidTree, Constraints: []string{"tree"}, ConstraintName: "spanning trees of the most confident edges",
		TrainSplit: "train", ValSplit: "val", TestSplit: "test", Samples: 256, SampleBatch: 256,
		Columns: synthCols,
		Paper: []PaperRow{
			row("LG-Flow (paper, L40)", synthCols, 0.3, 0.0, 0.0, 1.6, 98.3, 14.0, 0.9844),
			row("DeFoG (paper)", synthCols, 0.1, 0.0, 0.0, 1.2, 98.1, 890, none),
		}},
	"ego": {Name: "ego", Title: "Ego", Kind: metrics.Ego, Constraints: []string{"connected"}, ConstraintName: "connectivity (each sample's components joined by their most confident pairs)",
		TrainSplit: "train", ValSplit: "val", TestSplit: "test", Samples: 151, SampleBatch: 151,
		Columns: egoCols,
		Paper: []PaperRow{
			row("LG-Flow (paper, L40)", egoCols, 0.6, 14.7, 16.5, 3.0, 2.5, 11.6),
			row("DeFoG (paper)", egoCols, 1.8, 21.4, 30.7, 6.2, 5.2, 1.3e4),
			row("train set (paper)", egoCols, 0.2, 6.8, 7.1, 1.0, 1.0, none),
		},
		Notes: []string{"the Ego validation split is a subset of the training split (DeFoG's split, as the paper)"}},
	"price": {Name: "price", Title: "Price DAGs", Kind: metrics.DAG, DirectoCompat: true, Valid: metrics.IsValidDAG, Constraints: []string{"dag"}, ConstraintName: "acyclicity",
		TrainSplit: "train", ValSplit: "val", TestSplit: "test", Samples: 256, SampleBatch: 256,
		Columns: dagCols,
		Paper: []PaperRow{
			row("LG-Flow (paper, L40)", dagCols, 2.7, 0.3, 12.6, 5.5, 0.6, none, none, none, 98.8, 4.5),
			row("Directo (paper)", dagCols, 2.5, 0.2, 9.1, 2.8, 0.5, none, none, none, 98.9, 1.1e3),
		},
		Notes: []string{"degree MMDs as Directo's code computes them (degree sequences, in and out swapped), as in the paper's DAG table",
			"the paper's Price metrics use the validation split as reference; here the test split"}},
	"tpu": {Name: "tpu", Title: "TPU Tile", Kind: metrics.DAG, DirectoCompat: true, NodeLabels: true, Valid: metrics.IsValidDAG, Constraints: []string{"dag"}, ConstraintName: "acyclicity",
		TrainSplit: "val", ValSplit: "", HoldOut: 63, TestSplit: "test", Samples: 40, SampleBatch: 40,
		Columns: dagCols,
		Paper: []PaperRow{
			row("LG-Flow (paper, L40)", dagCols, 12.8, 81.8, 5.9, 8.1, 4.0, 98.5, 94.0, 77.5, 74.5, 0.5),
			row("Directo (paper)", dagCols, 3.9, 37.6, 21.1, 12.6, 6.2, 90.5, 90.5, 97.5, 80.5, 340),
			row("train set (paper)", dagCols, 0.3, 0.3, 0.7, 0.6, 0.2, 100, 100, 0, 0, none),
		},
		Notes: []string{"the paper's TPU Tile train split (5,040 graphs) is not available here: the models train on the val split " +
			"(630 graphs; -train holds out the last 63 for validation) and are evaluated against the test split (631); novelty is measured against the val split",
			"degree MMDs as Directo's code computes them (degree sequences, in and out swapped), as in the paper's DAG table",
			"V.U.N. isomorphism tests match node labels (op types)"}},
}

func init() {
	// Planar-N (the paper's "larger planar graphs" table; docs/design.md,
	// "The paper's figures"): the columns are
	// sample accuracy / Deg / Orbit / Clust / Spec / VUN / time.
	for _, p := range []struct {
		n         int
		lg, defog []float64
		batch     int
	}{
		{128, []float64{1.0, 0.1, 0.3, 4.4, 0.4, 99.1, 11.2}, []float64{none, 0.0, 0.7, 3.1, 1.4, 91.9, 3.8e3}, 128},
		{256, []float64{0.9727, 0.2, 2.0, 17.1, 0.2, 97.9, 57.2}, []float64{none, 0.8, 28.6, 49.6, 2.9, 16.8, 1.5e4}, 64},
		{512, []float64{0.8945, 0.2, 1.1, 20.3, 0.1, 84.4, 130}, []float64{none, 1.2, 56.5, 114.8, 1.5, 1.4, 6.1e4}, 32},
	} {
		name := fmt.Sprintf("planar-%d", p.n)
		specs[name] = Spec{Name: name, Title: fmt.Sprintf("Planar-%d", p.n), Kind: metrics.Planar, Valid: metrics.IsValidPlanar, Constraints: []string{"planar", "connected"}, ConstraintName: "planarity and connectivity",
			Fill:       &planarNFill,
			TrainSplit: "train", ValSplit: "val", TestSplit: "test", Samples: 256, SampleBatch: p.batch,
			Columns: planarNCols,
			Paper: []PaperRow{
				row("LG-Flow (paper, L40)", planarNCols, p.lg...),
				row("DeFoG (paper)", planarNCols, p.defog...),
			}}
	}
}

// Names lists the datasets the pipeline runs, sorted.
func Names() []string {
	names := make([]string, 0, len(specs))
	for k := range specs {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the Spec of a dataset.
func Lookup(name string) (Spec, error) {
	s, ok := specs[name]
	if !ok {
		hint := ""
		if name == "moses" {
			hint = " (molecules have their own example: go run ./examples/moses)"
		}
		return Spec{}, fmt.Errorf("pipeline: unknown dataset %q%s (have %s)", name, hint, strings.Join(Names(), ", "))
	}
	return s, nil
}
