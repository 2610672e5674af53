package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/graph"
	"lgflow/graph/datasets"
	"lgflow/graph/mol"
	"lgflow/metrics"
	"lgflow/tensor"
)

// run calls the dispatcher in-process and returns its exit status and
// what it wrote.
func run(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	oldOut, oldErr := stdout, stderr
	stdout, stderr = &o, &e
	defer func() { stdout, stderr = oldOut, oldErr }()
	code = dispatch(context.Background(), args)
	return code, o.String(), e.String()
}

func TestHelp(t *testing.T) {
	code, out, _ := run(t, "help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "data ")
	assert.Contains(t, out, "write a dataset split")

	code, _, errOut := run(t)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "usage: lgflow <command>")

	code, _, errOut = run(t, "help", "data")
	assert.Equal(t, 0, code)
	assert.Contains(t, errOut, "usage: lgflow data -dataset NAME")
	assert.Contains(t, errOut, "-seed")

	code, _, errOut = run(t, "frobnicate")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `unknown command "frobnicate"`)
	code, _, _ = run(t, "help", "frobnicate")
	assert.Equal(t, 2, code)
}

func TestData(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tree.g6")
	code, _, errOut := run(t, "data", "-dataset", "tree", "-split", "test", "-data-seed", "3", "-o", file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "wrote 256 graphs")
	got, err := graph.ReadFile(file)
	require.NoError(t, err)
	want, err := datasets.Load(context.Background(), "tree", "test", datasets.Options{Seed: 3})
	require.NoError(t, err)
	require.Len(t, got, 256)
	for i := range want {
		require.Equal(t, want[i].Edges(), got[i].Edges())
	}

	// Directed graphs come out as digraph6, to stdout by default.
	code, out, errOut := run(t, "data", "-dataset", "price", "-split", "val", "-nodes", "10")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 256)
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, "&I"), l) // '&', N(10) = 'I'
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"data", "-dataset", "nope"}, 2, `unknown dataset "nope" (one of `},
		{[]string{"data", "-dataset", "tree", "-split", "dev"}, 2, `unknown split "dev" (one of train, val, test)`},
		{[]string{"data"}, 2, "missing -dataset"},
		{[]string{"data", "-dataset", "tree", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"data", "-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"data", "-dataset", "tree", "-o", filepath.Join(dir, "missing", "x.g6")}, 1, "no such file or directory"},
		{[]string{"data", "-dataset", "ego", "-data", filepath.Join(dir, "nodata")}, 1, "citeseer_edges.txt"},
	} {
		code, _, errOut := run(t, tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.msg, "%v", tc.args)
	}
	_, err = os.Stat(filepath.Join(dir, "missing"))
	assert.True(t, os.IsNotExist(err))
}

func TestDataEgo(t *testing.T) {
	if _, err := datasets.DataDir(); err != nil {
		t.Skip("shared data not found:", err)
	}
	file := filepath.Join(t.TempDir(), "ego.g6.gz")
	code, _, errOut := run(t, "data", "-dataset", "ego", "-split", "val", "-o", file)
	require.Equal(t, 0, code, errOut)
	gs, err := graph.ReadFile(file)
	require.NoError(t, err)
	assert.Len(t, gs, 151)
}

