package flow_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/flow/cond"
	"lgflow/graph"
	"lgflow/tensor"
	"lgflow/vae"
)

// testRecipe is the recipe of writeBundle's bundle: every kind of setting,
// an expert in a band, and two alternatives.
func testRecipe() *flow.Recipe {
	margin, fill := 0.5, -2.0
	return &flow.Recipe{Format: flow.RecipeFormat,
		Sampler: flow.Sampler{Steps: 6, TimeShift: 1.5, Offsets: flow.TimeOffsets{Step: 0.01, From: 0.5, Jump: -0.02}, Temperature: 0.9, BatchSize: 3,
			Experts: []flow.Expert{{File: "expert.safetensors", From: 0.5, Until: 0.8}}, EdgeRule: "and", EdgeMargin: &margin},
		Alternatives: map[string]flow.Sampler{
			"constrained": {Steps: 5, Experts: []flow.Expert{{File: "expert.safetensors", From: 0.9}}, Constraints: []string{"forest"}},
			"complete":    {Steps: 5, Complete: []string{"connected"}, Fill: &fill},
		},
		Card: flow.Card{Dataset: "test", Training: "untrained", Figures: map[string]float64{"vun": 12.5}, Measured: "never"}}
}

// writeBundle writes a bundle of untrained tiny models with r as its
// sampler.json (nil: none) into a new directory, and returns it.
func writeBundle(t *testing.T, r *flow.Recipe) string {
	t.Helper()
	dir := t.TempDir()
	ae := newVAE(t, vaeConfig(), 1)
	if err := ae.Save(filepath.Join(dir, vae.ModelFile), nil); err != nil {
		t.Fatal(err)
	}
	m := untrainedFlow(t, ae)
	if err := m.Save(filepath.Join(dir, flow.ModelFile), nil); err != nil {
		t.Fatal(err)
	}
	net, err := dit.New(m.Cfg.DiT, tensor.NewRNG(2))
	if err != nil {
		t.Fatal(err)
	}
	e := *m
	e.Net = net
	if err := e.Save(filepath.Join(dir, "expert.safetensors"), nil); err != nil {
		t.Fatal(err)
	}
	if r != nil {
		if err := r.Save(filepath.Join(dir, flow.RecipeFile)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadParts loads a bundle's flow and expert by hand (flow.Load: no recipe).
func loadParts(t *testing.T, dir string) (m, expert *flow.Model) {
	t.Helper()
	ae, err := vae.Load(filepath.Join(dir, vae.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if m, err = flow.Load(filepath.Join(dir, flow.ModelFile), ae); err != nil {
		t.Fatal(err)
	}
	if expert, err = flow.Load(filepath.Join(dir, "expert.safetensors"), ae); err != nil {
		t.Fatal(err)
	}
	return m, expert
}

// own samples with the settings s of one's own in place of the recipe.
func own(s flow.Sampler) flow.SampleOption {
	return flow.WithSettings(func(p *flow.Sampler) { *p = s })
}

// TestRecipeRoundTrip writes a recipe into a bundle, reads it back
// unchanged, opens the bundle and checks that Sample samples with the
// recipe, that an option replaces one setting, that WithRecipe selects an
// alternative (or none) and WithSettings settings of one's own: each call gives
// the graphs of the same settings spelled out as options on the model
// loaded by hand.
func TestRecipeRoundTrip(t *testing.T) {
	r := testRecipe()
	dir := writeBundle(t, r)
	back, err := flow.LoadRecipe(filepath.Join(dir, flow.RecipeFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("recipe read back:\n%+v\nwant\n%+v", back, r)
	}
	m, err := flow.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Recipe, r) {
		t.Errorf("opened recipe %+v", m.Recipe)
	}
	plain, expert := loadParts(t, dir)
	latents := func(m *flow.Model, opts ...flow.SampleOption) []*tensor.Tensor {
		t.Helper()
		z, err := m.SampleLatents(context.Background(), 5, append([]flow.SampleOption{flow.WithSeed(3)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	other, _, _ := otherDenoisers(t, plain, 9)
	recipe := []flow.SampleOption{withSteps(6), withTimeShift(1.5), withOffsets(flow.TimeOffsets{Step: 0.01, From: 0.5, Jump: -0.02}),
		withTemperature(0.9), flow.WithBatchSize(3), withExperts(flow.Expert{Model: expert, From: 0.5, Until: 0.8}),
		withEdgeRule(vae.BothDirections), withEdgeMargin(0.5)}
	with := func(opts ...flow.SampleOption) []flow.SampleOption { return append(slices.Clone(recipe), opts...) }
	forest := withDecode(vae.WithEdgeConstraint(graph.IsForest))
	for _, c := range []struct {
		name           string
		bundle, byHand []flow.SampleOption
	}{
		{"the recipe", nil, recipe},
		{"steps replaced", []flow.SampleOption{withSteps(4)}, with(withSteps(4))},
		{"temperature replaced", []flow.SampleOption{withTemperature(1)}, with(withTemperature(1))},
		{"edge rule replaced", []flow.SampleOption{withEdgeRule(vae.EitherDirection)}, with(withEdgeRule(vae.EitherDirection))},
		{"experts replaced", []flow.SampleOption{withExpert(&other, 0.9)},
			slices.Concat(recipe[:5], recipe[6:], []flow.SampleOption{withExpert(&other, 0.9)})},
		{"expert handing back by hand", nil, slices.Concat(recipe[:5], recipe[6:],
			[]flow.SampleOption{withExperts(flow.Expert{Model: expert, From: 0.5, Until: 0.8}, flow.Expert{Model: plain, From: 0.8})})},
		{"batch size over the recipe's", []flow.SampleOption{flow.WithBatchSize(2)}, with(flow.WithBatchSize(2))},
		{"edits before the recipe is chosen", []flow.SampleOption{withSteps(4), flow.WithRecipe("constrained")},
			[]flow.SampleOption{withSteps(4), withExpert(expert, 0.9), forest}},
		{"decode option added", []flow.SampleOption{forest}, with(forest)},
		{"alternative", []flow.SampleOption{flow.WithRecipe("constrained")}, []flow.SampleOption{withSteps(5), withExpert(expert, 0.9), forest}},
		{"alternative, steps replaced", []flow.SampleOption{flow.WithRecipe("constrained"), withSteps(3)}, []flow.SampleOption{withSteps(3), withExpert(expert, 0.9), forest}},
		{"completion", []flow.SampleOption{flow.WithRecipe("complete")},
			[]flow.SampleOption{withSteps(5), withDecode(vae.WithEdgeCompletion(graph.IsConnected, -2))}},
		{"no recipe", []flow.SampleOption{flow.WithRecipe(flow.NoRecipe)}, nil},
		{"the default by name", []flow.SampleOption{flow.WithRecipe("constrained"), flow.WithRecipe("")}, recipe},
		{"settings of one's own", []flow.SampleOption{own(flow.Sampler{Steps: 7, Grid: "random", FinalJump: 1})},
			[]flow.SampleOption{withSteps(7), withGrid("random"), withFinalJump(1)}},
		{"settings of one's own, edited", []flow.SampleOption{own(flow.Sampler{Steps: 7}), withTemperature(0.5)},
			[]flow.SampleOption{withSteps(7), withTemperature(0.5)}},
	} {
		got, err := flow.Sample(context.Background(), m, 5, append([]flow.SampleOption{flow.WithSeed(3)}, c.bundle...)...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		want, err := flow.Sample(context.Background(), plain, 5, append([]flow.SampleOption{flow.WithSeed(3)}, c.byHand...)...)
		if err != nil {
			t.Fatalf("%s, by hand: %v", c.name, err)
		}
		if !slices.Equal(g6(got), g6(want)) {
			t.Errorf("%s: the bundle samples %q, the same settings by hand %q", c.name, g6(got), g6(want))
		}
		if !sameLatents(latents(m, c.bundle...), latents(plain, c.byHand...)) {
			t.Errorf("%s: the bundle samples other latents than the same settings by hand", c.name)
		}
	}
	// The checks are not vacuous: the recipe, an override and the
	// alternative sample different latents.
	a, b, c := latents(m), latents(m, withTemperature(1)), latents(m, flow.WithRecipe("constrained"))
	if sameLatents(a, b) || sameLatents(a, c) || sameLatents(a, latents(plain)) {
		t.Error("the temperature, the alternative or the recipe changed no latent")
	}
	for _, s := range sample(t, m, 5, flow.WithRecipe("constrained")) {
		g, err := graph.ParseGraph6(s)
		if err != nil || !graph.IsForest(g) {
			t.Errorf("the constrained alternative sampled %s, not a forest", s)
		}
	}
	for _, c := range []struct {
		name string
		m    *flow.Model
		opts []flow.SampleOption
		want string
	}{
		{"unknown alternative", m, []flow.SampleOption{flow.WithRecipe("nope")}, `no alternative "nope"`},
		{"alternative without a recipe", plain, []flow.SampleOption{flow.WithRecipe("constrained")}, "has no recipe"},
		{"expert outside the bundle", plain, []flow.SampleOption{own(r.Sampler)}, "expert.safetensors"},
		{"bad settings", m, []flow.SampleOption{own(flow.Sampler{Steps: -2})}, "steps"},
	} {
		if _, err := flow.Sample(context.Background(), c.m, 2, c.opts...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := flow.Sample(context.Background(), plain, 2, flow.WithRecipe(flow.NoRecipe), flow.WithRecipe("")); err != nil {
		t.Errorf("no recipe asked of a model without one: %v", err)
	}
}

// TestRecipeBad checks that a sampler.json that cannot be used is refused,
// by LoadRecipe and Open, with an error naming the file and the key.
func TestRecipeBad(t *testing.T) {
	const head = `{"format": "lgflow-sampler/1", `
	for _, c := range []struct {
		name, json, want string
	}{
		{"unknown key", head + `"sampler": {}, "smapler": {}}`, `unknown key "smapler"`},
		{"unknown nested key", head + `"sampler": {"stpes": 70}}`, `unknown key "stpes"`},
		{"unknown key of an expert", head + `"sampler": {"experts": [{"file": "e", "from": 0.5, "to": 1}]}}`, `unknown key "to"`},
		{"no format", `{"sampler": {}}`, "format: missing"},
		{"another format", `{"format": "lgflow-sampler/2", "sampler": {"new": 1}}`, `"lgflow-sampler/2" is not "lgflow-sampler/1"`},
		{"not JSON", `steps = 70`, "not a sampling recipe"},
		{"data after the object", head + `"sampler": {}} {}`, "after top-level value"},
		{"steps of the wrong type", head + `"sampler": {"steps": "70"}}`, "sampler.steps"},
		{"negative steps", head + `"sampler": {"steps": -1}}`, "sampler.steps: -1 is outside"},
		{"grid", head + `"sampler": {"grid": "log"}}`, "sampler.grid"},
		{"time shift", head + `"sampler": {"time_shift": -1}}`, "sampler.time_shift"},
		{"time shift of the random grid", head + `"sampler": {"grid": "random", "time_shift": 1.5}}`, "sampler.time_shift"},
		{"final jump", head + `"sampler": {"final_jump": 1.5}}`, "sampler.final_jump"},
		{"removed method", head + `"sampler": {"method": "heun"}}`, `sampler.method: "heun" is no longer a setting: the Heun integrator was removed`},
		{"step offset", head + `"sampler": {"time_offsets": {"step": 2}}}`, "sampler.time_offsets.step: 2 is outside (-1, 1)"},
		{"offset start", head + `"sampler": {"time_offsets": {"from": 1}}}`, "sampler.time_offsets.from"},
		{"removed stochasticity", head + `"sampler": {"stochasticity": 0.02}}`, "sampler.stochasticity: 0.02 is no longer a setting"},
		{"removed method of an alternative", head + `"sampler": {}, "alternatives": {"x": {"method": "rk4"}}}`, "alternatives.x.method"},
		{"temperature", head + `"sampler": {"temperature": 50}}`, "sampler.temperature"},
		{"batch", head + `"sampler": {"batch_size": -4}}`, "sampler.batch_size"},
		{"edge rule", head + `"sampler": {"edge_rule": "xor"}}`, "sampler.edge_rule"},
		{"expert file outside the bundle", head + `"sampler": {"experts": [{"file": "../e.safetensors", "from": 0.5}]}}`, "sampler.experts[0].file"},
		{"expert time", head + `"sampler": {"experts": [{"file": "e", "from": 0}]}}`, "sampler.experts[0].from"},
		{"expert band", head + `"sampler": {"experts": [{"file": "e", "from": 0.5, "until": 0.4}]}}`, "sampler.experts[0].until"},
		{"overlapping experts", head + `"sampler": {"experts": [{"file": "e", "from": 0.4, "until": 0.8}, {"file": "f", "from": 0.6}]}}`, "sampler.experts[1].from"},
		{"constraint", head + `"sampler": {"constraints": ["planarr"]}}`, `sampler.constraints[0]: "planarr"`},
		{"constraint twice", head + `"sampler": {"constraints": ["dag", "dag"]}}`, "sampler.constraints[1]"},
		{"fill without a constraint", head + `"sampler": {"fill": -4}}`, "sampler.fill"},
		{"fill under spanning trees", head + `"sampler": {"constraints": ["tree"], "fill": -4}}`, "sampler.fill"},
		{"completion without a bound", head + `"sampler": {"complete": ["planar"]}}`, "sampler.complete"},
		{"completion and constraints", head + `"sampler": {"complete": ["planar"], "constraints": ["planar"], "fill": -4}}`, "sampler.complete"},
		{"alternative's setting", head + `"sampler": {}, "alternatives": {"constrained": {"temperature": 50}}}`, "alternatives.constrained.temperature"},
		{"alternative's name", head + `"sampler": {}, "alternatives": {"none": {}}}`, "alternatives"},
		{"negative guidance scale", head + `"sampler": {"guidance_scale": -1}}`, "sampler.guidance_scale: -1 is outside [0, 100]"},
		{"huge guidance scale", head + `"sampler": {}, "alternatives": {"strong": {"guidance_scale": 1e3}}}`, "alternatives.strong.guidance_scale"},
		{"guidance scale for an unconditional flow", head + `"sampler": {"guidance_scale": 2}}`, "sampler.guidance_scale: 2 for a flow trained without conditions"},
	} {
		dir := writeBundle(t, nil)
		path := filepath.Join(dir, flow.RecipeFile)
		if err := os.WriteFile(path, []byte(c.json), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := flow.LoadRecipe(path)
		if strings.Contains(c.name, "unconditional") {
			// A valid recipe; only the bundle's flow makes it wrong.
			if err != nil {
				t.Errorf("%s: LoadRecipe: %v", c.name, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: LoadRecipe error %v, want one naming %s and containing %q", c.name, err, path, c.want)
		}
		if _, err := flow.Open(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Open error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// Save refuses what it could not read back, and writes nothing.
	r := testRecipe()
	r.Sampler.Steps = -1
	path := filepath.Join(t.TempDir(), flow.RecipeFile)
	if err := r.Save(path); err == nil || !strings.Contains(err.Error(), "sampler.steps") {
		t.Errorf("Save of a bad recipe: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
		t.Errorf("Save of a bad recipe left %v", entries)
	}
	// Nor does it write what sampler.json cannot hold: an expert given as
	// a model, decode options of one's own.
	r = testRecipe()
	r.Sampler.Experts[0].Model = &flow.Model{}
	if err := r.Save(path); err == nil || !strings.Contains(err.Error(), "sampler.experts[0]") {
		t.Errorf("Save of an expert given as a model: %v", err)
	}
	r = testRecipe()
	alt := r.Alternatives["complete"]
	alt.Decode = []vae.DecodeOption{vae.WithConnected()}
	r.Alternatives["complete"] = alt
	if err := r.Save(path); err == nil || !strings.Contains(err.Error(), "alternatives.complete.decode") {
		t.Errorf("Save of decode options: %v", err)
	}
}

// TestRecipeRemovedKeys reads a sampler.json of an earlier version whose
// removed settings (the integrator, stochastic steps) hold the values that
// change nothing: it reads as the recipe without them.
func TestRecipeRemovedKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), flow.RecipeFile)
	text := `{"format": "lgflow-sampler/1", "sampler": {"steps": 7, "method": "euler", "stochasticity": 0},
		"alternatives": {"x": {"method": "euler", "grid": "random"}, "y": {"temperature": 0.5}}}`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := flow.LoadRecipe(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &flow.Recipe{Format: flow.RecipeFormat, Sampler: flow.Sampler{Steps: 7},
		Alternatives: map[string]flow.Sampler{"x": {Grid: "random"}, "y": {Temperature: 0.5}}}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("read %+v, want %+v", r, want)
	}
}

// TestOpenBad checks the bundles Open refuses: a missing LG-VAE, flow or
// expert, and a flow trained in another LG-VAE's latent space; and that a
// directory without a sampler.json opens without a recipe.
func TestOpenBad(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"no LG-VAE", func(t *testing.T, dir string) { remove(t, dir, vae.ModelFile) }, vae.ModelFile},
		{"no flow", func(t *testing.T, dir string) { remove(t, dir, flow.ModelFile) }, flow.ModelFile},
		{"no expert", func(t *testing.T, dir string) { remove(t, dir, "expert.safetensors") }, "expert.safetensors"},
		{"a flow of another LG-VAE", func(t *testing.T, dir string) {
			other := newVAE(t, vaeConfig(), 99) // same configuration, other encoder weights
			if err := other.Save(filepath.Join(dir, vae.ModelFile), nil); err != nil {
				t.Fatal(err)
			}
		}, "encoder weights"},
	} {
		dir := writeBundle(t, testRecipe())
		c.damage(t, dir)
		if _, err := flow.Open(dir); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: error %v, want one naming %s and containing %q", c.name, err, dir, c.want)
		}
	}
	dir := writeBundle(t, nil)
	m, err := flow.Open(dir)
	if err != nil || m.Recipe != nil {
		t.Fatalf("a bundle without sampler.json: %v, recipe %v", err, m.Recipe)
	}
	plain, _ := loadParts(t, dir)
	if !slices.Equal(sample(t, m, 3), sample(t, plain, 3)) {
		t.Error("a bundle without a recipe does not sample as the flow loaded alone")
	}
}

func remove(t *testing.T, dir, file string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, file)); err != nil {
		t.Fatal(err)
	}
}

// TestRecipeGuidanceScale checks a recipe's guidance_scale: it round-trips
// (0 kept, a setting of its own), it is the scale Sample uses by default
// (the latents of WithGuidanceScale by hand), and an option replaces it.
func TestRecipeGuidanceScale(t *testing.T) {
	s := &cond.Schema{Labels: []string{"a", "b"}}
	ae := newVAE(t, vaeConfig(), 1)
	m := untrainedFlow(t, ae)
	m.Cfg = m.Cfg.ForCondition(s)
	net, err := dit.New(m.Cfg.DiT, tensor.NewRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	m.Net, m.Cond = net, s
	randomizeCond(m, 7) // else the condition changes nothing
	dir := t.TempDir()
	if err := ae.Save(filepath.Join(dir, vae.ModelFile), nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Save(filepath.Join(dir, flow.ModelFile), nil); err != nil {
		t.Fatal(err)
	}
	zero, two := 0.0, 2.0
	r := &flow.Recipe{Format: flow.RecipeFormat, Sampler: flow.Sampler{GuidanceScale: &two},
		Alternatives: map[string]flow.Sampler{"unguided": {GuidanceScale: &zero}, "plain": {}}}
	path := filepath.Join(dir, flow.RecipeFile)
	if err := r.Save(path); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), `"guidance_scale": 0`) {
		t.Errorf("sampler.json does not keep the scale 0: %s, %v", b, err)
	}
	back, err := flow.LoadRecipe(path)
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("recipe read back: %+v, %v", back, err)
	}
	if got := strings.Join(r.Sampler.Describe(), ", "); got != "guidance scale 2" {
		t.Errorf("Describe: %q", got)
	}
	opened, err := flow.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	latents := sampleLatentsOf(t, 5)
	a := flow.WithCondition(cond.Value{Label: "a"})
	for _, c := range []struct {
		name           string
		bundle, byHand []flow.SampleOption
	}{
		{"the recipe's scale", []flow.SampleOption{a}, []flow.SampleOption{a, flow.WithGuidanceScale(2)}},
		{"an option's scale", []flow.SampleOption{a, flow.WithGuidanceScale(1)}, []flow.SampleOption{a}},
		{"an alternative's scale 0", []flow.SampleOption{flow.WithRecipe("unguided"), a}, []flow.SampleOption{a, flow.WithGuidanceScale(0)}},
		{"no scale: 1", []flow.SampleOption{flow.WithRecipe("plain"), a}, []flow.SampleOption{a, flow.WithGuidanceScale(1)}},
	} {
		if !sameLatents(latents(opened, c.bundle...), latents(m, c.byHand...)) {
			t.Errorf("%s: the bundle samples other latents than the same scale by hand", c.name)
		}
	}
	if sameLatents(latents(m, a, flow.WithGuidanceScale(2)), latents(m, a)) || sameLatents(latents(m, a), latents(m, a, flow.WithGuidanceScale(0))) {
		t.Error("the guidance scale changed no latent: the checks above are vacuous")
	}
}
