package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lgflow/flow"
	"lgflow/graph"
)

// TestSampling checks what a run samples with: the recipe of the shipped
// bundle (or the alternative Options.Recipe names), each setting
// Options.Settings gives in place of the recipe's, no recipe by name, and
// the dataset's constraint or completion where the bundle has no such
// alternative.
func TestSampling(t *testing.T) {
	spec, err := Lookup("planar")
	if err != nil {
		t.Fatal(err)
	}
	tuned := flow.TimeOffsets{Step: 0.01, From: 0.5, Jump: -0.02}
	con := flow.TimeOffsets{Step: 0.02, From: 0.5, Jump: -0.03}
	comp := flow.TimeOffsets{Step: 0.015, From: 0.5, Jump: -0.035}
	own := flow.TimeOffsets{Jump: -0.01}
	experts := []flow.Expert{{File: "e.safetensors", From: 0.95}}
	full := &flow.Model{Recipe: &flow.Recipe{Format: flow.RecipeFormat,
		Sampler: flow.Sampler{Steps: 70, TimeShift: 1.4, Offsets: tuned, EdgeRule: "and", EdgeMargin: ptr(1.25), BatchSize: 100, Experts: experts},
		Alternatives: map[string]flow.Sampler{
			"constrained": {Offsets: con, Experts: experts, Constraints: []string{"planar", "connected"}, Fill: ptr(-4.0)},
			"complete":    {Offsets: comp, EdgeRule: "mean", Experts: experts, Complete: []string{"planar", "connected"}, Fill: ptr(-3.0)},
		}}}
	bare := &flow.Model{Recipe: &flow.Recipe{Format: flow.RecipeFormat, Sampler: full.Recipe.Sampler}}
	type grid struct {
		steps int
		shift float64
	}
	offsets := func(t flow.TimeOffsets) func(*flow.Sampler) { return func(s *flow.Sampler) { s.Offsets = t } }
	rule := func(r string) func(*flow.Sampler) { return func(s *flow.Sampler) { s.EdgeRule = r } }
	for _, c := range []struct {
		name     string
		o        Options
		m        *flow.Model
		recipe   string
		offsets  flow.TimeOffsets
		edgeRule string
		grid     grid
		experts  int     // the recipe's
		from     float64 // the first expert's first time
		decoding int     // constraints and completed properties
		fill     float64 // 0: none
		batch    int
	}{
		{"recipe", Options{}, full, "default", tuned, "and", grid{70, 1.4}, 1, 0.95, 0, 0, 100},
		{"no recipe", Options{}, &flow.Model{}, "", flow.TimeOffsets{}, "", grid{}, 0, 0, 0, 0, 256},
		{"no recipe by name", Options{Recipe: flow.NoRecipe}, full, "", flow.TimeOffsets{}, "", grid{}, 0, 0, 0, 0, 256},
		{"no recipe, offsets given", Options{Recipe: flow.NoRecipe, Settings: offsets(own)}, full, "", own, "", grid{}, 0, 0, 0, 0, 256},
		{"offsets given", Options{Settings: offsets(own)}, full, "default", own, "and", grid{70, 1.4}, 1, 0.95, 0, 0, 100},
		{"zero offsets given", Options{Settings: offsets(flow.TimeOffsets{})}, full, "default", flow.TimeOffsets{}, "and", grid{70, 1.4}, 1, 0.95, 0, 0, 100},
		{"rule given", Options{Settings: rule("or")}, full, "default", tuned, "or", grid{70, 1.4}, 1, 0.95, 0, 0, 100},
		{"steps given", Options{Settings: steps(100)}, full, "default", tuned, "and", grid{100, 1.4}, 1, 0.95, 0, 0, 100},
		{"grid given", Options{Settings: func(s *flow.Sampler) { s.Steps, s.TimeShift = 100, 0 }}, full, "default", tuned, "and", grid{100, 0}, 1, 0.95, 0, 0, 100},
		{"batch given", Options{Settings: func(s *flow.Sampler) { s.BatchSize = 8 }}, full, "default", tuned, "and", grid{70, 1.4}, 1, 0.95, 0, 0, 8},
		{"expert time given", Options{Settings: func(s *flow.Sampler) { s.Experts = []flow.Expert{{File: "e.safetensors", From: 0.9}} }}, full, "default", tuned, "and", grid{70, 1.4}, 1, 0.9, 0, 0, 100},
		{"constrained", Options{Recipe: "constrained"}, full, "constrained", con, "", grid{}, 1, 0.95, 2, -4, 256},
		{"constrained, offsets given", Options{Recipe: "constrained", Settings: offsets(own)}, full, "constrained", own, "", grid{}, 1, 0.95, 2, -4, 256},
		{"constrained, fill given", Options{Recipe: "constrained", Settings: fill(-1)}, full, "constrained", con, "", grid{}, 1, 0.95, 2, -1, 256},
		{"completed", Options{Recipe: "complete"}, full, "complete", comp, "mean", grid{}, 1, 0.95, 2, -3, 256},
		{"completed, rule given", Options{Recipe: "complete", Settings: rule("or")}, full, "complete", comp, "or", grid{}, 1, 0.95, 2, -3, 256},
		{"constrained, no such recipe: the dataset's constraint", Options{Recipe: "constrained"}, bare, "", flow.TimeOffsets{}, "", grid{}, 0, 0, 2, -4, 256},
		{"completed, no such recipe: the default's settings", Options{Recipe: "complete"}, bare, "default", tuned, "and", grid{70, 1.4}, 1, 0.95, 2, -4, 100},
	} {
		sm, err := c.o.sampling(spec, c.m)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		s := sm.s
		from := 0.0
		if len(s.Experts) > 0 {
			from = s.Experts[0].From
		}
		fill := 0.0
		if s.Fill != nil {
			fill = *s.Fill
		}
		if sm.recipe != c.recipe || s.Offsets != c.offsets || s.EdgeRule != c.edgeRule || (grid{s.Steps, s.TimeShift}) != c.grid ||
			len(s.Experts) != c.experts || from != c.from || len(s.Constraints)+len(s.Complete) != c.decoding || fill != c.fill || s.BatchSize != c.batch {
			t.Errorf("%s: recipe %q, %+v, %q, grid %d/%g, %d experts from %g, constraints %v, complete %v, fill %g, batch %d",
				c.name, sm.recipe, s.Offsets, s.EdgeRule, s.Steps, s.TimeShift, len(s.Experts), from, s.Constraints, s.Complete, fill, s.BatchSize)
		}
	}
	if _, err := (Options{Recipe: "paper"}).sampling(spec, full); err == nil || !strings.Contains(err.Error(), `no alternative "paper" (it has complete, constrained)`) {
		t.Errorf("an unknown alternative: %v", err)
	}
	if full.Recipe.Sampler.Experts[0].From != 0.95 {
		t.Error("the settings changed the model's recipe")
	}
	if _, err := (Options{Recipe: "constrained", Settings: fill(-1)}).sampling(spec, &flow.Model{Recipe: &flow.Recipe{Format: flow.RecipeFormat,
		Alternatives: map[string]flow.Sampler{"constrained": {Constraints: []string{"tree"}}}}}); err == nil || !strings.Contains(err.Error(), "fill") {
		t.Errorf("a fill under a recipe's spanning trees: %v", err)
	}
}

