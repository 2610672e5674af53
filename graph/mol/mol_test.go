package mol

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"lgflow/graph"
)

// Canonical strings checked against RDKit 2022.09's MolToSmiles; the ones
// marked "ours" are the same molecule written in a different atom order.
func TestCanonicalSMILES(t *testing.T) {
	cases := []struct{ in, want string }{
		{"c1ccccc1", "c1ccccc1"},
		{"C1=CC=CC=C1", "c1ccccc1"}, // Kekulé input, aromatic output
		{"C1C=CC=CC=1", "c1ccccc1"},
		{"c1ccncc1", "c1ccncc1"},
		{"c1cc[nH]c1", "c1cc[nH]c1"},
		{"[nH]1cccc1", "c1cc[nH]c1"},
		{"N1C=CC=C1", "c1cc[nH]c1"},
		{"c1ccoc1", "c1ccoc1"},
		{"c1ccsc1", "c1ccsc1"},
		{"Cn1cccc1", "Cn1cccc1"},
		{"O=c1cc[nH]cc1", "O=c1cc[nH]cc1"},
		{"O=C1C=CNC=C1", "O=c1cc[nH]cc1"},
		{"c1ccc2[nH]ccc2c1", "c1ccc2[nH]ccc2c1"},
		{"c1ccc2ccccc2c1", "c1ccc2ccccc2c1"},
		{"c1ccccc1-c1ccccc1", "c1ccc(-c2ccccc2)cc1"},
		{"C[N+](C)(C)C", "C[N+](C)(C)C"},
		{"CC(=O)[O-]", "CC(=O)[O-]"},
		{"C[N+](=O)[O-]", "C[N+](=O)[O-]"},
		{"CN(=O)=O", "C[N+](=O)[O-]"}, // nitro clean-up
		{"[O-][n+]1ccccc1", "[O-][n+]1ccccc1"},
		{"C1CC%10CC1.C%10", "CC1CCCC1"},
		{"C%(123)CC%(123)", "C1CC1"},
		{"[H]OC([H])([H])[H]", "CO"},
		{"OCC.Cl", "CCO.Cl"},
		{"[Na+].[Cl-]", "[Cl-].[Na+]"},
		{"C[S](=O)(=O)C", "CS(C)(=O)=O"},
		{"CP(=O)(O)O", "CP(=O)(O)O"},
		{"[13CH4]", "[13CH4]"},
		{"C=C1C=CC=C1", "C=C1C=CC=C1"},
		{"c1cc[se]c1", "c1cc[se]c1"},
		{"B(O)(O)c1ccccc1", "OB(O)c1ccccc1"},
		{"C[Si](C)(C)C", "C[Si](C)(C)C"},
		{"c1ccc2cccc2cc1", "c1ccc2cccc-2cc1"}, // azulene
		{"Cl(=O)(=O)(=O)O", "[O-][Cl+3]([O-])([O-])O"},
		{"C[C+](C)(C)C", "C[C+](C)(C)C"},
		{"[CH2]C", "[CH2]C"}, // radical
		{"C[PH](C)(C)(C)(C)C", "C[PH](C)(C)(C)(C)C"},
		{"c1ccc2c(c1)OC(=O)N2", "O=c1[nH]c2ccccc2o1"},
	}
	for _, c := range cases {
		got, err := CanonicalSMILES(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		in  string
		pos int
	}{
		{"", 0},
		{"C1CC", 1},    // unclosed ring
		{"C(C", 1},     // unclosed branch
		{"C)C", 1},     // unmatched ')'
		{"[Xx]C", 1},   // unknown element
		{"C==C", 2},    // two bonds
		{"[CH4", 0},    // unclosed bracket
		{"CC=", 2},     // bond at end
		{"C11", 2},     // ring closes on itself
		{"C1CC1C1", 6}, // ring 1 reopened and left open
		{"C=1CC#1", 6}, // conflicting ring bond symbols
		{"Cx", 1},      // bad character
		{"C..C", 2},    // empty fragment
		{"C%1C", 1},    // '%' needs two digits
		{"[C@XX]", 3},  // junk after chirality
		{"C(=O", 1},    // unclosed branch
	}
	for _, c := range cases {
		_, err := ParseSMILES(c.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a *SyntaxError", c.in, err)
			continue
		}
		if se.Pos != c.pos {
			t.Errorf("%q: error at %d (%v), want %d", c.in, se.Pos, se, c.pos)
		}
	}
}

func TestSanitizeErrors(t *testing.T) {
	cases := []struct {
		in   string
		kind SanitizeErrorKind
		msg  string
	}{
		{"CN(C)(C)(C)C", ValenceError, "Explicit valence for atom # 1 N, 5, is greater than permitted"},
		{"C(C)(C)(C)(C)C", ValenceError, "Explicit valence for atom # 0 C, 5, is greater than permitted"},
		{"C[C-](C)(C)C", ValenceError, "Explicit valence for atom # 1 C, 5, is greater than permitted"},
		{"O=O=O", ValenceError, "Explicit valence for atom # 1 O, 4, is greater than permitted"},
		{"FC(F)(F)(F)F", ValenceError, "Explicit valence for atom # 1 C, 5, is greater than permitted"},
		{"c1cccc1", KekulizeError, "Can't kekulize mol.  Unkekulized atoms: 4"},
		{"c1ccnc1", KekulizeError, ""},
		{"c1ccccc1:c", KekulizeError, "non-ring atom 6 marked aromatic"},
	}
	for _, c := range cases {
		_, err := ParseSMILES(c.in)
		var se *SanitizeError
		if !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a *SanitizeError", c.in, err)
			continue
		}
		if se.Kind != c.kind || (c.msg != "" && se.Msg != c.msg) {
			t.Errorf("%q: got kind %d %q, want %d %q", c.in, se.Kind, se.Msg, c.kind, c.msg)
		}
	}
}

