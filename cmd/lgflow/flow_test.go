package main

import (
	"testing"

	"lgflow/flow"
	"lgflow/internal/cli"
)

// TestSamplerConstraints: -sampler constraints=... names and lists map to
// decode options (flow.Sampler.DecodeOptions: the edge rule, then the
// property constraints combined into one WithEdgeConstraint, spanning
// trees, joined components); an empty name is refused.
func TestSamplerConstraints(t *testing.T) {
	for _, c := range []struct {
		list string
		n    int // decode options besides the edge rule
	}{
		{"planar", 1},
		{"connected", 1},
		{"tree", 1},
		{"planar,connected", 2},
		{"planar, dag", 1},
		{"dag,forest,connected", 2},
	} {
		set := cli.NewSettings(nil, &flow.Sampler{})
		if err := set.Set("constraints=" + c.list); err != nil {
			t.Fatalf("%q: %v", c.list, err)
		}
		var s flow.Sampler
		set.Apply(&s)
		opts, err := s.DecodeOptions()
		if err != nil {
			t.Errorf("%q: %v", c.list, err)
			continue
		}
		if len(opts)-1 != c.n {
			t.Errorf("%q: %d options, want %d and the edge rule", c.list, len(opts), c.n)
		}
	}
	set := cli.NewSettings(nil, &flow.Sampler{})
	if err := set.Set("constraints=planar,"); err != nil {
		t.Fatal(err)
	}
	var s flow.Sampler
	set.Apply(&s)
	if err := s.Validate(); err != nil {
		t.Errorf(`"planar,": %v`, err)
	}
	s.Constraints = []string{"planar", ""}
	if err := s.Validate(); err == nil {
		t.Error(`an empty constraint name accepted`)
	}
}
