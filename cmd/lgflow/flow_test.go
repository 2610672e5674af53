package main

import "testing"

// TestConstraintOptions: names and lists map to decode options; every
// name but connected is a validity constraint (the argmax replaces a stored
// margin); predicates combine into one WithEdgeConstraint.
func TestConstraintOptions(t *testing.T) {
	for _, c := range []struct {
		list     string
		n        int
		validity bool
	}{
		{"planar", 1, true},
		{"connected", 1, false},
		{"tree", 1, true},
		{"planar,connected", 2, true},
		{"planar, dag", 1, true},
		{"dag,forest,connected", 2, true},
	} {
		opts, validity, err := constraintOptions(c.list)
		if err != nil {
			t.Errorf("%q: %v", c.list, err)
			continue
		}
		if len(opts) != c.n || validity != c.validity {
			t.Errorf("%q: %d options, validity %v; want %d, %v", c.list, len(opts), validity, c.n, c.validity)
		}
	}
	if _, _, err := constraintOptions("planar,"); err == nil {
		t.Error(`"planar,": empty name accepted`)
	}
}
