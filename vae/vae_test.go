package vae

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/tensor"
)

func tinyConfig(directed bool) Config {
	c := Config{K: 6, Latent: 4, PhiWidth: 6, Layers: 2, Width: 6, DeepSet: 4, EdgeClasses: 1, Norm: LayerNorm, KLWeight: 1e-6, Eta: 0.05, PhiGate: true, ScaleEigvecs: true}
	if directed {
		c.Directed, c.Q = true, 0.02
	}
	return c
}

func prepare(t *testing.T, gs []*graph.Graph, c Config) *Dataset {
	t.Helper()
	d, err := Prepare(context.Background(), gs, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// setLabels gives node j of graph i the label (i + j) mod k.
func setLabels(gs []*graph.Graph, k int) {
	for i, g := range gs {
		g.NodeLabels = make([]int, g.N())
		for j := range g.NodeLabels {
			g.NodeLabels[j] = (i + j) % k
		}
	}
}

// setAttrs gives every graph nd node and ed edge attributes that vary
// with the node, the edge and the graph.
func setAttrs(gs []*graph.Graph, nd, ed int) {
	for i, g := range gs {
		a := &graph.Attrs{NodeDim: nd, EdgeDim: ed}
		for j := range g.N() * nd {
			a.Node = append(a.Node, uint8((i+j)%3))
		}
		for j := range g.M() * ed {
			a.Edge = append(a.Edge, uint8((i+2*j)%4))
		}
		g.Attrs = a
	}
}

// newFloat64 returns a model of configuration c in float64 (seed 3).
func newFloat64(t *testing.T, c Config) *Model {
	t.Helper()
	m, err := New(c, 3, nn.WithDType(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGradients checks the whole model's gradients (encoder, decoder and
// loss) against finite differences, undirected and directed.
func TestGradients(t *testing.T) {
	for _, tc := range []struct {
		directed, attrs bool
		norm            Norm
	}{{false, false, LayerNorm}, {true, false, LayerNorm}, {false, false, GraphNorm}, {true, false, GraphNorm},
		{false, true, GraphNorm}, {true, true, LayerNorm}} {
		directed := tc.directed
		c := tinyConfig(directed)
		c.NodeClasses, c.Norm = 3, tc.norm
		if tc.attrs {
			c.NodeAttrs, c.EdgeAttrs = 2, 3
		}
		gs := datasets.Tree(5, 2, 1)
		if directed {
			gs = datasets.Price(5, 2, 1)
		}
		gs = append(gs, gs[0].Clone())
		gs[2].RemoveEdge(gs[2].Edges()[0].From, gs[2].Edges()[0].To)
		setLabels(gs, 3)
		if tc.attrs {
			setAttrs(gs, 2, 3)
		}
		m := newFloat64(t, c)
		d := prepare(t, gs, c)
		b := graph.NewBatch(gs)
		var params []*autograd.Var
		for _, p := range m.Params() {
			params = append(params, p.V)
		}
		err := autograd.CheckGrad(func(tp *autograd.Tape) *autograd.Var {
			loss, _ := m.Objective(tp, b, d.Features, Eval, nil)
			return loss.Total
		}, params, 1e-6, 1e-4)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
	}
}

// TestBatchIndependence encodes graphs alone and inside a batch in
// evaluation mode: the latents must agree.
func TestBatchIndependence(t *testing.T) {
	for _, norm := range []Norm{LayerNorm, BatchNorm, GraphNorm} {
		c := tinyConfig(false)
		c.Norm = norm
		m, err := New(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		gs := append(datasets.Planar(9, 3, 4), datasets.Tree(12, 2, 4)...)
		all, err := m.EncodeGraphs(context.Background(), gs, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range gs {
			one, err := m.EncodeGraphs(context.Background(), []*graph.Graph{g}, 0)
			if err != nil {
				t.Fatal(err)
			}
			a, b := all[i].Data32(), one[0].Data32()
			for j := range a {
				if d := a[j] - b[j]; d > 1e-5 || d < -1e-5 {
					t.Fatalf("norm %s: graph %d latent %d: %v in a batch, %v alone", norm, i, j, a[j], b[j])
				}
			}
		}
	}
}

// TestTrainTinyExact trains a tiny model on 16 small graphs until it
// reconstructs all of them exactly, then checks save/load round trip and
// Decode(Encode(g)) == g through the public API.
func TestTrainTinyExact(t *testing.T) {
	c := Config{K: 8, Latent: 8, PhiWidth: 32, Layers: 3, Width: 32, DeepSet: 8, EdgeClasses: 1, Norm: LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, PhiGate: true}
	gs := append(datasets.Planar(8, 8, 11), datasets.Tree(8, 8, 11)...)
	d := prepare(t, gs, c)
	tc := TrainConfig{Steps: 1500, BatchSize: 16, LR: 3e-3, MinLR: 1e-3, Warmup: 20, WeightDecay: 0, Beta1: 0.9, Beta2: 0.95, ValEvery: 50, ClipNorm: 1, Seed: 1}
	dir := t.TempDir()
	var last Progress
	m, err := Train(context.Background(), c, tc, d, d, TrainOptions{Dir: dir, Progress: func(p Progress) { last = p }, LogEvery: 50})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("step %d loss %.4g best sample acc %.3f", last.Step, last.Loss, last.BestSample)
	best, err := Load(filepath.Join(dir, ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	acc, err := Reconstruct(context.Background(), best, d, 16)
	if err != nil {
		t.Fatal(err)
	}
	if acc.Sample() != 1 || acc.Decoded() != 1 {
		t.Fatalf("sample accuracy %.3f (edge %.4f) after training, want 1", acc.Sample(), acc.Edge())
	}
	_ = m
	checkNoisy(t, best, d)
	checkInit(t, best, c, tc, d)
	checkFreezeEncoder(t, best, c, tc, d)
	checkLatentNoise(t, best, d)
	z, err := best.EncodeGraphs(context.Background(), gs, 5)
	if err != nil {
		t.Fatal(err)
	}
	out, err := best.DecodeGraphs(context.Background(), z)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range out {
		if graph.FormatGraph6(g) != graph.FormatGraph6(gs[i]) {
			t.Fatalf("graph %d decoded as %s, want %s", i, graph.FormatGraph6(g), graph.FormatGraph6(gs[i]))
		}
	}
}

// TestBadLabels checks that labels outside the model's classes are an
// error, not a panic deep in an embedding lookup.
func TestBadLabels(t *testing.T) {
	c := tinyConfig(false)
	c.NodeClasses = 2
	g := graph.New(3)
	g.MustAddEdge(0, 1)
	g.NodeLabels = []int{0, 1, 2}
	if _, err := Featurize(g, c, nil); err == nil {
		t.Fatal("node label 2 with 2 classes accepted")
	}
	g.NodeLabels = []int{0, 1, 1}
	g.AddLabeledEdge(1, 2, 1)
	if _, err := Featurize(g, c, nil); err == nil {
		t.Fatal("edge label 1 with 1 edge class accepted")
	}
	if _, err := Featurize(graph.NewDirected(3), c, nil); err == nil {
		t.Fatal("directed graph accepted by an undirected model")
	}
}

// TestOrbitNoiseKeepsScale checks that the orbit perturbation multiplies
// the (scaled) eigenvector rows by 1 + eta*g instead of replacing the
// sqrt(N) scale: with a tiny eta every row's magnitude stays close to its
// unperturbed value.
func TestOrbitNoiseKeepsScale(t *testing.T) {
	c := tinyConfig(false)
	c.Eta, c.K = 1e-6, 4
	g := graph.New(6) // a 6-cycle: every node in one orbit
	for i := range 6 {
		g.MustAddEdge(i, (i+1)%6)
	}
	f, err := Featurize(g, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	vec, _, _ := m.encoderInput(autograd.NoGrad(), []*Features{f}, 6, Eval, tensor.NewRNG(1))
	c.Eta = 0
	m0, _ := New(c, 1)
	ref, _, _ := m0.encoderInput(autograd.NoGrad(), []*Features{f}, 6, Eval, tensor.NewRNG(1))
	for i := range 6 {
		for j := range 4 {
			a, b := vec.At(i, j, 0), ref.At(i, j, 0)
			if d := a - b; d > 1e-4 || d < -1e-4 {
				t.Fatalf("node %d slot %d: %v with eta 1e-6, %v without", i, j, a, b)
			}
		}
	}
}

// TestPresets checks that every registered preset builds a valid model
// and that each dataset has both a cpu and a paper preset.
func TestPresets(t *testing.T) {
	for _, d := range []string{"planar", "tree", "price", "ego", "tpu"} {
		for _, size := range []string{"cpu", "paper"} {
			p, err := PresetFor(d, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Model.Validate(); err != nil {
				t.Errorf("%s/%s: %v", d, size, err)
			}
			if p.Train.Steps <= 0 || p.Train.BatchSize <= 0 || p.Train.LR <= 0 {
				t.Errorf("%s/%s: bad training recipe %+v", d, size, p.Train)
			}
		}
	}
	if _, err := PresetFor("nope", "cpu"); err == nil {
		t.Error("unknown dataset accepted")
	}
}

// checkNoisy checks ReconstructNoisy on a model that reconstructs d
// exactly: no noise changes nothing, noise far above the latent spread
// breaks reconstruction, and a negative level is an error.
func checkNoisy(t *testing.T, m *Model, d *Dataset) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range []struct {
		sigma      float64
		wantSample func(float64) bool
	}{
		{0, func(a float64) bool { return a == 1 }},
		{1e-4, func(a float64) bool { return a == 1 }},
		{20, func(a float64) bool { return a < 0.5 }},
	} {
		acc, s, err := ReconstructNoisy(ctx, m, d, 16, tc.sigma, 3)
		if err != nil {
			t.Fatal(err)
		}
		if s <= 0 {
			t.Fatalf("latent std %v, want > 0", s)
		}
		if !tc.wantSample(acc.Sample()) {
			t.Errorf("noise %v: sample accuracy %.3f", tc.sigma, acc.Sample())
		}
	}
	a1, _, _ := ReconstructNoisy(ctx, m, d, 16, 0.5, 7)
	a2, _, _ := ReconstructNoisy(ctx, m, d, 16, 0.5, 7)
	if a1 != a2 {
		t.Errorf("same seed gave %+v and %+v", a1, a2)
	}
	if _, _, err := ReconstructNoisy(ctx, m, d, 16, -1, 0); err == nil {
		t.Error("negative noise: no error")
	}

	// ReconstructLatents on clean latents scores like Reconstruct and
	// returns what DecodeGraphs decodes.
	lat, err := m.EncodeGraphs(ctx, d.Graphs, 5)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Reconstruct(ctx, m, d, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range []EdgeRule{EitherDirection, BothDirections} {
		acc, gs, err := ReconstructLatents(ctx, m, d, 7, lat, WithEdgeRule(rule))
		if err != nil {
			t.Fatal(err)
		}
		if acc != want {
			t.Errorf("%v: ReconstructLatents accuracy %+v, Reconstruct %+v", rule, acc, want)
		}
		dec, err := m.DecodeGraphs(ctx, lat, WithEdgeRule(rule))
		if err != nil {
			t.Fatal(err)
		}
		for i := range gs {
			if graph.FormatGraph6(gs[i]) != graph.FormatGraph6(dec[i]) {
				t.Errorf("%v: graph %d: %s from ReconstructLatents, %s from DecodeGraphs", rule, i, graph.FormatGraph6(gs[i]), graph.FormatGraph6(dec[i]))
			}
		}
	}
	if _, _, err := ReconstructLatents(ctx, m, d, 16, lat[1:]); err == nil {
		t.Error("ReconstructLatents with a latent missing: no error")
	}
	wrong := append([]*tensor.Tensor{tensor.New(tensor.Float32, d.Graphs[0].N()+1, m.Cfg.Latent)}, lat[1:]...)
	if _, _, err := ReconstructLatents(ctx, m, d, 16, wrong); err == nil {
		t.Error("ReconstructLatents with a latent of the wrong node count: no error")
	}
}

// checkInit checks TrainOptions.Init: training from a model's weights with
// a negligible learning rate keeps its reconstructions, even with another
// KL weight, and a model of another architecture is rejected.
func checkInit(t *testing.T, from *Model, c Config, tc TrainConfig, d *Dataset) {
	t.Helper()
	ctx := context.Background()
	c.KLWeight = 1e-3
	tc.Steps, tc.LR, tc.MinLR, tc.ValEvery = 2, 1e-12, 1e-12, 0
	m, err := Train(ctx, c, tc, d, nil, TrainOptions{Init: from})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := Reconstruct(ctx, m, d, 16)
	if err != nil {
		t.Fatal(err)
	}
	if acc.Sample() != 1 {
		t.Errorf("fine-tuned from an exact model: sample accuracy %.3f", acc.Sample())
	}
	c.Width++
	if _, err := Train(ctx, c, tc, d, nil, TrainOptions{Init: from}); err == nil {
		t.Error("Init with another architecture: no error")
	}
}

// checkFreezeEncoder checks TrainOptions.FreezeEncoder: the decoder moves,
// the encoder (and so its fingerprint and every latent) does not, the
// noisy validation runs, and there is nothing to freeze without weights.
func checkFreezeEncoder(t *testing.T, from *Model, c Config, tc TrainConfig, d *Dataset) {
	t.Helper()
	ctx := context.Background()
	c.LatentNoise = 0.05
	tc.Steps, tc.LR, tc.MinLR, tc.ValEvery = 20, 1e-3, 1e-3, 10
	var vals int
	m, err := Train(ctx, c, tc, d, d, TrainOptions{Init: from, FreezeEncoder: true, ValNoise: 0.02, Progress: func(p Progress) {
		if p.Val != nil {
			vals++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if vals == 0 {
		t.Error("no validation reported")
	}
	if m.EncoderFingerprint() != from.EncoderFingerprint() {
		t.Error("FreezeEncoder changed the encoder")
	}
	if nn.Fingerprint(m) == nn.Fingerprint(from) {
		t.Error("FreezeEncoder left the decoder unchanged")
	}
	a, err := m.EncodeGraphs(ctx, d.Graphs, 16)
	if err != nil {
		t.Fatal(err)
	}
	b, err := from.EncodeGraphs(ctx, d.Graphs, 16)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if !slices.Equal(a[i].Data32(), b[i].Data32()) {
			t.Fatalf("graph %d: latents changed under FreezeEncoder", i)
		}
	}
	if _, err := Train(ctx, c, tc, d, nil, TrainOptions{FreezeEncoder: true}); err == nil {
		t.Error("FreezeEncoder without Init or Resume: no error")
	}
	if _, err := Train(ctx, c, tc, d, nil, TrainOptions{Init: from, ValNoise: -1}); err == nil {
		t.Error("negative ValNoise: no error")
	}
}

// checkLatentNoise checks that Config.LatentNoise perturbs the latents the
// decoder sees in training: with the same draws, a model that reconstructs
// d exactly has a much larger edge loss under noise of 3 latent standard
// deviations, and none of it in evaluation mode.
func checkLatentNoise(t *testing.T, m *Model, d *Dataset) {
	t.Helper()
	b := graph.NewBatch(d.Graphs)
	edgeLoss := func(alpha float64, train bool) float64 {
		saved := m.Cfg.LatentNoise
		defer func() { m.Cfg.LatentNoise = saved }()
		m.Cfg.LatentNoise = alpha
		mode := Eval
		if train {
			mode = Training
		}
		tp := autograd.NoGrad()
		defer tp.Release()
		l, _ := m.Objective(tp, b, d.Features, mode, tensor.NewRNG(5))
		return l.Edge
	}
	clean, noisy := edgeLoss(0, true), edgeLoss(3, true)
	if !(noisy > 10*clean && noisy > 0.01) {
		t.Errorf("edge loss %.4g with latent noise 3, %.4g without", noisy, clean)
	}
	if e0, e1 := edgeLoss(0, false), edgeLoss(3, false); e0 != e1 {
		t.Errorf("evaluation mode: edge loss %.4g with latent noise, %.4g without", e1, e0)
	}
	bad := m.Cfg
	bad.LatentNoise = -1
	if bad.Validate() == nil {
		t.Error("negative LatentNoise validated")
	}
}

// TestAttrs checks that a model with node and edge attributes reads them
// (changing one feature of one node or one edge moves the latents) and
// refuses graphs without them.
func TestAttrs(t *testing.T) {
	c := tinyConfig(false)
	c.NodeClasses, c.EdgeClasses, c.NodeAttrs, c.EdgeAttrs, c.Norm = 3, 2, 2, 3, GraphNorm
	m, err := New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	gs := datasets.Tree(6, 1, 1)
	setLabels(gs, 3)
	setAttrs(gs, 2, 3)
	ctx := context.Background()
	base, err := m.EncodeGraphs(ctx, gs, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, edit := range []func(a *graph.Attrs){
		func(a *graph.Attrs) { a.Node[3]++ },
		func(a *graph.Attrs) { a.Edge[4]++ },
	} {
		g := gs[0].Clone()
		edit(g.Attrs)
		z, err := m.EncodeGraphs(ctx, []*graph.Graph{g}, 0)
		if err != nil {
			t.Fatal(err)
		}
		same := true
		for j, v := range z[0].Data32() {
			if v != base[0].Data32()[j] {
				same = false
			}
		}
		if same {
			t.Errorf("latents unchanged by an attribute edit: %+v", g.Attrs)
		}
	}
	plain := gs[0].Clone()
	plain.Attrs = nil
	if _, err := m.EncodeGraphs(ctx, []*graph.Graph{plain}, 0); err == nil {
		t.Error("encoded a graph without attributes")
	}
}

// TestRecalibrateBatchNorm: after recalibration on one batch, evaluation
// with the running statistics encodes that batch as batch statistics do
// (up to the unbiased variance of the running estimate), where the
// initial running statistics (mean 0, variance 1) do not.
func TestRecalibrateBatchNorm(t *testing.T) {
	c := tinyConfig(false)
	c.Norm, c.Eta = BatchNorm, 0
	m, err := New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	gs := append(datasets.Planar(40, 6, 4), datasets.Tree(40, 6, 4)...)
	d := prepare(t, gs, c)
	ctx := context.Background()
	batchStats := func() []float32 {
		tp := autograd.NoGrad()
		defer tp.Release()
		mu, _ := m.Encode(tp, graph.NewBatch(gs), d.Features, calibrate, nil)
		return slices.Clone(mu.Value.Contiguous().Data32())
	}
	eval := func() []float32 {
		tp := autograd.NoGrad()
		defer tp.Release()
		mu, _ := m.Encode(tp, graph.NewBatch(gs), d.Features, Eval, nil)
		return slices.Clone(mu.Value.Contiguous().Data32())
	}
	maxDiff := func(a, b []float32) float64 {
		var worst float64
		for i := range a {
			worst = max(worst, math.Abs(float64(a[i]-b[i])))
		}
		return worst
	}
	want := batchStats()
	before := maxDiff(eval(), want)
	if err := m.RecalibrateBatchNorm(ctx, d, len(gs), 1); err != nil {
		t.Fatal(err)
	}
	after := maxDiff(eval(), want)
	if after > 0.01 || after > before/10 {
		t.Errorf("eval vs batch statistics: %.3g before recalibration, %.3g after", before, after)
	}
	for _, n := range m.norms {
		if b := n.(*nn.BatchNorm1d); b.Momentum != 0.1 {
			t.Errorf("momentum %v after recalibration", b.Momentum)
		}
	}
}
