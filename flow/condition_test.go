package flow_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/flow/cond"
	"lgflow/nn"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
)

// testSchema has two labels and two properties: x in [0, 10] (std 2)
// and y in [-1, 1] (std 0.5), with tolerance 0.5 std.
func testSchema() *cond.Schema {
	return &cond.Schema{Labels: []string{"a", "b"}, Properties: []cond.Property{
		{Name: "x", Mean: 5, Std: 2, Min: 0, Max: 10}, {Name: "y", Std: 0.5, Min: -1, Max: 1}}}
}

// conditionalFlow returns an untrained flow on ae conditioned as s says
// (nil: unconditional), its denoiser drawn with seed 1 as untrainedFlow's.
func conditionalFlow(t *testing.T, f *fixture, s *cond.Schema) *flow.Model {
	t.Helper()
	m := untrainedFlow(t, f.ae)
	m.Cfg = m.Cfg.ForCondition(s)
	net, err := dit.New(m.Cfg.DiT, tensor.NewRNG(1))
	if err != nil {
		t.Fatal(err)
	}
	m.Net, m.Cond = net, s
	return m
}

// TestUnconditionalUnaffected checks that conditioning leaves
// unconditional flows as they were: a shipped checkpoint loads with no
// condition and no condition parameters, samples the same with the
// guidance scale 1 as without it, and a conditional flow whose condition
// paths are at their initial zero samples exactly what the unconditional
// flow with the same weights does, under any condition and scale.
func TestUnconditionalUnaffected(t *testing.T) {
	f := getFixture(t)
	ctx := context.Background()
	for _, name := range []string{"tree", "planar"} {
		dir := filepath.Join("..", "pretrained", name)
		if _, err := os.Stat(filepath.Join(dir, flow.ModelFile)); err != nil {
			t.Logf("%s: no shipped model (%v)", name, err)
			continue
		}
		m, err := flow.Load(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m.Cond != nil || m.Cfg.DiT.Conditional() {
			t.Errorf("%s: loaded as a conditional flow", name)
		}
		for _, p := range m.Net.Params() {
			if strings.HasPrefix(p.Name, "y_embed") || strings.HasPrefix(p.Name, "cond_") {
				t.Errorf("%s: parameter %s", name, p.Name)
			}
		}
		opts := []flow.SampleOption{flow.WithRecipe(flow.NoRecipe), flow.WithSeed(5), withSteps(3), flow.WithNodeCounts([]int{7, 12})}
		a, err := m.SampleLatents(ctx, 2, opts...)
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.SampleLatents(ctx, 2, append(opts, flow.WithGuidanceScale(1))...)
		if err != nil {
			t.Fatal(err)
		}
		if !sameLatents(a, b) {
			t.Errorf("%s: guidance scale 1 changed the samples", name)
		}
	}

	plain := untrainedFlow(t, f.ae)
	cm := conditionalFlow(t, f, testSchema())
	latents := sampleLatentsOf(t, 3)
	want := latents(plain)
	for _, opts := range [][]flow.SampleOption{
		nil,
		{flow.WithCondition(cond.Value{Label: "b", Props: []float64{3, 0}})},
		{flow.WithCondition(cond.Value{Label: "a", Props: []float64{9, -1}}), flow.WithGuidanceScale(2.5)},
		{flow.WithCondition(cond.Value{Label: "a", Props: []float64{9, -1}}), flow.WithGuidanceScale(0)},
	} {
		if !sameLatents(want, latents(cm, opts...)) {
			t.Errorf("an untrained conditional flow with options %d samples other latents than the unconditional one", len(opts))
		}
	}
}

// TestConditionErrors checks that conditions a model cannot take are
// errors, each naming its cause, and that a conditional model sampled
// without a condition samples unconditionally, whatever the scale.
func TestConditionErrors(t *testing.T) {
	f := getFixture(t)
	ctx := context.Background()
	plain := untrainedFlow(t, f.ae)
	m := conditionalFlow(t, f, testSchema())
	ok := cond.Value{Label: "a", Props: []float64{3, 0}}
	other := conditionalFlow(t, f, &cond.Schema{Labels: []string{"a", "c"}, Properties: testSchema().Properties})
	for _, tc := range []struct {
		name string
		m    *flow.Model
		opts []flow.SampleOption
		want string // "": no error
	}{
		{"fine", m, []flow.SampleOption{flow.WithCondition(ok)}, ""},
		{"one per graph", m, []flow.SampleOption{flow.WithCondition(ok, cond.Value{}, ok)}, ""},
		{"within the tolerance", m, []flow.SampleOption{flow.WithCondition(cond.Value{Label: "b", Props: []float64{-0.99, 1.24}})}, ""},
		{"unknown label", m, []flow.SampleOption{flow.WithCondition(cond.Value{Label: "c", Props: []float64{3, 0}})}, "unknown label \"c\""},
		{"too few properties", m, []flow.SampleOption{flow.WithCondition(cond.Value{Label: "a", Props: []float64{3}})}, "1 property values for a model with 2"},
		{"too many properties", m, []flow.SampleOption{flow.WithCondition(cond.Value{Label: "a", Props: []float64{3, 0, 1}})}, "3 property values"},
		{"above the range", m, []flow.SampleOption{flow.WithCondition(cond.Value{Label: "a", Props: []float64{11.5, 0}})}, "property x = 11.5 is outside the range"},
		{"below the range", m, []flow.SampleOption{flow.WithCondition(cond.Value{Label: "a", Props: []float64{3, -1.3}})}, "property y = -1.3 is outside"},
		{"NaN property", m, []flow.SampleOption{flow.WithCondition(cond.Value{Label: "a", Props: []float64{math.NaN(), 0}})}, "not a finite number"},
		{"label only", m, []flow.SampleOption{flow.WithCondition(cond.Value{Label: "a"})}, "no properties"},
		{"properties only", m, []flow.SampleOption{flow.WithCondition(cond.Value{Props: []float64{1, 0}})}, "no label"},
		{"bad graph named", m, []flow.SampleOption{flow.WithCondition(ok, ok, cond.Value{Label: "z", Props: []float64{1, 0}})}, "(graph 2)"},
		{"conditions for other counts", m, []flow.SampleOption{flow.WithCondition(ok, ok)}, "2 conditions for 3 graphs"},
		{"negative scale", m, []flow.SampleOption{flow.WithCondition(ok), flow.WithGuidanceScale(-1)}, "guidance scale"},
		{"infinite scale", m, []flow.SampleOption{flow.WithCondition(ok), flow.WithGuidanceScale(math.Inf(1))}, "guidance scale"},
		{"condition for an unconditional model", plain, []flow.SampleOption{flow.WithCondition(ok)}, "unconditional"},
		{"scale for an unconditional model", plain, []flow.SampleOption{flow.WithGuidanceScale(2)}, "unconditional"},
		{"scale 1 for an unconditional model", plain, []flow.SampleOption{flow.WithGuidanceScale(1)}, ""},
		{"expert with other labels", m, []flow.SampleOption{flow.WithCondition(ok), withExpert(other, 0.9)}, "conditions"},
		{"expert with the same conditions", m, []flow.SampleOption{flow.WithCondition(ok), flow.WithGuidanceScale(2), withExpert(m, 0.9)}, ""},
	} {
		_, err := tc.m.SampleLatents(ctx, 3, append(tc.opts, withSteps(3))...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	one := 1.0
	if _, err := m.EndpointPerturbation(0.5, 0.9, 2, flow.Sampler{GuidanceScale: &one}); err == nil {
		t.Error("EndpointPerturbation took a guidance scale")
	}

	// Without a condition a conditional model samples unconditionally:
	// the same latents as with the null condition for every graph, at any
	// scale; and the same as guidance scale 0 under a condition.
	randomizeCond(m, 6)
	latents := sampleLatentsOf(t, 4)
	uncond := latents(m)
	for _, opts := range [][]flow.SampleOption{
		{flow.WithGuidanceScale(3)},
		{flow.WithCondition(cond.Value{})},
		{flow.WithCondition(ok), flow.WithGuidanceScale(0)},
	} {
		if !sameLatents(uncond, latents(m, opts...)) {
			t.Errorf("options %d: not the unconditional samples", len(opts))
		}
	}
	if sameLatents(uncond, latents(m, flow.WithCondition(ok))) {
		t.Error("the condition changed nothing")
	}
}

// randomizeCond gives m's condition paths random weights, as if trained.
func randomizeCond(m *flow.Model, seed uint64) {
	r := tensor.NewRNG(seed)
	for _, p := range m.Net.Params() {
		if strings.HasPrefix(p.Name, "y_embed.") || strings.HasPrefix(p.Name, "cond_") {
			tensor.FillNormal(p.V.Value, r, 0, 0.5)
		}
	}
}

// condData is a training set of two classes that the latents tell apart:
// the fixture's graphs, alternately "hi" (first latent coordinate about
// +2) and "lo" (about -2), with a property "level" equal to that centre.
type condData struct {
	lat    *flow.Latents
	labels []string
	level  [][]float64
}

var (
	condOnce sync.Once
	condFix  *condData
)

func getCondData(t *testing.T) *condData {
	t.Helper()
	f := getFixture(t)
	condOnce.Do(func() {
		d := &condData{lat: &flow.Latents{}}
		r := tensor.NewRNG(17)
		for i, mu := range f.lat.Mu {
			n := mu.Dim(0)
			c, label := 2.0, "hi"
			if i%2 == 1 {
				c, label = -2, "lo"
			}
			// The first coordinate is the class, c ± 0.3; the others are
			// noise of about the first's spread over both classes, so
			// that the flow's one latent scale suits every coordinate.
			z := tensor.RandN(r, tensor.Float32, n, 4)
			tensor.MulScalar(z, z, 2)
			for j := range n {
				z.Set(0.15*z.At(j, 0)+c, j, 0)
			}
			d.lat.Mu = append(d.lat.Mu, z)
			d.lat.LogVar = append(d.lat.LogVar, tensor.Full(tensor.Float32, -10, n, 4))
			d.labels = append(d.labels, label)
			d.level = append(d.level, []float64{c})
		}
		condFix = d
	})
	return condFix
}

// latents returns a copy of the training latents with conditions c.
func (d *condData) latents(c *cond.Set) *flow.Latents {
	return &flow.Latents{Mu: d.lat.Mu, LogVar: d.lat.LogVar, Cond: c}
}

// meanFirst returns the mean of the first latent coordinate over every
// node of zs.
func meanFirst(zs []*tensor.Tensor) float64 {
	s, n := 0.0, 0
	for _, z := range zs {
		for j := range z.Dim(0) {
			s += z.At(j, 0)
			n++
		}
	}
	return s / float64(n)
}

// TestTrainConditional trains tiny conditional flows on two classes of
// latents, by label and by property, and checks that the condition moves
// the samples to the class asked for, more so with a guidance scale of 2.
func TestTrainConditional(t *testing.T) {
	f := getFixture(t)
	d := getCondData(t)
	ctx := context.Background()
	byLabel, err := cond.NewSet(d.labels, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	byLevel, err := cond.NewSet(nil, []string{"level"}, d.level)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		conds  *cond.Set
		hi, lo cond.Value
	}{
		{"label", byLabel, cond.Value{Label: "hi"}, cond.Value{Label: "lo"}},
		{"property", byLevel, cond.Value{Props: []float64{2}}, cond.Value{Props: []float64{-2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := f.cfg.ForCondition(tc.conds.Schema)
			// 600 steps of the tiny preset: about a second on one core.
			cfg.Steps, cfg.EMAAfter, cfg.EMABeta = 600, 50, 0.95
			m, err := flow.Train(ctx, cfg, f.ae, f.data, d.latents(tc.conds), flow.TrainOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mean := func(opts ...flow.SampleOption) float64 {
				zs, err := m.SampleLatents(ctx, 24, append([]flow.SampleOption{flow.WithSeed(9), withSteps(20)}, opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				return meanFirst(zs)
			}
			hi, lo, un := mean(flow.WithCondition(tc.hi)), mean(flow.WithCondition(tc.lo)), mean()
			hi2, lo2 := mean(flow.WithCondition(tc.hi), flow.WithGuidanceScale(2)), mean(flow.WithCondition(tc.lo), flow.WithGuidanceScale(2))
			t.Logf("mean first coordinate: hi %.3f, lo %.3f, unconditional %.3f; guidance 2: hi %.3f, lo %.3f", hi, lo, un, hi2, lo2)
			switch {
			case !(hi > 0.5 && lo < -0.5 && hi-lo > 2):
				t.Errorf("conditioned samples not in their classes (centres +2 and -2): hi %.3f, lo %.3f", hi, lo)
			case !(hi2-lo2 > hi-lo):
				t.Errorf("guidance 2 separates the classes less than guidance 1: hi %.3f, lo %.3f", hi2, lo2)
			}
		})
	}
}

// TestConditionRoundTrip trains a conditional flow into a directory and
// loads it back: the schema, the weights and the samples under a
// condition are the same; metadata that does not fit is an error.
func TestConditionRoundTrip(t *testing.T) {
	f := getFixture(t)
	d := getCondData(t)
	ctx := context.Background()
	conds, err := cond.NewSet(d.labels, []string{"level"}, d.level)
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.cfg.ForCondition(conds.Schema)
	cfg.Steps, cfg.CondDrop = 20, 0.2
	dir := t.TempDir()
	m, err := flow.Train(ctx, cfg, f.ae, f.data, d.latents(conds), flow.TrainOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, flow.ModelFile)
	back, err := flow.Load(path, f.ae)
	if err != nil {
		t.Fatal(err)
	}
	if back.Cond == nil || !slices.Equal(back.Cond.Labels, []string{"hi", "lo"}) || !slices.Equal(back.Cond.Properties, conds.Schema.Properties) {
		t.Fatalf("schema %+v after loading, want %+v", back.Cond, conds.Schema)
	}
	if back.Cfg != cfg {
		t.Errorf("configuration %+v after loading, want %+v", back.Cfg, cfg)
	}
	a, b := nn.StateDict(m.Net), nn.StateDict(back.Net)
	for k, x := range a {
		if tensor.MaxAbs(tensor.Sub(nil, x, b[k])) != 0 {
			t.Errorf("%s differs after loading", k)
		}
	}
	if m.CondSizes == nil || len(m.CondSizes.Nodes) != len(f.data.Graphs) || !reflect.DeepEqual(m.CondSizes, back.CondSizes) {
		t.Errorf("conditioned node counts %+v trained, %+v loaded", m.CondSizes, back.CondSizes)
	}
	latents := sampleLatentsOf(t, 2)
	opts := []flow.SampleOption{flow.WithCondition(cond.Value{Label: "lo", Props: []float64{-2}}), flow.WithGuidanceScale(1.5)}
	if !sameLatents(latents(m, opts...), latents(back, opts...)) {
		t.Error("the loaded flow samples other latents")
	}

	file, err := safetensors.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	plainCfg := trainer.MarshalMeta(f.cfg)
	for _, tc := range []struct {
		name string
		edit func(meta map[string]string)
	}{
		{"no schema", func(meta map[string]string) { delete(meta, "condition") }},
		{"bad JSON", func(meta map[string]string) { meta["condition"] = "{" }},
		{"schema of one label", func(meta map[string]string) {
			meta["condition"] = `{"labels":["hi"],"properties":[{"name":"level","mean":0,"std":2,"min":-2,"max":2}]}`
		}},
		{"zero std", func(meta map[string]string) {
			meta["condition"] = `{"labels":["hi","lo"],"properties":[{"name":"level","mean":0,"std":0,"min":-2,"max":2}]}`
		}},
		{"schema for an unconditional denoiser", func(meta map[string]string) { meta[trainer.MetaConfig] = plainCfg }},
		{"node counts for an unconditional flow", func(meta map[string]string) {
			delete(meta, "condition")
			meta[trainer.MetaConfig] = plainCfg
		}},
		{"node counts: bad JSON", func(meta map[string]string) { meta["condition_sizes"] = "[" }},
		{"node counts: a label index out of range", func(meta map[string]string) {
			meta["condition_sizes"] = `{"nodes":[5,6],"labels":[0,2],"props":[[1],[2]]}`
		}},
		{"node counts: a graph without properties", func(meta map[string]string) {
			meta["condition_sizes"] = `{"nodes":[5,6],"labels":[0,1],"props":[[1]]}`
		}},
		{"node counts: zero nodes", func(meta map[string]string) {
			meta["condition_sizes"] = `{"nodes":[5,0],"labels":[0,1],"props":[[1],[2]]}`
		}},
		{"more classes than the file holds", func(meta map[string]string) {
			c := cfg
			c.DiT.Classes = 3
			meta[trainer.MetaConfig] = trainer.MarshalMeta(c)
			meta["condition"] = `{"labels":["hi","lo","mid"],"properties":[{"name":"level","mean":0,"std":2,"min":-2,"max":2}]}`
		}},
	} {
		meta := map[string]string{}
		for k, v := range file.Metadata {
			meta[k] = v
		}
		tc.edit(meta)
		p := filepath.Join(t.TempDir(), "bad.safetensors")
		if err := safetensors.Save(p, file.Tensors, meta); err != nil {
			t.Fatal(err)
		}
		if _, err := loadFlowNoPanic(t, p, f.ae); err == nil {
			t.Errorf("%s: loaded", tc.name)
		}
	}
}

// TestResumeConditional interrupts a conditional run and resumes it: the
// condition dropout is drawn from the steps' seeded generators, so the
// result equals the uninterrupted run's bit for bit. Resuming with other
// conditions is refused.
func TestResumeConditional(t *testing.T) {
	f := getFixture(t)
	d := getCondData(t)
	ctx := context.Background()
	conds, err := cond.NewSet(d.labels, []string{"level"}, d.level)
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.cfg.ForCondition(conds.Schema)
	cfg.Steps, cfg.CheckpointEvery, cfg.CondDrop = 24, 8, 0.3
	lat := d.latents(conds)
	run := func(ctx context.Context, dir string, resume bool, lat *flow.Latents, onStep func(int)) (*flow.Model, error) {
		return flow.Train(ctx, cfg, f.ae, f.data, lat, flow.TrainOptions{Dir: dir, Resume: resume, LogEvery: 1,
			Progress: func(p flow.Progress) { onStep(p.Step) }})
	}
	straight, err := run(ctx, t.TempDir(), false, lat, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := run(cctx, dir, false, lat, func(s int) {
		if s == 16 {
			cancel()
		}
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	resumed, err := run(ctx, dir, true, lat, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	a, b := nn.StateDict(straight.Net), nn.StateDict(resumed.Net)
	for k, x := range a {
		if tensor.MaxAbs(tensor.Sub(nil, x, b[k])) != 0 {
			t.Errorf("%s differs between the resumed and the uninterrupted run", k)
		}
	}
	other, err := cond.NewSet(d.labels, []string{"level"}, append(slices.Clone(d.level[:len(d.level)-1]), []float64{5}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(ctx, dir, true, d.latents(other), func(int) {}); err == nil || !strings.Contains(err.Error(), "other conditions") {
		t.Errorf("resumed with other conditions: %v", err)
	}
}

// TestTrainConditionErrors checks Train's checks of the conditions.
func TestTrainConditionErrors(t *testing.T) {
	f := getFixture(t)
	d := getCondData(t)
	ctx := context.Background()
	conds, err := cond.NewSet(d.labels, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	short, err := cond.NewSet(d.labels[:5], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.cfg
	cfg.Steps = 1
	for _, tc := range []struct {
		name string
		cfg  flow.Config
		lat  *flow.Latents
		want string
	}{
		{"conditions for an unconditional denoiser", cfg, d.latents(conds), "ForCondition"},
		{"conditional denoiser without conditions", cfg.ForCondition(conds.Schema), d.latents(nil), "without a condition schema"},
		{"conditions for other graphs", cfg.ForCondition(short.Schema), d.latents(short), "conditions for 5 graphs"},
		{"CondDrop 1", func() flow.Config { c := cfg.ForCondition(conds.Schema); c.CondDrop = 1; return c }(), d.latents(conds), "CondDrop"},
	} {
		if _, err := flow.Train(ctx, tc.cfg, f.ae, f.data, tc.lat, flow.TrainOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	// A conditional flow may start from an unconditional one: the shared
	// weights come from it (one step at a negligible learning rate keeps
	// them; a denoiser drawn afresh would differ by about InitStd).
	init := conditionalFlow(t, f, nil)
	init.Net, err = dit.New(init.Cfg.DiT, tensor.NewRNG(99))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.ForCondition(conds.Schema)
	c.Steps, c.LR = 1, 1e-12
	m, err := flow.Train(ctx, c, f.ae, f.data, d.latents(conds), flow.TrainOptions{Init: init})
	if err != nil {
		t.Fatal(err)
	}
	a := nn.StateDict(init.Net)
	for k, x := range nn.StateDict(m.Net) {
		if y, ok := a[k]; ok && tensor.MaxAbs(tensor.Sub(nil, x, y)) > 1e-9 {
			t.Errorf("%s differs from the initial unconditional denoiser's", k)
		}
	}
	// A conditional flow does not start an unconditional one.
	if _, err := flow.Train(ctx, cfg, f.ae, f.data, d.latents(nil), flow.TrainOptions{Init: m}); err == nil || !strings.Contains(err.Error(), "initial denoiser") {
		t.Errorf("an unconditional flow initialised from a conditional one: %v", err)
	}
}

// TestConditionedNodeCounts checks that a graph sampled under a condition
// takes its node count from the training graphs with that condition
// (Model.CondSizes), the null condition and a model without the table
// from the whole histogram, and that WithNodeCounts overrides both.
func TestConditionedNodeCounts(t *testing.T) {
	f := getFixture(t)
	s := testSchema()
	m := conditionalFlow(t, f, s)
	// Label a: 5 or 6 nodes; label b: 9 nodes.
	m.CondSizes = &cond.Sizes{Nodes: []int{5, 6, 9, 9}, Labels: []int{0, 0, 1, 1}, Props: [][]float64{{1, 0}, {2, 0}, {8, 0}, {9, 0}}}
	if err := m.CondSizes.Check(s); err != nil {
		t.Fatal(err)
	}
	a, b := cond.Value{Label: "a", Props: []float64{1, 0}}, cond.Value{Label: "b", Props: []float64{9, 0}}
	sizes := func(m *flow.Model, opts ...flow.SampleOption) []int {
		t.Helper()
		zs, err := m.SampleLatents(context.Background(), 16, append([]flow.SampleOption{flow.WithSeed(3), withSteps(2)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int, len(zs))
		for i, z := range zs {
			out[i] = z.Dim(0)
		}
		return out
	}
	count := func(xs []int, v int) int {
		k := 0
		for _, x := range xs {
			if x == v {
				k++
			}
		}
		return k
	}
	if got := sizes(m, flow.WithCondition(b)); count(got, 9) != 16 {
		t.Errorf("label b: node counts %v, want all 9", got)
	}
	if got := sizes(m, flow.WithCondition(a)); count(got, 5)+count(got, 6) != 16 || count(got, 5) == 0 || count(got, 6) == 0 {
		t.Errorf("label a: node counts %v, want 5 and 6", got)
	}
	perGraph := make([]cond.Value, 16)
	for i := range perGraph {
		perGraph[i] = [3]cond.Value{a, b, {}}[i%3]
	}
	unconditional := sizes(m)
	got := sizes(m, flow.WithCondition(perGraph...))
	for i, n := range got {
		switch {
		case i%3 == 0 && n != 5 && n != 6, i%3 == 1 && n != 9:
			t.Errorf("graph %d under %+v has %d nodes", i, perGraph[i], n)
		case i%3 == 2 && m.NodeCounts[n] == 0:
			t.Errorf("graph %d, null condition: %d nodes, which no training graph has", i, n)
		}
	}
	if fixed := []int{4, 7, 4, 7, 4, 7, 4, 7, 4, 7, 4, 7, 4, 7, 4, 7}; !slices.Equal(sizes(m, flow.WithCondition(b), flow.WithNodeCounts(fixed)), fixed) {
		t.Error("WithNodeCounts did not fix the node counts under a condition")
	}
	m.CondSizes = nil
	if got := sizes(m, flow.WithCondition(b)); !slices.Equal(got, unconditional) {
		t.Errorf("without the table, node counts %v under a condition, %v unconditionally", got, unconditional)
	}
}