// TestRecon runs recon on the shipped planar autoencoder: clean figures
// near the published ones, worse ones under latent noise, and errors for
// bad flags.
func TestRecon(t *testing.T) {
	model := filepath.Join("..", "..", "pretrained", "planar", "vae.safetensors")
	if _, err := os.Stat(model); err != nil {
		t.Skip("no shipped planar model")
	}
	recon := func(args ...string) map[string]float64 {
		t.Helper()
		code, out, errOut := run(t, append([]string{"recon", "-vae", model, "-dataset", "planar", "-split", "test", "-json"}, args...)...)
		require.Equal(t, 0, code, errOut)
		var raw map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &raw), out)
		m := map[string]float64{}
		for k, v := range raw {
			if f, ok := v.(float64); ok {
				m[k] = f
			}
		}
		return m
	}
	clean := recon()
	assert.Equal(t, 256.0, clean["graphs"])
	assert.Greater(t, clean["edge_acc"], 0.999)
	assert.Greater(t, clean["sample_acc"], 0.7)
	assert.Greater(t, clean["valid"], 0.8)
	noisy := recon("-noise", "0.05", "-sampler", "edge_rule=and")
	assert.Less(t, noisy["sample_acc"], clean["sample_acc"])
	assert.Greater(t, noisy["latent_std"], 0.0)
	assert.Equal(t, 0.05, noisy["noise"])

	for _, bad := range [][]string{{"-noise", "-1"}, {"-sampler", "edge_rule=xor"}, {"-sampler", "edge_rules=and"}, {"-validity", "planar"}} {
		code, _, errOut := run(t, append([]string{"recon", "-vae", model, "-dataset", "planar"}, bad...)...)
		assert.Equal(t, 2, code, "%v: %s", bad, errOut)
	}

	// The same graphs from a file (-graphs, with the planar rule named)
	// give the same figures.
	file := filepath.Join(t.TempDir(), "test.g6")
	code, _, errOut := run(t, "data", "-dataset", "planar", "-split", "test", "-o", file)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := run(t, "recon", "-vae", model, "-graphs", file, "-validity", "planar", "-json")
	require.Equal(t, 0, code, errOut)
	var fromFile map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &fromFile), out)
	for _, k := range []string{"graphs", "edge_acc", "sample_acc", "decoded_acc", "valid", "edges_in", "edges_decoded"} {
		assert.Equal(t, clean[k], fromFile[k], k)
	}
	assert.InDelta(t, 177.0, clean["edges_in"], 5) // planar graphs of 64 nodes: 3n - 6 at most
	for _, bad := range [][]string{{"-graphs", file, "-dataset", "planar"}, {"-graphs", file, "-validity", "chordal"}} {
		code, _, errOut := run(t, append([]string{"recon", "-vae", model}, bad...)...)
		assert.Equal(t, 2, code, "%v: %s", bad, errOut)
	}

	// Through the shipped flow: the later the latents are noised to, the
	// more graphs come back exactly; the flow as its own expert changes
	// nothing.
	flowFile := filepath.Join("..", "..", "pretrained", "planar", "flow.safetensors")
	late, early := recon("-flow", flowFile, "-from", "0.98"), recon("-flow", flowFile, "-from", "0.9")
	assert.Equal(t, 0.98, late["from"])
	assert.Greater(t, late["decoded_acc"], 0.4)
	assert.Less(t, early["decoded_acc"], 0.1)
	assert.Less(t, late["decoded_acc"], clean["decoded_acc"])
	self := recon("-flow", flowFile, "-from", "0.98", "-sampler", `experts=[{"file":"`+flowFile+`","from":0.5}]`)
	assert.Equal(t, late["decoded_acc"], self["decoded_acc"])
	assert.Equal(t, late["valid"], self["valid"])
	chain := recon("-flow", flowFile, "-from", "0.98", "-sampler", `experts=[{"file":"`+flowFile+`","from":0.5,"until":0.99},{"file":"`+flowFile+`","from":0.99}]`)
	assert.Equal(t, late["decoded_acc"], chain["decoded_acc"])
	for _, bad := range [][]string{{"-sampler", `experts=[{"file":"` + flowFile + `","from":0.5}]`}, {"-flow", flowFile, "-noise", "0.01"}} {
		code, _, errOut := run(t, append([]string{"recon", "-vae", model, "-dataset", "planar"}, bad...)...)
		assert.Equal(t, 2, code, "%v: %s", bad, errOut)
	}
	code, _, errOut = run(t, "recon", "-vae", model, "-dataset", "planar", "-flow", flowFile, "-from", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "perturbation times")
}

