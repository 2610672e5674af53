package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/graph/planar"
	"lgflow/internal/progress"
	"lgflow/metrics"
	"lgflow/vae"
)

// tinyPresets returns an LG-VAE and an LG-Flow recipe that train in a
// fraction of a second (directed or not).
func tinyPresets(t *testing.T, directed bool, nodeClasses int) (*vae.Preset, *flow.Config) {
	t.Helper()
	p := &vae.Preset{
		Model: vae.Config{K: 4, Latent: 4, PhiWidth: 6, Layers: 1, Width: 6, DeepSet: 4, NodeClasses: nodeClasses, EdgeClasses: 1,
			Norm: vae.LayerNorm, KLWeight: 1e-6, LogVarInit: -6, ScaleEigvecs: true, Directed: directed, QPerGraph: directed},
		Train: vae.TrainConfig{Steps: 3, BatchSize: 4, LR: 1e-3, MinLR: 1e-4, Warmup: 1, Beta1: 0.9, Beta2: 0.95, ValEvery: 2, CheckpointEvery: 2},
	}
	c, err := flow.Preset("", "tiny", 4)
	if err != nil {
		t.Fatal(err)
	}
	c.Steps, c.ValEvery, c.ValSamples, c.ValSteps, c.CheckpointEvery = 3, 2, 2, 2, 2
	return p, &c
}

// writeTPU writes a TPU Tile data directory of small labelled DAGs
// (val: 12 graphs, test: 4).
func writeTPU(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tpu_tile"), 0o755); err != nil {
		t.Fatal(err)
	}
	for split, count := range map[string]int{"val": 12, "test": 4} {
		var b strings.Builder
		for i, g := range datasets.Price(6+count%3, count, uint64(len(split))) {
			types := make([]int, g.N())
			for j := range types {
				types[j] = (i + 3*j) % datasets.TPUNodeTypes
			}
			var src, dst []int
			for _, e := range g.Edges() {
				src, dst = append(src, e.From), append(dst, e.To)
			}
			line, _ := json.Marshal(map[string]any{"num_nodes": g.N(), "node_type": types, "src": src, "dst": dst, "y": 1.0})
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, "tpu_tile", "tpu_tile_"+split+".jsonl"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRunTrain runs the whole pipeline, training tiny models from scratch
// on tiny splits, for an undirected, a directed and a labelled directed
// dataset, and checks the files and the report.
func TestRunTrain(t *testing.T) {
	for _, c := range []struct {
		dataset     string
		directed    bool
		nodeClasses int
		files       []string
		has, hasNot []Column
	}{
		{"planar", false, 0, []string{"report.json", "samples.g6", "samples.svg", "test.g6", "train.g6"},
			[]Column{ColDegree, ColOrbit, ColClust, ColSpectral, ColVUN, ColValid}, []Column{ColOutDegree, ColRatio, ColWavelet}},
		{"price", true, 0, []string{"report.json", "samples.d6", "samples.svg", "test.d6", "train.d6"},
			[]Column{ColOutDegree, ColInDegree, ColClust, ColSpectral, ColWavelet, ColValid, ColUnique, ColNovel, ColVUN}, []Column{ColDegree, ColOrbit, ColRatio}},
		{"tpu", true, datasets.TPUNodeTypes, []string{"report.json", "samples.d6", "samples.jsonl", "samples.svg", "test.d6", "test.jsonl", "train.d6", "train.jsonl"},
			[]Column{ColOutDegree, ColWavelet, ColVUN}, []Column{ColDegree, ColRatio}},
	} {
		t.Run(c.dataset, func(t *testing.T) {
			vp, fc := tinyPresets(t, c.directed, c.nodeClasses)
			out := t.TempDir()
			var logs []string
			o := Options{Dataset: c.dataset, Out: out, Train: true, VAEPreset: vp, FlowConfig: fc, N: 4, Settings: steps(2),
				Data:  datasets.Options{Splits: datasets.Splits{Train: 12, Val: 4, Test: 4}},
				Hooks: progress.Hooks{Log: func(s string) { logs = append(logs, s) }}}
			if c.dataset == "tpu" {
				o.Data.Dir = writeTPU(t)
			}
			rep, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rep.Files, c.files) {
				t.Errorf("files %v, want %v", rep.Files, c.files)
			}
			for _, f := range c.files {
				if _, err := os.Stat(filepath.Join(out, f)); err != nil {
					t.Error(err)
				}
			}
			for _, col := range c.has {
				if _, ok := rep.Value(col); !ok {
					t.Errorf("report lacks %s", col)
				}
			}
			for _, col := range c.hasNot {
				if _, ok := rep.Value(col); ok {
					t.Errorf("report has %s", col)
				}
			}
			if rep.NSamples != 4 || !rep.TrainedHere || rep.Steps != 2 || rep.EdgeRule != "" {
				t.Errorf("report settings: %+v", rep)
			}
			var back Report
			b, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &back); err != nil || back.Dataset != c.dataset || back.NSamples != 4 {
				t.Errorf("report.json: %v %+v", err, back)
			}
			samples, err := graph.ReadAnyFile(filepath.Join(out, c.files[1]))
			if err != nil || len(samples) != 4 || samples[0].Directed() != c.directed {
				t.Fatalf("samples: %d graphs, %v", len(samples), err)
			}
			if c.nodeClasses > 0 {
				labelled, err := graph.ReadAnyFile(filepath.Join(out, "samples.jsonl"))
				if err != nil || len(labelled) != 4 || labelled[0].NodeLabels == nil {
					t.Fatalf("node-link samples: %v, %v", labelled, err)
				}
				if rep.NTrain != 12 || !strings.Contains(strings.Join(rep.Notes, " "), "train split (5,040 graphs) is not available") {
					t.Errorf("TPU: %d novelty graphs, notes %q", rep.NTrain, rep.Notes)
				}
			}
			// A second run resumes the finished training and loads what it
			// wrote.
			o.Train = false
			o.VAEPath, o.FlowPath = filepath.Join(out, "vae", vae.ModelFile), filepath.Join(out, "flow", flow.ModelFile)
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatalf("sampling from the trained models: %v", err)
			}
		})
	}
}

