package smarts

import (
	"fmt"
	"testing"

	"lgflow/graph/mol"
)

// Expected matches computed with RDKit 2022.09 (HasSubstructMatch on
// Chem.AddHs of the molecule).
var smartsMols = []string{"CC(=O)O", "c1ccccc1Cl", "C1OC1C=CC#N", "CSSC", "c1cc[nH]c1", "CN=NC", "BrCC(Br)CBr", "C[N+](C)(C)C", "CC(=O)[O-]", "c1ccc2ccccc2c1", "NCC(=O)N", "ClCCCl", "c1ccncc1Br", "C1CC2CCC1C2", "CN=C=O", "CN(C)C"}

var smartsCases = []struct {
	pattern string
	matches []bool // per smartsMols
}{
	{`[#6]=&!@[#6]-[#6]#[#7]`, []bool{false, false, true, false, false, false, false, false, false, false, false, false, false, false, false, false}},
	{`[#6]1-[#8]-[#6]-1`, []bool{false, false, true, false, false, false, false, false, false, false, false, false, false, false, false, false}},
	{`[#7]=&!@[#7]`, []bool{false, false, false, false, false, true, false, false, false, false, false, false, false, false, false, false}},
	{`[H]C([H])([#6])[F,Cl,Br,I]`, []bool{false, false, false, false, false, false, true, false, false, false, false, true, false, false, false, false}},
	{`[#17,#35,#53]-c(:*):[!#1!#6]:*`, []bool{false, false, false, false, false, false, false, false, false, false, false, false, false, false, false, false}},
	{`[#16]~[#16]`, []bool{false, false, false, true, false, false, false, false, false, false, false, false, false, false, false, false}},
	{`[#35].[#35].[#35]`, []bool{false, false, false, false, false, false, true, false, false, false, false, false, false, false, false, false}},
	{`c1ccccc1`, []bool{false, true, false, false, false, false, false, false, false, true, false, false, false, false, false, false}},
	{`C=O`, []bool{true, false, false, false, false, false, false, false, true, false, true, false, false, false, true, false}},
	{`[CX3](=O)[OX2H1]`, []bool{true, false, false, false, false, false, false, false, false, false, false, false, false, false, false, false}},
	{`[NX3;H2,H1;!$(NC=O)]`, []bool{false, false, false, false, false, false, false, false, false, false, true, false, false, false, false, false}},
	{`[nH]`, []bool{false, false, false, false, true, false, false, false, false, false, false, false, false, false, false, false}},
	{`[R2]`, []bool{false, false, false, false, false, false, false, false, false, true, false, false, false, true, false, false}},
	{`[r5]`, []bool{false, false, false, false, true, false, false, false, false, false, false, false, false, true, false, false}},
	{`[x3]`, []bool{false, false, false, false, false, false, false, false, false, true, false, false, false, true, false, false}},
	{`[c;!H0,$(c-[#6;!H0])]`, []bool{false, true, false, false, true, false, false, false, false, true, false, false, true, false, false, false}},
	{`a-a`, []bool{false, false, false, false, false, false, false, false, false, false, false, false, false, false, false, false}},
	{`[#7+]`, []bool{false, false, false, false, false, false, false, true, false, false, false, false, false, false, false, false}},
	{`[O-]`, []bool{false, false, false, false, false, false, false, false, true, false, false, false, false, false, false, false}},
	{`[D3]`, []bool{true, true, true, false, true, false, false, false, true, true, true, false, true, false, false, true}},
	{`*~*~*~*`, []bool{true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true}},
	{`[#6&!H0&!H1]`, []bool{true, false, true, true, false, true, true, true, true, false, true, true, false, true, true, true}},
	{`C-C`, []bool{true, false, true, false, false, false, true, false, true, false, true, true, false, true, false, false}},
	{`c:c`, []bool{false, true, false, false, true, false, false, false, false, true, false, false, true, false, false, false}},
	{`cc`, []bool{false, true, false, false, true, false, false, false, false, true, false, false, true, false, false, false}},
	{`[$(c1ccccc1)]`, []bool{false, true, false, false, false, false, false, false, false, true, false, false, false, false, false, false}},
	{`[!#6;!#1]`, []bool{true, true, true, true, true, true, true, true, true, false, true, true, true, false, true, true}},
	{`[v4]`, []bool{true, true, true, true, true, true, true, true, true, true, true, true, true, true, true, true}},
	{`C(=O)N`, []bool{false, false, false, false, false, false, false, false, false, false, true, false, false, false, false, false}},
	{`[h2]`, []bool{false, false, false, false, false, false, false, false, false, false, false, false, false, false, false, false}},
	{`[Cl,Br]c1ccccc1`, []bool{false, true, false, false, false, false, false, false, false, false, false, false, false, false, false, false}},
	{`[#6]-[#7]=[#6]=[#8]`, []bool{false, false, false, false, false, false, false, false, false, false, false, false, false, false, true, false}},
	{`[#7;!H0,$([#7]-[CH3])]`, []bool{false, false, false, false, true, true, false, true, false, false, true, false, false, false, true, true}},
}

