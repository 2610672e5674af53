package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/dit"
	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/tensor"
	"lgflow/vae"
)

// tinyModels saves an untrained LG-VAE with the given configuration and a
// tiny LG-Flow bound to it (graphs of 4 to 6 nodes), and returns their
// paths.
func tinyModels(t *testing.T, dir string, vc vae.Config) (string, string) {
	t.Helper()
	ae, err := vae.New(vc, 1)
	require.NoError(t, err)
	fc, err := flow.Preset("", "tiny", vc.Latent)
	require.NoError(t, err)
	net, err := dit.New(fc.DiT, tensor.NewRNG(1))
	require.NoError(t, err)
	v, f := filepath.Join(dir, "vae.safetensors"), filepath.Join(dir, "flow.safetensors")
	require.NoError(t, ae.Save(v, nil))
	require.NoError(t, (&flow.Model{Cfg: fc, VAE: ae, Net: net, Scale: 1, NodeCounts: []int{0, 0, 0, 0, 1, 1, 1}}).Save(f, nil))
	return v, f
}

func tinyVAEConfig() vae.Config {
	return vae.Config{K: 4, Latent: 4, PhiWidth: 6, Layers: 1, Width: 6, DeepSet: 4, EdgeClasses: 1,
		Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true}
}

func TestSampleFormat(t *testing.T) {
	for _, c := range []struct{ format, out, want, err string }{
		{"", "-", formatG6, ""},
		{"", "gen.g6", formatG6, ""},
		{"", "gen.d6.gz", formatG6, ""},
		{"", "gen.jsonl", formatNodeLink, ""},
		{"", "gen.json.gz", formatNodeLink, ""},
		{"", "gen.smi", formatSMILES, ""},
		{"g6", "gen.jsonl", formatG6, ""},
		{"nodelink", "-", formatNodeLink, ""},
		{"smiles", "x", formatSMILES, ""},
		{"sdf", "x", "", "unknown format"},
	} {
		got, err := sampleFormat(c.format, c.out)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, "%+v", c)
			continue
		}
		assert.NoError(t, err)
		assert.Equal(t, c.want, got, "%+v", c)
	}
}

// TestSampleNodeLinkAndEval samples labelled DAGs as node-link JSON and
// evaluates them with label-aware V.U.N. from the command line.
func TestSampleNodeLinkAndEval(t *testing.T) {
	dir := t.TempDir()
	vc := tinyVAEConfig()
	vc.Directed, vc.QPerGraph, vc.NodeClasses = true, true, 5
	v, f := tinyModels(t, dir, vc)
	gen := filepath.Join(dir, "gen.jsonl")
	code, _, errOut := run(t, "sample", "-vae", v, "-flow", f, "-n", "6", "-sampler", "steps=2", "-o", gen)
	require.Equal(t, 0, code, errOut)
	gs, err := graph.ReadNodeLinkFile(gen)
	require.NoError(t, err)
	require.Len(t, gs, 6)
	for _, g := range gs {
		assert.True(t, g.Directed())
		assert.Len(t, g.NodeLabels, g.N())
	}
	// To standard output too.
	code, out, errOut := run(t, "sample", "-vae", v, "-flow", f, "-n", "2", "-sampler", "steps=2", "-format", "nodelink")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 2, strings.Count(out, `"directed": true`))

	ref := datasets.Price(6, 5, 1)
	for i, g := range ref {
		g.NodeLabels = []int{i % 5, 1, 2, 3, 4, 0}
	}
	refPath := filepath.Join(dir, "ref.jsonl")
	require.NoError(t, graph.WriteNodeLinkFile(refPath, ref))
	code, out, errOut = run(t, "eval", "-gen", gen, "-ref", refPath, "-train", refPath, "-kind", "dag", "-json")
	require.Equal(t, 0, code, errOut)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	for _, k := range []string{"out_degree", "in_degree", "wavelet", "valid", "unique", "novel", "vun"} {
		assert.Contains(t, m, k)
	}
	// A labelled copy of a reference graph is not novel; with other labels
	// it is: labelled graphs are compared with their labels.
	copyPath, relabelled := filepath.Join(dir, "copy.jsonl"), ref[0].Clone()
	relabelled.NodeLabels = []int{4, 4, 4, 4, 4, 4}
	require.NoError(t, graph.WriteNodeLinkFile(copyPath, []*graph.Graph{ref[0], relabelled}))
	code, out, errOut = run(t, "eval", "-gen", copyPath, "-ref", refPath, "-train", refPath, "-kind", "dag", "-json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	assert.InDelta(t, 0.5, m["novel"], 1e-12)
}

