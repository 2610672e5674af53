package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/internal/testgraphs"
	"lgflow/vae"
)

// tinyTrain are the flags of a training run of seconds: the tiny preset
// (a few steps).
var tinyTrain = []string{"-preset", "tiny"}

// TestTrainGraphs trains bundles from files of graphs of each kind with
// tiny models and a few steps: the bundle holds its models, graphs and
// recipe with the card; it samples in the format of its data; a second
// run continues the first; tune rewrites the recipe.
func TestTrainGraphs(t *testing.T) {
	dir := t.TempDir()
	g6 := filepath.Join(dir, "ladders.g6")
	require.NoError(t, graph.WriteFile(g6, testgraphs.Ladders(24, 1)))
	out := filepath.Join(dir, "ladders")
	code, stdOut, errOut := run(t, append([]string{"train", "-graphs", g6, "-out", out}, tinyTrain...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdOut, "the recipe samples with")
	for _, f := range []string{vae.ModelFile, flow.ModelFile, flow.RecipeFile, "train.g6.gz", "val.g6.gz"} {
		assert.FileExists(t, filepath.Join(out, f))
	}
	m, err := flow.Open(out)
	require.NoError(t, err)
	c := m.Recipe.Card
	assert.Equal(t, "planar", c.Validity, "ladders are planar and connected")
	assert.Equal(t, "g6", c.Output)
	require.NotNil(t, c.Data)
	assert.Equal(t, []int{22, 2}, []int{c.Data.Train, c.Data.Val}, "a tenth held out")
	assert.Equal(t, [2]int{6, 12}, c.Data.Nodes)
	assert.Contains(t, c.Figures, "vun")
	assert.Equal(t, []string{"planar", "connected"}, m.Recipe.Alternatives["constrained"].Constraints, "the rule's constrained decoding is an alternative")
	val, err := graph.ReadAnyFile(filepath.Join(out, c.Data.ValGraphs))
	require.NoError(t, err)
	assert.Len(t, val, 2)

	// Again: the run continues (here: both trainings are done).
	code, _, errOut = run(t, append([]string{"train", "-graphs", g6, "-out", out}, tinyTrain...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "continuing the training")

	// sample -model writes graph6 by default.
	samples := filepath.Join(dir, "samples")
	code, _, errOut = run(t, "sample", "-model", out, "-n", "3", "-o", samples)
	require.Equal(t, 0, code, errOut)
	gs, err := graph.ReadFile(samples)
	require.NoError(t, err)
	assert.Len(t, gs, 3)

	// tune: the chosen point becomes the default, the old one "previous".
	old := m.Recipe.Sampler
	code, stdOut, errOut = run(t, "tune", "-model", out, "-n", "8", "-budget", "1m")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdOut, "the trade-off front")
	r, err := flow.LoadRecipe(filepath.Join(out, flow.RecipeFile))
	require.NoError(t, err)
	assert.Equal(t, old, r.Alternatives["previous"])
	assert.Contains(t, r.Card.Figures, "vun")
	assert.Contains(t, r.Card.Figures, "previous.vun")
	assert.Contains(t, r.Card.Measured, "lgflow tune")
}

// TestTrainLabelledGraphs trains on labelled node-link graphs, directed
// edge lists and SMILES: the models take the labels and the direction,
// and sample writes node-link JSON with labels, digraph6 and SMILES.
func TestTrainLabelledGraphs(t *testing.T) {
	dir := t.TempDir()
	labelled := testgraphs.Ladders(12, 2)
	for i, g := range labelled {
		g.NodeLabels = make([]int, g.N())
		for u := range g.NodeLabels {
			g.NodeLabels[u] = (u + i) % 3
		}
	}
	jsonl := filepath.Join(dir, "labelled.jsonl")
	require.NoError(t, graph.WriteNodeLinkFile(jsonl, labelled))
	var el strings.Builder
	for i := range 12 {
		if i > 0 {
			el.WriteString("\n")
		}
		n := 4 + i%3
		for u := 1; u < n; u++ {
			fmt.Fprintf(&el, "%d %d\n", u-1, u) // directed paths
		}
	}
	edges := filepath.Join(dir, "paths.edges")
	require.NoError(t, os.WriteFile(edges, []byte(el.String()), 0o644))
	smi := filepath.Join(dir, "mols.smi")
	require.NoError(t, os.WriteFile(smi, []byte("SMILES\nCCO\nc1ccccc1\nCC(=O)O\nCCN\nCCCl\nOCCO\nC1CC1\nCC#N\nCOC\nCCCC\n"), 0o644))

	for _, c := range []struct {
		name, file string
		args       []string
		validity   string
		output     string
		check      func(t *testing.T, samples string)
	}{
		{"node-link with labels", jsonl, nil, "planar", "nodelink", func(t *testing.T, samples string) {
			gs, err := graph.ReadNodeLinkFile(samples)
			require.NoError(t, err)
			require.Len(t, gs, 3)
			assert.NotNil(t, gs[0].NodeLabels)
		}},
		{"directed edge lists", edges, []string{"-format", "edgelist-directed"}, "dag", "g6", func(t *testing.T, samples string) {
			gs, err := graph.ReadFile(samples)
			require.NoError(t, err)
			require.Len(t, gs, 3)
			assert.True(t, gs[0].Directed())
		}},
		{"SMILES", smi, nil, "molecule", "smiles", func(t *testing.T, samples string) {
			b, err := os.ReadFile(samples)
			require.NoError(t, err)
			assert.Len(t, strings.Split(strings.TrimSpace(string(b)), "\n"), 3)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			args := append([]string{"train", "-graphs", c.file, "-out", out}, tinyTrain...)
			code, _, errOut := run(t, append(args, c.args...)...)
			require.Equal(t, 0, code, errOut)
			r, err := flow.LoadRecipe(filepath.Join(out, flow.RecipeFile))
			require.NoError(t, err)
			assert.Equal(t, c.validity, r.Card.Validity)
			assert.Equal(t, c.output, r.Card.Output)
			samples := filepath.Join(dir, c.name+".out")
			code, _, errOut = run(t, "sample", "-model", out, "-n", "3", "-o", samples)
			require.Equal(t, 0, code, errOut)
			c.check(t, samples)
		})
	}
}

// TestTrainBadInput: bad files of graphs, graphs the preset cannot take,
// a directory in use and bad flags are clear errors naming the file and
// line, and nothing is written into -out.
func TestTrainBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		return path
	}
	ok := filepath.Join(dir, "ok.g6")
	require.NoError(t, graph.WriteFile(ok, testgraphs.Ladders(6, 3)))
	path600 := graph.New(600)
	for u := 1; u < 600; u++ {
		path600.MustAddEdge(u-1, u)
	}
	big := filepath.Join(dir, "big.g6")
	require.NoError(t, graph.WriteFile(big, append(testgraphs.Ladders(2, 4), path600)))
	dg := graph.NewDirected(3)
	dg.MustAddEdge(0, 1)
	mixed := write("mixed.g6", graph.FormatGraph6(testgraphs.Ladders(1, 5)[0])+"\n"+graph.FormatDigraph6(dg)+"\n")
	directedVal := write("val.d6", graph.FormatDigraph6(dg)+"\n")
	used := filepath.Join(dir, "used")
	require.NoError(t, os.MkdirAll(used, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(used, "notes.txt"), []byte("mine\n"), 0o644))

	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no -graphs", []string{}, 2, "need -graphs and -out"},
		{"missing file", []string{"-graphs", filepath.Join(dir, "none.g6")}, 1, "none.g6"},
		{"empty file", []string{"-graphs", write("empty.g6", "\n\n")}, 1, "empty.g6: no graphs"},
		{"malformed graph6", []string{"-graphs", write("bad.g6", "Bw\nCF\nC~~x\n")}, 1, "bad.g6: line 3"},
		{"a graph without nodes", []string{"-graphs", write("zero.g6", "Bw\n?\n")}, 1, "zero.g6 line 2: the graph has no nodes"},
		{"mixed directed and undirected", []string{"-graphs", mixed}, 1, "mixed.g6 line 2: the graph is directed, the first is undirected"},
		{"too large for the preset", []string{"-graphs", big, "-preset", "cpu"}, 1, "big.g6 line 3: the graph has 600 nodes; the cpu preset trains on graphs of at most 512 nodes"},
		{"malformed edge list", []string{"-graphs", write("bad.edges", "0 1\n1 2\n\n0 1\n1 x\n")}, 1, "bad.edges: line 5 (graph 1): second node \"x\" is not an integer"},
		{"malformed node-link JSON", []string{"-graphs", write("bad.jsonl", "{\"nodes\": [{\"id\": 0}], \"edges\": []}\n{\"nodes\": [{\"id\": 0}], \"edges\": [{\"source\": 0, \"target\": 5}]}\n")}, 1, "bad.jsonl: graph 1"},
		{"invalid SMILES", []string{"-graphs", write("bad.smi", "CCO\nC1CC\n")}, 1, "bad.smi line 2"},
		{"one graph, no -val", []string{"-graphs", write("one.g6", "Bw\n")}, 1, "one graph; holding out validation graphs needs two or more"},
		{"directed validation graphs", []string{"-graphs", ok, "-val", directedVal}, 1, "the validation graphs are directed, the training graphs undirected"},
		{"unknown format", []string{"-graphs", ok, "-format", "gml"}, 2, `unknown input format "gml"`},
		{"unknown validity rule", []string{"-graphs", ok, "-validity", "chordal"}, 2, `unknown -validity "chordal"`},
		{"molecule rule for graphs", []string{"-graphs", ok, "-validity", "molecule"}, 2, "-validity molecule is for SMILES"},
		{"tree rule for directed graphs", []string{"-graphs", directedVal, "-val", directedVal, "-validity", "tree"}, 2, "the validity rule tree is for undirected graphs"},
		{"unknown preset", []string{"-graphs", ok, "-preset", "huge"}, 2, `unknown -preset "huge"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(c.name, " ", "-"))
			args := append(append([]string{"train"}, tinyTrain...), c.args...)
			if len(c.args) > 0 {
				args = append(args, "-out", out)
			}
			code, _, errOut := run(t, args...)
			assert.Equal(t, c.code, code, errOut)
			assert.Contains(t, errOut, c.want)
			assert.NoDirExists(t, out, "nothing is written into -out")
		})
	}

	// A directory that holds something else is not trained into.
	code, _, errOut := run(t, append([]string{"train", "-graphs", ok, "-out", used}, tinyTrain...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "is not empty (it holds notes.txt)")
	entries, err := os.ReadDir(used)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing added to it")
}

// TestBadBundles: a bundle whose flow and LG-VAE do not belong together,
// and sampler.json files with unknown keys or values out of range, are
// clear errors for sample and tune.
func TestBadBundles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	require.NoError(t, os.MkdirAll(good, 0o755))
	tinyModels(t, good, tinyVAEConfig())

	mismatched := filepath.Join(dir, "mismatched")
	require.NoError(t, os.MkdirAll(mismatched, 0o755))
	tinyModels(t, mismatched, tinyVAEConfig())
	other, err := vae.New(tinyVAEConfig(), 7) // other weights
	require.NoError(t, err)
	require.NoError(t, other.Save(filepath.Join(mismatched, vae.ModelFile), nil))

	bundle := func(name, recipe string) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		tinyModels(t, d, tinyVAEConfig())
		require.NoError(t, os.WriteFile(filepath.Join(d, flow.RecipeFile), []byte(recipe), 0o644))
		return d
	}
	unknownKey := bundle("unknown-key", `{"format": "lgflow-sampler/1", "sampler": {"stpes": 70}}`)
	outOfRange := bundle("out-of-range", `{"format": "lgflow-sampler/1", "sampler": {"time_offsets": {"step": 2}}}`)
	badRule := bundle("bad-rule", `{"format": "lgflow-sampler/1", "card": {"validity": "chordal"}}`)
	newer := bundle("newer", `{"format": "lgflow-sampler/2"}`)
	for _, c := range []struct {
		name, dir, want string
	}{
		{"flow and LG-VAE apart", mismatched, "trained in the latent space of LG-VAE encoder weights"},
		{"unknown key", unknownKey, `unknown key "stpes"`},
		{"value out of range", outOfRange, "sampler.time_offsets.step: 2 is outside (-1, 1)"},
		{"unknown validity rule", badRule, `card.validity: "chordal" is not one of planar, tree, dag, connected, molecule, none`},
		{"another format", newer, `format: "lgflow-sampler/2" is not "lgflow-sampler/1"`},
	} {
		for _, cmd := range [][]string{{"sample", "-model", c.dir, "-n", "2"}, {"tune", "-model", c.dir, "-val", filepath.Join(dir, "none.g6")}} {
			t.Run(c.name+"/"+cmd[0], func(t *testing.T) {
				code, _, errOut := run(t, cmd...)
				assert.Equal(t, 1, code, errOut)
				assert.Contains(t, errOut, c.want)
			})
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-model", good}, "no validation graphs: give -val"},
		{[]string{}, "need -model"},
		{[]string{"-model", good, "-mmd-weight", "0"}, "-mmd-weight must be positive"},
		{[]string{"-model", good, "-validity", "chordal"}, `unknown -validity "chordal"`},
		{[]string{"-model", good, "-sampler", "stepz=1"}, `unknown key "stepz"`},
	} {
		code, _, errOut := run(t, append([]string{"tune"}, c.args...)...)
		assert.Equal(t, 2, code, errOut)
		assert.Contains(t, errOut, c.want)
	}
}
