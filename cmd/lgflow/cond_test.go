package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/flow"
	"lgflow/graph"
	"lgflow/internal/bundle"
	"lgflow/internal/testgraphs"
	"lgflow/vae"
)

// TestTrainConditional trains a bundle on ladders labelled short (3 or 4
// rungs) and long (5 or 6) from a condition file: the flow's checkpoint
// holds the schema and the card says it; sample takes a label and a
// guidance scale, and refuses conditions the model cannot take with a
// usage error; a run that continues the bundle must give the same
// conditions.
func TestTrainConditional(t *testing.T) {
	dir := t.TempDir()
	gs := testgraphs.Ladders(24, 1)
	g6 := filepath.Join(dir, "ladders.g6")
	require.NoError(t, graph.WriteFile(g6, gs))
	var labels strings.Builder
	labels.WriteString("# ladder lengths\n")
	for _, g := range gs {
		if g.N() <= 8 {
			labels.WriteString("short\n")
		} else {
			labels.WriteString("long\n")
		}
	}
	condFile := filepath.Join(dir, "labels.txt")
	require.NoError(t, os.WriteFile(condFile, []byte(labels.String()), 0o644))
	out := filepath.Join(dir, "bundle")
	args := append([]string{"train", "-graphs", g6, "-out", out, "-cond", condFile, "-cond-drop", "0.2"}, tinyTrain...)
	code, _, errOut := run(t, args...)
	require.Equal(t, 0, code, errOut)
	m, err := flow.Open(out)
	require.NoError(t, err)
	require.NotNil(t, m.Cond)
	assert.Equal(t, []string{"long", "short"}, m.Cond.Labels)
	assert.Equal(t, 0.2, m.Cfg.CondDrop)
	assert.Contains(t, m.Recipe.Card.Training, "conditioned on label (long, short), condition dropout 0.2")
	assert.Contains(t, m.Recipe.Card.Measured, "without a condition")

	samples := filepath.Join(dir, "short.g6")
	code, _, errOut = run(t, "sample", "-model", out, "-n", "4", "-cond", "label=short", "-sampler", "guidance_scale=2", "-o", samples)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "sampling under label=short, guidance scale 2")
	got, err := graph.ReadFile(samples)
	require.NoError(t, err)
	assert.Len(t, got, 4)
	code, _, errOut = run(t, "sample", "-model", out, "-n", "2", "-o", filepath.Join(dir, "plain.g6"))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "sampling without a condition")

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown label", []string{"-cond", "label=medium"}, `-cond: unknown label "medium" (the model's labels: long, short)`},
		{"a property of a labelled model", []string{"-cond", "edges=10"}, `unknown key "edges"`},
		{"not key=value", []string{"-cond", "short"}, "is not key=value"},
		{"negative guidance", []string{"-cond", "label=long", "-sampler", "guidance_scale=-1"}, "-sampler guidance_scale=-1: want a scale in [0, "},
	} {
		code, _, errOut := run(t, append([]string{"sample", "-model", out, "-n", "2"}, c.args...)...)
		assert.Equal(t, 2, code, "%s: %s", c.name, errOut)
		assert.Contains(t, errOut, c.want, c.name)
	}

	// Continuing the bundle's training with other conditions, or none.
	for _, other := range [][]string{{"-cond-prop", "edges"}, nil} {
		code, _, errOut = run(t, append(append([]string{"train", "-graphs", g6, "-out", out}, tinyTrain...), other...)...)
		assert.Equal(t, 1, code, errOut)
		assert.Contains(t, errOut, "holds the training of a bundle conditioned on label (long, short)")
	}
	code, _, errOut = run(t, args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "continuing the training")
}

// TestHoldOutConditions checks that the conditions follow their graphs
// through the validation hold-out: each training graph keeps its label.
func TestHoldOutConditions(t *testing.T) {
	gs := testgraphs.Ladders(40, 2)
	size := func(g *graph.Graph) string { return strconv.Itoa(g.N()) }
	table := &bundle.ConditionTable{}
	for _, g := range gs {
		table.Labels = append(table.Labels, size(g))
	}
	train, val, held := holdOut(gs, 5)
	sub := table.Subset(kept(held))
	require.Len(t, sub.Labels, len(train))
	assert.Len(t, val, 4)
	for i, g := range train {
		assert.Equal(t, size(g), sub.Labels[i], "training graph %d", i)
	}
}