// TestSampleSMILESAndEval samples molecules as SMILES from an LG-VAE of
// the MOSES shape and evaluates SMILES files with the MOSES metrics.
func TestSampleSMILESAndEval(t *testing.T) {
	dir := t.TempDir()
	vc := tinyVAEConfig()
	vc.NodeClasses, vc.EdgeClasses = 7, 4
	v, f := tinyModels(t, dir, vc)
	out := filepath.Join(dir, "gen.smi")
	code, _, errOut := run(t, "sample", "-vae", v, "-flow", f, "-n", "5", "-sampler", "steps=2", "-o", out)
	require.Equal(t, 0, code, errOut)
	lines, err := readSMILESFile(out)
	require.NoError(t, err)
	assert.Len(t, lines, 5) // SMILES or "None", one per sample

	plain, plainFlow := tinyModels(t, t.TempDir(), tinyVAEConfig())
	code, _, errOut = run(t, "sample", "-vae", plain, "-flow", plainFlow, "-n", "2", "-format", "smiles")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not trained on molecules")

	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
		return p
	}
	gen := write("set.smi", "CCO", "OCC", "c1ccccc1", "C1CC", "None")
	train := write("train.smi", "SMILES", "CCO", "CCN")
	ref := write("ref.smi", "c1ccccc1C", "CCO")
	code, js, errOut := run(t, "eval", "-gen", gen, "-train", train, "-ref", ref, "-json")
	require.Equal(t, 0, code, errOut)
	var m molReport
	require.NoError(t, json.Unmarshal([]byte(js), &m))
	assert.Equal(t, 5, m.N)
	assert.Equal(t, 3, m.NValid)
	assert.InDelta(t, 0.6, m.Valid, 1e-12)
	require.NotNil(t, m.Unique["all"])
	assert.InDelta(t, 2.0/3, *m.Unique["all"], 1e-12) // CCO and OCC are one molecule
	require.NotNil(t, m.Novelty)
	assert.InDelta(t, 0.5, *m.Novelty, 1e-12) // of the unique valid: CCO is in train, benzene not
	assert.NotNil(t, m.SNN)

	code, text, errOut := run(t, "eval", "-gen", gen)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, text, "molecules: 5 generated, 3 valid")
	assert.Contains(t, text, "novel")
}

// tinyTPU writes a TPU Tile validation split of six 6-node DAGs into a new
// data directory and returns it with an untrained directed LG-VAE for it.
func tinyTPU(t *testing.T) (data, vaePath string) {
	t.Helper()
	data = t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(data, "tpu_tile"), 0o755))
	var b strings.Builder
	for _, g := range datasets.Price(6, 6, 2) {
		var src, dst []int
		for _, e := range g.Edges() {
			src, dst = append(src, e.From), append(dst, e.To)
		}
		line, _ := json.Marshal(map[string]any{"num_nodes": g.N(), "node_type": []int{1, 2, 3, 4, 0, 1}, "src": src, "dst": dst})
		b.Write(line)
		b.WriteByte('\n')
	}
	require.NoError(t, os.WriteFile(filepath.Join(data, "tpu_tile", "tpu_tile_val.jsonl"), []byte(b.String()), 0o644))
	vc := tinyVAEConfig()
	vc.Directed, vc.QPerGraph, vc.NodeClasses = true, true, 47
	v, _ := tinyModels(t, t.TempDir(), vc)
	return data, v
}

// TestTrainFlowSplit trains a flow on another split (TPU Tile's val) and
// checks that the dataset presets' TimeMean yields to -config time_mean,
// and the EMA settings to ema_beta and ema_after.
func TestTrainFlowSplit(t *testing.T) {
	data, v := tinyTPU(t)

	out := t.TempDir()
	code, _, errOut := run(t, "train-flow", "-vae", v, "-dataset", "tpu", "-data", data, "-preset", "tiny", "-config", "steps=2", "-out", out)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "train split")
	for _, c := range []struct {
		args     []string
		timeMean float64
		emaBeta  float64
		emaAfter int
	}{
		{nil, 0, 0.99, 10},
		{[]string{"-config", "time_mean=0.5"}, 0.5, 0.99, 10},
		{[]string{"-config", "ema_beta=0.9,ema_after=0"}, 0, 0.9, 0},
	} {
		out := t.TempDir()
		args := append([]string{"train-flow", "-vae", v, "-dataset", "tpu", "-data", data, "-train-split", "val", "-preset", "tiny", "-config", "steps=2", "-out", out}, c.args...)
		code, _, errOut = run(t, args...)
		require.Equal(t, 0, code, errOut)
		ae, err := vae.Load(v)
		require.NoError(t, err)
		m, err := flow.Load(filepath.Join(out, flow.ModelFile), ae)
		require.NoError(t, err)
		assert.Equal(t, c.timeMean, m.Cfg.TimeMean)
		assert.Equal(t, c.emaBeta, m.Cfg.EMABeta)
		assert.Equal(t, c.emaAfter, m.Cfg.EMAAfter)
		assert.Equal(t, 7, len(m.NodeCounts)) // trained on the six 6-node val graphs
	}
	cpu, err := flowPreset("tpu", "cpu", 4)
	require.NoError(t, err)
	assert.Equal(t, 1.0, cpu.TimeMean)
	other, err := flowPreset("my-own", "paper", 4)
	require.NoError(t, err)
	assert.Equal(t, 6, other.DiT.Depth) // DiT-T
}

// TestSampleSamplerFlags checks that sample's -sampler settings reach
// flow.Sample: the defaults spelt out give the same samples as none, and
// another temperature gives other samples (node-link JSON keeps the
// graphs' labels, so any change shows). The tiny untrained flow's decoded
// samples need not change with the time grid (its final jump or warp);
// that final_jump and time_shift reach flow.Sample shows in TestBadInput
// (flow.Sample's errors for values out of range).
func TestSampleSamplerFlags(t *testing.T) {
	dir := t.TempDir()
	vc := tinyVAEConfig()
	vc.Directed, vc.QPerGraph, vc.NodeClasses = true, true, 5
	v, f := tinyModels(t, dir, vc)
	sample := func(extra ...string) string {
		t.Helper()
		args := append([]string{"sample", "-vae", v, "-flow", f, "-n", "8", "-sampler", "steps=4", "-seed", "3", "-format", "nodelink"}, extra...)
		code, out, errOut := run(t, args...)
		require.Equal(t, 0, code, errOut)
		return out
	}
	base := sample()
	assert.Equal(t, base, sample("-sampler", "final_jump=0.95,temperature=1,time_shift=1"))
	assert.NotEqual(t, base, sample("-sampler", "temperature=3"))
}
