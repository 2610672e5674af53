package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/graph/mol"
	"lgflow/metrics/moses"
	"lgflow/vae"
)

// Sample output formats of "lgflow sample -format".
const (
	formatG6       = "g6"       // graph6 / digraph6 lines, no labels
	formatNodeLink = "nodelink" // networkx node-link JSON Lines, labels kept
	formatSMILES   = "smiles"   // one SMILES per line, "None" when invalid
)

// isSMILESPath reports whether a file name says SMILES: .smi, .smiles or
// .csv, optionally followed by .gz.
func isSMILESPath(path string) bool {
	p := strings.TrimSuffix(strings.ToLower(path), ".gz")
	return strings.HasSuffix(p, ".smi") || strings.HasSuffix(p, ".smiles") || strings.HasSuffix(p, ".csv")
}

// isG6Path reports whether a file name says graph6, digraph6 or sparse6
// lines: .g6, .d6 or .s6, optionally followed by .gz.
func isG6Path(path string) bool {
	p := strings.TrimSuffix(strings.ToLower(path), ".gz")
	return strings.HasSuffix(p, ".g6") || strings.HasSuffix(p, ".d6") || strings.HasSuffix(p, ".s6")
}

// sampleFormat resolves -format: the named format, or the one the output
// name implies (g6 when it implies none).
func sampleFormat(format, out string) (string, error) {
	switch format {
	case formatG6, formatNodeLink, formatSMILES:
		return format, nil
	case "":
		switch {
		case graph.IsNodeLinkPath(out):
			return formatNodeLink, nil
		case isSMILESPath(out):
			return formatSMILES, nil
		}
		return formatG6, nil
	}
	return "", fmt.Errorf("unknown format %q (want g6, nodelink or smiles)", format)
}

// outputFlags are the output flags of sample and recon: the file of
// graphs, its format and the decoding of SMILES.
type outputFlags struct {
	path, format *string
	inferNH      *int
	resolved     string // the format, once check or resolve chose it
}

// addOutputFlags registers -o (with usage and its default, def), -format
// and -infer-nh on fs.
func addOutputFlags(fs *flag.FlagSet, usage, def string) *outputFlags {
	return &outputFlags{
		path: fs.String("o", def, usage),
		format: fs.String("format", "", "output format: g6 (graph6 / digraph6 lines, no labels), nodelink (networkx node-link JSON, one graph per line, with node and edge labels) or smiles (one SMILES per line, \"None\" for a sample that is no valid molecule, in the encoding of the bundle's card, else the one whose atom and bond types the LG-VAE decodes); "+
			"default: from the -o name (.jsonl/.json: nodelink, .smi: smiles, .g6/.d6: g6), else the format that fits the model's graphs (a bundle's card says it: smiles for molecules; else nodelink for labelled graphs, g6 for others)"),
		inferNH: fs.Int("infer-nh", mol.DefaultInferNH, "with -format smiles: read up to N aromatic nitrogens as [nH] where a molecule cannot be kekulised otherwise, since the encoding carries no hydrogens (mol.InferAromaticNH; 0: the paper's decoding, which loses 10% of MOSES's own molecules)"),
	}
}

// check checks -format and chooses the format by it or by the -o name.
func (o *outputFlags) check() error {
	f, err := sampleFormat(*o.format, *o.path)
	if err != nil {
		return usagef("%v", err)
	}
	o.resolved = f
	return nil
}

// given reports whether the format follows from the flags rather than
// from the model.
func (o *outputFlags) given() bool {
	return *o.format != "" || graph.IsNodeLinkPath(*o.path) || isSMILESPath(*o.path) || isG6Path(*o.path)
}

// resolve chooses the format that fits m's graphs where the flags give
// none, and returns the molecule encoding of SMILES output (nil for
// other formats): the bundle card's, else the one the LG-VAE's classes
// are the atom and bond types of.
func (o *outputFlags) resolve(m *flow.Model) (*mol.Encoding, error) {
	if !o.given() {
		o.resolved = modelFormat(m)
	}
	if o.resolved != formatSMILES {
		return nil, nil
	}
	if m.Recipe != nil && m.Recipe.Card.Molecules != "" {
		return cardMolEncoding(m.Recipe.Card.Molecules, m.VAE.Cfg)
	}
	return molEncoding(m.VAE.Cfg)
}

// write writes gs to -o in the format (SMILES with enc).
func (o *outputFlags) write(gs []*graph.Graph, enc *mol.Encoding) error {
	return writeSamples(*o.path, gs, o.resolved, enc, mol.InferAromaticNH(*o.inferNH))
}

// molEncoding returns the molecule encoding whose atom and bond types an
// LG-VAE with configuration cfg decodes: moses or guacamol.
func molEncoding(cfg vae.Config) (*mol.Encoding, error) {
	for _, enc := range []*mol.Encoding{mol.MOSES, mol.GuacaMol} {
		if !cfg.Directed && cfg.NodeClasses == enc.NumAtomTypes() && cfg.EdgeClasses == enc.NumBondTypes()-1 {
			return enc, nil
		}
	}
	return nil, fmt.Errorf("the LG-VAE decodes %d node and %d edge classes (directed %v), not the atom and bond types of the moses (%d, %d) or guacamol (%d, %d) encoding: it was not trained on molecules",
		cfg.NodeClasses, cfg.EdgeClasses, cfg.Directed, mol.MOSES.NumAtomTypes(), mol.MOSES.NumBondTypes()-1, mol.GuacaMol.NumAtomTypes(), mol.GuacaMol.NumBondTypes()-1)
}

