package mol

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"lgflow/graph"
)

// The tables in testdata were computed with RDKit 2022.09.3 (Debian
// python3-rdkit) from MOSES and DiGress molecules; testdata/README.md says
// how.

func readTSV(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rows = append(rows, strings.Split(sc.Text(), "\t"))
	}
	return rows
}

// Lowercase SMILES with random edits: validity must agree with RDKit, and
// valid ones must be the molecule RDKit found.
func TestRDKitAromaticMutations(t *testing.T) {
	for _, r := range readTSV(t, "rdkit_aromatic_mutations.tsv") {
		got, err := CanonicalSMILES(r[0])
		want := r[1] == "1"
		if (err == nil) != want {
			t.Errorf("%s: ours %q (%v), RDKit valid=%v", r[0], got, err, want)
			continue
		}
		if want {
			if rc, err := CanonicalSMILES(r[2]); err != nil || (rc != got && !kekuleAmbiguous(r[0])) {
				t.Errorf("%s: ours %s, RDKit %s -> %s (%v)", r[0], got, r[2], rc, err)
			}
		}
	}
}

// kekuleAmbiguous reports whether kekulisation left non-aromatic double
// bonds whose placement RDKit chooses by search order (then its string is
// a different Kekulé form, which is another molecule once written).
func kekuleAmbiguous(s string) bool {
	m, err := ParseSMILES(s)
	if err != nil {
		return false
	}
	for _, b := range m.kekBonds {
		if !m.Bonds[b].Aromatic {
			return true
		}
	}
	return false
}

func TestRDKitDecode(t *testing.T) {
	for _, r := range readTSV(t, "rdkit_decode.tsv") {
		ts := strings.Fields(r[0])
		g := graph.New(len(ts))
		g.NodeLabels = make([]int, len(ts))
		for i, x := range ts {
			g.NodeLabels[i], _ = strconv.Atoi(x)
		}
		for _, e := range strings.Fields(r[1]) {
			p := strings.Split(e, "-")
			a, _ := strconv.Atoi(p[0])
			b, _ := strconv.Atoi(p[1])
			l, _ := strconv.Atoi(p[2])
			g.AddLabeledEdge(a, b, l)
		}
		got, err := MOSES.Decode(g)
		if r[2] == "INVALID" {
			if err == nil {
				t.Errorf("%s | %s: decoded %s, RDKit: invalid", r[0], r[1], got)
			}
			continue
		}
		want, _ := CanonicalSMILES(r[2])
		if err != nil || got != want {
			t.Errorf("%s | %s: got %q (%v), RDKit %s", r[0], r[1], got, err, r[2])
		}
	}
}

func TestRDKitFeatures(t *testing.T) {
	for _, r := range readTSV(t, "rdkit_features.tsv") {
		m, err := ParseSMILES(r[0])
		if err != nil {
			t.Fatal(err)
		}
		f, err := MOSES.Featurize(m)
		if err != nil {
			t.Fatal(err)
		}
		var nodes, edges []string
		for _, v := range f.Nodes {
			nodes = append(nodes, strings.ReplaceAll(strings.Trim(fmt.Sprint(v[:]), "[]"), " ", ","))
		}
		for k, e := range f.Graph.Edges() {
			v := append([]int{e.From, e.To}, f.Edges[k][:]...)
			edges = append(edges, strings.ReplaceAll(strings.Trim(fmt.Sprint(v), "[]"), " ", ","))
		}
		if got := strings.Join(nodes, " "); got != r[1] {
			t.Errorf("%s: node features\n got %s\nwant %s", r[0], got, r[1])
		}
		if got := strings.Join(edges, " "); got != r[2] {
			t.Errorf("%s: edge features\n got %s\nwant %s", r[0], got, r[2])
		}
	}
}

func TestRDKitMorgan(t *testing.T) {
	for _, r := range readTSV(t, "rdkit_morgan.tsv") {
		m, err := ParseSMILES(r[0])
		if err != nil {
			t.Fatal(err)
		}
		var want []uint32
		for _, x := range strings.Fields(r[1]) {
			v, _ := strconv.ParseUint(x, 10, 32)
			want = append(want, uint32(v))
		}
		got := m.MorganIDs(2)
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: Morgan ids\n got %v\nwant %v", r[0], got, want)
		}
	}
}

func TestRDKitScaffolds(t *testing.T) {
	for _, r := range readTSV(t, "rdkit_scaffolds.tsv") {
		m, err := ParseSMILES(r[0])
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.MurckoScaffold()
		if err != nil {
			t.Errorf("%s: %v", r[0], err)
			continue
		}
		got := s.SMILES()
		want := r[1]
		if w, err := CanonicalSMILES(want); err == nil {
			want = w
		}
		if got != want && got != r[1] {
			t.Errorf("%s: scaffold %s, RDKit %s", r[0], got, r[1])
		}
		if n, _ := strconv.Atoi(r[2]); s.Rings().NumRings() != n {
			t.Errorf("%s: scaffold has %d rings, RDKit %d", r[0], s.Rings().NumRings(), n)
		}
	}
}
