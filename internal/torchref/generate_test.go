//go:build reference

package torchref

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lgflow/dit"
	"lgflow/graph"
	"lgflow/nn"
	"lgflow/safetensors"
	"lgflow/tensor"
	"lgflow/vae"
)

// vaeSpec is how TestGenerate builds an LG-VAE case.
type vaeSpec struct {
	name string
	cfg  vae.Config
	seed uint64
	// labelled gives the graphs node labels (i+g) mod NodeClasses and edge
	// labels (u+v) mod EdgeClasses.
	labelled bool
	// clampBias, if not 0, overwrites the bias of the first log-variance
	// output, pushing it outside [-30, 20] so that the clamp acts.
	clampBias float64
	// gain multiplies every Linear and embedding weight (not the
	// LayerNorms): with PyTorch's initialisation a network this small has
	// nearly constant outputs and gradients of 1e-3, which an absolute
	// tolerance of 1e-5 would judge only coarsely.
	gain float64
}

var vaeSpecs = []vaeSpec{
	{
		// The reference architecture: no gate, unscaled eigenvectors, rho
		// wider than phi, one edge class, K larger than the smallest graph.
		name: "vae_plain",
		cfg: vae.Config{K: 4, Latent: 3, PhiWidth: 5, Layers: 2, Width: 6, DeepSet: 4,
			EdgeClasses: 1, Norm: vae.LayerNorm, KLWeight: 0.1, LogVarInit: -2},
		seed: 11,
		gain: 2,
	},
	{
		// Every option of the undirected model that evaluation uses: the
		// phi gate, sqrt(N)-scaled eigenvectors, node and edge labels,
		// symmetric logits, three rho layers, and a clamped log-variance.
		name: "vae_full",
		cfg: vae.Config{K: 6, Latent: 4, PhiWidth: 6, Layers: 3, Width: 6, DeepSet: 5,
			NodeClasses: 3, EdgeClasses: 2, Norm: vae.LayerNorm, KLWeight: 0.01,
			ScaleEigvecs: true, PhiGate: true, SymmetricLogits: true},
		seed:      12,
		labelled:  true,
		clampBias: -45,
		gain:      2,
	},
}

// ditSpec is how TestGenerate builds a DiT case.
type ditSpec struct {
	name     string
	cfg      dit.Config
	seed     uint64
	sizes    []int // real tokens per set; nil: no mask (all real)
	withXSC  bool  // pass a self-conditioning input
	tokens   int   // N
	timeVals []float64
}

var ditSpecs = []ditSpec{
	{name: "dit_selfcond", cfg: tinyDiT(true), seed: 21, sizes: []int{5, 3, 1}, withXSC: true, tokens: 5, timeVals: []float64{0, 0.37, 0.93}},
	{name: "dit_selfcond_nil", cfg: tinyDiT(true), seed: 22, sizes: []int{4, 2}, tokens: 4, timeVals: []float64{0.5, 1}},
	{name: "dit_plain", cfg: tinyDiT(false), seed: 23, tokens: 3, timeVals: []float64{0.05, 0.71}},
}

// tinyDiT is a DiT small enough for testdata, with weights large enough
// (std 0.3) that every block changes the output.
func tinyDiT(selfCond bool) dit.Config {
	return dit.Config{Dim: 3, Width: 8, Depth: 2, Heads: 2, MLPRatio: 2, SelfCond: selfCond, TimeFreqDim: 8, InitStd: 0.3}
}

// TestGenerate writes the reference inputs into testdata and runs the
// PyTorch script on them with $PYTHON (default python3), which writes the
// reference outputs. It runs only with -tags reference.
func TestGenerate(t *testing.T) {
	for _, s := range vaeSpecs {
		ts, cfg := generateVAE(t, s)
		save(t, s.name, ts, cfg, "vae")
	}
	for _, s := range ditSpecs {
		ts, cfg := generateDiT(t, s)
		save(t, s.name, ts, cfg, "dit")
	}
	python := os.Getenv("PYTHON")
	if python == "" {
		python = "python3"
	}
	cmd := exec.Command(python, filepath.Join(dataDir, "lgvae_dit.py"), dataDir)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("lgvae_dit.py: %v", err)
	}
}

// save writes a case's input file with its configuration as JSON metadata.
func save(t *testing.T, name string, ts map[string]*tensor.Tensor, cfg any, kind string) {
	t.Helper()
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{"config": string(js), "kind": kind}
	if err := safetensors.Save(filepath.Join(dataDir, name+inSuffix), ts, meta); err != nil {
		t.Fatal(err)
	}
}