// permuted returns m with its atoms renumbered by a random permutation.
func permuted(m *Mol, rng *rand.Rand) *Mol {
	n := len(m.Atoms)
	perm := rng.Perm(n)
	p := &Mol{Atoms: make([]Atom, n)}
	for i, a := range m.Atoms {
		p.Atoms[perm[i]] = a
	}
	bo := rng.Perm(len(m.Bonds))
	p.Bonds = make([]Bond, len(m.Bonds))
	for k, b := range m.Bonds {
		nb := b
		nb.Begin, nb.End = perm[b.Begin], perm[b.End]
		if rng.IntN(2) == 0 {
			nb.Begin, nb.End = nb.End, nb.Begin
		}
		p.Bonds[bo[k]] = nb
	}
	p.buildAdj()
	return p
}

// The canonical string must not depend on the input atom order, nor on
// whether the input is aromatic or Kekulé.
func TestCanonicalInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := []string{
		"CCOC(C)C(=O)N1CCC(C(=O)OC)c2ccccc21",
		"CCCCn1c(=O)[nH]c(=O)c2c1nc(-c1cnn(C)c1)n2CCOC",
		"O=S1(=O)CCC(c2cc(N3CCOCC3)cc(NC3C45CC(C4)CC34CC(C5)C4)n2)C1",
		"C12C3C4C1C1C2C3C41", // cubane
		"c1ccc2cc3ccccc3cc2c1",
		"Cc1c[se]c2ccc(C)cc12",
		"CC(C)(C)c1ccc(cc1)C(F)(F)F",
		"Cc1cc(C)cc(CC(=O)NCCNC(=O)Nc2cncc(C)c2)c1",
	}
	for _, s := range inputs {
		m, err := ParseSMILES(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		want := m.SMILES()
		forms := []string{m.WriteSMILES(WriteOptions{Kekule: true})}
		for k := 0; k < 8; k++ {
			p := permuted(m, rng)
			forms = append(forms, p.WriteSMILES(WriteOptions{}), p.WriteSMILES(WriteOptions{Kekule: true}))
		}
		for _, f := range forms {
			got, err := CanonicalSMILES(f)
			if err != nil {
				t.Errorf("%s: reparsing %s: %v", s, f, err)
				continue
			}
			if got != want {
				t.Errorf("%s: %s gives %s, want %s", s, f, got, want)
			}
		}
	}
}