// shippedRecipes are the sampler settings of the shipped bundles: what
// pipeline's per-dataset settings, examples/moses and the server sampled
// the shipped models with before the recipes (Spec.Shipped,
// ShippedConstrained, ShippedComplete, ShippedMOSES and ShippedMOSESExpert
// gave the same graphs for the same seed on every dataset and mode), so
// that each example's figures stay what they were.
var shippedRecipes = map[string]*flow.Recipe{
	"planar": {Sampler: flow.Sampler{Steps: 70, TimeShift: 1.43, Offsets: flow.TimeOffsets{Step: 0.01, From: 0.5, Jump: -0.02}, BatchSize: 256,
		Experts: []flow.Expert{{File: "flow-expert.safetensors", From: flow.DefaultExpertFrom}}, EdgeRule: "and", EdgeMargin: ptr(1.25)},
		Alternatives: map[string]flow.Sampler{
			"constrained": {Offsets: flow.TimeOffsets{Step: 0.025, From: 0.5, Jump: -0.035}, BatchSize: 256,
				Experts: []flow.Expert{{File: "flow-expert.safetensors", From: flow.DefaultExpertFrom}}, Constraints: []string{"planar", "connected"}, Fill: ptr(-4.0)},
			"complete": {Steps: 70, TimeShift: 1.43, Offsets: flow.TimeOffsets{Step: 0.015, From: 0.5, Jump: -0.035}, BatchSize: 256,
				Experts: []flow.Expert{{File: "flow-expert.safetensors", From: flow.DefaultExpertFrom}}, EdgeRule: "and", EdgeMargin: ptr(1.5),
				Complete: []string{"planar", "connected"}, Fill: ptr(-4.0)},
		}},
	// tree and planar-128 sample with their constrained recipe by default,
	// their measured best (pretrained/README.md); "paper" is the paper's
	// decoder.
	"tree": {Sampler: flow.Sampler{Offsets: flow.TimeOffsets{Step: 0.05, From: 0.5}, BatchSize: 256, Constraints: []string{"tree"}}, Alternatives: map[string]flow.Sampler{
		"constrained": {Offsets: flow.TimeOffsets{Step: 0.05, From: 0.5}, BatchSize: 256, Constraints: []string{"tree"}},
		"paper":       {BatchSize: 256}}},
	"ego": {Sampler: flow.Sampler{BatchSize: 151}, Alternatives: map[string]flow.Sampler{
		"constrained": {BatchSize: 151, Constraints: []string{"connected"}}}},
	"price": {Sampler: flow.Sampler{BatchSize: 256}, Alternatives: map[string]flow.Sampler{
		"constrained": {Offsets: flow.TimeOffsets{Step: 0.025, From: 0.5, Jump: -0.035}, BatchSize: 256, Constraints: []string{"dag"}}}},
	"tpu": {Sampler: flow.Sampler{BatchSize: 40}, Alternatives: map[string]flow.Sampler{
		"constrained": {BatchSize: 40, Constraints: []string{"dag"}}}},
	"planar-128": {Sampler: flow.Sampler{BatchSize: 128, Constraints: []string{"planar", "connected"}, Fill: ptr(-8.0)}, Alternatives: map[string]flow.Sampler{
		"constrained": {BatchSize: 128, Constraints: []string{"planar", "connected"}, Fill: ptr(-8.0)},
		"complete":    {BatchSize: 128, Complete: []string{"planar", "connected"}, Fill: ptr(-8.0)},
		"paper":       {BatchSize: 128}}},
	"moses": {Sampler: flow.Sampler{Steps: 100, Temperature: 0.8, BatchSize: 256,
		Experts: []flow.Expert{{File: "flow-expert.safetensors", From: 0.40, Until: 0.75}}}},
}