// testGraphs returns three small undirected graphs: a path on 3 nodes
// (fewer nodes than eigen-slots), a 5-cycle with a chord, and a 6-node
// graph with a pendant node and an isolated node.
func testGraphs(labelled bool, nodeClasses, edgeClasses int) []*graph.Graph {
	edges := [][][2]int{
		{{0, 1}, {1, 2}},
		{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}, {0, 2}},
		{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {1, 4}},
	}
	sizes := []int{3, 5, 6}
	gs := make([]*graph.Graph, len(sizes))
	for g, n := range sizes {
		h := graph.New(n)
		for _, e := range edges[g] {
			label := 0
			if labelled {
				label = (e[0] + e[1]) % edgeClasses
			}
			if err := h.AddLabeledEdge(e[0], e[1], label); err != nil {
				panic(err)
			}
		}
		if labelled {
			h.NodeLabels = make([]int, n)
			for i := range n {
				h.NodeLabels[i] = (i + g) % nodeClasses
			}
		}
		gs[g] = h
	}
	return gs
}

// generateVAE builds an LG-VAE case: weights, graphs and features.
func generateVAE(t *testing.T, s vaeSpec) (map[string]*tensor.Tensor, vae.Config) {
	m, err := vae.New(s.cfg, s.seed, nn.WithDType(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	r := tensor.NewRNG(s.seed + 1000)
	for _, p := range m.Params() {
		switch {
		case strings.Contains(p.Name, ".norm."):
			// LayerNorm starts at gamma 1, beta 0: move it off the identity.
			tensor.Add(p.V.Value, p.V.Value, tensor.MulScalar(nil, tensor.RandN(r, tensor.Float64, p.V.Shape()...), 0.2))
		case strings.HasSuffix(p.Name, ".weight"):
			tensor.MulScalar(p.V.Value, p.V.Value, s.gain)
		}
	}
	// The eigenvalue offset starts near 0; give it values that matter.
	eps := m.Params()[0]
	if eps.Name != "encoder.eig_eps" {
		t.Fatalf("first parameter is %s", eps.Name)
	}
	tensor.FillNormal(eps.V.Value, r, 0, 0.1)
	if s.clampBias != 0 {
		for _, p := range m.Params() {
			if p.Name == "encoder.head.2.bias" {
				p.V.Value.Set(s.clampBias, s.cfg.Latent)
			}
		}
	}
	ts := map[string]*tensor.Tensor{}
	for _, p := range m.Params() {
		ts[paramPrefix+p.Name] = p.V.Value
	}
	for g, h := range testGraphs(s.labelled, s.cfg.NodeClasses, s.cfg.EdgeClasses) {
		f, err := vae.Featurize(h, s.cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		es := h.Edges()
		e := tensor.New(tensor.Float64, len(es), 3)
		for i, x := range es {
			e.Set(float64(x.From), i, 0)
			e.Set(float64(x.To), i, 1)
			e.Set(float64(x.Label), i, 2)
		}
		ts[fmt.Sprintf("graph.%d.edges", g)] = e
		if h.NodeLabels != nil {
			l := tensor.New(tensor.Float64, h.N())
			for i, x := range h.NodeLabels {
				l.Set(float64(x), i)
			}
			ts[fmt.Sprintf("graph.%d.node_labels", g)] = l
		}
		ts[fmt.Sprintf("feat.%d.values", g)] = tensor.FromFloat32(f.Values, f.K).To(tensor.Float64)
		ts[fmt.Sprintf("feat.%d.vectors", g)] = tensor.FromFloat32(f.Vectors, f.N, f.K).To(tensor.Float64)
	}
	return ts, s.cfg
}

// generateDiT builds a DiT case: weights (biases and LayerNorms moved off
// their zero and identity initialisation) and inputs.
func generateDiT(t *testing.T, s ditSpec) (map[string]*tensor.Tensor, dit.Config) {
	r := tensor.NewRNG(s.seed)
	m, err := dit.New(s.cfg, r, nn.WithDType(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	ts := map[string]*tensor.Tensor{}
	for _, p := range m.Params() {
		if strings.HasSuffix(p.Name, ".bias") || strings.Contains(p.Name, "norm") {
			tensor.Add(p.V.Value, p.V.Value, tensor.MulScalar(nil, tensor.RandN(r, tensor.Float64, p.V.Shape()...), 0.2))
		}
		ts[paramPrefix+p.Name] = p.V.Value
	}
	B, N, d := len(s.timeVals), s.tokens, s.cfg.Dim
	ts["input.x"] = tensor.RandN(r, tensor.Float64, B, N, d)
	ts["input.t"] = tensor.FromFloat64(s.timeVals, B)
	ts["input.probe"] = tensor.RandN(r, tensor.Float64, B, N, d)
	if s.withXSC {
		ts["input.xsc"] = tensor.RandN(r, tensor.Float64, B, N, d)
	}
	if s.sizes != nil {
		mask := tensor.New(tensor.Float64, B, N)
		for b, n := range s.sizes {
			for i := range n {
				mask.Set(1, b, i)
			}
		}
		ts["input.mask"] = mask
	}
	return ts, s.cfg
}
