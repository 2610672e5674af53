package vae_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/trainer"
	"lgflow/vae"
)

// smallConfig is a model small enough to build and run in milliseconds.
func smallConfig() vae.Config {
	return vae.Config{K: 6, Latent: 4, PhiWidth: 8, Layers: 2, Width: 8, DeepSet: 4, EdgeClasses: 1,
		Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true}
}

func newModel(t *testing.T, c vae.Config, seed uint64) *vae.Model {
	t.Helper()
	m, err := vae.New(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t *testing.T, m *vae.Model, gs []*graph.Graph) []*tensor.Tensor {
	t.Helper()
	z, err := m.EncodeGraphs(context.Background(), gs, 3)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// TestSaveLoadRoundTrip saves an untrained model with BatchNorm (so running
// statistics travel too) and checks the loaded model encodes bit for bit
// like the original, and keeps the configuration and extra metadata.
func TestSaveLoadRoundTrip(t *testing.T) {
	for _, c := range []vae.Config{smallConfig(), func() vae.Config {
		c := smallConfig()
		c.Norm, c.Eta, c.NodeClasses, c.PhiGate = vae.BatchNorm, 0.05, 3, true
		return c
	}()} {
		m := newModel(t, c, 4)
		gs := append(datasets.Planar(7, 3, 1), datasets.Tree(9, 2, 1)...)
		if c.NodeClasses > 0 {
			for _, g := range gs {
				g.NodeLabels = make([]int, g.N())
				for i := range g.NodeLabels {
					g.NodeLabels[i] = i % c.NodeClasses
				}
			}
		}
		path := filepath.Join(t.TempDir(), "m.safetensors")
		if err := m.Save(path, map[string]string{"note": "x"}); err != nil {
			t.Fatal(err)
		}
		l, err := vae.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if l.Cfg != c {
			t.Fatalf("loaded config %+v, want %+v", l.Cfg, c)
		}
		want, got := encode(t, m, gs), encode(t, l, gs)
		for i := range want {
			if !slicesEqual(want[i].Data32(), got[i].Data32()) {
				t.Fatalf("norm %s: graph %d encodes differently after Save/Load", c.Norm, i)
			}
		}
		f, err := safetensors.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Metadata["note"] != "x" || f.Metadata[trainer.MetaKind] != "lgflow.vae" {
			t.Errorf("metadata %v lacks the extra key or the kind", f.Metadata)
		}
	}
}

func slicesEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLoadErrors checks that broken or foreign files give clear errors,
// never panics.
func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	m := newModel(t, smallConfig(), 1)
	good := filepath.Join(dir, "good.safetensors")
	if err := m.Save(good, nil); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	save := func(name string, meta map[string]string) string {
		p := filepath.Join(dir, name)
		if err := safetensors.Save(p, nn.StateDict(m), meta); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wider := smallConfig()
	wider.Width = 10
	bad := smallConfig()
	bad.Layers = 0
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"missing", filepath.Join(dir, "nope"), []string{"nope"}},
		{"empty", write("empty", nil), []string{"empty"}},
		{"truncated header", write("t1", raw[:len(raw)/20]), []string{"t1"}},
		{"truncated data", write("t2", raw[:len(raw)-7]), []string{"t2"}},
		{"garbage", write("garbage", []byte(strings.Repeat("garbage!", 40))), []string{"garbage"}},
		{"no kind", save("nokind", nil), []string{"not an LG-VAE checkpoint"}},
		{"flow kind", save("flowkind", map[string]string{trainer.MetaKind: "lgflow.flow"}), []string{"not an LG-VAE checkpoint", "lgflow.flow"}},
		{"no config", save("nocfg", map[string]string{trainer.MetaKind: "lgflow.vae"}), []string{`"config"`}},
		{"bad config JSON", save("badjson", map[string]string{trainer.MetaKind: "lgflow.vae", trainer.MetaConfig: "{"}), []string{`"config"`}},
		{"invalid config", save("invalid", map[string]string{trainer.MetaKind: "lgflow.vae", trainer.MetaConfig: trainer.MarshalMeta(bad)}), []string{"Layers"}},
		{"config does not match tensors", save("mismatch", map[string]string{trainer.MetaKind: "lgflow.vae", trainer.MetaConfig: trainer.MarshalMeta(wider)}), []string{"mismatch", "shape"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := vae.Load(tc.path)
			if err == nil {
				t.Fatalf("no error, loaded %+v", l.Cfg)
			}
			t.Logf("error: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

// TestDecodeGraphsRejectsBadLatents checks that latents of the wrong width
// or rank are errors, and that nil input decodes to nothing.
func TestDecodeGraphsRejectsBadLatents(t *testing.T) {
	m := newModel(t, smallConfig(), 1)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		z    []*tensor.Tensor
	}{
		{"wide", []*tensor.Tensor{tensor.New(tensor.Float32, 5, 4), tensor.New(tensor.Float32, 5, 5)}},
		{"narrow", []*tensor.Tensor{tensor.New(tensor.Float32, 5, 3)}},
		{"rank 1", []*tensor.Tensor{tensor.New(tensor.Float32, 4)}},
		{"rank 3", []*tensor.Tensor{tensor.New(tensor.Float32, 1, 5, 4)}},
	} {
		gs, err := m.DecodeGraphs(ctx, tc.z)
		if err == nil {
			t.Errorf("%s: no error, got %d graphs", tc.name, len(gs))
			continue
		}
		if !strings.Contains(err.Error(), "(N, 4)") {
			t.Errorf("%s: error %q does not give the expected shape", tc.name, err)
		}
	}
	if gs, err := m.DecodeGraphs(ctx, nil); err != nil || len(gs) != 0 {
		t.Errorf("DecodeGraphs(nil) = %v, %v", gs, err)
	}
	if _, err := m.DecodePadded(ctx, tensor.New(tensor.Float32, 2, 5, 4), []int{5, 6}); err == nil {
		t.Error("DecodePadded accepted a graph larger than the padded width")
	}
	if _, err := m.DecodePadded(ctx, tensor.New(tensor.Float32, 2, 5, 4), []int{5}); err == nil {
		t.Error("DecodePadded accepted 1 size for 2 graphs")
	}
	// Sizes are respected: a graph of 3 nodes decoded from a width-5 batch.
	gs, err := m.DecodePadded(ctx, tensor.RandN(tensor.NewRNG(1), tensor.Float32, 2, 5, 4), []int{3, 5})
	if err != nil {
		t.Fatal(err)
	}
	if gs[0].N() != 3 || gs[1].N() != 5 || gs[0].Directed() {
		t.Errorf("decoded %v, %v; want undirected graphs of 3 and 5 nodes", gs[0], gs[1])
	}
}

// TestDirectedTiny trains a tiny DAG model on a few Price graphs for a few
// steps and checks the encode/decode round trip yields directed graphs of
// the right sizes, and that undirected input is rejected with the graph's
// index.
func TestDirectedTiny(t *testing.T) {
	c := smallConfig()
	c.Directed, c.Q = true, 0.1/12
	gs := append(datasets.Price(12, 3, 5), datasets.Price(9, 3, 6)...)
	ctx := context.Background()
	d, err := vae.Prepare(ctx, gs, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := vae.TrainConfig{Steps: 20, BatchSize: 3, LR: 3e-3, MinLR: 1e-3, Warmup: 2, Beta1: 0.9, Beta2: 0.95, ValEvery: 10, Seed: 2}
	var steps []int
	m, err := vae.Train(ctx, c, tc, d, d, vae.TrainOptions{LogEvery: 5, Progress: func(p vae.Progress) { steps = append(steps, p.Step) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 || steps[len(steps)-1] != 20 {
		t.Errorf("progress reported at steps %v, want the last at 20", steps)
	}
	z, err := m.EncodeGraphs(ctx, gs, 4)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.DecodeGraphs(ctx, z)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(gs) {
		t.Fatalf("decoded %d graphs, want %d", len(out), len(gs))
	}
	for i, g := range out {
		if !g.Directed() || g.N() != gs[i].N() {
			t.Errorf("graph %d decoded as %v (directed %v), want a directed graph of %d nodes", i, g, g.Directed(), gs[i].N())
		}
	}
	_, err = vae.Prepare(ctx, append(gs[:2:2], datasets.Tree(5, 1, 1)...), c, nil)
	if err == nil || !strings.Contains(err.Error(), "graph 2") {
		t.Errorf("undirected graph in a directed model's data: error %v, want one naming graph 2", err)
	}
}

// TestPrepareCancelled checks that Prepare stops on a cancelled context,
// returning the context's error.
func TestPrepareCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := vae.Prepare(ctx, datasets.Planar(10, 8, 1), smallConfig(), nil)
	if !errors.Is(err, context.Canceled) || d != nil {
		t.Errorf("Prepare on a cancelled context = %v, %v; want nil, context.Canceled", d, err)
	}
	m := newModel(t, smallConfig(), 1)
	if _, err := m.EncodeGraphs(ctx, datasets.Planar(10, 2, 1), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("EncodeGraphs on a cancelled context: %v", err)
	}
	if _, err := m.DecodeGraphs(ctx, []*tensor.Tensor{tensor.New(tensor.Float32, 3, 4)}); !errors.Is(err, context.Canceled) {
		t.Errorf("DecodeGraphs on a cancelled context: %v", err)
	}
}

// TestPrepareProgress checks that progress reaches the total and that the
// features do not depend on the worker count (compared with Featurize).
func TestPrepareProgress(t *testing.T) {
	c := smallConfig()
	gs := datasets.Planar(10, 5, 3)
	last := 0
	d, err := vae.Prepare(context.Background(), gs, c, func(done, total int) {
		if total != len(gs) {
			t.Errorf("progress total %d, want %d", total, len(gs))
		}
		last = max(last, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != len(gs) {
		t.Errorf("progress reached %d of %d", last, len(gs))
	}
	for i, g := range gs {
		f, err := vae.Featurize(g, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.N != 10 || min(f.N, f.K) != 6 || !slicesEqual(f.Vectors, d.Features[i].Vectors) || !slicesEqual(f.Values, d.Features[i].Values) {
			t.Errorf("graph %d: Prepare's features differ from Featurize's", i)
		}
	}
}

// TestModesConcurrent encodes graphs in evaluation mode while a training
// pass runs on the same model in other goroutines: the mode is an argument
// of each pass, so the latents must be exactly those of a quiet model.
func TestModesConcurrent(t *testing.T) {
	m := newModel(t, smallConfig(), 1)
	gs := datasets.Planar(8, 6, 2)
	want, err := m.EncodeGraphs(context.Background(), gs, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := vae.Prepare(context.Background(), gs, m.Cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				if w%2 == 0 {
					tp := autograd.NoGrad()
					m.Objective(tp, graph.NewBatch(d.Graphs), d.Features, vae.Training, tensor.NewRNG(uint64(10*w+i)))
					tp.Release()
					continue
				}
				got, err := m.EncodeGraphs(context.Background(), gs, 0)
				if err != nil {
					errs <- err
					return
				}
				for g := range got {
					if tensor.MaxAbs(tensor.Sub(nil, got[g], want[g])) != 0 {
						errs <- fmt.Errorf("graph %d: latents differ while a training pass runs", g)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDecodeGraphsChunks decodes more graphs than one decoding chunk holds
// and checks every graph decodes as it does alone: chunking changes memory
// use, not results.
func TestDecodeGraphsChunks(t *testing.T) {
	m := newModel(t, smallConfig(), 4)
	r := tensor.NewRNG(8)
	z := make([]*tensor.Tensor, 600)
	for i := range z {
		z[i] = tensor.RandN(r, tensor.Float32, 1+i%7, smallConfig().Latent)
		tensor.MulScalar(z[i], z[i], 3)
	}
	ctx := context.Background()
	all, err := m.DecodeGraphs(ctx, z, vae.WithEdgeRule(vae.MeanLogits))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(z) {
		t.Fatalf("%d graphs decoded from %d latents", len(all), len(z))
	}
	edges := 0
	for i := range z {
		one, err := m.DecodeGraphs(ctx, z[i:i+1], vae.WithEdgeRule(vae.MeanLogits))
		if err != nil {
			t.Fatal(err)
		}
		if graph.FormatGraph6(one[0]) != graph.FormatGraph6(all[i]) {
			t.Fatalf("graph %d: %s decoded with the others, %s alone", i, graph.FormatGraph6(all[i]), graph.FormatGraph6(one[0]))
		}
		edges += all[i].M()
	}
	if edges == 0 {
		t.Error("no edges decoded at all: the comparison is vacuous")
	}
}

// TestConfigEdgeMargin checks that Config.EdgeMargin is the decoding
// default: a model with it decodes as WithEdgeMargin does on the same
// weights without it, WithEdgeMargin overrides it (0 gives the argmax
// back), the margin survives Save and Load, and a NaN margin is refused.
func TestConfigEdgeMargin(t *testing.T) {
	ctx := context.Background()
	plain := newModel(t, smallConfig(), 5)
	c := smallConfig()
	c.EdgeMargin = 0.3
	margin := newModel(t, c, 5) // same weights: the margin builds no parameters
	r := tensor.NewRNG(2)
	z := make([]*tensor.Tensor, 40)
	for i := range z {
		z[i] = tensor.RandN(r, tensor.Float32, 6, c.Latent)
	}
	g6 := func(m *vae.Model, opts ...vae.DecodeOption) []string {
		t.Helper()
		gs, err := m.DecodeGraphs(ctx, z, opts...)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(gs))
		for i, g := range gs {
			out[i] = graph.FormatGraph6(g)
		}
		return out
	}
	argmax, shifted := g6(plain), g6(plain, vae.WithEdgeMargin(0.3))
	if slices.Equal(argmax, shifted) {
		t.Fatal("a margin of 0.3 decodes the test latents as the argmax does: the test is vacuous")
	}
	if got := g6(margin); !slices.Equal(got, shifted) {
		t.Error("Config.EdgeMargin 0.3 decodes differently from WithEdgeMargin(0.3)")
	}
	if got := g6(margin, vae.WithEdgeMargin(0)); !slices.Equal(got, argmax) {
		t.Error("WithEdgeMargin(0) does not override Config.EdgeMargin")
	}
	path := filepath.Join(t.TempDir(), "vae.safetensors")
	if err := margin.Save(path, nil); err != nil {
		t.Fatal(err)
	}
	back, err := vae.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Cfg.EdgeMargin != 0.3 || back.EncoderFingerprint() != plain.EncoderFingerprint() {
		t.Errorf("loaded margin %v, encoder fingerprint equal %v", back.Cfg.EdgeMargin, back.EncoderFingerprint() == plain.EncoderFingerprint())
	}
	c.EdgeMargin = math.NaN()
	if _, err := vae.New(c, 1); err == nil {
		t.Error("NaN EdgeMargin accepted")
	}
}
