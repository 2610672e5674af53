package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/graph"
	"lgflow/graph/datasets"
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
	code, _, errOut := run(t, "data", "-dataset", "tree", "-split", "test", "-seed", "3", "-o", file)
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
	code, out, errOut := run(t, "data", "-dataset", "price", "-split", "val", "-n", "10")
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
