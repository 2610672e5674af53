package smarts

import (
	"errors"
	"strings"
	"testing"
	"time"

	"lgflow/graph/mol"
)

// fuzzTargets are the molecules every fuzzed pattern is matched against:
// the RDKit-checked test molecules, with and without explicit hydrogens.
var fuzzTargets = func() []*Target {
	var ts []*Target
	for _, s := range smartsMols {
		m, err := mol.ParseSMILES(s)
		if err != nil {
			panic(err)
		}
		ts = append(ts, NewTarget(m), NewTarget(m.AddHs()))
	}
	return ts
}()

// FuzzParse checks that Parse never panics, that every error is a
// *SyntaxError quoting the pattern with a position inside it, and that a
// pattern it accepts can be matched and counted against the test
// molecules without panicking, Matches agreeing with CountMatches.
func FuzzParse(f *testing.F) {
	for _, c := range smartsCases {
		f.Add(c.pattern)
	}
	for _, s := range []string{
		"", "C(C", "C)C", "[C", "C1CC", "[Qq]", "C-", "[#]", "[$(C]", "C11", "C1C1",
		"[#999]", "[#99999999999999999999]", "[H+]", "[2H]", "[C;R]", "[$([C;$(N)])]",
		"C%12CC%12", "[!C;!c]~[*]", "[C@@H]", "[CH3:1]", "c1ccccc1 name", "[r]", "[x]",
		"[h]", "[+++]", "[-2]", "C=,#C", "C!@C", "C/C=C\\C", "[se]", "[te]", ".C", "C..C",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is %T, not *SyntaxError", s, err, err)
			}
			if se.Pos < 0 || se.Pos > len(s) || se.Pattern != s {
				t.Fatalf("%q: error at %d quoting %q: %v", s, se.Pos, se.Pattern, err)
			}
			return
		}
		if p.NumAtoms() == 0 || p.String() != s {
			t.Fatalf("%q: %d atoms, String %q", s, p.NumAtoms(), p.String())
		}
		if p.NumAtoms() > 12 || strings.Count(s, ".") > 3 {
			return // matching is exponential in the worst case; keep execs fast
		}
		for _, tg := range fuzzTargets {
			has := p.Matches(tg)
			if n := p.CountMatches(tg, 4); has != (n > 0) {
				t.Fatalf("%q on %s: Matches %t, CountMatches %d", s, tg.Mol().SMILES(), has, n)
			}
		}
	})
}

// FuzzSelfMatch checks a property that ties the SMARTS matcher to the
// SMILES reader: the canonical SMILES of a molecule, read as a SMARTS
// pattern, parses and matches the molecule it came from.
func FuzzSelfMatch(f *testing.F) {
	for _, s := range smartsMols {
		f.Add(s)
	}
	for _, s := range []string{"[13CH4]", "[2H]C", "[Na+].[Cl-]", "c1cc[se]c1", "*C(*)=O", "CS(C)(=O)=O", "[CH2]C", "C#N", "O=c1[nH]c2ccccc2o1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := mol.ParseSMILES(s)
		if err != nil || m.NumAtoms() > 24 || len(m.Fragments()) > 4 {
			return // many components can make matching exponential
		}
		c := m.SMILES()
		p, err := Parse(c)
		if err != nil {
			t.Fatalf("canonical SMILES %q of %q is not valid SMARTS: %v", c, s, err)
		}
		if !p.MatchMol(m) {
			t.Fatalf("canonical SMILES %q of %q does not match its own molecule", c, s)
		}
	})
}

// TestParseFuzzRegressions holds the patterns the fuzzer found that
// panicked or were accepted with a wrong meaning, and the error each must
// now give.
func TestParseFuzzRegressions(t *testing.T) {
	cases := []struct {
		name, pattern string
		pos           int
		msg           string
	}{
		// Matching indexed the element-count table with 999 and panicked.
		{"atomic number beyond the table", "[#999]", 1, "atomic number 999 is larger than 118"},
		// The number wrapped around int64 silently.
		{"atomic number overflowing int", "[#99999999999999999999]", 2, "larger than 9999"},
		{"isotope overflowing int", "[99999999999999999999C]", 1, "larger than 9999"},
		{"hydrogen isotope overflowing int", "[99999999999999999999H]", 1, "larger than 9999"},
		{"huge H count", "[CH99999]", 3, "larger than 9999"},
		// A self-bond that could never match was accepted.
		{"ring closing on its own atom", "C11", 2, "closes on the atom that opened it"},
		// A second bond between the same two atoms was accepted.
		{"duplicate ring bond", "C1C1", 3, "duplicates a bond"},
		// Which of several open rings was reported depended on map order.
		{"two unclosed rings", "C1CC2CC", 1, "unclosed ring 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 5 { // map order varies between runs
				_, err := Parse(c.pattern)
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("%q: got %v, want a *SyntaxError", c.pattern, err)
				}
				if se.Pos != c.pos || !strings.Contains(se.Msg, c.msg) {
					t.Fatalf("%q: error at %d %q, want at %d containing %q", c.pattern, se.Pos, se.Msg, c.pos, c.msg)
				}
			}
		})
	}
}

