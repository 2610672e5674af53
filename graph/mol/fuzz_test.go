package mol

import (
	"errors"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
)

// smilesSeeds are hand-written SMILES covering the grammar (branches, ring
// closures with and without bond symbols, %nn and %(nnn) ring numbers,
// bracket atoms with isotope, chirality, hydrogens, charge and class,
// aromatic and Kekulé forms, fragments) plus a few malformed strings.
var smilesSeeds = []string{
	"C", "CCO", "c1ccccc1", "C1=CC=CC=C1", "c1cc[nH]c1", "O=c1cc[nH]cc1",
	"c1ccc2ccccc2c1", "c1ccc2cccc2cc1", "C[N+](=O)[O-]", "CN(=O)=O",
	"[O-][n+]1ccccc1", "C1CC%10CC1.C%10", "C%(123)CC%(123)", "[H]OC([H])([H])[H]",
	"[Na+].[Cl-]", "C[S](=O)(=O)C", "[13CH4]", "c1cc[se]c1", "B(O)(O)c1ccccc1",
	"Cl(=O)(=O)(=O)O", "[CH2]C", "C[C@@H](N)C(=O)O", "F/C=C/F", "C1CC=1",
	"[2H]C([2H])([2H])[2H]", "[CH3:1][OH:2]", "*C(*)=O", "C#N", "C$C",
	"[NH4+]", "[Fe+2]", "[C@TH1H](F)(Cl)Br", "c1ccccc1-c1ccccc1",
	"O=C([N+]CCn1cnc(-c2ccc(F)cc2)cc1=S)c1ccccc1",
	"NC(=O)c1cccc(NC(=O)Cc2ccc(-n3cnnn3)cc2)p1",
	"C12C3C4C1C5C2C3C45", "C1CC2CCC1CC2",
	"", "C1CC", "C(C", "C)C", "[Xx]C", "C==C", "[CH4", "CC=", "C11",
	"C=1CC#1", "C..C", "C%1C", "[C@XX]", "c1cccc1", "c1ccccc1:c",
	"CN(C)(C)(C)C", "[C+99]", "[999999C]", "C%(", "[C:]",
}

// formula returns the element counts of m, hydrogens (explicit atoms and
// counts) included, and its total charge.
func formula(m *Mol) (map[int]int, int) {
	f := map[int]int{}
	charge := 0
	for i, a := range m.Atoms {
		f[a.Element]++
		f[1] += m.TotalHs(i)
		charge += a.Charge
	}
	return f, charge
}

// overValent reports whether a sanitised molecule, as it is or in its
// Kekulé form, has an atom whose bonds exceed every valence its element
// allows: what RDKit's lenient valence rule for aromatic atoms (an excess
// of up to 1.5 is rounded away, see the package documentation) lets
// through, as in Bb(B1B)2BB12 (not aromatic any more after sanitisation)
// or *1c2c(-c3bbbbb3)c(bc$1)B=B2 (a quadruple bond on an aromatic carbon,
// five-valent in the Kekulé form).
func overValent(m *Mol) bool {
	k := m.Clone()
	k.buildAdj()
	if k.kekulize() != nil {
		return true
	}
	for _, w := range []*Mol{m, k} { // the aromatic and the Kekulé form
		for i := range w.Atoms {
			if _, err := w.calcExplicitValence(i, true); err != nil {
				return true
			}
		}
	}
	return false
}

// dummyInRing reports whether a wildcard atom '*' lies on a ring. Whether
// such a ring is aromatic depends on where kekulisation put its double
// bonds (a dummy may count as any electron donor), which the SMILES
// written for it does not pin down: c1cc**c1 is written *1*cccc1, which
// reads back as the non-aromatic *1*C=CC=C1, and b1c2*c2*1 is written
// *1bc2*c1-2, which reads back with one more hydrogen. For them only
// reading back is required, not the same formula and canonical SMILES (a
// known limitation; the data sets have no dummy atoms).
func dummyInRing(m *Mol) bool {
	ri := m.Rings()
	for i, a := range m.Atoms {
		if a.Element == 0 && ri.NumAtomRings(i) > 0 {
			return true
		}
	}
	return false
}

