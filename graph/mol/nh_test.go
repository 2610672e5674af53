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

// FuzzInferAromaticNH decodes small labelled graphs built from the input
// with and without InferAromaticNH. The option may only act where the
// reference's decoding fails to kekulise: a graph that decodes without it
// decodes to the same SMILES with it, and one it saves failed
// kekulisation before. Decoding is deterministic.
func FuzzInferAromaticNH(f *testing.F) {
	f.Add([]byte{5, 0, 0, 0, 0, 1, 0, 1, 3, 1, 2, 3, 2, 3, 3, 3, 4, 3, 4, 0, 3})
	f.Add([]byte{3, 0, 3, 1, 0, 1, 0, 1, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 {
			return
		}
		n := int(data[0])%12 + 1
		if len(data) < 1+n {
			return
		}
		g := graph.New(n)
		g.NodeLabels = make([]int, n)
		for i := range n {
			g.NodeLabels[i] = int(data[1+i]) % MOSES.NumAtomTypes()
		}
		for rest := data[1+n:]; len(rest) >= 3; rest = rest[3:] {
			a, b := int(rest[0])%n, int(rest[1])%n
			if a == b || g.HasEdge(a, b) {
				continue
			}
			g.AddLabeledEdge(a, b, int(rest[2])%4+1)
		}
		plain, perr := MOSES.Decode(g)
		nh, nerr := MOSES.Decode(g, InferAromaticNH(2))
		again, aerr := MOSES.Decode(g, InferAromaticNH(2))
		if nh != again || (nerr == nil) != (aerr == nil) {
			t.Fatalf("not deterministic: %q, %v then %q, %v", nh, nerr, again, aerr)
		}
		if perr == nil && (nerr != nil || nh != plain) {
			t.Fatalf("decodes as %q without the option, as %q, %v with it", plain, nh, nerr)
		}
		var se *SanitizeError
		if perr != nil && nerr == nil && (!errors.As(perr, &se) || se.Kind != KekulizeError) {
			t.Fatalf("saved %q from %v, not a kekulisation error", nh, perr)
		}
	})
}