// TestTrainFlowConditional trains a flow on a dataset split with labels
// from a file and a built-in property, samples it under a condition,
// and refuses to resume it with other conditions.
func TestTrainFlowConditional(t *testing.T) {
	data, v := tinyTPU(t)
	dir := t.TempDir()
	condFile := filepath.Join(dir, "labels.txt")
	require.NoError(t, os.WriteFile(condFile, []byte("a\nb\na\nb\na\nb\n"), 0o644))
	out := filepath.Join(dir, "flow")
	base := []string{"train-flow", "-vae", v, "-dataset", "tpu", "-data", data, "-train-split", "val", "-preset", "tiny", "-out", out}
	code, _, errOut := run(t, append(base, "-config", "steps=2", "-cond", condFile, "-cond-prop", "edges", "-cond-drop", "0")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "conditioned on label (a, b), edges")
	ae, err := vae.Load(v)
	require.NoError(t, err)
	m, err := flow.Load(filepath.Join(out, flow.ModelFile), ae)
	require.NoError(t, err)
	require.NotNil(t, m.Cond)
	assert.Equal(t, []string{"a", "b"}, m.Cond.Labels)
	assert.Equal(t, []string{"edges"}, m.Cond.PropertyNames())
	assert.Equal(t, -1.0, m.Cfg.CondDrop, "-cond-drop 0: never")
	assert.Equal(t, 2, m.Cfg.DiT.Classes)
	assert.Equal(t, 1, m.Cfg.DiT.CondDim)

	p := m.Cond.Properties[0]
	cond := "label=b,edges=" + strconv.FormatFloat(p.Max, 'g', -1, 64)
	code, stdOut, errOut := run(t, "sample", "-vae", v, "-flow", filepath.Join(out, flow.ModelFile), "-n", "3", "-sampler", "steps=3", "-cond", cond, "-sampler", "guidance_scale=1.5")
	require.Equal(t, 0, code, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(stdOut), "\n"), 3, "node-link lines")
	code, _, errOut = run(t, "sample", "-vae", v, "-flow", filepath.Join(out, flow.ModelFile), "-n", "3", "-cond", "label=b,edges=1000")
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "outside the range the model was trained on")

	// Resuming: the same conditions continue, others are refused.
	code, _, errOut = run(t, append(base, "-config", "steps=4", "-cond", condFile)...)
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "was trained with conditions on label (a, b), edges")
	assert.Contains(t, errOut, "this run gives conditions on label (a, b)")
	code, _, errOut = run(t, append(base, "-config", "steps=4")...)
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "this run gives no conditions")
	code, _, errOut = run(t, append(base, "-config", "steps=4", "-cond", condFile, "-cond-prop", "edges")...)
	require.Equal(t, 0, code, errOut)

	// An unconditional model takes no condition.
	unconditional := filepath.Join(dir, "plain")
	code, _, errOut = run(t, append(base[:len(base)-1], unconditional, "-config", "steps=1")...)
	require.Equal(t, 0, code, errOut)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-cond", "label=a"}, "the model was trained without conditions"},
		{[]string{"-sampler", "guidance_scale=2"}, "-sampler guidance_scale=2: the model was trained without conditions"},
	} {
		code, _, errOut = run(t, append([]string{"sample", "-vae", v, "-flow", filepath.Join(unconditional, flow.ModelFile), "-n", "1"}, c.args...)...)
		assert.Equal(t, 2, code, errOut)
		assert.Contains(t, errOut, c.want)
	}
}