// FuzzParseSMILES checks that ParseSMILES never panics; that a malformed
// string gives a *SyntaxError with a position inside the string and a
// chemically impossible one a *SanitizeError; and that a molecule it
// accepts is written (canonically, in input order, and in Kekulé form) as
// SMILES that parse to a molecule with the same formula and charge, whose
// canonical SMILES is the same string (unless a dummy atom lies on a ring:
// see dummyInRing). The one exemption: a molecule left
// over-valent by RDKit's aromatic valence rule (overValent) may be written
// as SMILES that fail the valence check, as RDKit's own output for it does
// (ParseSMILES follows RDKit's decisions).
func FuzzParseSMILES(f *testing.F) {
	for _, s := range smilesSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseSMILESWith(s, ParseOptions{KeepHs: true}); err != nil {
			checkParseError(t, s, err)
		}
		m, err := ParseSMILES(s)
		if err != nil {
			checkParseError(t, s, err)
			return
		}
		if len(m.Atoms) > 60 {
			return // canonical ranking and ring perception get slow; keep execs fast
		}
		canon := m.SMILES()
		wantF, wantQ := formula(m)
		for _, opt := range []WriteOptions{{Canonical: true}, {}, {Kekule: true}, {Canonical: true, Kekule: true}} {
			w := m.WriteSMILES(opt)
			m2, err := ParseSMILES(w)
			var ve *SanitizeError
			if err != nil && errors.As(err, &ve) && ve.Kind == ValenceError && overValent(m) {
				return // RDKit's aromatic valence rule let an over-valent atom through
			}
			if err != nil {
				t.Fatalf("%q written with %+v as %q, which does not parse: %v", s, opt, w, err)
			}
			if dummyInRing(m) {
				continue // only reading back is required, see dummyInRing
			}
			if f2, q2 := formula(m2); !maps.Equal(wantF, f2) || wantQ != q2 {
				t.Fatalf("%q written with %+v as %q: formula %v charge %d, was %v charge %d", s, opt, w, f2, q2, wantF, wantQ)
			}
			if c2 := m2.SMILES(); c2 != canon {
				t.Fatalf("%q: canonical %q, but %q (written with %+v) has canonical %q", s, canon, w, opt, c2)
			}
		}
	})
}

func checkParseError(t *testing.T, s string, err error) {
	t.Helper()
	var se *SyntaxError
	var ze *SanitizeError
	switch {
	case errors.As(err, &se):
		if se.Pos < 0 || se.Pos > len(s) {
			t.Fatalf("%q: error position %d outside the string: %v", s, se.Pos, err)
		}
		if se.SMILES != s {
			t.Fatalf("%q: error quotes %q", s, se.SMILES)
		}
	case errors.As(err, &ze):
		if ze.Kind != ValenceError && ze.Kind != KekulizeError {
			t.Fatalf("%q: sanitize error of kind %d: %v", s, ze.Kind, err)
		}
		if ze.Msg == "" {
			t.Fatalf("%q: sanitize error without a message", s)
		}
	default:
		t.Fatalf("%q: error %v is %T, not *SyntaxError or *SanitizeError", s, err, err)
	}
}

// TestParseSMILESFuzzRegressions holds the inputs the fuzzer (or review of
// the parser while writing it) found that broke a round trip, with what
// must happen now: an error containing wantErr, or a molecule whose
// canonical SMILES re-canonicalises to itself (and, if canon is set, is
// canon).
func TestParseSMILESFuzzRegressions(t *testing.T) {
	cases := []struct {
		name, in string
		wantErr  string
		canon    string
	}{
		// The class overflowed int silently, so [C:...] came back with a
		// different (negative) class.
		{"atom class overflowing int", "[CH4:99999999999999999999]", "atom class has more than 9 digits", ""},
		{"largest atom class", "[CH4:999999999]", "", "[CH4:999999999]"},
		// The writer wrote H counts above 9 ([FeH10], from ten [H] atoms
		// folded onto an iron) that the reader took for H1 and a stray 0.
		{"two-digit hydrogen count", "[Fe]([H])([H])([H])([H])([H])([H])([H])([H])([H])([H])", "", "[FeH10]"},
		{"hydrogen count read back", "[FeH10]", "", "[FeH10]"},
		{"hydrogen count too long", "[FeH1000]", "hydrogen count has more than 3 digits", ""},
		// Kekulisation took a maximum matching, which could give the
		// double bond to the optional dummy atom and leave a carbon bare,
		// depending on the atom order: c1ccc*1 parsed but its canonical
		// SMILES *1cccc1 did not (found by FuzzParseSMILES as b1bbb*1).
		{"dummy atom written first in an aromatic ring", "*1cccc1", "", "*1cccc1"},
		{"dummy atom written last in an aromatic ring", "c1ccc*1", "", "*1cccc1"},
		{"boron ring with a dummy atom", "b1bbb*1", "", "*1bbbb1"},
		{"two dummy atoms", "c1c*c*c1", "", ""},
		// Two dummy atoms on a ring without aromatic atoms took a double
		// bond between them in kekulisation and its canonical re-placing,
		// so *1*=C1 read back as *1=*=C1 (found by FuzzParseSMILES as
		// b1bbbbc1c1**1).
		{"dummy pair on a non-aromatic ring", "*1*=C1c1bbbbb1", "", "*1*=C1c1bbbbb1"},
		{"dummy pair next to an aromatic carbon", "b1bbbbc1c1**1", "", "*1*=C1c1bbbbb1"},
		{"aromatic carbon between two dummies", "c1**1", "", "*1*C1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseSMILES(tc.in)
			if tc.wantErr != "" {
				var se *SyntaxError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%q: error %v, want a *SyntaxError containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := m.SMILES()
			if c2, err := CanonicalSMILES(c); err != nil || c2 != c || (tc.canon != "" && c != tc.canon) {
				t.Fatalf("%q: canonical %q re-canonicalises to %q, %v; want %q", tc.in, c, c2, err, tc.canon)
			}
		})
	}
}

