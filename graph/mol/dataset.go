package mol

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"lgflow/graph"
	"lgflow/graph/datasets"
)

// The "moses" dataset (docs/design.md, "Molecules" and "Departures from
// the reference code" 7: the data available here), loaded by LoadMOSES,
// which cmd/lgflow registers with package datasets so that "lgflow data"
// and "lgflow train-vae" know it. Graphs use the MOSES encoding (node label = atom type
// 0..6 for C, N, S, O, F, Cl, Br) with edge label = bond type 0..3 (single,
// double, triple, aromatic): see ToDatasetGraph.
//
// The splits depend on what the data directory's moses/ folder holds:
//
//   - with the official training file (train.csv.gz or train.csv, 1,584,663
//     molecules): train = that file, val = test.csv.gz, test =
//     test_scaffolds.csv.gz, as the paper's code does;
//   - without it (the shared data here): train = test.csv.gz (176,074
//     molecules) minus a held-out slice, val = that slice (the last
//     MOSESValSize molecules of a permutation of the file seeded by
//     Options.Seed), test = test_scaffolds.csv.gz (176,225). Train and val
//     are disjoint and each keeps the file's order.
const (
	// MOSESValSize is the size of the validation slice held out of
	// test.csv.gz when the official training file is absent.
	MOSESValSize = 1000
	// MOSESDir is the folder of the data directory holding the MOSES files.
	MOSESDir = "moses"
)

// MOSES file names inside MOSESDir.
var (
	mosesTrainFiles = []string{"train.csv.gz", "train.csv"}
	mosesTestFile   = "test.csv.gz"
	mosesScafFile   = "test_scaffolds.csv.gz"
)

// MOSESTrainFile returns the path of the official MOSES training file in
// the data directory dir (dir/moses/train.csv.gz or train.csv) and whether
// it exists. When it does not, the "moses" dataset trains on test.csv.gz.
func MOSESTrainFile(dir string) (string, bool) {
	for _, name := range mosesTrainFiles {
		p := filepath.Join(dir, MOSESDir, name)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	return filepath.Join(dir, MOSESDir, mosesTrainFiles[0]), false
}

// smilesRecord is one molecule of a SMILES file with its line number.
type smilesRecord struct {
	smiles string
	line   int
}

// MOSESSMILES returns the SMILES strings of one split ("train", "val" or
// "test") of the "moses" dataset read from the data directory dir, as the
// files spell them (RDKit canonical SMILES); seed selects the held-out
// validation slice when the official training file is absent (see the
// package-level description of the dataset above). A missing file is an
// error that names it.
func MOSESSMILES(dir, split string, seed uint64) ([]string, error) {
	recs, _, err := mosesSplit(dir, split, seed)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.smiles
	}
	return out, nil
}

// mosesSplit reads the records of one split and returns them with the
// path of the file they came from.
func mosesSplit(dir, split string, seed uint64) ([]smilesRecord, string, error) {
	trainPath, official := MOSESTrainFile(dir)
	testPath := filepath.Join(dir, MOSESDir, mosesTestFile)
	switch split {
	case "test":
		p := filepath.Join(dir, MOSESDir, mosesScafFile)
		recs, err := readSMILESFile(p)
		return recs, p, err
	case "train", "val":
	default:
		return nil, "", fmt.Errorf("mol: moses: unknown split %q (valid: %s)", split, strings.Join(datasets.SplitNames, ", "))
	}
	if official {
		p := trainPath
		if split == "val" {
			p = testPath
		}
		recs, err := readSMILESFile(p)
		return recs, p, err
	}
	recs, err := readSMILESFile(testPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w (the MOSES training file %s is absent too; the \"moses\" dataset needs one of them)", err, trainPath)
		}
		return nil, "", err
	}
	if len(recs) <= MOSESValSize {
		return nil, "", fmt.Errorf("mol: moses: %s holds %d molecules, need more than %d to hold out a validation slice", testPath, len(recs), MOSESValSize)
	}
	inVal := heldOut(len(recs), MOSESValSize, seed)
	keep := recs[:0:0]
	for i, r := range recs {
		if inVal[i] == (split == "val") {
			keep = append(keep, r)
		}
	}
	return keep, testPath, nil
}

// heldOut marks the last k indices of a permutation of 0..n-1 drawn from a
// PCG generator seeded by seed.
func heldOut(n, k int, seed uint64) []bool {
	perm := rand.New(rand.NewPCG(seed, 0x6d6f736573)).Perm(n) // "moses"
	mark := make([]bool, n)
	for _, i := range perm[n-k:] {
		mark[i] = true
	}
	return mark
}