// TestReconOutput checks that recon -o writes the graphs its figures
// describe: as many as the split has, valid in the proportion it reports.
func TestReconOutput(t *testing.T) {
	model := filepath.Join("..", "..", "pretrained", "planar", "vae.safetensors")
	if _, err := os.Stat(model); err != nil {
		t.Skip("no shipped planar model")
	}
	file := filepath.Join(t.TempDir(), "recon.g6")
	code, out, errOut := run(t, "recon", "-vae", model, "-dataset", "planar", "-split", "test", "-sampler", "edge_rule=and,edge_margin=1.25",
		"-json", "-o", file)
	require.Equal(t, 0, code, errOut)
	var fig struct {
		Graphs float64 `json:"graphs"`
		Valid  float64 `json:"valid"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &fig), out)
	gs, err := graph.ReadFile(file)
	require.NoError(t, err)
	require.Len(t, gs, int(fig.Graphs))
	valid := 0
	for _, g := range gs {
		if metrics.IsValidPlanar(g) {
			valid++
		}
	}
	assert.InDelta(t, fig.Valid, float64(valid)/float64(len(gs)), 1e-12)
	assert.Less(t, valid, len(gs), "some test graphs decode invalid under this rule")

	for _, bad := range [][]string{{"-format", "g6"}, {"-o", "-"}, {"-o", file, "-format", "gml"}} {
		code, _, errOut := run(t, append([]string{"recon", "-vae", model, "-dataset", "planar"}, bad...)...)
		assert.Equal(t, 2, code, "%v: %s", bad, errOut)
	}
}

// TestValidityScore checks the checkpoint-selection scorers on hand-made
// graphs: a planar/non-planar pair and a valid/over-valent molecule pair
// (MOSES labels: atom type 0 = C, 1 = N, 3 = O; bond label 0 = single, 3 =
// aromatic), and pyrrole, which needs [nH] inference.
func TestValidityScore(t *testing.T) {
	k5 := graph.New(5)
	for i := range 5 {
		for j := i + 1; j < 5; j++ {
			k5.AddEdge(i, j)
		}
	}
	c4 := graph.New(4)
	for i := range 4 {
		c4.AddEdge(i, (i+1)%4)
	}
	assert.Equal(t, 0.5, validityScore("planar")([]*graph.Graph{k5, c4}))

	ethanol := graph.New(3)
	ethanol.NodeLabels = []int{0, 0, 3}
	ethanol.AddEdge(0, 1)
	ethanol.AddEdge(1, 2)
	penta := graph.New(6) // a carbon with five single bonds
	penta.NodeLabels = make([]int, 6)
	for i := 1; i < 6; i++ {
		penta.AddEdge(0, i)
	}
	assert.Equal(t, 0.5, validityScore("moses")([]*graph.Graph{ethanol, penta}))
	pyrrole := graph.New(5)
	pyrrole.NodeLabels = []int{0, 0, 0, 0, 1}
	for i := range 5 {
		pyrrole.AddLabeledEdge(i, (i+1)%5, 3)
	}
	mols := []*graph.Graph{ethanol, penta, pyrrole}
	assert.InDelta(t, 1.0/3, validityScore("moses")(mols), 1e-12)
	assert.InDelta(t, 2.0/3, validityScore("moses", mol.InferAromaticNH(1))(mols), 1e-12)
	assert.Nil(t, validityScore("ego"))
}

// TestTrainVAEExtraSeeds checks that -extra-train-seeds adds the training
// graphs of other data seeds: 16 graphs of seed 0 and 16 of each extra seed.
func TestTrainVAEExtraSeeds(t *testing.T) {
	for _, tc := range []struct {
		seeds string
		want  string
	}{
		{"", "16 train, 256 val graphs"},
		{"1", "32 train, 256 val graphs"},
		{" 1, 2 ", "48 train, 256 val graphs"},
	} {
		args := tinyVAE(t.TempDir(), 1)
		if tc.seeds != "" {
			args = append(args, "-extra-train-seeds", tc.seeds)
		}
		code, _, errOut := run(t, args...)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, errOut, tc.want, "seeds %q", tc.seeds)
	}
}

// TestSharedFlags checks that a flag of the shared groups (package cli)
// reads the same, usage and default, in every command that takes it, and
// that the flags the groups replaced are gone from every command.
func TestSharedFlags(t *testing.T) {
	shared := []string{"dataset", "data", "data-seed", "device", "recipe", "sampler", "max-train"}
	removed := []string{"steps", "time-shift", "final-jump", "temperature", "edge-rule", "edge-margin", "constraint", "fill", "complete",
		"step-offset", "step-offset-from", "jump-offset", "expert", "expert-from", "guidance", "resume", "tf32", "ntrain",
		"init-vae", "log-every", "perturb-flow", "keep-as", "start", "directed", "mol", "emd", "node-labels", "decimals", "progress", "force"}
	seen := map[string]string{} // flag -> the first command's usage block
	from := map[string]string{}
	takes := map[string]int{}
	for name := range commands {
		_, _, help := run(t, "help", name)
		blocks := strings.Split(help, "\n  -")
		for _, b := range blocks[1:] {
			flagName, _, _ := strings.Cut(b, " ")
			flagName, _, _ = strings.Cut(flagName, "\n")
			if slices.Contains(removed, flagName) {
				t.Errorf("lgflow %s still has -%s", name, flagName)
			}
			if !slices.Contains(shared, flagName) {
				continue
			}
			takes[flagName]++
			if prev, ok := seen[flagName]; ok && prev != b {
				t.Errorf("-%s reads differently in %s and %s:\n%s\n%s", flagName, from[flagName], name, prev, b)
			}
			seen[flagName], from[flagName] = b, name
		}
	}
	for _, f := range []string{"dataset", "data", "data-seed", "device", "sampler"} {
		if takes[f] < 3 {
			t.Errorf("-%s in %d commands: the check is vacuous", f, takes[f])
		}
	}
}

// TestWarnBF16 checks that LGFLOW_GEMM_BF16=1 where bf16 products are not
// on (a CPU or build without them; here switched off) is said, not
// silently ignored, and that nothing is said without it.
func TestWarnBF16(t *testing.T) {
	was := tensor.BF16MatMul()
	require.NoError(t, tensor.SetBF16MatMul(false))
	t.Cleanup(func() { _ = tensor.SetBF16MatMul(was) })
	t.Setenv("LGFLOW_GEMM_BF16", "1")
	_, _, errOut := run(t, "eval") // a usage error, after the warning
	assert.Contains(t, errOut, "LGFLOW_GEMM_BF16=1 is ignored")
	t.Setenv("LGFLOW_GEMM_BF16", "")
	_, _, errOut = run(t, "eval")
	assert.NotContains(t, errOut, "LGFLOW_GEMM_BF16")
}
