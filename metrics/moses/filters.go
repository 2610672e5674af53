package moses

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lgflow/graph/mol"
	"lgflow/graph/mol/smarts"
)

// Alert is one structural alert of the MOSES filters.
type Alert struct {
	Name    string
	SMARTS  string
	Pattern *smarts.Pattern
}

// Filters is the MOSES "Filters" check (moses.metrics.utils
// mol_passes_filters): no ring of 8 or more atoms, no formal charge, only
// the allowed elements (C, N, S, O, F, Cl, Br, H), none of the MCF and
// PAINS structural alerts in the molecule with explicit hydrogens, and
// canonical SMILES that parse again.
type Filters struct {
	Alerts []Alert
	// Allowed lists the permitted element symbols.
	Allowed map[string]bool
}

// DefaultAllowed is MOSES's allowed element set.
var DefaultAllowed = map[string]bool{"C": true, "N": true, "S": true, "O": true, "F": true, "Cl": true, "Br": true, "H": true}

// LoadFilters reads the MOSES alert lists: mcf.csv (header "names,smarts")
// and wehi_pains.csv (no header; columns smarts, name) from dir, the
// layout of moses/metrics in the MOSES package and of shared/data/moses.
func LoadFilters(dir string) (*Filters, error) {
	f := &Filters{Allowed: DefaultAllowed}
	if err := f.readCSV(filepath.Join(dir, "mcf.csv"), true, 0, 1); err != nil {
		return nil, err
	}
	if err := f.readCSV(filepath.Join(dir, "wehi_pains.csv"), false, 1, 0); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *Filters) readCSV(path string, header bool, nameCol, smartsCol int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("moses: %w", err)
	}
	for ln, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || (header && ln == 0) {
			continue
		}
		rec := splitCSVLine(line)
		if len(rec) <= max(nameCol, smartsCol) {
			return fmt.Errorf("moses: %s line %d: want at least %d fields, got %d", path, ln+1, max(nameCol, smartsCol)+1, len(rec))
		}
		p, err := smarts.Parse(rec[smartsCol])
		if err != nil {
			return fmt.Errorf("moses: %s line %d: %w", path, ln+1, err)
		}
		f.Alerts = append(f.Alerts, Alert{Name: rec[nameCol], SMARTS: rec[smartsCol], Pattern: p})
	}
	return nil
}

// splitCSVLine splits a line at commas outside double quotes and trims
// spaces and quotes from each field (the PAINS file pads quoted fields
// with spaces, which encoding/csv rejects).
func splitCSVLine(line string) []string {
	var out []string
	inQ := false
	start := 0
	for i := 0; i <= len(line); i++ {
		if i == len(line) || (line[i] == ',' && !inQ) {
			fld := strings.TrimSpace(line[start:i])
			fld = strings.TrimSpace(strings.Trim(fld, "\""))
			out = append(out, fld)
			start = i + 1
			continue
		}
		if line[i] == '"' {
			inQ = !inQ
		}
	}
	return out
}

// Check applies the filters to a sanitised molecule and returns whether it
// passes and, if not, why ("ring of size 8", "charged atom", "element X",
// "alert NAME", "SMILES round trip").
func (f *Filters) Check(m *mol.Mol) (bool, string) {
	ri := m.Rings()
	for _, r := range ri.AtomRings {
		if len(r) >= 8 {
			return false, fmt.Sprintf("ring of size %d", len(r))
		}
	}
	for i := range m.Atoms {
		if m.Atoms[i].Charge != 0 {
			return false, "charged atom"
		}
	}
	for i := range m.Atoms {
		if s := m.Atoms[i].Symbol(); !f.Allowed[s] {
			return false, "element " + s
		}
	}
	t := smarts.NewTarget(m.AddHs())
	for _, a := range f.Alerts {
		if a.Pattern.Matches(t) {
			return false, "alert " + a.Name
		}
	}
	s := m.SMILES()
	if s == "" {
		return false, "SMILES round trip"
	}
	if _, err := mol.ParseSMILES(s); err != nil {
		return false, "SMILES round trip"
	}
	return true, ""
}

// Passes reports whether m passes the filters.
func (f *Filters) Passes(m *mol.Mol) bool {
	ok, _ := f.Check(m)
	return ok
}