// readSMILESFile reads a SMILES CSV file, gzip-compressed when its name
// ends in ".gz". Errors name the file.
func readSMILESFile(path string) ([]smilesRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mol: moses: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("mol: %s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	recs, err := readSMILESCSV(r)
	if err != nil {
		return nil, fmt.Errorf("mol: %s: %w", path, err)
	}
	return recs, nil
}

// ReadSMILESCSV reads the SMILES column of a CSV file such as MOSES's
// train.csv, test.csv or dataset_v1.csv: a header line naming a "SMILES"
// column (any case; other columns such as SPLIT are ignored) followed by
// one molecule per line. A file whose first line names no SMILES column is
// read as headerless, one SMILES per line in the first column. Blank lines
// are skipped; a line with too few columns is an error naming it.
func ReadSMILESCSV(r io.Reader) ([]string, error) {
	recs, err := readSMILESCSV(r)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(recs))
	for i, rec := range recs {
		out[i] = rec.smiles
	}
	return out, nil
}

func readSMILESCSV(r io.Reader) ([]smilesRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	col := 0
	var recs []smilesRecord
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		fields := bytes.Split(b, []byte{','})
		if line == 1 {
			if k := slices.IndexFunc(fields, func(f []byte) bool {
				return strings.EqualFold(string(bytes.TrimSpace(f)), "smiles")
			}); k >= 0 {
				col = k
				continue
			}
		}
		if col >= len(fields) {
			return nil, fmt.Errorf("line %d: %d columns, the SMILES column is number %d", line, len(fields), col+1)
		}
		s := string(bytes.TrimSpace(fields[col]))
		if s == "" {
			return nil, fmt.Errorf("line %d: empty SMILES", line)
		}
		recs = append(recs, smilesRecord{smiles: s, line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return recs, nil
}

// LoadMOSES loads a split of the MOSES molecules as graphs (MOSES
// encoding, ToDatasetGraph's labels). It is a datasets.Loader: a program
// that wants the "moses" dataset behind datasets.Load registers it
// explicitly,
//
//	datasets.Register("moses", mol.LoadMOSES)
//
// as cmd/lgflow does; nothing is registered by importing this package.
func LoadMOSES(ctx context.Context, split string, opt datasets.Options) ([]*graph.Graph, error) {
	dir := opt.Dir
	if dir == "" {
		var err error
		if dir, err = datasets.DataDir(); err != nil {
			return nil, err
		}
	}
	recs, path, err := mosesSplit(dir, split, opt.Seed)
	if err != nil {
		return nil, err
	}
	smiles := make([]string, len(recs))
	for i, r := range recs {
		smiles[i] = r.smiles
	}
	gs, err := MOSES.ParseGraphs(ctx, smiles, opt.Workers, opt.Progress)
	if err != nil {
		var pe *ParseGraphError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("mol: %s line %d: %w", path, recs[pe.Index].line, pe.Err)
		}
		return nil, err
	}
	return gs, nil
}

// ToDatasetGraphWithAttrs is ToDatasetGraph with the encoder features of
// Featurize attached as g.Attrs: per atom the 10 features after its type
// (degree, formal charge + 5, hydrogens, hybridisation, aromatic, ring
// sizes 3-7), per bond the 6 after its type (conjugated, ring sizes 3-7),
// the inputs the reference's encoder reads beside the labels.
func (e *Encoding) ToDatasetGraphWithAttrs(m *Mol) (*graph.Graph, error) {
	f, err := e.Featurize(m)
	if err != nil {
		return nil, err
	}
	g := shiftEdgeLabels(f.Graph, -1)
	a := &graph.Attrs{NodeDim: NodeFeatureLen - 1, EdgeDim: EdgeFeatureLen - 1,
		Node: make([]uint8, 0, len(f.Nodes)*(NodeFeatureLen-1)), Edge: make([]uint8, 0, len(f.Edges)*(EdgeFeatureLen-1))}
	for _, v := range f.Nodes {
		for _, x := range v[1:] {
			a.Node = append(a.Node, uint8(min(max(x, 0), 255)))
		}
	}
	for _, v := range f.Edges {
		for _, x := range v[1:] {
			a.Edge = append(a.Edge, uint8(min(max(x, 0), 255)))
		}
	}
	if err := a.Check(g); err != nil {
		return nil, fmt.Errorf("mol: %w", err)
	}
	g.Attrs = a
	return g, nil
}

// ToDatasetGraph is ToGraph with edge labels shifted down by one: edge
// label = bond type 0..3 (single, double, triple, aromatic), the
// convention of the datasets and of the LG-VAE, whose decoder predicts
// class label+1 for an edge and class 0 for "no bond". ToGraph's labels
// 1..4 are those classes. Node labels are the atom types. Use
// DecodeDatasetGraph to turn such a graph back into SMILES.
func (e *Encoding) ToDatasetGraph(m *Mol) (*graph.Graph, error) {
	g, err := e.ToGraph(m)
	if err != nil {
		return nil, err
	}
	return shiftEdgeLabels(g, -1), nil
}

// DecodeDatasetGraph decodes a graph whose edge labels are bond types 0..3
// (ToDatasetGraph's convention, and that of graphs decoded by an LG-VAE
// trained on the "moses" dataset) into canonical SMILES as Decode does:
// largest fragment, sanitised, with the same options. g is not modified.
func (e *Encoding) DecodeDatasetGraph(g *graph.Graph, opts ...DecodeOption) (string, error) {
	if g.Directed() {
		return "", fmt.Errorf("mol: DecodeDatasetGraph needs an undirected graph")
	}
	return e.Decode(shiftEdgeLabels(g, +1), opts...)
}

// shiftEdgeLabels returns a copy of the undirected graph g with every edge
// label increased by delta (node labels shared with g).
func shiftEdgeLabels(g *graph.Graph, delta int) *graph.Graph {
	return relabelEdges(g, func(ed graph.Edge) int { return ed.Label + delta })
}

// ParseGraphError reports the SMILES that ParseGraphs could not convert.
type ParseGraphError struct {
	// Index is the position of the SMILES in the input.
	Index  int
	SMILES string
	Err    error
}

func (e *ParseGraphError) Error() string {
	return fmt.Sprintf("SMILES %d (%q): %v", e.Index, e.SMILES, e.Err)
}

func (e *ParseGraphError) Unwrap() error { return e.Err }

// ParseGraphs parses and sanitises every SMILES and converts it with
// ToDatasetGraphWithAttrs, on workers goroutines (0: GOMAXPROCS). progress, if not
// nil, is called with the number of molecules done and the total, from one
// goroutine at a time with done increasing. The result, errors included,
// does not depend on workers: if some SMILES fail, the one with the lowest
// index is returned as a *ParseGraphError. Cancelling ctx stops the work
// and returns ctx.Err().
func (e *Encoding) ParseGraphs(ctx context.Context, smiles []string, workers int, progress func(done, total int)) ([]*graph.Graph, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	const chunk = 512
	n := len(smiles)
	out := make([]*graph.Graph, n)
	errs := make([]error, n)
	var (
		next atomic.Int64
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
	)
	for range min(workers, max(1, (n+chunk-1)/chunk)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				lo := int(next.Add(chunk)) - chunk
				if lo >= n {
					return
				}
				hi := min(lo+chunk, n)
				for i := lo; i < hi; i++ {
					m, err := ParseSMILES(smiles[i])
					if err == nil {
						out[i], err = e.ToDatasetGraphWithAttrs(m)
					}
					errs[i] = err
				}
				if progress != nil {
					mu.Lock()
					done += hi - lo
					progress(done, n)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, &ParseGraphError{Index: i, SMILES: smiles[i], Err: err}
		}
	}
	return out, nil
}

// DatasetValenceOK reports whether no atom of g, a graph in
// ToDatasetGraph's convention (edge label = bond type 0..3: single,
// double, triple, aromatic), has more bonds than its element allows: the
// sum of its bond orders (aromatic 1.5) at most the largest allowed
// valence in RDKit's table, plus one for N, O and S, which the decoder's
// charge heuristic (FromGraph) may charge, plus 1.5 for atoms with an
// aromatic bond (RDKit's valence rule for aromatic atoms). It holds for a graph without
// edges and stays true when edges are removed, so it can constrain
// decoding (vae.WithEdgeConstraint); a graph that passes it may still
// fail Decode (aromaticity, fragments). Graphs whose labels fall outside
// the encoding fail it.
func (e *Encoding) DatasetValenceOK(g *graph.Graph) bool {
	if g.Directed() || (g.NodeLabels == nil && g.N() > 0) {
		return false
	}
	twice := make([]int, g.N()) // twice the bond-order sum, so aromatic bonds count 3
	aromatic := make([]bool, g.N())
	for _, ed := range g.Edges() {
		var o int
		switch ed.Label {
		case 0, 1, 2:
			o = 2 * (ed.Label + 1)
		case 3:
			o = 3
			aromatic[ed.From], aromatic[ed.To] = true, true
		default:
			return false
		}
		twice[ed.From] += o
		twice[ed.To] += o
	}
	for i, t := range g.NodeLabels {
		if t < 0 || t >= len(e.AtomTypes) {
			return false
		}
		z := e.AtomTypes[t]
		limit := maxValence(z)
		if z == 7 || z == 8 || z == 16 {
			limit++
		}
		slack := 0
		if aromatic[i] {
			slack = 3
		}
		if limit >= 0 && twice[i] > 2*limit+slack {
			return false
		}
	}
	return true
}