// writeSamples writes gs in the format to path ("-": standard output),
// atomically, gzip-compressed when the name ends in .gz. For SMILES every
// graph becomes its molecule's canonical SMILES (largest fragment,
// sanitised, decoded with opts), or "None" when it is no valid molecule.
func writeSamples(path string, gs []*graph.Graph, format string, enc *mol.Encoding, opts ...mol.DecodeOption) error {
	write := func(w io.Writer) error {
		switch format {
		case formatNodeLink:
			return graph.WriteNodeLinks(w, gs)
		case formatSMILES:
			var b strings.Builder
			for _, g := range gs {
				s, err := enc.DecodeDatasetGraph(g, opts...)
				if err != nil {
					s = "None"
				}
				b.WriteString(s)
				b.WriteByte('\n')
			}
			_, err := io.WriteString(w, b.String())
			return err
		}
		return graph.WriteGraphs(w, gs)
	}
	if path == "-" {
		return write(stdout)
	}
	return graph.WriteFileAtomic(path, func(w io.Writer) error {
		if !strings.HasSuffix(path, ".gz") {
			return write(w)
		}
		zw := gzip.NewWriter(w)
		if err := write(zw); err != nil {
			return err
		}
		return zw.Close()
	})
}

// readGraphs reads a file of graphs: node-link JSON (.json, .jsonl,
// .ndjson, labels kept) or graph6 / digraph6 / sparse6 lines, optionally
// gzip-compressed. An empty file is an error.
func readGraphs(path string) ([]*graph.Graph, error) {
	gs, err := graph.ReadAnyFile(path)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, fmt.Errorf("%s: no graphs", path)
	}
	return gs, nil
}

// molReport is the JSON form of the MOSES metrics: rates as fractions,
// null where not computed.
type molReport struct {
	N       int                 `json:"n"`
	NValid  int                 `json:"n_valid"`
	Valid   float64             `json:"valid"`
	Unique  map[string]*float64 `json:"unique"`
	Novelty *float64            `json:"novelty"`
	Filters *float64            `json:"filters"`
	SNN     *float64            `json:"snn"`
	Scaf    *float64            `json:"scaf"`
}

func orNull(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// evalMolecules computes the MOSES metrics of generated SMILES: validity,
// unique@1000, unique@10000 and uniqueness, novelty against the training
// SMILES, the MOSES filters (from filtersDir: mcf.csv and wehi_pains.csv;
// "" looks in the data directory's moses/ folder), and SNN and scaffold
// similarity against the reference SMILES. Empty paths skip the metrics
// that need them.
func evalMolecules(ctx context.Context, genPath, refPath, trainPath, filtersDir string, asJSON bool, progress func(stage string, done, total int)) error {
	gen, err := readSMILESFile(genPath)
	if err != nil {
		return err
	}
	if len(gen) == 0 {
		return fmt.Errorf("%s: no SMILES", genPath)
	}
	opt := moses.Options{UniqueK: []int{0, 1000, 10000}, Progress: progress}
	if trainPath != "" {
		if opt.Train, err = readSMILESFile(trainPath); err != nil {
			return err
		}
	}
	if refPath != "" {
		if opt.Ref, err = readSMILESFile(refPath); err != nil {
			return err
		}
	}
	if filtersDir == "" {
		if dir, err := datasets.DataDir(); err == nil {
			if _, err := os.Stat(filepath.Join(dir, mol.MOSESDir, "mcf.csv")); err == nil {
				filtersDir = filepath.Join(dir, mol.MOSESDir)
			}
		}
	}
	if filtersDir != "" {
		if opt.Filters, err = moses.LoadFilters(filtersDir); err != nil {
			return err
		}
	}
	r, err := moses.Evaluate(ctx, gen, opt)
	if err != nil {
		return err
	}
	rep := molReport{N: r.N, NValid: r.NValid, Valid: r.Valid, Unique: map[string]*float64{},
		Novelty: orNull(r.Novelty), Filters: orNull(r.Filters), SNN: orNull(r.SNN), Scaf: orNull(r.Scaf)}
	ks := make([]int, 0, len(r.Unique))
	for k, v := range r.Unique {
		name := "all"
		if k > 0 {
			name = fmt.Sprint(k)
		}
		rep.Unique[name] = orNull(v)
		ks = append(ks, k)
	}
	if asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	sort.Ints(ks)
	fmt.Fprintf(stdout, "molecules: %d generated, %d valid (MOSES metrics; rates in %%)\n", r.N, r.NValid)
	fmt.Fprintf(stdout, "%-14s %8.1f\n", "valid", 100*r.Valid)
	for _, k := range ks {
		name := "unique"
		if k > 0 {
			name = fmt.Sprintf("unique@%d", k)
		}
		fmt.Fprintf(stdout, "%-14s %8s\n", name, pctOrNA(r.Unique[k]))
	}
	for _, m := range []struct {
		name string
		v    float64
		pct  bool
	}{{"novel", r.Novelty, true}, {"filters", r.Filters, true}, {"snn", r.SNN, false}, {"scaf", r.Scaf, true}} {
		s := pctOrNA(m.v)
		if !m.pct && !math.IsNaN(m.v) {
			s = fmt.Sprintf("%.3f", m.v)
		}
		fmt.Fprintf(stdout, "%-14s %8s\n", m.name, s)
	}
	return nil
}

func pctOrNA(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", 100*v)
}
