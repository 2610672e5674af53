package main

import "testing"

// TestConstraintOptions: names and lists map to decode options;
// predicates combine into one WithEdgeConstraint.
func TestConstraintOptions(t *testing.T) {
	for _, c := range []struct {
		list string
		n    int
	}{
		{"planar", 1},
		{"connected", 1},
		{"tree", 1},
		{"planar,connected", 2},
		{"planar, dag", 1},
		{"dag,forest,connected", 2},
	} {
		opts, err := constraintOptions(c.list)
		if err != nil {
			t.Errorf("%q: %v", c.list, err)
			continue
		}
		if len(opts) != c.n {
			t.Errorf("%q: %d options, want %d", c.list, len(opts), c.n)
		}
	}
	if _, err := constraintOptions("planar,"); err == nil {
		t.Error(`"planar,": empty name accepted`)
	}
}
