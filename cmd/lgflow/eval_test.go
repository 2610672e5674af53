package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/graph"
	"lgflow/graph/datasets"
)

func TestEval(t *testing.T) {
	dir := t.TempDir()
	all := datasets.Planar(24, 60, 3)
	write := func(name string, gs []*graph.Graph) string {
		p := filepath.Join(dir, name)
		require.NoError(t, graph.WriteFile(p, gs))
		return p
	}
	train := write("train.g6", all[:40])
	ref := write("test.g6", all[40:50])
	gen := write("gen.g6", append(append([]*graph.Graph{}, all[50:]...), all[0], all[55]))

	code, out, errOut := run(t, "eval", "-gen", gen, "-ref", ref, "-train", train, "-kind", "planar")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "planar: 12 generated vs 10 reference graphs (40 training)")
	assert.Contains(t, out, "V.U.N. %")

	code, out, errOut = run(t, "eval", "-gen", gen, "-ref", ref, "-train", train, "-kind", "planar", "-json")
	require.Equal(t, 0, code, errOut)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	for _, k := range []string{"degree", "clustering", "orbit", "spectral", "valid", "unique", "novel", "vun"} {
		assert.Contains(t, m, k)
	}
	assert.NotContains(t, m, "wavelet")
	// 12 generated: one training copy (all[0]) and one duplicate (all[55]).
	assert.InDelta(t, 11.0/12, m["unique"], 1e-12)
	assert.InDelta(t, 11.0/12, m["novel"], 1e-12)
	assert.InDelta(t, 10.0/12, m["vun"], 1e-12)
	assert.InDelta(t, 1.0, m["valid"], 1e-12)
}

func TestEvalErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.g6")
	require.NoError(t, graph.WriteFile(good, datasets.Planar(10, 3, 1)))
	bad := filepath.Join(dir, "bad.g6")
	require.NoError(t, os.WriteFile(bad, []byte("I?h]@eOWG\n@@@not graph6\n"), 0o644))

	code, _, errOut := run(t, "eval", "-gen", bad, "-ref", good)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "bad.g6")
	assert.Contains(t, errOut, "line 2")

	code, _, errOut = run(t, "eval", "-gen", good)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "missing -ref")

	code, _, errOut = run(t, "eval", "-gen", good, "-ref", good, "-kind", "forest")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "unknown kind")

	code, _, errOut = run(t, "eval", "-gen", good, "-ref", good, "-kind", "dag")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "needs directed graphs")

	code, _, errOut = run(t, "eval", "-gen", filepath.Join(dir, "missing.g6"), "-ref", good)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "missing.g6")
}
