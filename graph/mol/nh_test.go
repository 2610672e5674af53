package mol

import (
	"errors"
	"testing"

	"lgflow/graph"
)

// TestInferAromaticNH decodes the graphs of molecules whose aromatic
// nitrogens bear hydrogens, which the encodings do not carry: the
// reference's decoding cannot kekulise them, InferAromaticNH gives the
// molecule back (canonical SMILES checked against RDKit 2022.09).
func TestInferAromaticNH(t *testing.T) {
	for _, tc := range []struct {
		smiles string
		maxNH  int
		want   string // "" : still invalid
	}{
		{"c1cc[nH]c1", 0, ""},
		{"c1cc[nH]c1", 1, "c1cc[nH]c1"},
		{"c1ccc2[nH]ccc2c1", 2, "c1ccc2[nH]ccc2c1"},
		{"c1c[nH]cn1", 1, "c1c[nH]cn1"},
		{"O=c1cc[nH]c(=O)[nH]1", 1, ""},
		{"O=c1cc[nH]c(=O)[nH]1", 2, "O=c1cc[nH]c(=O)[nH]1"},
		{"O=c1[nH]c(=O)n(C2CC(O)C(CO)O2)cc1Br", 2, "O=c1[nH]c(=O)n(C2CC(O)C(CO)O2)cc1Br"},
		{"Cc1csc(=NS(=O)(=O)c2ccc(N)cc2)[nH]1", 1, "Cc1csc(=NS(=O)(=O)c2ccc(N)cc2)[nH]1"},
		// no hydrogen needed: decoded as without the option
		{"Cn1cccc1", 2, "Cn1cccc1"},
		{"c1ccncc1", 2, "c1ccncc1"},
	} {
		m, err := ParseSMILES(tc.smiles)
		if err != nil {
			t.Fatal(err)
		}
		g, err := MOSES.ToGraph(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := MOSES.Decode(g, InferAromaticNH(tc.maxNH))
		if tc.want == "" {
			var se *SanitizeError
			if err == nil || !errors.As(err, &se) || se.Kind != KekulizeError {
				t.Errorf("%s, max %d: got %q, %v; want a kekulisation error", tc.smiles, tc.maxNH, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s, max %d: got %q, %v; want %q", tc.smiles, tc.maxNH, got, err, tc.want)
		}
	}
	// an all-carbon aromatic five-ring has no nitrogen to carry the
	// hydrogen: it stays invalid
	g := graph.New(5)
	g.NodeLabels = make([]int, 5)
	for i := range 5 {
		g.AddLabeledEdge(i, (i+1)%5, int(Aromatic))
	}
	if s, err := MOSES.Decode(g, InferAromaticNH(3)); err == nil {
		t.Errorf("aromatic cyclopentadiene decoded as %q", s)
	}
}
