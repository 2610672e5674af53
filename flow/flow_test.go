package flow_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// vaeConfig is a tiny LG-VAE; the flow tests use it untrained (its decoder
// still maps different latents to different graphs, which is all sampling
// tests need).
func vaeConfig() vae.Config {
	return vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4, EdgeClasses: 1,
		Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true}
}

// fixture is the data and models shared by the tests: 12 graphs of 6, 9 and
// 12 nodes (4 each), their latents under an untrained LG-VAE, and a flow
// model trained on them for 60 steps with the "tiny" preset.
type fixture struct {
	ae     *vae.Model
	data   *vae.Dataset
	lat    *flow.Latents
	cfg    flow.Config
	model  *flow.Model
	losses []float64
}

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
)

func getFixture(t *testing.T) *fixture {
	t.Helper()
	fixOnce.Do(func() { fix, fixErr = buildFixture() })
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fix
}

func buildFixture() (*fixture, error) {
	ctx := context.Background()
	f := &fixture{}
	var err error
	if f.ae, err = vae.New(vaeConfig(), 1); err != nil {
		return nil, err
	}
	gs := append(append(datasets.Tree(6, 4, 1), datasets.Planar(9, 4, 1)...), datasets.Tree(12, 4, 2)...)
	if f.data, err = vae.Prepare(ctx, gs, f.ae.Cfg, nil); err != nil {
		return nil, err
	}
	if f.lat, err = flow.EncodeLatents(ctx, f.ae, f.data, 5, nil); err != nil {
		return nil, err
	}
	if f.cfg, err = flow.Preset("", "tiny", 4); err != nil {
		return nil, err
	}
	f.cfg.Steps = 60
	f.model, err = flow.Train(ctx, f.cfg, f.ae, f.data, f.lat, flow.TrainOptions{LogEvery: 1,
		Progress: func(p flow.Progress) { f.losses = append(f.losses, p.Loss) }})
	return f, err
}

// sample draws n graphs and returns them as graph6 strings.
func sample(t *testing.T, m *flow.Model, n int, opts ...flow.SampleOption) []string {
	t.Helper()
	gs, err := flow.Sample(context.Background(), m, n, append([]flow.SampleOption{withSteps(8)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != n {
		t.Fatalf("Sample returned %d graphs, want %d", len(gs), n)
	}
	return g6(gs)
}

func g6(gs []*graph.Graph) []string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = graph.FormatGraph6(g)
	}
	return s
}

func TestTrainLossDecreases(t *testing.T) {
	f := getFixture(t)
	if len(f.losses) != f.cfg.Steps {
		t.Fatalf("%d progress reports for %d steps with LogEvery 1", len(f.losses), f.cfg.Steps)
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
				t.Fatalf("loss %v", x)
			}
			s += x
		}
		return s / float64(len(xs))
	}
	first, last := mean(f.losses[:15]), mean(f.losses[len(f.losses)-15:])
	t.Logf("mean loss over the first 15 steps %.3f, last 15 %.3f", first, last)
	if last > 0.75*first {
		t.Errorf("loss did not decrease: first 15 steps %.3f, last 15 %.3f", first, last)
	}
	m := f.model
	if m.Scale <= 0 || math.IsNaN(m.Scale) {
		t.Errorf("latent scale %v", m.Scale)
	}
	want := make([]int, 13)
	want[6], want[9], want[12] = 4, 4, 4
	if !slices.Equal(m.NodeCounts, want) {
		t.Errorf("NodeCounts %v, want %v", m.NodeCounts, want)
	}
	if m.VAE != f.ae || m.Cfg != f.cfg {
		t.Error("model not bound to its VAE and configuration")
	}
}

func TestPresetAndValidate(t *testing.T) {
	for _, tc := range []struct {
		name         string
		width, depth int
		batch        int
	}{
		{"tiny", 32, 2, 8}, {"cpu", 128, 4, 64}, {"T", 384, 6, 256}, {"S", 384, 12, 256}, {"B", 768, 12, 256},
	} {
		c, err := flow.Preset("", tc.name, 16)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.DiT.Width != tc.width || c.DiT.Depth != tc.depth || c.BatchSize != tc.batch || c.DiT.Dim != 16 || c.SelfCondProb != 0.5 {
			t.Errorf("%s: %+v", tc.name, c)
		}
	}
	if _, err := flow.Preset("", "huge", 16); err == nil || !strings.Contains(err.Error(), "huge") {
		t.Errorf("unknown preset: error %v", err)
	}
	base, _ := flow.Preset("", "tiny", 4)
	for _, tc := range []struct {
		name string
		mod  func(*flow.Config)
		want string
	}{
		{"batch", func(c *flow.Config) { c.BatchSize = 0 }, "BatchSize"},
		{"selfcond", func(c *flow.Config) { c.SelfCondProb = 1.5 }, "SelfCondProb"},
		{"lr", func(c *flow.Config) { c.LR = 0 }, "LR"},
		{"dit", func(c *flow.Config) { c.DiT.Heads = 3 }, "divisible"},
	} {
		c := base
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %s", tc.name, err, tc.want)
		}
	}
}

