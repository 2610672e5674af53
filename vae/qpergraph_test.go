package vae

import (
	"encoding/json"
	"math"
	"testing"

	"lgflow/autograd"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/nn"
	"lgflow/spectral"
	"lgflow/tensor"
)

// TestQPerGraphValidate checks which magnetic-potential settings Validate
// accepts.
func TestQPerGraphValidate(t *testing.T) {
	for _, c := range []struct {
		name     string
		directed bool
		q        float64
		perGraph bool
		ok       bool
	}{
		{"fixed q", true, 0.02, false, true},
		{"fixed q zero", true, 0, false, false},
		{"fixed q too large", true, 0.5, false, false},
		{"fixed q NaN", true, math.NaN(), false, false},
		{"per graph, no q", true, 0, true, true},
		{"per graph, q ignored", true, 0.02, true, true},
		{"per graph, undirected", false, 0, true, false},
		{"undirected", false, 0, false, true},
	} {
		cfg := tinyConfig(false)
		cfg.Directed, cfg.Q, cfg.QPerGraph = c.directed, c.q, c.perGraph
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// TestQPerGraphConfigJSON checks that configurations written before
// QPerGraph existed (no "q_per_graph" key) keep their fixed q, and that
// the option round-trips.
func TestQPerGraphConfigJSON(t *testing.T) {
	for _, c := range []struct {
		json     string
		q        float64
		perGraph bool
	}{
		{`{"k":6,"latent":4,"directed":true,"q":0.0015625}`, 0.0015625, false},
		{`{"k":6,"latent":4,"directed":true,"q":0,"q_per_graph":true}`, 0, true},
	} {
		var cfg Config
		if err := json.Unmarshal([]byte(c.json), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Q != c.q || cfg.QPerGraph != c.perGraph {
			t.Errorf("%s: Q %g QPerGraph %v, want %g %v", c.json, cfg.Q, cfg.QPerGraph, c.q, c.perGraph)
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var back Config
		if err := json.Unmarshal(b, &back); err != nil || back != cfg {
			t.Errorf("round trip of %s: %+v, %v", b, back, err)
		}
	}
}

// dagsOfSizes returns Price DAGs of the given sizes, and a chain (n - 1
// one-way edges, so min(m, n) = n - 1).
func dagsOfSizes(sizes ...int) []*graph.Graph {
	var gs []*graph.Graph
	for i, n := range sizes {
		gs = append(gs, datasets.Price(n, 1, uint64(i))[0])
	}
	chain := graph.NewDirected(7)
	for v := 1; v < 7; v++ {
		chain.MustAddEdge(v-1, v)
	}
	return append(gs, chain)
}

// TestQPerGraphFeatures checks the encoder's magnetic potential: each
// graph's own q (spectral.QEff) with QPerGraph, the model's Q without.
func TestQPerGraphFeatures(t *testing.T) {
	gs := dagsOfSizes(9, 16, 30)
	for _, perGraph := range []bool{false, true} {
		cfg := tinyConfig(true)
		cfg.QPerGraph = perGraph
		d := prepare(t, gs, cfg)
		for i, g := range gs {
			want := cfg.Q
			if perGraph {
				want = spectral.QEff(g)
			}
			if got := d.Features[i].Q; got != want {
				t.Errorf("perGraph=%v graph %d (n %d, m %d): q %g, want %g", perGraph, i, g.N(), g.M(), got, want)
			}
		}
	}
	// The chain has min(m, n) = n - 1: its encoder q differs from the
	// decoder's QForNodes(n).
	six, seven := 6.0, 7.0
	if q := spectral.QEff(gs[3]); q != 0.1/six || QForNodes(7) != 0.1/seven {
		t.Errorf("chain: QEff %g, QForNodes %g", q, QForNodes(7))
	}
}

// TestQPerGraphDecoder checks that a QPerGraph decoder scores each graph of
// a padded batch as a fixed-q decoder with q = QForNodes(n) and the same
// weights scores that graph alone.
func TestQPerGraphDecoder(t *testing.T) {
	cfg := tinyConfig(true)
	cfg.QPerGraph, cfg.Q = true, 0
	m, err := New(cfg, 5, nn.WithDType(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{3, 8, 5}
	N := 8
	z := tensor.RandN(tensor.NewRNG(9), tensor.Float64, len(sizes), N, cfg.Latent)
	got := m.DecodeDense(autograd.NoGrad(), autograd.NewConst(z), sizes).EdgeLogits.Value
	C := cfg.EdgeClasses + 1
	for b, n := range sizes {
		fixed := cfg
		fixed.QPerGraph, fixed.Q = false, QForNodes(n)
		m1, err := New(fixed, 0, nn.WithDType(tensor.Float64))
		if err != nil {
			t.Fatal(err)
		}
		if err := nn.LoadStateDict(m1, nn.StateDict(m)); err != nil {
			t.Fatal(err)
		}
		z1 := z.Slice(0, b, b+1).Slice(1, 0, n).Contiguous()
		want := m1.DecodeDense(autograd.NoGrad(), autograd.NewConst(z1), []int{n}).EdgeLogits.Value
		for i := range n {
			for j := range n {
				for c := range C {
					if i == j {
						continue
					}
					g, w := got.At(b, i, j, c), want.At(0, i, j, c)
					if math.Abs(g-w) > 1e-9*(1+math.Abs(w)) {
						t.Fatalf("graph %d (n %d) pair (%d,%d) class %d: %g, fixed-q decoder %g", b, n, i, j, c, g, w)
					}
				}
			}
		}
	}
}

// TestDatasetPresets checks the presets of every dataset of the paper,
// Planar-N included: valid models, the paper's k, and directed models with
// a per-graph q.
func TestDatasetPresets(t *testing.T) {
	for _, c := range []struct {
		dataset  string
		paperK   int
		directed bool
	}{
		{"planar", 16, false},
		{"planar-128", 16, false},
		{"planar-256", 16, false},
		{"planar-512", 16, false},
		{"tree", 16, false}, // the reference code's k (the paper's table says 32)
		{"ego", 64, false},
		{"price", 32, true},
		{"tpu", 64, true},
		{"moses", 16, false},
	} {
		for _, size := range []string{"cpu", "paper"} {
			p, err := PresetFor(c.dataset, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Model.Validate(); err != nil {
				t.Errorf("%s/%s: %v", c.dataset, size, err)
			}
			if size == "paper" && p.Model.K != c.paperK {
				t.Errorf("%s/paper: k %d, want %d", c.dataset, p.Model.K, c.paperK)
			}
			if p.Model.Directed != c.directed || p.Model.QPerGraph != c.directed {
				t.Errorf("%s/%s: directed %v, per-graph q %v", c.dataset, size, p.Model.Directed, p.Model.QPerGraph)
			}
		}
	}
	for _, c := range []struct {
		dataset          string
		paperB, cpuBatch int
	}{{"planar-128", 256, 16}, {"planar-256", 256, 8}, {"planar-512", 128, 4}} {
		paper, _ := PresetFor(c.dataset, "paper")
		cpu, _ := PresetFor(c.dataset, "cpu")
		if paper.Train.BatchSize != c.paperB || cpu.Train.BatchSize != c.cpuBatch {
			t.Errorf("%s: batch %d (paper), %d (cpu), want %d, %d", c.dataset, paper.Train.BatchSize, cpu.Train.BatchSize, c.paperB, c.cpuBatch)
		}
	}
}