// TestQuadrupleBond: FuzzSelfMatch found that the canonical SMILES of a
// molecule with a quadruple bond (BBBB*$C) was not valid SMARTS; '$'
// outside brackets is RDKit's quadruple-bond primitive.
func TestQuadrupleBond(t *testing.T) {
	for _, tc := range []struct {
		pattern, smiles string
		want            bool
	}{
		{"C$C", "[C]$[C]", true},
		{"C$C", "C#C", false},
		{"C#C", "[C]$[C]", false},
		{"C~C", "[C]$[C]", true},
		{"C!$C", "[C]$[C]", false},
		{"C-,$C", "[C]$[C]", true},
		{"BBBB*$C", "C$*BBBB", true},
		{"[$(C$C)]", "[C]$[C]", true},
		{"[$(C$C)]", "C#C", false},
	} {
		m, err := mol.ParseSMILES(tc.smiles)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(tc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		if got := p.MatchMol(m); got != tc.want {
			t.Errorf("%s in %s: %t, want %t", tc.pattern, tc.smiles, got, tc.want)
		}
	}
}

// TestTwoLetterElements: FuzzSelfMatch found that [Ac] did not match
// actinium: "A" (aliphatic) was read before the two-letter symbol, making
// it "aliphatic and aromatic carbon". Two-letter symbols win, as in RDKit;
// [as] is aromatic arsenic.
func TestTwoLetterElements(t *testing.T) {
	for _, tc := range []struct {
		pattern, smiles string
		want            bool
	}{
		{"[Ac]", "[Ac]", true},
		{"[Al]", "[Al]", true},
		{"[Ar]", "[Ar]", true},
		{"[Ag+]", "[Ag+]", true},
		{"[Au]", "C", false},
		{"[A]", "C", true},
		{"[A;R]", "C1CC1", true},
		{"[a]", "c1ccccc1", true},
		{"[as]", "c1cc[as]cc1", false}, // As is not aromatic in RDKit's model: C1=CC=[As]C=C1
		{"[As]", "c1cc[as]cc1", true},
		{"[as,c]", "C1=CC=[As]C=C1", false},
		{"[as]", "c1ccsc1", false},
		{"[a;s]", "c1ccsc1", true},
	} {
		m, err := mol.ParseSMILES(tc.smiles)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(tc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		if got := p.MatchMol(m); got != tc.want {
			t.Errorf("%s in %s: %t, want %t", tc.pattern, tc.smiles, got, tc.want)
		}
	}
}

// TestDisconnectedPatternOrder: FuzzSelfMatch found that the canonical
// SMILES of BBB.B.B.B.B.B.B.B.B.BB, read as SMARTS, took minutes to match
// its own molecule: single-atom components were placed first, on the
// atoms the three-atom one needed, and the search tried every placement
// of them before backtracking; and the same for *.B.B...B (16 atoms),
// whose * took a B. Larger, then more selective, components now go first;
// the patterns must match at once.
func TestDisconnectedPatternOrder(t *testing.T) {
	m, err := mol.ParseSMILES("BBB.B.B.B.B.B.B.B.B.BB")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := mol.ParseSMILES("B.B.B.B.B.B.B.B.B.B.B.B.B.B.B.*")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	go func() {
		p := MustParse(m.SMILES())
		ok := p.MatchMol(m) && p.CountMatches(NewTarget(m), 3) == 1 && !MustParse("BBBB.B").MatchMol(m)
		done <- ok && MustParse(m2.SMILES()).MatchMol(m2)
	}()
	select {
	case ok := <-done:
		if !ok {
			t.Error("wrong match result")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("matching a 14-atom pattern against its own molecule took more than 10 s")
	}
}