// TestSampleDeterminism: the same seed gives the same graphs, different
// seeds different ones, and sizes come from the training histogram in
// about the right proportions.
func TestSampleDeterminism(t *testing.T) {
	m := getFixture(t).model
	a := sample(t, m, 6, flow.WithSeed(3))
	b := sample(t, m, 6, flow.WithSeed(3))
	c := sample(t, m, 6, flow.WithSeed(4))
	if !slices.Equal(a, b) {
		t.Errorf("seed 3 twice gave different graphs:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 3 and 4 gave the same graphs %v", a)
	}
	gs, err := flow.Sample(context.Background(), m, 150, withSteps(1), flow.WithBatchSize(64), flow.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 150 {
		t.Fatalf("%d graphs, want 150", len(gs))
	}
	count := map[int]int{}
	for _, g := range gs {
		count[g.N()]++
	}
	for n, c := range count {
		if n != 6 && n != 9 && n != 12 {
			t.Errorf("sampled a graph of %d nodes, not in the training histogram", n)
		}
		if c < 30 || c > 70 { // expected 50 each; the bounds are 3.5 standard deviations
			t.Errorf("%d graphs of %d nodes out of 150, expected about 50", c, n)
		}
	}
}

func TestSampleOptions(t *testing.T) {
	m := getFixture(t).model
	ctx := context.Background()
	sizes := []int{3, 7, 5, 12, 1}
	gs, err := flow.Sample(ctx, m, len(sizes), flow.WithNodeCounts(sizes), withSteps(4), flow.WithBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range gs {
		if g.N() != sizes[i] || g.Directed() {
			t.Errorf("graph %d: %v, want an undirected graph of %d nodes", i, g, sizes[i])
		}
	}
	var reports [][2]int
	euler := sample(t, m, 5, flow.WithSeed(9), flow.WithBatchSize(2),
		flow.WithProgress(func(done, total int) { reports = append(reports, [2]int{done, total}) }))
	if want := [][2]int{{2, 5}, {4, 5}, {5, 5}}; !slices.Equal(reports, want) {
		t.Errorf("progress %v, want %v", reports, want)
	}
	// WithBatchSize replaces the sampler's batch size, whatever the order.
	batch := flow.WithSettings(func(s *flow.Sampler) { s.BatchSize = 3 })
	if b := sample(t, m, 5, flow.WithSeed(9), flow.WithBatchSize(2), batch); !slices.Equal(b, euler) {
		t.Error("the sampler's batch size replaced WithBatchSize's")
	}
	if b := sample(t, m, 5, flow.WithSeed(9), batch); slices.Equal(b, euler) {
		t.Error("the sampler's batch size of 3 gave the graphs of batches of 2")
	}
	// Temperature and the final jump change the samples; temperature 1 and
	// no jump are the defaults.
	if hot := sample(t, m, 5, flow.WithSeed(9), flow.WithBatchSize(2), withTemperature(1)); !slices.Equal(hot, euler) {
		t.Error("temperature 1 is not the default")
	}
	if cold := sample(t, m, 5, flow.WithSeed(9), flow.WithBatchSize(2), withTemperature(0.5)); slices.Equal(cold, euler) {
		t.Error("temperature 0.5 gave the same graphs as 1")
	}
	if jump := sample(t, m, 5, flow.WithSeed(9), flow.WithBatchSize(2), withFinalJump(flow.DefaultFinalJump)); !slices.Equal(jump, euler) {
		t.Error("the default final jump is not DefaultFinalJump")
	}
	none := sample(t, m, 5, flow.WithSeed(9), flow.WithBatchSize(2), withFinalJump(1))
	if half := sample(t, m, 5, flow.WithSeed(9), flow.WithBatchSize(2), withFinalJump(0.5)); slices.Equal(half, none) {
		t.Error("a final jump at 0.5 gave the same graphs as none")
	}
	if one := sample(t, m, 5, flow.WithSeed(9), flow.WithBatchSize(2), withFinalJump(0.5), withSteps(1)); len(one) != 5 {
		t.Error("one step with a final jump did not sample")
	}
	if zero := sample(t, m, 5, flow.WithSeed(9), flow.WithBatchSize(2), withOffsets(flow.TimeOffsets{})); !slices.Equal(zero, euler) {
		t.Error("zero time offsets changed the samples")
	}
	if late := sample(t, m, 5, flow.WithSeed(9), flow.WithBatchSize(2), withOffsets(flow.TimeOffsets{Step: 0.01, From: 0.96})); !slices.Equal(late, euler) {
		t.Error("a step offset from after the last step changed the samples")
	}
	// SampleLatents gives the latents Sample decodes.
	lat, err := m.SampleLatents(ctx, 5, flow.WithSeed(9), flow.WithBatchSize(2), withSteps(8))
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := m.VAE.DecodeGraphs(ctx, lat)
	if err != nil {
		t.Fatal(err)
	}
	if got := g6(decoded); !slices.Equal(got, euler) {
		t.Errorf("SampleLatents decodes to %v, Sample gave %v", got, euler)
	}
	for i, z := range lat {
		if z.Dim(0) != decoded[i].N() {
			t.Errorf("graph %d: latents %v for %d nodes", i, z.Shape(), decoded[i].N())
		}
	}
	random := flow.WithSettings(func(s *flow.Sampler) { s.Grid = "random" })
	r1 := sample(t, m, 5, flow.WithSeed(9), random)
	r2 := sample(t, m, 5, flow.WithSeed(9), random)
	if !slices.Equal(r1, r2) {
		t.Error("the random time grid is not determined by the seed")
	}
	// The edge rules decode the same latents: "and" keeps a subset of the
	// edges of "or", and "mean" lies between them (the fixture has one edge
	// class, where that order holds).
	rules := map[vae.EdgeRule][]*graph.Graph{}
	for _, r := range []vae.EdgeRule{vae.EitherDirection, vae.BothDirections, vae.MeanLogits} {
		gs, err := flow.Sample(ctx, m, 5, flow.WithSeed(9), withSteps(8), withEdgeRule(r))
		if err != nil {
			t.Fatal(err)
		}
		rules[r] = gs
	}
	andEdges := 0
	for i := range 5 {
		or, and, mean := rules[vae.EitherDirection][i], rules[vae.BothDirections][i], rules[vae.MeanLogits][i]
		andEdges += and.M()
		for _, e := range and.Edges() {
			if !or.HasEdge(e.From, e.To) || !mean.HasEdge(e.From, e.To) {
				t.Errorf("graph %d: edge %v decoded with \"and\" but not with \"or\" or \"mean\"", i, e)
			}
		}
		for _, e := range mean.Edges() {
			if !or.HasEdge(e.From, e.To) {
				t.Errorf("graph %d: edge %v decoded with \"mean\" but not with \"or\"", i, e)
			}
		}
	}
	if andEdges == 0 {
		t.Error(`no edges decoded with "and": the subset checks are vacuous`)
	}
	// A positive edge margin keeps a subset of the argmax's edges, a
	// negative one a superset, on the same latents.
	for _, margin := range []float64{0.5, -0.5} {
		gs, err := flow.Sample(ctx, m, 5, flow.WithSeed(9), withSteps(8), withEdgeMargin(margin))
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range gs {
			sub, super := g, rules[vae.EitherDirection][i]
			if margin < 0 {
				sub, super = super, sub
			}
			for _, e := range sub.Edges() {
				if !super.HasEdge(e.From, e.To) {
					t.Errorf("margin %v, graph %d: edge %v breaks the subset order", margin, i, e)
				}
			}
		}
	}
	if gs, err := flow.Sample(ctx, m, 0); err != nil || len(gs) != 0 {
		t.Errorf("Sample(0) = %v, %v", gs, err)
	}
	for _, tc := range []struct {
		name string
		n    int
		opts []flow.SampleOption
		want string
	}{
		{"negative n", -1, nil, "-1"},
		{"negative steps", 2, []flow.SampleOption{withSteps(-1)}, "steps: -1"},
		{"zero batch", 2, []flow.SampleOption{flow.WithBatchSize(0)}, "batch"},
		{"negative sampler batch", 2, []flow.SampleOption{flow.WithSettings(func(s *flow.Sampler) { s.BatchSize = -1 })}, "batch_size"},
		{"sizes length", 2, []flow.SampleOption{flow.WithNodeCounts([]int{4})}, "1 node counts for 2 graphs"},
		{"zero size", 2, []flow.SampleOption{flow.WithNodeCounts([]int{4, 0})}, "graph 1 has 0 nodes"},
		{"bad edge rule", 2, []flow.SampleOption{withEdgeRule(vae.EdgeRule(7))}, "edge_rule"},
		{"negative time shift", 2, []flow.SampleOption{withTimeShift(-1)}, "time_shift"},
		{"shifted random grid", 2, []flow.SampleOption{withTimeShift(2), flow.WithSettings(func(s *flow.Sampler) { s.Grid = "random" })}, "random"},
		{"unknown grid", 2, []flow.SampleOption{flow.WithSettings(func(s *flow.Sampler) { s.Grid = "chebyshev" })}, "grid"},
		{"NaN edge margin", 2, []flow.SampleOption{withEdgeMargin(math.NaN())}, "edge_margin"},
		{"negative temperature", 2, []flow.SampleOption{withTemperature(-1)}, "temperature"},
		{"NaN temperature", 2, []flow.SampleOption{withTemperature(math.NaN())}, "temperature"},
		{"jump after 1", 2, []flow.SampleOption{withFinalJump(1.5)}, "final_jump"},
		{"jump before start", 2, []flow.SampleOption{withFinalJump(0.005)}, "final_jump"},
		{"NaN time offset", 2, []flow.SampleOption{withOffsets(flow.TimeOffsets{Step: math.NaN()})}, "time_offsets"},
		{"time offset of 1", 2, []flow.SampleOption{withOffsets(flow.TimeOffsets{Jump: 1})}, "time_offsets"},
		{"time offsets from 1", 2, []flow.SampleOption{withOffsets(flow.TimeOffsets{Step: 0.01, From: 1})}, "time_offsets"},
		{"time offset before the grid", 2, []flow.SampleOption{withOffsets(flow.TimeOffsets{Step: -0.05})}, "outside (0, 1)"},
	} {
		if _, err := flow.Sample(ctx, m, tc.n, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := flow.Sample(ctx, &flow.Model{}, 2); err == nil {
		t.Error("Sample accepted an empty Model")
	}
}

// TestSampleEmptyHistogram: a hand-built Model without node counts must
// give an error, not a panic, when no sizes are given.
func TestSampleEmptyHistogram(t *testing.T) {
	f := getFixture(t)
	m := *f.model
	m.NodeCounts = nil
	var err error
	panicked := func() (p any) {
		defer func() { p = recover() }()
		_, err = flow.Sample(context.Background(), &m, 2, withSteps(1))
		return nil
	}()
	if panicked != nil {
		t.Fatalf("Sample panics (%v) on a Model with an empty NodeCounts instead of returning an error", panicked)
	}
	if err == nil {
		t.Error("Sample with an empty node-count histogram returned no error")
	}
	if _, err := flow.Sample(context.Background(), &m, 2, withSteps(1), flow.WithNodeCounts([]int{3, 4})); err != nil {
		t.Errorf("explicit node counts need no histogram: %v", err)
	}
}

func TestSampleCancelled(t *testing.T) {
	m := getFixture(t).model
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := flow.Sample(ctx, m, 4, withSteps(3)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: error %v, want context.Canceled", err)
	}
	// Cancelled after the first batch.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	gs, err := flow.Sample(ctx, m, 6, withSteps(3), flow.WithBatchSize(2), flow.WithProgress(func(done, total int) { cancel() }))
	if !errors.Is(err, context.Canceled) || gs != nil {
		t.Errorf("cancelled during sampling: %d graphs, error %v; want none and context.Canceled", len(gs), err)
	}
}

// TestConcurrentSample runs Sample from 4 goroutines on one Model: the
// results must equal serial calls (run with -race to check for races).
func TestConcurrentSample(t *testing.T) {
	m := getFixture(t).model
	const workers = 4
	serial := make([][]string, workers)
	for i := range workers {
		serial[i] = sample(t, m, 5, flow.WithSeed(uint64(100+i)), flow.WithBatchSize(3))
	}
	par := make([][]*graph.Graph, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			par[i], errs[i] = flow.Sample(context.Background(), m, 5, withSteps(8), flow.WithSeed(uint64(100+i)), flow.WithBatchSize(3))
		})
	}
	wg.Wait()
	for i := range workers {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if got := g6(par[i]); !slices.Equal(got, serial[i]) {
			t.Errorf("goroutine %d: %v, serial %v", i, got, serial[i])
		}
	}
}

func TestSaveLoad(t *testing.T) {
	f := getFixture(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "flow.safetensors")
	if err := f.model.Save(path, map[string]string{"note": "x"}); err != nil {
		t.Fatal(err)
	}
	l, err := flow.Load(path, f.ae)
	if err != nil {
		t.Fatal(err)
	}
	if l.Cfg != f.model.Cfg || l.Scale != f.model.Scale || !slices.Equal(l.NodeCounts, f.model.NodeCounts) || l.VAE != f.ae {
		t.Errorf("loaded model %+v differs from the saved one", l)
	}
	for _, seed := range []uint64{0, 7} {
		if a, b := sample(t, f.model, 6, flow.WithSeed(seed)), sample(t, l, 6, flow.WithSeed(seed)); !slices.Equal(a, b) {
			t.Errorf("seed %d: loaded model samples %v, saved one %v", seed, b, a)
		}
	}

	// A VAE with another configuration is rejected.
	other := vaeConfig()
	other.Width = 10
	ae2, err := vae.New(other, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Load(path, ae2); err == nil || !strings.Contains(err.Error(), "LG-VAE config") || !strings.Contains(err.Error(), path) {
		t.Errorf("flow checkpoint with a different VAE: error %v", err)
	}

	// The same configuration with other weights is rejected too: its
	// latent space is not the one the flow learned.
	ae3, err := vae.New(vaeConfig(), 12345)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Load(path, ae3); err == nil || !strings.Contains(err.Error(), "different weights") {
		t.Errorf("flow checkpoint with other VAE weights: error %v", err)
	}

	// A fine-tuned decoder (same encoder, other decoder weights and
	// training-only settings) keeps the latent space: accepted.
	tuned, err := vae.New(f.ae.Cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	sd := nn.StateDict(f.ae)
	for name, v := range sd {
		c := v.Clone()
		if strings.HasPrefix(name, "decoder.") {
			tensor.AddScalar(c, c, 0.5)
		}
		sd[name] = c
	}
	if err := nn.LoadStateDict(tuned, sd); err != nil {
		t.Fatal(err)
	}
	tuned.Cfg.LatentNoise, tuned.Cfg.KLWeight = 0.02, 1e-3
	if tuned.EncoderFingerprint() != f.ae.EncoderFingerprint() || nn.Fingerprint(tuned) == nn.Fingerprint(f.ae) {
		t.Fatal("fingerprints do not separate encoder and decoder")
	}
	if _, err := flow.Load(path, tuned); err != nil {
		t.Errorf("flow with a decoder-tuned VAE: %v", err)
	}
	// Checkpoints from before encoder fingerprints need identical weights.
	old, err := safetensors.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	delete(old.Metadata, "vae_encoder_fingerprint")
	oldPath := filepath.Join(dir, "old.safetensors")
	if err := safetensors.Save(oldPath, old.Tensors, old.Metadata); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Load(oldPath, f.ae); err != nil {
		t.Errorf("old-style checkpoint with its own VAE: %v", err)
	}
	if _, err := flow.Load(oldPath, tuned); err == nil || !strings.Contains(err.Error(), "different weights") {
		t.Errorf("old-style checkpoint with a decoder-tuned VAE: error %v", err)
	}

	// Broken and foreign files are errors.
	aePath := filepath.Join(dir, "vae.safetensors")
	if err := f.ae.Save(aePath, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Load(aePath, f.ae); err == nil || !strings.Contains(err.Error(), "not an LG-Flow checkpoint") {
		t.Errorf("VAE file loaded as a flow: error %v", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 9, len(raw) / 2, len(raw) - 1} {
		p := filepath.Join(dir, fmt.Sprintf("cut%d", cut))
		if err := os.WriteFile(p, raw[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := flow.Load(p, f.ae); err == nil {
			t.Errorf("file truncated to %d of %d bytes loaded", cut, len(raw))
		}
	}
	// Bad metadata values are rejected.
	file, err := safetensors.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for key, val := range map[string]string{"latent_scale": "-1", "node_counts": "[0,0]"} {
		meta := maps.Clone(file.Metadata)
		meta[key] = val
		p := filepath.Join(dir, "bad-"+key)
		if err := safetensors.Save(p, file.Tensors, meta); err != nil {
			t.Fatal(err)
		}
		if _, err := flow.Load(p, f.ae); err == nil {
			t.Errorf("%s = %s accepted", key, val)
		}
	}
}

// trainSteps trains the fixture's flow config for the given number of steps
// in dir, calling onStep after every step.
func trainSteps(ctx context.Context, f *fixture, cfg flow.Config, dir string, resume bool, onStep func(int)) (*flow.Model, error) {
	return flow.Train(ctx, cfg, f.ae, f.data, f.lat, flow.TrainOptions{Dir: dir, Resume: resume, LogEvery: 1,
		Progress: func(p flow.Progress) { onStep(p.Step) }})
}

func stepOf(t *testing.T, path string) string {
	t.Helper()
	file, err := safetensors.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return file.Metadata[trainer.MetaStep]
}

// TestResume interrupts a 40-step run at step 30 (checkpoints every 10
// steps), resumes it, and checks that it continues from step 31 and ends
// with exactly the weights of an uninterrupted run.
func TestResume(t *testing.T) {
	f := getFixture(t)
	cfg := f.cfg
	cfg.Steps, cfg.CheckpointEvery = 40, 10
	ctx := context.Background()

	straight, err := trainSteps(ctx, f, cfg, t.TempDir(), false, func(int) {})
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, err = trainSteps(cctx, f, cfg, dir, false, func(s int) {
		if s == 30 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: error %v, want context.Canceled", err)
	}
	if s := stepOf(t, filepath.Join(dir, flow.StateFile)); s != "30" {
		t.Fatalf("checkpoint at step %s, want 30", s)
	}
	var steps []int
	resumed, err := trainSteps(ctx, f, cfg, dir, true, func(s int) { steps = append(steps, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 10 || steps[0] != 31 || steps[9] != 40 {
		t.Fatalf("resumed run reported steps %v, want 31..40", steps)
	}
	if s := stepOf(t, filepath.Join(dir, flow.StateFile)); s != "40" {
		t.Errorf("final checkpoint at step %s, want 40", s)
	}
	if resumed.Scale != straight.Scale {
		t.Errorf("latent scale %v after resume, %v uninterrupted", resumed.Scale, straight.Scale)
	}
	a, b := nn.StateDict(straight.Net), nn.StateDict(resumed.Net)
	for k, x := range a {
		if tensor.MaxAbs(tensor.Sub(nil, x, b[k])) != 0 {
			t.Errorf("%s differs between the resumed and the uninterrupted run", k)
		}
	}
	if _, err := flow.Load(filepath.Join(dir, flow.ModelFile), f.ae); err != nil {
		t.Errorf("model file of the resumed run: %v", err)
	}
	// The last-checkpoint model holds the final EMA weights.
	if s := stepOf(t, filepath.Join(dir, flow.LastFile)); s != "40" {
		t.Errorf("last model at step %s, want 40", s)
	}
	last, err := flow.Load(filepath.Join(dir, flow.LastFile), f.ae)
	if err != nil {
		t.Fatalf("last model: %v", err)
	}
	for k, x := range nn.StateDict(last.Net) {
		if tensor.MaxAbs(tensor.Sub(nil, x, b[k])) != 0 {
			t.Errorf("%s differs between the last model file and the returned model", k)
		}
	}

	// A checkpoint of another architecture is refused.
	other := cfg
	other.DiT.Width = 64
	if _, err := trainSteps(ctx, f, other, dir, true, func(int) {}); err == nil {
		t.Error("resumed a checkpoint with a different DiT width")
	}
}

// TestResumeMoreSteps trains 30 steps, then asks for 40 in total with
// Resume and a larger batch: training must continue from step 30 (keeping
// the EMA) instead of refusing.
func TestResumeMoreSteps(t *testing.T) {
	f := getFixture(t)
	cfg := f.cfg
	cfg.Steps, cfg.CheckpointEvery = 30, 10
	dir := t.TempDir()
	ctx := context.Background()
	if _, err := trainSteps(ctx, f, cfg, dir, false, func(int) {}); err != nil {
		t.Fatal(err)
	}
	cfg.Steps = 40
	cfg.BatchSize *= 2
	var steps []int
	_, err := trainSteps(ctx, f, cfg, dir, true, func(s int) { steps = append(steps, s) })
	if err != nil && strings.Contains(err.Error(), "different configuration") {
		t.Fatalf("flow.Train refuses to resume when only Steps and BatchSize changed: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 10 || steps[0] != 31 || steps[9] != 40 {
		t.Errorf("resumed run reported steps %v, want 31..40", steps)
	}
	if s := stepOf(t, filepath.Join(dir, flow.StateFile)); s != "40" {
		t.Errorf("final checkpoint at step %s, want 40", s)
	}
}

// TestResumeCooldown anneals a constant-rate run: 20 steps at LR, resumed
// to 40 with a cooldown of 20, must equal one run of 40 steps with that
// cooldown bit for bit, and differ from 40 steps at the constant rate.
func TestResumeCooldown(t *testing.T) {
	f := getFixture(t)
	ctx := context.Background()
	cfg := f.cfg
	cfg.Steps, cfg.CheckpointEvery, cfg.Cooldown = 40, 10, 20
	straight, err := trainSteps(ctx, f, cfg, t.TempDir(), false, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	constant := cfg
	constant.Cooldown = 0
	flat, err := trainSteps(ctx, f, constant, t.TempDir(), false, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := constant
	first.Steps = 20
	if _, err := trainSteps(ctx, f, first, dir, false, func(int) {}); err != nil {
		t.Fatal(err)
	}
	annealed, err := trainSteps(ctx, f, cfg, dir, true, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := nn.StateDict(straight.Net), nn.StateDict(annealed.Net), nn.StateDict(flat.Net)
	differs := false
	for k, x := range a {
		if tensor.MaxAbs(tensor.Sub(nil, x, b[k])) != 0 {
			t.Errorf("%s differs between the resumed cooldown and the uninterrupted one", k)
		}
		if tensor.MaxAbs(tensor.Sub(nil, x, c[k])) != 0 {
			differs = true
		}
	}
	if !differs {
		t.Error("the cooldown left the weights as the constant rate does")
	}
	bad := cfg
	bad.Cooldown = 41
	if _, err := trainSteps(ctx, f, bad, t.TempDir(), false, func(int) {}); err == nil {
		t.Error("a cooldown longer than the run was accepted")
	}
}

func TestTrainErrors(t *testing.T) {
	f := getFixture(t)
	ctx := context.Background()
	cfg := f.cfg
	cfg.Steps = 5
	wrongDim, _ := flow.Preset("", "tiny", 5)
	if _, err := flow.Train(ctx, wrongDim, f.ae, f.data, f.lat, flow.TrainOptions{}); err == nil || !strings.Contains(err.Error(), "latent dimension") {
		t.Errorf("DiT dim 5 with a 4-dim VAE: error %v", err)
	}
	short := &flow.Latents{Mu: f.lat.Mu[:3], LogVar: f.lat.LogVar[:3]}
	if _, err := flow.Train(ctx, cfg, f.ae, f.data, short, flow.TrainOptions{}); err == nil {
		t.Error("3 latents for 12 graphs accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := flow.Train(cctx, cfg, f.ae, f.data, f.lat, flow.TrainOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Train: error %v", err)
	}
	if _, err := flow.EncodeLatents(cctx, f.ae, f.data, 0, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled EncodeLatents: error %v", err)
	}
}

// TestTrainInit checks that TrainOptions.Init starts the denoiser (and its
// EMA) from another flow's weights, and refuses another architecture.
func TestTrainInit(t *testing.T) {
	f := getFixture(t)
	ctx := context.Background()
	cfg := f.cfg
	cfg.Steps, cfg.LR, cfg.ValEvery = 1, 1e-12, 0
	maxDiff := func(a, b *flow.Model) float64 {
		sa, sb := nn.StateDict(a.Net), nn.StateDict(b.Net)
		d := 0.0
		for k, v := range sa {
			x, y := v.To(tensor.Float64).Data64(), sb[k].To(tensor.Float64).Data64()
			for i := range x {
				d = max(d, math.Abs(x[i]-y[i]))
			}
		}
		return d
	}
	fresh, err := flow.Train(ctx, cfg, f.ae, f.data, f.lat, flow.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(fresh, f.model); d < 1e-3 {
		t.Fatalf("a fresh 1-step flow is within %g of the trained fixture: the check is vacuous", d)
	}
	warm, err := flow.Train(ctx, cfg, f.ae, f.data, f.lat, flow.TrainOptions{Init: f.model})
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(warm, f.model); d > 1e-6 {
		t.Errorf("started from the fixture's weights, one step at lr 1e-12 moved them by %g", d)
	}
	other := cfg
	other.DiT.Depth++
	if _, err := flow.Train(ctx, other, f.ae, f.data, f.lat, flow.TrainOptions{Init: f.model}); err == nil || !strings.Contains(err.Error(), "initial denoiser") {
		t.Errorf("Init of another depth: error %v", err)
	}
	other = cfg
	other.Precondition = true
	if _, err := flow.Train(ctx, other, f.ae, f.data, f.lat, flow.TrainOptions{Init: f.model}); err == nil || !strings.Contains(err.Error(), "preconditioned") {
		t.Errorf("Init of a plain denoiser into a preconditioned one: error %v", err)
	}
}

// TestTrainInitScale checks the latent scale of a flow started from another
// one: the initial flow's own scale with the same encoder (not one computed
// afresh from another first batch), and that scale divided by 2 for an
// encoder whose latents are exactly twice as large, so that the denoiser
// sees the data at the spread it was trained on.
func TestTrainInitScale(t *testing.T) {
	f := getFixture(t)
	ctx := context.Background()
	cfg := f.cfg
	cfg.Steps, cfg.LR, cfg.ValEvery, cfg.Seed = 1, 1e-12, 0, 7
	fresh, err := flow.Train(ctx, cfg, f.ae, f.data, f.lat, flow.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(fresh.Scale/f.model.Scale-1) < 1e-3 {
		t.Fatalf("scales from the first batches of seeds 0 and 7 agree (%g, %g): the check is vacuous", fresh.Scale, f.model.Scale)
	}
	same, err := flow.Train(ctx, cfg, f.ae, f.data, f.lat, flow.TrainOptions{Init: f.model})
	if err != nil {
		t.Fatal(err)
	}
	if same.Scale != f.model.Scale {
		t.Errorf("same encoder: scale %g, want the initial flow's %g", same.Scale, f.model.Scale)
	}

	// An encoder whose mean head is doubled: every latent mean is twice
	// the fixture's.
	twice, err := vae.New(vaeConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	sd := nn.StateDict(twice)
	for _, name := range []string{"encoder.head.2.weight", "encoder.head.2.bias"} {
		p, ok := sd[name]
		if !ok {
			t.Fatalf("no %s in the LG-VAE", name)
		}
		mu := p.Slice(0, 0, p.Dim(0)/2) // the first half of the outputs is mu
		tensor.MulScalar(mu, mu, 2)
	}
	if twice.EncoderFingerprint() == f.ae.EncoderFingerprint() {
		t.Fatal("the doubled encoder has the fixture's fingerprint")
	}
	lat2, err := flow.EncodeLatents(ctx, twice, f.data, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lat2.Mu[0].At(0, 0), 2*f.lat.Mu[0].At(0, 0); math.Abs(got-want) > 1e-5*math.Abs(want) {
		t.Fatalf("doubled encoder: latent %g, want %g", got, want)
	}
	moved, err := flow.Train(ctx, cfg, twice, f.data, lat2, flow.TrainOptions{Init: f.model})
	if err != nil {
		t.Fatal(err)
	}
	if want := f.model.Scale / 2; math.Abs(moved.Scale/want-1) > 1e-5 {
		t.Errorf("encoder with latents twice as large: scale %g, want %g", moved.Scale, want)
	}
}

// TestPreconditionedFlow trains a tiny preconditioned flow: its loss
// falls, the checkpoint keeps the setting (loaded, it samples the same
// graphs), and sampling reads it (the same weights read as a plain noise
// estimate sample other latents).
func TestPreconditionedFlow(t *testing.T) {
	f := getFixture(t)
	cfg := f.cfg
	cfg.Precondition = true
	var losses []float64
	m, err := flow.Train(context.Background(), cfg, f.ae, f.data, f.lat, flow.TrainOptions{LogEvery: 1,
		Progress: func(p flow.Progress) { losses = append(losses, p.Loss) }})
	if err != nil {
		t.Fatal(err)
	}
	first, last := losses[0]+losses[1]+losses[2], losses[len(losses)-1]+losses[len(losses)-2]+losses[len(losses)-3]
	if !(last < 0.75*first) {
		t.Errorf("loss did not fall: first three steps %.3f, last three %.3f", first/3, last/3)
	}
	path := filepath.Join(t.TempDir(), "flow.safetensors")
	if err := m.Save(path, nil); err != nil {
		t.Fatal(err)
	}
	l, err := flow.Load(path, f.ae)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Cfg.Precondition || l.Cfg != m.Cfg {
		t.Fatalf("loaded configuration %+v, saved %+v", l.Cfg, m.Cfg)
	}
	ctx := context.Background()
	za, err := m.SampleLatents(ctx, 4, flow.WithSeed(3), withSteps(8))
	if err != nil {
		t.Fatal(err)
	}
	zb, err := l.SampleLatents(ctx, 4, flow.WithSeed(3), withSteps(8))
	if err != nil {
		t.Fatal(err)
	}
	l.Cfg.Precondition = false
	zc, err := l.SampleLatents(ctx, 4, flow.WithSeed(3), withSteps(8))
	if err != nil {
		t.Fatal(err)
	}
	for i := range za {
		if d := tensor.MaxAbs(tensor.Sub(nil, za[i], zb[i])); d != 0 {
			t.Errorf("graph %d: the loaded flow samples other latents (max difference %g)", i, d)
		}
		if d := tensor.MaxAbs(tensor.Sub(nil, za[i], zc[i])); d < 1e-3 {
			t.Errorf("graph %d: sampling ignores the preconditioning (max difference %g)", i, d)
		}
	}
}

// TestResumeLostBest resumes a validated run whose best model file has
// gone (deleted, or not carried with the state): the resumed run keeps
// its next validated model instead of ending with no model file, since
// the best score it would compare against belongs to a model it no longer
// has.
func TestResumeLostBest(t *testing.T) {
	f := getFixture(t)
	cfg := f.cfg
	cfg.Steps, cfg.CheckpointEvery, cfg.ValEvery, cfg.ValSamples = 40, 10, 10, 2
	calls := 0
	// Each validation scores lower than the one before: step 10's model
	// stays the best.
	score := func([]*graph.Graph) float64 { calls++; return -float64(calls) }
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := flow.TrainOptions{Dir: dir, LogEvery: 1, Score: score, Progress: func(p flow.Progress) {
		if p.Step == 30 {
			cancel()
		}
	}}
	if _, err := flow.Train(ctx, cfg, f.ae, f.data, f.lat, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: error %v, want context.Canceled", err)
	}
	model := filepath.Join(dir, flow.ModelFile)
	if s := stepOf(t, model); s != "10" {
		t.Fatalf("best model of step %s, want 10", s)
	}
	if err := os.Remove(model); err != nil {
		t.Fatal(err)
	}
	opts.Resume, opts.Progress = true, nil
	if _, err := flow.Train(context.Background(), cfg, f.ae, f.data, f.lat, opts); err != nil {
		t.Fatal(err)
	}
	if s := stepOf(t, model); s != "40" {
		t.Errorf("resumed run's model of step %s, want 40 (its only validated model)", s)
	}
}