func TestMatchesRDKit(t *testing.T) {
	var targets []*Target
	for _, s := range smartsMols {
		m, err := mol.ParseSMILES(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		targets = append(targets, NewTarget(m.AddHs()))
	}
	for _, c := range smartsCases {
		p, err := Parse(c.pattern)
		if err != nil {
			t.Errorf("%s: %v", c.pattern, err)
			continue
		}
		for k, tg := range targets {
			if got := p.Matches(tg); got != c.matches[k] {
				t.Errorf("%s in %s: got %v, RDKit %v", c.pattern, smartsMols[k], got, c.matches[k])
			}
		}
	}
}

func TestCountMatches(t *testing.T) {
	cases := []struct {
		pattern, smiles string
		want            int
	}{
		{"c", "c1ccccc1", 6},
		{"cc", "c1ccccc1", 6}, // unique atom sets: the 6 ring bonds
		{"[OH]", "OCCO", 2},
		{"C=O", "CC(=O)O", 1},
		{"[#6]", "CCO", 2},
	}
	for _, c := range cases {
		m, err := mol.ParseSMILES(c.smiles)
		if err != nil {
			t.Fatal(err)
		}
		if got := MustParse(c.pattern).CountMatches(NewTarget(m), 0); got != c.want {
			t.Errorf("%s in %s: %d matches, want %d", c.pattern, c.smiles, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		pattern string
		pos     int
	}{
		{"", 0},
		{"C(C", 3},
		{"C)C", 1},
		{"[C", 0},
		{"C1CC", 1},
		{"[Qq]", 1},
		{"C-", 1},
		{"[#]", 1},
		{"[$(C]", 1},
	}
	for _, c := range cases {
		_, err := Parse(c.pattern)
		se, ok := err.(*SyntaxError)
		if !ok {
			t.Errorf("%q: got %v, want a *SyntaxError", c.pattern, err)
			continue
		}
		if se.Pos != c.pos {
			t.Errorf("%q: error at %d (%v), want %d", c.pattern, se.Pos, se, c.pos)
		}
	}
}

func TestMentionsHydrogen(t *testing.T) {
	if !MustParse("[#1]C").MentionsHydrogen() || !MustParse("[H]C").MentionsHydrogen() {
		t.Error("[#1] / [H] patterns should mention hydrogen")
	}
	if MustParse("[CH3]").MentionsHydrogen() {
		t.Error("[CH3] is a carbon with 3 H, not a hydrogen atom")
	}
}

func ExamplePattern_MatchMol() {
	m, _ := mol.ParseSMILES("OC(=O)c1ccccc1")
	acid := MustParse("[CX3](=O)[OX2H1]")
	fmt.Println(acid.MatchMol(m))
	// Output: true
}
