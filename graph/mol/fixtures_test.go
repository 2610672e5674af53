package mol

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestRDKitIdentityFixture(t *testing.T) {
	lines := readLines(t, filepath.Join(dataDir(t), "fixtures", "rdkit_expected", "moses_identity.tsv"))
	ours := map[string]string{}   // our canonical -> rdkit canonical
	theirs := map[string]string{} // rdkit canonical -> our canonical
	bad, exact, rows := 0, 0, 0
	for _, ln := range lines[1:] {
		f := strings.Split(ln, "\t")
		if len(f) != 4 {
			t.Fatalf("bad row %q", ln)
		}
		rows++
		var cs [4]string
		ok := true
		for k := 0; k < 4; k++ {
			c, err := CanonicalSMILES(f[k])
			if err != nil {
				t.Errorf("row %d col %d %q: %v", rows, k, f[k], err)
				ok = false
				break
			}
			cs[k] = c
		}
		if !ok {
			bad++
			continue
		}
		if cs[0] != cs[1] || cs[0] != cs[2] || cs[0] != cs[3] {
			bad++
			if bad < 20 {
				t.Errorf("row %d: %q %q %q %q", rows, cs[0], cs[1], cs[2], cs[3])
			}
			continue
		}
		if cs[0] == f[3] {
			exact++
		}
		if r, ok := ours[cs[0]]; ok && r != f[3] {
			t.Errorf("two RDKit molecules %q %q map to %q", r, f[3], cs[0])
		}
		if o, ok := theirs[f[3]]; ok && o != cs[0] {
			t.Errorf("RDKit molecule %q maps to %q and %q", f[3], o, cs[0])
		}
		ours[cs[0]] = f[3]
		theirs[f[3]] = cs[0]
	}
	t.Logf("%d rows, %d inconsistent, %d byte-identical to RDKit (%.1f%%)", rows, bad, exact, 100*float64(exact)/float64(rows))
}

func TestRDKitValidityFixture(t *testing.T) {
	lines := readLines(t, filepath.Join(dataDir(t), "fixtures", "rdkit_expected", "mutated_validity.tsv"))
	agree, rows, sameMol := 0, 0, 0
	var disagree []string
	for _, ln := range lines[1:] {
		f := strings.Split(ln, "\t")
		rows++
		want := f[1] == "1"
		c, err := CanonicalSMILES(f[0])
		got := err == nil
		if got == want {
			agree++
			if got {
				rc, err2 := CanonicalSMILES(f[2])
				if err2 == nil && rc == c {
					sameMol++
				} else {
					disagree = append(disagree, "different molecule: "+f[0]+" ours "+c+" rdkit "+f[2]+" -> "+rc)
				}
			}
		} else {
			msg := "valid"
			if err != nil {
				msg = err.Error()
			}
			disagree = append(disagree, f[0]+" rdkit="+f[1]+" ours: "+msg+" "+c)
		}
	}
	for i, d := range disagree {
		if i < 40 {
			t.Log(d)
		}
	}
	frac := float64(agree) / float64(rows)
	t.Logf("validity agreement %d/%d = %.4f; same molecule where valid: %d", agree, rows, frac, sameMol)
	if frac < 0.995 {
		t.Errorf("validity agreement %.4f < 0.995", frac)
	}
}

func TestDiGressRoundTrip(t *testing.T) {
	for _, name := range []string{"generated_smiles_moses.txt", "digress_guacamol_smiles.txt"} {
		lines := readLines(t, filepath.Join(dataDir(t), "fixtures", "digress_generated", name))
		n, exact, fail := 0, 0, 0
		for _, s := range lines {
			if s == "None" || s == "" {
				continue
			}
			n++
			c, err := CanonicalSMILES(s)
			if err != nil {
				fail++
				t.Errorf("%s: %q: %v", name, s, err)
				continue
			}
			c2, err := CanonicalSMILES(c)
			if err != nil || c2 != c {
				fail++
				t.Errorf("%s: round trip %q -> %q -> %q (%v)", name, s, c, c2, err)
				continue
			}
			if c == s {
				exact++
			}
		}
		t.Logf("%s: %d molecules, %d failures, %d byte-identical to RDKit (%.1f%%)", name, n, fail, exact, 100*float64(exact)/float64(n))
	}
}

func TestPhosphorusValence7(t *testing.T) {
	lines := readLines(t, filepath.Join(dataDir(t), "fixtures", "rdkit_versions", "guacamol_valid_rdkit2022_invalid_rdkit2025.smi"))
	for _, s := range lines {
		if s == "" {
			continue
		}
		if _, err := CanonicalSMILES(s); err != nil {
			t.Errorf("%q: %v (RDKit 2022 accepts P valence 7)", s, err)
		}
	}
}
