package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/flow"
)

// TestSampleBundle checks lgflow sample -model: a bundle samples with its
// recipe, the -sampler settings given replace its settings one by one,
// and -recipe selects an alternative; each gives the graphs of the same
// settings given with -vae and -flow.
func TestSampleBundle(t *testing.T) {
	dir := t.TempDir()
	v, f := tinyModels(t, dir, tinyVAEConfig())
	r := &flow.Recipe{Format: flow.RecipeFormat,
		Sampler: flow.Sampler{Steps: 3, TimeShift: 1.5, Temperature: 0.9, EdgeRule: "and", Offsets: flow.TimeOffsets{Step: 0.01, From: 0.5}},
		Alternatives: map[string]flow.Sampler{
			"constrained": {Steps: 2, Constraints: []string{"forest"}},
		}}
	require.NoError(t, r.Save(filepath.Join(dir, flow.RecipeFile)))
	out := t.TempDir()
	sample := func(name string, args ...string) string {
		t.Helper()
		path := filepath.Join(out, name+".g6")
		code, _, errOut := run(t, append([]string{"sample", "-n", "5", "-seed", "4", "-o", path}, args...)...)
		require.Equal(t, 0, code, errOut)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
	recipe := []string{"-vae", v, "-flow", f, "-sampler", "steps=3,time_shift=1.5,temperature=0.9,edge_rule=and,time_offsets.step=0.01,time_offsets.from=0.5"}
	for _, c := range []struct {
		name           string
		bundle, byHand []string
	}{
		{"recipe", nil, recipe},
		{"steps given", []string{"-sampler", "steps=2"}, append(recipe, "-sampler", "steps=2")},
		{"offsets turned off", []string{"-sampler", "time_offsets.step=0"}, append(recipe, "-sampler", "time_offsets.step=0")},
		{"alternative", []string{"-recipe", "constrained"}, []string{"-vae", v, "-flow", f, "-sampler", "steps=2,constraints=forest"}},
		{"no recipe", []string{"-recipe", flow.NoRecipe}, []string{"-vae", v, "-flow", f}},
	} {
		got := sample(c.name+"-bundle", append([]string{"-model", dir}, c.bundle...)...)
		want := sample(c.name+"-flags", c.byHand...)
		assert.Equal(t, want, got, c.name)
	}
	assert.NotEqual(t, sample("a", "-model", dir), sample("b", "-model", dir, "-recipe", flow.NoRecipe), "the recipe changed no graph")
}