// TestEvalConditional measures hand-built samples: the share the
// checker assigns to the requested class and the property errors, in
// the table and in JSON.
func TestEvalConditional(t *testing.T) {
	dir := t.TempDir()
	path := func(n int) *graph.Graph {
		g := graph.New(n)
		for u := 1; u < n; u++ {
			g.MustAddEdge(u-1, u)
		}
		return g
	}
	cycle := path(5)
	cycle.MustAddEdge(4, 0)
	// Three trees (paths of 4, 5 and 6 nodes: 3, 4 and 5 edges) and a
	// 5-cycle (5 edges): 75% trees; edges = 4: MAE (1 + 0 + 1 + 1)/4.
	gen := filepath.Join(dir, "gen.g6")
	require.NoError(t, graph.WriteFile(gen, []*graph.Graph{path(4), path(5), path(6), cycle}))
	// The reference: edges 3 and 5, std 1.
	ref := filepath.Join(dir, "ref.g6")
	require.NoError(t, graph.WriteFile(ref, []*graph.Graph{path(4), path(6)}))

	code, stdOut, errOut := run(t, "eval", "-gen", gen, "-ref", ref, "-cond-label", "tree", "-cond-prop", "edges=4")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdOut, "requested class tree: 75.0% of the samples (checker tree)")
	assert.Contains(t, stdOut, "requested edges = 4: mean absolute error 0.75 over 4 samples (75.0% of the reference graphs' spread, std 1.00)")

	code, stdOut, errOut = run(t, "eval", "-gen", gen, "-ref", ref, "-cond-label", "acyclic", "-checker", "tree", "-cond-prop", "diameter=2", "-json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Generated int `json:"generated"`
		Condition struct {
			Label      string   `json:"label"`
			Checker    string   `json:"checker"`
			Fraction   *float64 `json:"class_fraction"`
			Properties []struct {
				Name     string   `json:"name"`
				MAE      float64  `json:"mae"`
				Measured int      `json:"measured"`
				RefStd   float64  `json:"ref_std"`
				Relative *float64 `json:"mae_over_ref_std"`
			} `json:"properties"`
		} `json:"condition"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdOut), &rep), stdOut)
	assert.Equal(t, 4, rep.Generated)
	assert.Equal(t, "acyclic", rep.Condition.Label)
	require.NotNil(t, rep.Condition.Fraction)
	assert.Equal(t, 0.75, *rep.Condition.Fraction)
	require.Len(t, rep.Condition.Properties, 1)
	// Diameters 3, 4, 5, 2 against 2: MAE (1 + 2 + 3 + 0)/4; the
	// reference's 3 and 5: std 1.
	p := rep.Condition.Properties[0]
	assert.Equal(t, "diameter", p.Name)
	assert.Equal(t, 1.5, p.MAE)
	assert.Equal(t, 4, p.Measured)
	assert.Equal(t, 1.0, p.RefStd)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-cond-label", "spiky"}, `-checker "spiky"`},
		{[]string{"-cond-label", "x", "-checker", "none"}, `-checker "none"`},
		{[]string{"-checker", "tree"}, "-checker needs -cond-label"},
		{[]string{"-cond-prop", "girth=3"}, `unknown property "girth"`},
		{[]string{"-cond-prop", "edges=many"}, `edges="many" is not a finite number`},
		{[]string{"-cond-prop", "edges"}, "want NAME=VALUE"},
	} {
		code, _, errOut := run(t, append([]string{"eval", "-gen", gen, "-ref", ref}, c.args...)...)
		assert.Equal(t, 2, code, errOut)
		assert.Contains(t, errOut, c.want)
	}
}

// TestCondBadInput: condition flags and files that cannot be used are
// clear errors before anything is trained.
func TestCondBadInput(t *testing.T) {
	dir := t.TempDir()
	g6 := filepath.Join(dir, "ladders.g6")
	require.NoError(t, graph.WriteFile(g6, testgraphs.Ladders(6, 3)))
	jsonl := filepath.Join(dir, "ladders.jsonl")
	require.NoError(t, graph.WriteNodeLinkFile(jsonl, testgraphs.Ladders(6, 3)))
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		return path
	}
	short := write("short.txt", "a\nb\na\n")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"fewer conditions than graphs", []string{"-graphs", g6, "-cond", short}, 1, "short.txt: 3 conditions for 6 graphs"},
		{"a bad line", []string{"-graphs", g6, "-cond", write("bad.txt", "a\nb\na b\na\nb\na\n")}, 1, `bad.txt: line 3: "a b" is neither a label`},
		{"NaN", []string{"-graphs", g6, "-cond", write("nan.txt", strings.Repeat("x=1\n", 5)+"x=NaN\n")}, 1, "nan.txt: line 6: x=NaN is not a finite number"},
		{"not a number", []string{"-graphs", g6, "-cond", write("word.txt", "x=1\nx=two\n")}, 1, `word.txt: line 2: x="two" is not a number`},
		{"unknown property", []string{"-graphs", g6, "-cond-prop", "girth"}, 2, `-cond-prop: unknown property "girth" (built in: edges, triangles, diameter, rings)`},
		{"graph attributes of graph6", []string{"-graphs", g6, "-cond-attrs", "label"}, 2, "-cond-attrs reads node-link JSON's graph attributes"},
		{"missing graph attributes", []string{"-graphs", jsonl, "-cond-attrs", "label"}, 1, `graph 0: no graph attribute "label"`},
		{"a property twice", []string{"-graphs", g6, "-cond", write("edges.txt", strings.Repeat("edges=1\n", 6)), "-cond-prop", "edges"}, 2, "the property edges given twice"},
		{"dropout without conditions", []string{"-graphs", g6, "-cond-drop", "0.2"}, 2, "-cond-drop needs conditions"},
		{"dropout 1", []string{"-graphs", g6, "-cond-prop", "edges", "-cond-drop", "1"}, 2, "-cond-drop 1: want a probability in [0, 1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(c.name, " ", "-"))
			code, _, errOut := run(t, append(append([]string{"train", "-out", out}, tinyTrain...), c.args...)...)
			assert.Equal(t, c.code, code, errOut)
			assert.Contains(t, errOut, c.want)
			assert.NoDirExists(t, out, "nothing is written into -out")
		})
	}
}