func TestLargestFragment(t *testing.T) {
	cases := []struct{ in, want string }{
		{"CCO.Cl", "CCO"},
		{"[Na+].CC(=O)[O-]", "CC(=O)[O-]"},
		{"CC.OO", "CC"}, // tie: the fragment with the lowest atom index
		{"c1ccccc1", "c1ccccc1"},
	}
	for _, c := range cases {
		m, err := ParseSMILES(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.LargestFragment().SMILES(); got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
}

func TestGraphRoundTrip(t *testing.T) {
	for _, s := range []string{"CCOC(C)C(=O)N1CCC(C(=O)OC)c2ccccc21", "Cc1cc(SCC(=O)Nc2cccc3ccccc23)ncn1", "N#Cc1ccc(Br)cc1F", "O=S(=O)(Cl)c1ccccc1"} {
		m, err := ParseSMILES(s)
		if err != nil {
			t.Fatal(err)
		}
		g, err := MOSES.ToGraph(m)
		if err != nil {
			t.Fatal(err)
		}
		if g.N() != m.NumAtoms() || g.M() != m.NumBonds() {
			t.Fatalf("%s: graph %v for %d atoms %d bonds", s, g, m.NumAtoms(), m.NumBonds())
		}
		got, err := MOSES.Decode(g)
		if err != nil {
			t.Fatalf("%s: decode: %v", s, err)
		}
		if want := m.SMILES(); got != want {
			t.Errorf("%s: decoded %s, want %s", s, got, want)
		}
	}
	// an aromatic N-H is not encoded: the graph of pyrrole does not decode
	// (as in DiGress, whose MOSES graphs keep aromatic bonds)
	if m, _ := ParseSMILES("c1cc[nH]c1"); true {
		g, _ := MOSES.ToGraph(m)
		if s, err := MOSES.Decode(g); err == nil {
			t.Errorf("pyrrole graph decoded to %s, want a kekulisation error", s)
		}
	}
	m, _ := ParseSMILES("C[Si](C)(C)C")
	if _, err := MOSES.ToGraph(m); err == nil {
		t.Error("Si is not a MOSES atom type: want an error")
	}
	if g, err := GuacaMol.ToGraph(m); err != nil || g.NodeLabels[1] != 11 {
		t.Errorf("GuacaMol Si: %v %v", g, err)
	}
}

// The DiGress charge heuristic: +1 on N, O or S whose bonds exceed the
// typical valence by exactly one.
func TestChargeHeuristic(t *testing.T) {
	cases := []struct {
		types []int
		edges [][3]int
		want  string
	}{
		{[]int{0, 1, 0, 0, 0}, [][3]int{{0, 1, 1}, {1, 2, 1}, {1, 3, 1}, {1, 4, 1}}, "C[N+](C)(C)C"},
		{[]int{0, 3, 0, 0}, [][3]int{{0, 1, 1}, {1, 2, 1}, {1, 3, 1}}, "C[O+](C)C"},
		{[]int{0, 1, 0, 0, 0, 0}, [][3]int{{0, 1, 1}, {1, 2, 1}, {1, 3, 1}, {1, 4, 1}, {1, 5, 1}}, ""}, // N with 5 bonds
		{[]int{0, 0, 3}, [][3]int{{0, 1, 1}}, "CC"},                                                    // largest fragment
	}
	for _, c := range cases {
		g := graph.New(len(c.types))
		g.NodeLabels = c.types
		for _, e := range c.edges {
			g.AddLabeledEdge(e[0], e[1], e[2])
		}
		got, err := MOSES.Decode(g)
		if c.want == "" {
			if err == nil {
				t.Errorf("%v: decoded %s, want invalid", c.edges, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: got %q (%v), want %q", c.edges, got, err, c.want)
		}
	}
}

func TestTanimoto(t *testing.T) {
	a, b := NewFingerprint(128), NewFingerprint(128)
	for _, i := range []int{1, 5, 70, 127} {
		a.Set(i)
	}
	for _, i := range []int{5, 70, 100} {
		b.Set(i)
	}
	if got := Tanimoto(a, b); got != 2.0/5.0 {
		t.Errorf("Tanimoto = %v, want 0.4", got)
	}
	if a.Count() != 4 || !a.Has(127) || a.Has(2) {
		t.Error("bit operations")
	}
}

func ExampleCanonicalSMILES() {
	for _, s := range []string{"C1=CC=CC=C1O", "Oc1ccccc1", "CN(=O)=O"} {
		c, _ := CanonicalSMILES(s)
		fmt.Println(c)
	}
	_, err := CanonicalSMILES("c1cccc1")
	fmt.Println(err)
	// Output:
	// Oc1ccccc1
	// Oc1ccccc1
	// C[N+](=O)[O-]
	// Can't kekulize mol.  Unkekulized atoms: 4
}

func ExampleEncoding_Decode() {
	// ethanol as a MOSES graph: C, C, O with two single bonds
	g := graph.New(3)
	g.NodeLabels = []int{0, 0, 3}
	g.AddLabeledEdge(0, 1, 1)
	g.AddLabeledEdge(1, 2, 1)
	s, err := MOSES.Decode(g)
	fmt.Println(s, err)
	// Output: CCO <nil>
}

func ExampleInferAromaticNH() {
	// pyrrole as a MOSES graph: four C and one N in an aromatic ring; the
	// graph does not say which atom bears the ring's hydrogen
	g := graph.New(5)
	g.NodeLabels = []int{0, 0, 0, 0, 1}
	for i := range 5 {
		g.AddLabeledEdge(i, (i+1)%5, int(Aromatic))
	}
	_, err := MOSES.Decode(g)
	fmt.Println(err)
	s, err := MOSES.Decode(g, InferAromaticNH(1))
	fmt.Println(s, err)
	// Output:
	// Can't kekulize mol.  Unkekulized atoms: 4
	// c1cc[nH]c1 <nil>
}

func ExampleMol_MorganFingerprint() {
	a, _ := ParseSMILES("c1ccccc1O")
	b, _ := ParseSMILES("c1ccccc1N")
	fa, fb := a.MorganFingerprint(2, 1024), b.MorganFingerprint(2, 1024)
	fmt.Printf("%d %d %.3f\n", fa.Count(), fb.Count(), Tanimoto(fa, fb))
	// Output: 11 11 0.375
}

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