// TestShippedRecipes pins the sampler settings of every shipped bundle's
// sampler.json, checks that the experts they name ship beside them, and
// that every dataset with shipped models samples its paper's batch and has
// a recipe for its constraint.
func TestShippedRecipes(t *testing.T) {
	root := filepath.Join("..", "..", "pretrained")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(root, d.Name())
		r, err := flow.LoadRecipe(filepath.Join(dir, flow.RecipeFile))
		if err != nil {
			t.Errorf("%s: %v", d.Name(), err)
			continue
		}
		seen++
		want, ok := shippedRecipes[d.Name()]
		if !ok {
			t.Errorf("%s: a bundle without pinned settings", d.Name())
			continue
		}
		if !reflect.DeepEqual(r.Sampler, want.Sampler) || !reflect.DeepEqual(r.Alternatives, want.Alternatives) {
			t.Errorf("%s: recipe\n%+v %+v\nwant\n%+v %+v", d.Name(), r.Sampler, r.Alternatives, want.Sampler, want.Alternatives)
		}
		if r.Card.Dataset == "" || len(r.Card.Figures) == 0 || r.Card.Measured == "" {
			t.Errorf("%s: model card %+v lacks the dataset, figures or how they were measured", d.Name(), r.Card)
		}
		for _, s := range append([]flow.Sampler{r.Sampler}, func() []flow.Sampler {
			var out []flow.Sampler
			for _, name := range r.Names() {
				out = append(out, r.Alternatives[name])
			}
			return out
		}()...) {
			for _, e := range s.Experts {
				if _, err := os.Stat(filepath.Join(dir, e.File)); err != nil {
					t.Errorf("%s: %v", d.Name(), err)
				}
			}
		}
		spec, err := Lookup(d.Name())
		if err != nil {
			continue // moses: its own example
		}
		if r.Sampler.BatchSize != spec.SampleBatch {
			t.Errorf("%s: recipe batch %d, the dataset's %d", d.Name(), r.Sampler.BatchSize, spec.SampleBatch)
		}
		if _, ok := r.Alternatives["constrained"]; ok != (len(spec.Constraints) > 0) {
			t.Errorf("%s: constrained recipe %v, constraint %v", d.Name(), ok, spec.ConstraintName)
		}
	}
	if seen != len(shippedRecipes) {
		t.Errorf("%d bundles with a recipe, want %d", seen, len(shippedRecipes))
	}
}

// TestPlanarBundleMatchesExample checks that the bundle call,
// flow.Sample(ctx, flow.Open("pretrained/planar"), n, flow.WithSeed(s)),
// gives exactly the graphs go run ./examples/planar -seed s samples
// (examples/internal/generate → Run: the models it finds, its sampling
// settings).
func TestPlanarBundleMatchesExample(t *testing.T) {
	ctx := context.Background()
	const n, seed = 8, 5
	o := Options{Dataset: "planar", Seed: seed}
	spec, err := Lookup(o.Dataset)
	if err != nil {
		t.Fatal(err)
	}
	// Run's path, but the data and the evaluation.
	if _, _, err := shippedModels(spec, "", ""); err != nil {
		t.Skip("no shipped planar models: ", err)
	}
	ms, err := o.load(spec, "", "")
	if err != nil {
		t.Fatal(err)
	}
	fm, sm, flowPath := ms.fm, ms.sm, ms.flowPath
	example, err := flow.Sample(ctx, fm, n, append(sm.options(o), flow.WithProgress(func(int, int) {}))...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := flow.Open(filepath.Dir(flowPath))
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := flow.Sample(ctx, m, n, flow.WithSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := flow.Sample(ctx, m, n, flow.WithSeed(seed), flow.WithRecipe(flow.NoRecipe))
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for i := range n {
		if a, b := graph.FormatGraph6(example[i]), graph.FormatGraph6(bundle[i]); a != b {
			t.Errorf("graph %d: the example samples %s, the bundle call %s", i, a, b)
		}
		if graph.FormatGraph6(plain[i]) != graph.FormatGraph6(bundle[i]) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("the recipe changes no graph: the check is vacuous")
	}
}
