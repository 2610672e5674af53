package mol

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lgflow/graph"
	"lgflow/graph/datasets"
)

// mosesDataDir returns the shared data directory, skipping the test when
// it (or its moses/ folder) is absent.
func mosesDataDir(t *testing.T) string {
	t.Helper()
	dir, err := datasets.DataDir()
	if err != nil {
		t.Skip(err)
	}
	if _, err := os.Stat(filepath.Join(dir, MOSESDir, mosesTestFile)); err != nil {
		t.Skip(err)
	}
	return dir
}

func TestMOSESSplits(t *testing.T) {
	dir := mosesDataDir(t)
	if _, official := MOSESTrainFile(dir); official {
		t.Skip("the official MOSES training file is present; this test checks the substitute splits")
	}
	sizes := map[string]int{"train": 176074 - MOSESValSize, "val": MOSESValSize, "test": 176225}
	got := map[string][]string{}
	for split, want := range sizes {
		s, err := MOSESSMILES(dir, split, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != want {
			t.Errorf("%s: %d molecules, want %d", split, len(s), want)
		}
		got[split] = s
	}
	// The first molecules of the files, in file order.
	if g := got["test"][0]; g != "O=C(C1CCCCC1)N1CC(=O)N2CCCc3ccccc3C2C1" {
		t.Errorf("test[0] = %q", g)
	}
	// train and val partition test.csv.gz.
	train := make(map[string]bool, len(got["train"]))
	for _, s := range got["train"] {
		train[s] = true
	}
	for _, s := range got["val"] {
		if train[s] {
			t.Fatalf("val molecule %s is also in train", s)
		}
	}
	// Deterministic for a seed, different for another.
	again, err := MOSESSMILES(dir, "val", 0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := MOSESSMILES(dir, "val", 1)
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for i := range again {
		if again[i] != got["val"][i] {
			t.Fatalf("val[%d] differs between two loads with seed 0", i)
		}
		if other[i] == again[i] {
			same++
		}
	}
	if same > 50 {
		t.Errorf("seeds 0 and 1 share %d of %d val positions", same, len(again))
	}
}

func TestMOSESLoadRoundTrip(t *testing.T) {
	dir := mosesDataDir(t)
	opt := datasets.Options{Dir: dir}
	calls, last := 0, 0
	opt.Progress = func(done, total int) {
		calls++
		if done < last || total != MOSESValSize {
			t.Errorf("progress(%d, %d) after %d", done, total, last)
		}
		last = done
	}
	gs, err := LoadMOSES(context.Background(), "val", opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != MOSESValSize || last != MOSESValSize || calls == 0 {
		t.Fatalf("%d graphs, progress ended at %d after %d calls", len(gs), last, calls)
	}
	smiles, err := MOSESSMILES(dir, "val", 0)
	if err != nil {
		t.Fatal(err)
	}
	maxN, edgeHist := 0, [4]int{}
	for i, g := range gs {
		maxN = max(maxN, g.N())
		for _, e := range g.Edges() {
			if e.Label < 0 || e.Label > 3 {
				t.Fatalf("graph %d: edge %d-%d has label %d, want bond type 0..3", i, e.From, e.To, e.Label)
			}
			edgeHist[e.Label]++
		}
		for v, l := range g.NodeLabels {
			if l < 0 || l >= MOSES.NumAtomTypes() {
				t.Fatalf("graph %d: node %d has label %d", i, v, l)
			}
		}
		if i%100 != 0 {
			continue
		}
		want, err := CanonicalSMILES(smiles[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := MOSES.DecodeDatasetGraph(g)
		if err != nil {
			t.Fatalf("graph %d (%s): %v", i, smiles[i], err)
		}
		if got != want {
			t.Errorf("graph %d: decoded %s, want %s", i, got, want)
		}
	}
	if maxN > 27 || maxN < 20 {
		t.Errorf("largest molecule has %d heavy atoms, want <= 27 (MOSES)", maxN)
	}
	for b, c := range edgeHist {
		if c == 0 {
			t.Errorf("no bond of type %d in 1000 molecules", b)
		}
	}
}

func TestDatasetGraphLabels(t *testing.T) {
	// Benzonitrile with a ketone: aromatic, single, triple and double bonds.
	m, err := ParseSMILES("N#Cc1ccccc1C(C)=O")
	if err != nil {
		t.Fatal(err)
	}
	g, err := MOSES.ToDatasetGraph(m)
	if err != nil {
		t.Fatal(err)
	}
	// Atoms: N0 C1 c2..c7 C8 C9 O10.
	want := map[[2]int]int{{0, 1}: 2, {1, 2}: 0, {2, 3}: 3, {7, 2}: 3, {7, 8}: 0, {8, 9}: 0, {8, 10}: 1}
	for e, l := range want {
		if got := g.EdgeLabel(e[0], e[1]); got != l {
			t.Errorf("edge %v: label %d, want %d", e, got, l)
		}
	}
	if g.NodeLabels[0] != 1 || g.NodeLabels[10] != 3 { // N, O
		t.Errorf("node labels %v", g.NodeLabels)
	}
	s, err := MOSES.DecodeDatasetGraph(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := m.SMILES(); s != want {
		t.Errorf("round trip %s, want %s", s, want)
	}
	if _, err := MOSES.DecodeDatasetGraph(graph.NewDirected(2)); err == nil {
		t.Error("directed graph decoded")
	}
}

func TestParseGraphsError(t *testing.T) {
	smiles := []string{"CCO", "c1ccccc1", "C[Si](C)C", "CC(", "CCN"}
	for _, w := range []int{1, 3} {
		_, err := MOSES.ParseGraphs(context.Background(), smiles, w, nil)
		var pe *ParseGraphError
		if !errors.As(err, &pe) || pe.Index != 2 {
			t.Fatalf("workers %d: err %v, want a ParseGraphError at index 2", w, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := MOSES.ParseGraphs(ctx, smiles[:2], 1, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestReadSMILESCSV(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string
	}{
		{"SMILES\nCCO\n\nc1ccccc1\n", []string{"CCO", "c1ccccc1"}, ""},
		{"SMILES,SPLIT\nCCO,train\nCCN,test\n", []string{"CCO", "CCN"}, ""},
		{"SPLIT,smiles\ntrain,CCO\r\n", []string{"CCO"}, ""},
		{"CCO\nCCN\n", []string{"CCO", "CCN"}, ""},
		{"SPLIT,SMILES\ntrain\n", nil, "line 2"},
		{"SMILES\n,\n", nil, "line 2: empty"},
	}
	for _, c := range cases {
		got, err := ReadSMILESCSV(strings.NewReader(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestMOSESMissingFile(t *testing.T) {
	dir := t.TempDir()
	for _, split := range []string{"train", "val", "test"} {
		_, err := LoadMOSES(context.Background(), split, datasets.Options{Dir: dir})
		if err == nil || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: err %v, want a not-exist error", split, err)
		}
		want := mosesTestFile
		if split == "test" {
			want = mosesScafFile
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not name %s", split, err, want)
		}
	}
	// A malformed line is reported with the file and line.
	if err := os.MkdirAll(filepath.Join(dir, MOSESDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, MOSESDir, "train.csv"), []byte("SMILES\nCCO\nC1CC\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadMOSES(context.Background(), "train", datasets.Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "train.csv line 3") {
		t.Errorf("malformed train.csv: %v", err)
	}
}

func ExampleEncoding_ToDatasetGraph() {
	m, err := ParseSMILES("C=CC#N") // acrylonitrile
	if err != nil {
		panic(err)
	}
	g, err := MOSES.ToDatasetGraph(m)
	if err != nil {
		panic(err)
	}
	fmt.Println("atom types:", g.NodeLabels)
	for _, e := range g.Edges() {
		fmt.Printf("bond %d-%d: type %d\n", e.From, e.To, e.Label)
	}
	s, err := MOSES.DecodeDatasetGraph(g)
	fmt.Println(s, err)
	// Output:
	// atom types: [0 0 0 1]
	// bond 0-1: type 1
	// bond 1-2: type 0
	// bond 2-3: type 2
	// C=CC#N <nil>
}

func ExampleMOSESSMILES() {
	dir, err := datasets.DataDir()
	if err != nil {
		fmt.Println("no data")
		return
	}
	val, err := MOSESSMILES(dir, "val", 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(val), "validation molecules")
}

// TestDatasetValenceOK checks the valence bound on hand-made graphs: the
// limits of C, N (with its charge allowance), O, F and aromatic bonds.
func TestDatasetValenceOK(t *testing.T) {
	// MOSES atom types: 0 C, 1 N, 2 S, 3 O, 4 F, 5 Cl, 6 Br; bond labels 0
	// single, 1 double, 2 triple, 3 aromatic.
	mk := func(labels []int, bonds ...[3]int) *graph.Graph {
		g := graph.New(len(labels))
		g.NodeLabels = labels
		for _, b := range bonds {
			if err := g.AddLabeledEdge(b[0], b[1], b[2]); err != nil {
				t.Fatal(err)
			}
		}
		return g
	}
	for _, tc := range []struct {
		name string
		g    *graph.Graph
		want bool
	}{
		{"no bonds", mk([]int{0, 1, 4}), true},
		{"CO2", mk([]int{3, 0, 3}, [3]int{0, 1, 1}, [3]int{1, 2, 1}), true},
		{"pentavalent C", mk([]int{0, 0, 0, 0, 0, 0}, [3]int{0, 1, 0}, [3]int{0, 2, 0}, [3]int{0, 3, 0}, [3]int{0, 4, 1}), false},
		{"ammonium-like N (4 bonds)", mk([]int{1, 0, 0, 0, 0}, [3]int{0, 1, 0}, [3]int{0, 2, 0}, [3]int{0, 3, 0}, [3]int{0, 4, 0}), true},
		{"N with 5 bonds", mk([]int{1, 0, 0, 0, 0, 0}, [3]int{0, 1, 0}, [3]int{0, 2, 0}, [3]int{0, 3, 0}, [3]int{0, 4, 0}, [3]int{0, 5, 0}), false},
		{"F with two bonds", mk([]int{4, 0, 0}, [3]int{0, 1, 0}, [3]int{0, 2, 0}), false},
		{"aromatic C with a double bond out", mk([]int{0, 0, 0, 3}, [3]int{0, 1, 3}, [3]int{0, 2, 3}, [3]int{0, 3, 1}), true},
		// RDKit lets an aromatic atom exceed its valence by up to 1.5.
		{"aromatic C with three aromatic bonds and a single", mk([]int{0, 0, 0, 0, 0}, [3]int{0, 1, 3}, [3]int{0, 2, 3}, [3]int{0, 3, 3}, [3]int{0, 4, 0}), true},
		{"aromatic C with a triple bond out", mk([]int{0, 0, 0, 0}, [3]int{0, 1, 3}, [3]int{0, 2, 3}, [3]int{0, 3, 2}), false},
		{"bad bond label", mk([]int{0, 0}, [3]int{0, 1, 7}), false},
	} {
		if got := MOSES.DatasetValenceOK(tc.g); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDatasetValenceOKOnMOSES checks that the valence bound accepts every
// real molecule of the MOSES validation split, as a decoding constraint
// must (it may only remove bonds that make a molecule invalid).
func TestDatasetValenceOKOnMOSES(t *testing.T) {
	dir := mosesDataDir(t)
	smiles, err := MOSESSMILES(dir, "val", 0)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := MOSES.ParseGraphs(context.Background(), smiles, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range gs {
		if !MOSES.DatasetValenceOK(g) {
			t.Fatalf("molecule %d (%s) fails the valence bound", i, smiles[i])
		}
	}
}

// TestDatasetGraphAttrs checks the encoder features ParseGraphs attaches:
// Featurize's vectors without the labels, by atom and by bond.
func TestDatasetGraphAttrs(t *testing.T) {
	m, err := ParseSMILES("N#Cc1ccccc1C(C)=O")
	if err != nil {
		t.Fatal(err)
	}
	g, err := MOSES.ToDatasetGraphWithAttrs(m)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := MOSES.ToDatasetGraph(m)
	if !slices.Equal(g.Edges(), plain.Edges()) || !slices.Equal(g.NodeLabels, plain.NodeLabels) {
		t.Fatal("the graph differs from ToDatasetGraph's")
	}
	a := g.Attrs
	if a == nil || a.NodeDim != 10 || a.EdgeDim != 6 || a.Check(g) != nil {
		t.Fatalf("attrs %+v", a)
	}
	// N0: degree 1, charge index 5, no H, SP, not aromatic, in no ring.
	if got, want := a.Node[:10], []uint8{1, 5, 0, 0, 0, 0, 0, 0, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("nitrile N: %v, want %v", got, want)
	}
	// c3: degree 2 (plus one H), SP2, aromatic, in a 6-ring.
	if got, want := a.Node[30:40], []uint8{3, 5, 1, 1, 1, 0, 0, 0, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("aromatic CH: %v, want %v", got, want)
	}
	f, _ := MOSES.Featurize(m)
	for k, e := range g.Edges() {
		for j := range 6 {
			if got, want := int(a.Edge[k*6+j]), f.Edges[k][j+1]; got != want {
				t.Errorf("bond %d-%d feature %d: %d, want %d", e.From, e.To, j, got, want)
			}
		}
	}
	// A ring bond: c2-c3 is conjugated and in the 6-ring.
	for k, e := range g.Edges() {
		if e.From == 2 && e.To == 3 {
			if got, want := a.Edge[k*6:k*6+6], []uint8{1, 0, 0, 0, 1, 0}; !slices.Equal(got, want) {
				t.Errorf("aromatic bond: %v, want %v", got, want)
			}
		}
	}
}