// TestRunTrainFlowOnly trains only the flow in a given autoencoder's
// latent space, and refuses a flow checkpoint with -train.
func TestRunTrainFlowOnly(t *testing.T) {
	vp, fc := tinyPresets(t, false, 0)
	dir := t.TempDir()
	data := datasets.Options{Splits: datasets.Splits{Train: 8, Val: 4, Test: 4}}
	first, err := Run(context.Background(), Options{Dataset: "tree", Out: dir, Train: true, VAEPreset: vp, FlowConfig: fc, N: 2, Settings: steps(2), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rep, err := Run(context.Background(), Options{Dataset: "tree", Out: out, Train: true, VAEPath: first.Models.VAE, FlowConfig: fc, N: 2, Settings: steps(2), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Models.VAE != first.Models.VAE || rep.Models.Flow != filepath.Join(out, "flow", flow.ModelFile) {
		t.Errorf("models %+v", rep.Models)
	}
	if _, err := os.Stat(filepath.Join(out, "vae")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an LG-VAE was trained: %v", err)
	}
	_, err = Run(context.Background(), Options{Dataset: "tree", Out: out, Train: true, FlowPath: first.Models.Flow, Data: data})
	if err == nil || !strings.Contains(err.Error(), "drop the flow checkpoint") {
		t.Errorf("-train with -flow: %v", err)
	}
}

// TestShippedModels checks how the models to load are found without
// training, and the errors that name -train.
func TestShippedModels(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LGFLOW_PRETRAINED", dir)
	for _, p := range []string{"full/vae.safetensors", "full/flow.safetensors", "half/vae.safetensors",
		"sharded/vae.safetensors", "sharded/flow.safetensors.index.json"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	own := filepath.Join(dir, "full", "vae.safetensors")
	for _, c := range []struct {
		name, dataset, vae, flow string
		wantVAE, wantFlow        string
		err                      string
	}{
		{"both shipped", "full", "", "", "full/vae.safetensors", "full/flow.safetensors", ""},
		{"own autoencoder, shipped flow", "full", own, "", "full/vae.safetensors", "full/flow.safetensors", ""},
		{"sharded flow", "sharded", "", "", "sharded/vae.safetensors", "sharded/flow.safetensors", ""},
		{"own sharded flow", "full", "", filepath.Join(dir, "sharded", "flow.safetensors"), "full/vae.safetensors", "sharded/flow.safetensors", ""},
		{"no flow", "half", "", "", "", "", "no LG-Flow is shipped for half"},
		{"no flow names the flow-only way", "half", "", "", "", "", "-train -vae " + filepath.Join(dir, "half", "vae.safetensors")},
		{"nothing", "none", "", "", "", "", "no LG-VAE is shipped for none"},
		{"nothing names -train", "none", "", "", "", "", "run with -train"},
		{"missing own file", "full", filepath.Join(dir, "nope"), "", "", "", "run with -train"},
	} {
		v, f, err := shippedModels(Spec{Name: c.dataset}, c.vae, c.flow)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || v != filepath.Join(dir, c.wantVAE) || f != filepath.Join(dir, c.wantFlow) {
			t.Errorf("%s: %s, %s, %v", c.name, v, f, err)
		}
	}
}

// TestWriteTable checks the planar table against the layout
// examples/planar has always printed, and the Ego and DAG tables' rows.
func TestWriteTable(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	spec, _ := Lookup("planar")
	r := &Report{NSamples: 256, Steps: 100, SampleSeconds: 32.7, Hardware: "hw"}
	r.Reconstruction.SampleAcc = 0.78125
	r.MMD.Degree, r.MMD.Orbit, r.MMD.Clustering, r.MMD.Spectral = p(4.4e-3), p(0.1609), p(0.2417), p(11.2e-3)
	r.Valid, r.Unique, r.Novel, r.VUN = p(0.305), p(1), p(0.99), p(0.301)
	var b strings.Builder
	if err := r.WriteTable(&b, spec); err != nil {
		t.Fatal(err)
	}
	want := "\nExtended Planar, 256 samples, 100 Euler steps (MMD² × 1e3; V.U.N. in %)\n\n" +
		fmt.Sprintf("%-22s %8s %8s %8s %8s %8s %10s %10s\n", "", "Deg.", "Orbit", "Clust.", "Spec.", "V.U.N.", "Time (s)", "Recon.") +
		fmt.Sprintf("%-22s %8.1f %8.1f %8.1f %8.1f %8.1f %10.1f %10.4f\n", "lgflow (this run)", 4.4, 160.9, 241.7, 11.2, 30.1, 32.7, 0.7812) +
		fmt.Sprintf("%-22s %8.1f %8.1f %8.1f %8.1f %8.1f %10.1f %10.4f\n", "LG-Flow (paper, L40)", 0.3, 0.4, 10.0, 1.3, 99.4, 8.9, 0.9961) +
		fmt.Sprintf("%-22s %8.1f %8.1f %8.1f %8.1f %8.1f %10.0f %10s\n", "DeFoG (paper)", 0.3, 0.1, 9.7, 1.3, 99.6, 890.0, "-") +
		"\nvalid 30.5%, unique 100.0%, novel 99.0%; hardware: hw\n"
	if b.String() != want {
		t.Errorf("planar table:\n%s\nwant:\n%s", b.String(), want)
	}

	for _, c := range []struct {
		dataset string
		report  func(*Report)
		want    []string
	}{
		{"ego", func(r *Report) {
			r.MMD.Degree, r.MMD.Orbit, r.MMD.Clustering, r.MMD.Spectral = p(2e-3), p(30e-3), p(40e-3), p(5e-3)
			r.Ratio, r.Ratios = p(4), map[string]float64{"degree": 10, "orbit": 5, "clustering": 4, "spectral": 5}
			r.TrainMMD = map[string]float64{"degree": 2e-4, "orbit": 6e-3, "clustering": 10e-3, "spectral": 1e-3}
		}, []string{"flow.Sample's default steps (MMD² × 1e3)", "Ratio", "lgflow (this run)           2.0     30.0     40.0      5.0      4.0",
			"train set (this split)      0.2      6.0     10.0      1.0      1.0          -", "train set (paper)           0.2      6.8      7.1      1.0      1.0          -", "13000"}},
		{"tpu", func(r *Report) {
			r.MMD.OutDegree, r.MMD.InDegree, r.MMD.Clustering, r.MMD.Spectral, r.MMD.Wavelet = p(1e-3), p(2e-3), p(3e-3), p(4e-3), p(5e-3)
			r.Valid, r.Unique, r.Novel, r.VUN = p(0.9), p(0.8), p(0.7), p(0.6)
		}, []string{"(MMD² × 1e3; rates in %)", "Out Deg.  In Deg.", "90.0     80.0     70.0     60.0", "98.5     94.0     77.5     74.5        0.5",
			"note: the paper's TPU Tile train split (5,040 graphs) is not available here"}},
	} {
		spec, err := Lookup(c.dataset)
		if err != nil {
			t.Fatal(err)
		}
		r := &Report{NSamples: 40, Hardware: "hw", Notes: spec.Notes}
		c.report(r)
		var b strings.Builder
		if err := r.WriteTable(&b, spec); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s table lacks %q:\n%s", c.dataset, w, b.String())
			}
		}
	}
}

// TestSpecs checks every dataset's spec: loadable names, columns with
// headings, paper rows that fill only the spec's columns, and the paper's
// sample counts.
func TestSpecs(t *testing.T) {
	samples := map[string]int{"planar": 256, "planar-128": 256, "planar-256": 256, "planar-512": 256, "tree": 256, "ego": 151, "price": 256, "tpu": 40}
	if got := Names(); !slices.Equal(got, []string{"ego", "planar", "planar-128", "planar-256", "planar-512", "price", "tpu", "tree"}) {
		t.Errorf("Names() = %v", got)
	}
	for _, name := range Names() {
		s, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(datasets.Names(), s.Name) {
			t.Errorf("%s: not a dataset", name)
		}
		if s.Samples != samples[name] || s.SampleBatch <= 0 {
			t.Errorf("%s: %d samples, batch %d", name, s.Samples, s.SampleBatch)
		}
		if len(s.Paper) == 0 {
			t.Errorf("%s: no paper rows", name)
		}
		for _, c := range s.Columns {
			if columnHeads[c] == "" {
				t.Errorf("%s: column %s has no heading", name, c)
			}
		}
		for _, r := range s.Paper {
			for c := range r.Values {
				if !slices.Contains(s.Columns, c) {
					t.Errorf("%s: paper row %q fills column %s, not in the table", name, r.Label, c)
				}
			}
		}
		if vp, err := vae.PresetFor(name, "cpu"); err != nil || vp.Model.Directed != (s.Kind == metrics.DAG) {
			t.Errorf("%s: cpu LG-VAE preset %v, directed %v", name, err, vp.Model.Directed)
		}
		if _, err := flow.Preset(name, "cpu", 16); err != nil {
			t.Errorf("%s: cpu LG-Flow preset: %v", name, err)
		}
	}
	if _, err := Lookup("moses"); err == nil || !strings.Contains(err.Error(), "examples/moses") {
		t.Errorf("moses: %v", err)
	}
}

// TestRunCancelled checks that a cancelled context stops the pipeline
// with its error.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	vp, fc := tinyPresets(t, false, 0)
	_, err := Run(ctx, Options{Dataset: "planar", Out: t.TempDir(), Train: true, VAEPreset: vp, FlowConfig: fc,
		Data: datasets.Options{Splits: datasets.Splits{Train: 8, Val: 4, Test: 4}}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestReconBatch(t *testing.T) {
	for _, c := range []struct{ n, want int }{{8, 4096}, {64, 64}, {128, 16}, {256, 4}, {512, 1}, {1000, 1}} {
		if got := reconBatch([]*graph.Graph{graph.New(3), graph.New(c.n)}); got != c.want {
			t.Errorf("n %d: batch %d, want %d", c.n, got, c.want)
		}
	}
}

// TestSpecConstraints checks each dataset's decoding constraints: they
// are constraints the sampler takes, and those that are properties of
// edges hold for the graph without edges (where constrained decoding
// starts) and for valid graphs of the dataset, so they never reject what
// Valid accepts; "constrained" is refused for a model without the recipe
// where the dataset has none.
func TestSpecConstraints(t *testing.T) {
	holds := map[string]func(*graph.Graph) bool{"planar": planar.IsPlanar, "dag": graph.IsDAG, "forest": graph.IsForest}
	for _, name := range []string{"planar", "tree", "price", "planar-128", "ego", "tpu"} {
		spec, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(spec.Constraints) == 0 || spec.ConstraintName == "" {
			t.Fatalf("%s: no constraint, or no name for it", name)
		}
		if err := (flow.Sampler{Constraints: spec.Constraints}).Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if name == "ego" || name == "tpu" {
			continue // Ego: no validity test; TPU Tile: data files
		}
		gs, err := datasets.Load(context.Background(), name, "test", datasets.Options{Splits: datasets.Splits{Train: 1, Val: 1, Test: 4}})
		if err != nil {
			t.Fatal(err)
		}
		empty := graph.New(gs[0].N())
		if gs[0].Directed() {
			empty = graph.NewDirected(gs[0].N())
		}
		valid := 0
		for _, c := range spec.Constraints {
			test, ok := holds[c]
			if !ok {
				continue
			}
			if !test(empty) {
				t.Errorf("%s: the constraint %s rejects the graph without edges", name, c)
			}
			for i, g := range gs {
				if !spec.Valid(g) {
					continue
				}
				valid++
				if !test(g) {
					t.Errorf("%s: test graph %d is valid but breaks the constraint %s", name, i, c)
				}
			}
		}
		if valid == 0 && name != "tree" {
			t.Errorf("%s: no valid test graph: the check is vacuous", name)
		}
	}
	if _, err := (Options{Recipe: "constrained"}).sampling(Spec{Name: "unconstrained"}, &flow.Model{}); err == nil {
		t.Error("constrained decoding accepted for a dataset with no constraint")
	}
	// Ego: connectivity only for a model without a recipe.
	ego, err := Lookup("ego")
	if err != nil {
		t.Fatal(err)
	}
	sm, err := (Options{Recipe: "constrained"}).sampling(ego, &flow.Model{})
	if err != nil {
		t.Fatalf("ego: %v", err)
	}
	if !slices.Equal(sm.s.Constraints, []string{"connected"}) || sm.s.Fill != nil || sm.recipe != "" || sm.s.BatchSize != ego.SampleBatch {
		t.Errorf("ego: constraints %v, fill %v, recipe %q, batch %d; want connected, none, none, %d", sm.s.Constraints, sm.s.Fill, sm.recipe, sm.s.BatchSize, ego.SampleBatch)
	}
}

// TestShippedModelsLoad loads every model in pretrained/: each LG-VAE
// (vae.safetensors and the alternative decoders vae-*.safetensors beside
// it), and each flow bound to every LG-VAE of its folder (the autoencoder
// it was trained with, by encoder fingerprint), so that a flow shipped
// beside the wrong autoencoder fails here rather than for a user.
func TestShippedModelsLoad(t *testing.T) {
	root := filepath.Join("..", "..", "pretrained")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	flows := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(root, d.Name())
		names, err := filepath.Glob(filepath.Join(dir, "vae*.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		hasFlow := true
		if _, err := os.Stat(filepath.Join(dir, flow.ModelFile)); errors.Is(err, fs.ErrNotExist) {
			hasFlow = false
		}
		for _, name := range names {
			if strings.HasSuffix(name, "-state.safetensors") {
				continue
			}
			ae, err := vae.Load(name)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if !hasFlow {
				continue
			}
			if _, err := flow.Load(filepath.Join(dir, flow.ModelFile), ae); err != nil {
				t.Errorf("%s with %s: %v", flow.ModelFile, name, err)
			}
			flows++
		}
	}
	if flows == 0 {
		t.Error("no shipped flow found: the check is vacuous")
	}
}

// TestSpecFill checks the edge fill's plumbing for a model without a
// recipe (trained by the run, or given with -flow): constrained planar
// decoding fills by default (Spec.Fill), Settings override the bound or
// turn it off, completion takes the same bound, and datasets whose
// constraint is not a property of edges refuse a fill or a completion.
func TestSpecFill(t *testing.T) {
	planarSpec, err := Lookup("planar")
	if err != nil {
		t.Fatal(err)
	}
	if planarSpec.Fill == nil {
		t.Fatal("planar: no default fill")
	}
	plain := &flow.Model{}
	noFill := func(s *flow.Sampler) { s.Fill = nil }
	for _, c := range []struct {
		name     string
		o        Options
		fill     *float64
		complete bool
	}{
		{"unconstrained", Options{}, nil, false},
		{"constrained, the dataset's fill", Options{Recipe: "constrained"}, planarSpec.Fill, false},
		{"constrained, another bound", Options{Recipe: "constrained", Settings: fill(-1)}, ptr(-1.0), false},
		{"constrained, no fill", Options{Recipe: "constrained", Settings: noFill}, nil, false},
		{"completed, the dataset's bound", Options{Recipe: "complete"}, planarSpec.Fill, true},
		{"completed, another bound", Options{Recipe: "complete", Settings: fill(-1)}, ptr(-1.0), true},
	} {
		sm, err := c.o.sampling(planarSpec, plain)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (sm.s.Fill == nil) != (c.fill == nil) || c.fill != nil && *sm.s.Fill != *c.fill || (len(sm.s.Complete) > 0) != c.complete {
			t.Errorf("%s: fill %v, complete %v", c.name, sm.s.Fill, sm.s.Complete)
		}
		opts, err := sm.s.DecodeOptions()
		if err != nil || c.name != "unconstrained" && len(opts) < 2 {
			t.Errorf("%s: %d decode options, %v", c.name, len(opts), err)
		}
	}
	tree, err := Lookup("tree")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Options{Recipe: "constrained", Settings: fill(-2)}).sampling(tree, plain); err == nil {
		t.Error("tree (spanning trees): fill accepted")
	}
	report := func(o Options) *Report {
		t.Helper()
		sm, err := o.sampling(planarSpec, plain)
		if err != nil {
			t.Fatal(err)
		}
		r := newReport(planarSpec, o, 1)
		r.setSampling(sm, o, "dir")
		return r
	}
	if r := report(Options{Recipe: "constrained"}); r.Fill == nil || *r.Fill != *planarSpec.Fill || !r.Constrained {
		t.Errorf("report: fill %v, want %v", r.Fill, *planarSpec.Fill)
	}
	if r := report(Options{Recipe: "constrained", Settings: noFill}); r.Fill != nil {
		t.Errorf("report without fill: fill %v", *r.Fill)
	}
	if r := report(Options{Recipe: "complete"}); !r.Complete || r.Fill == nil || *r.Fill != *planarSpec.Fill {
		t.Errorf("report of a completed run: complete %v, fill %v", r.Complete, r.Fill)
	}
	if _, err := (Options{Recipe: "complete"}).sampling(tree, plain); err == nil {
		t.Error("tree (no completion bound): completion accepted")
	}
	price, err := Lookup("price")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Options{Recipe: "complete"}).sampling(price, plain); err == nil {
		t.Error("price (directed): completion accepted")
	}
}

func ptr[T any](v T) *T { return &v }

// steps and fill return Options.Settings that set the steps or the fill.
func steps(n int) func(*flow.Sampler) { return func(s *flow.Sampler) { s.Steps = n } }

func fill(v float64) func(*flow.Sampler) { return func(s *flow.Sampler) { s.Fill = &v } }

// TestSampleOptionsBad: sampler settings that cannot be honoured are errors,
// not silently ignored.
func TestSampleOptionsBad(t *testing.T) {
	spec, err := Lookup("planar")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"defaults", Options{}, true},
		{"negative steps", Options{Settings: steps(-1)}, false},
		{"negative temperature", Options{Settings: func(s *flow.Sampler) { s.Temperature = -0.5 }}, false},
		{"unknown edge rule", Options{Settings: func(s *flow.Sampler) { s.EdgeRule = "xor" }}, false},
		{"fill without constrained decoding", Options{Settings: fill(-2)}, false},
		{"fill under constrained decoding", Options{Recipe: "constrained", Settings: fill(-2)}, true},
		{"completion", Options{Recipe: "complete"}, true},
		{"completion under constrained decoding", Options{Recipe: "complete", Settings: func(s *flow.Sampler) { s.Constraints = []string{"planar"} }}, false},
		{"unknown recipe", Options{Recipe: "paper"}, false},
		{"negative expert time", Options{Settings: func(s *flow.Sampler) { s.Experts = []flow.Expert{{File: "e.safetensors", From: -1}} }}, false},
	} {
		sm, err := c.o.sampling(spec, &flow.Model{})
		if (err == nil) != c.ok {
			t.Errorf("%s: err = %v, want ok = %v", c.name, err, c.ok)
		}
		if c.ok && len(sm.options(c.o)) < 2 {
			t.Errorf("%s: %d options, want the settings and the seed at least", c.name, len(sm.options(c.o)))
		}
	}
}