// TestOverValentAromatic pins the one known class of accepted input whose
// SMILES does not read back, and why: Bb(B1B)2BB12 is accepted because the
// aromatic b's four single bonds count as valence 3 under RDKit's rule for
// aromatic atoms; after sanitisation the b is no longer aromatic, so its
// SMILES, BB1B2BB12B, has a four-valent boron that no reader accepts (found
// by FuzzParseSMILES). The package documentation's own example of the rule,
// O=c1=cccnn1C, is in the same class, as is b1bbbc(c2c3*$cbc(bb3)2)b1
// (also found by the fuzzer), whose Kekulé form has a five-valent carbon.
// ParseSMILES follows RDKit here, whose output for such molecules does not
// read back either.
func TestOverValentAromatic(t *testing.T) {
	for _, s := range []string{"Bb(B1B)2BB12", "O=c1=cccnn1C", "b1bbbc(c2c3*$cbc(bb3)2)b1"} {
		m, err := ParseSMILES(s)
		if err != nil {
			t.Fatal(err)
		}
		if !overValent(m) {
			t.Fatalf("%s: overValent misses the over-valent atom", s)
		}
		var se *SanitizeError
		w := m.WriteSMILES(WriteOptions{Kekule: true})
		if _, err := ParseSMILES(w); !errors.As(err, &se) || se.Kind != ValenceError {
			t.Errorf("%s written as %s: %v, want a valence error", s, w, err)
		}
	}
	for _, s := range []string{"c1ccccc1", "C[N+](=O)[O-]", "CS(C)(=O)=O", "O=c1cc[nH]cc1"} {
		if m, err := ParseSMILES(s); err != nil || overValent(m) {
			t.Errorf("%s: %v, over-valent %t", s, err, err == nil && overValent(m))
		}
	}
}

// TestCanonicalCages: FuzzParseSMILES found that C12C3C4C1C5C2C5C43, a
// cage of eight three-connected carbons that colour refinement and
// distance profiles leave in one class without their being symmetric,
// had a canonical SMILES that depended on the atom order (breaking the tie
// at the lowest input index picked non-equivalent atoms). Ties are now
// broken at the atom with the smallest refined-partition certificate. The
// canonical SMILES of these cages must not change under 30 random
// renumberings.
func TestCanonicalCages(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range []string{
		"C12C3C4C1C5C2C5C43",     // the fuzzer's cage
		"C12C3C4C1C5C2C3C45",     // cubane
		"C1C2CC3CC1CC(C2)C3",     // adamantane
		"C12C3C4C5C1C6C2C3C4C56", // a C10 cage
		"C1CC2CCC1CC2",           // bicyclo[2.2.2]octane
		"C1CC2CC1C1CCC21",
		"C12CC3CC(C1)CC(C2)C3",
	} {
		m, err := ParseSMILES(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		want := m.SMILES()
		for range 30 {
			if got := permuted(m, rng).SMILES(); got != want {
				t.Fatalf("%s: canonical %s, renumbered %s", s, want, got)
			}
		}
		if c, err := CanonicalSMILES(want); err != nil || c != want {
			t.Errorf("%s: canonical %s re-canonicalises to %s, %v", s, want, c, err)
		}
	}
}
