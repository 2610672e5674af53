package datasets

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/graph"
)

func dataDir(t testing.TB) string {
	t.Helper()
	d, err := DataDir()
	if err != nil {
		t.Skip("shared data not found:", err)
	}
	return d
}

func sameGraphs(t *testing.T, want, got []*graph.Graph) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].Directed(), got[i].Directed(), "graph %d", i)
		require.Equal(t, want[i].N(), got[i].N(), "graph %d", i)
		require.Equal(t, want[i].Edges(), got[i].Edges(), "graph %d", i)
	}
}

func TestPlanar(t *testing.T) {
	const n, count, seed = 64, 40, 7
	gs := Planar(n, count, seed)
	require.Len(t, gs, count)
	for i, g := range gs {
		pts, _ := planarPoints(stream("planar", seed, i), n)
		h := hullCount(pts)
		require.Equal(t, n, g.N())
		require.Equal(t, 3*n-3-h, g.M(), "graph %d: edges", i)
		require.True(t, graph.IsConnected(g), "graph %d", i)
		// planarity: no two straight edges cross
		es := g.Edges()
		for a := range es {
			for b := a + 1; b < len(es); b++ {
				require.False(t, segmentsCross(pts[es[a].From], pts[es[a].To], pts[es[b].From], pts[es[b].To]))
			}
		}
	}
	// Reproducible, independent of workers, and a split is a slice of the
	// whole sequence.
	sameGraphs(t, gs, Planar(n, count, seed))
	ctx := context.Background()
	sp := Splits{Train: 20, Val: 12, Test: 8}
	for _, w := range []int{1, 3} {
		val, err := Load(ctx, "planar", "val", Options{Seed: seed, Splits: sp, Workers: w})
		require.NoError(t, err)
		sameGraphs(t, gs[20:32], val)
	}
	test, err := Load(ctx, "planar", "test", Options{Seed: seed, Splits: sp})
	require.NoError(t, err)
	sameGraphs(t, gs[32:40], test)
	other := Planar(n, 1, seed+1)
	assert.NotEqual(t, gs[0].Edges(), other[0].Edges())
	// Small sizes.
	for _, k := range []int{1, 2, 3, 4} {
		g := Planar(k, 1, 0)[0]
		assert.Equal(t, k, g.N())
		assert.True(t, graph.IsConnected(g))
	}
	g128, err := Load(ctx, "planar-128", "test", Options{Splits: Splits{Train: 1, Val: 1, Test: 2}})
	require.NoError(t, err)
	require.Len(t, g128, 2)
	assert.Equal(t, 128, g128[0].N())
}

func TestPrufer(t *testing.T) {
	g := fromPrufer([]int{3, 3, 3, 4}, 6)
	assert.Equal(t, []graph.Edge{{From: 0, To: 3}, {From: 1, To: 3}, {From: 2, To: 3}, {From: 3, To: 4}, {From: 4, To: 5}}, g.Edges())
	g = fromPrufer([]int{0, 1}, 4) // leaves 2, 3: 2-0, 0-1, 1-3
	assert.Equal(t, []graph.Edge{{From: 0, To: 1}, {From: 0, To: 2}, {From: 1, To: 3}}, g.Edges())
	g = fromPrufer(nil, 2)
	assert.Equal(t, []graph.Edge{{From: 0, To: 1}}, g.Edges())

	// Every sequence of length 2 over 4 labels gives a distinct tree: the
	// decoder is a bijection onto the 4^2 = 16 labelled trees.
	seen := map[string]bool{}
	for a := 0; a < 4; a++ {
		for b := 0; b < 4; b++ {
			g := fromPrufer([]int{a, b}, 4)
			require.True(t, graph.IsTree(g))
			seen[fmt.Sprint(g.Edges())] = true
		}
	}
	assert.Len(t, seen, 16)
}

// Uniformity: 16 labelled trees on 4 nodes, 8000 draws -> 500 each.
func TestTreeUniform(t *testing.T) {
	gs := Tree(4, 8000, 3)
	counts := map[string]int{}
	for _, g := range gs {
		require.True(t, graph.IsTree(g))
		counts[fmt.Sprint(g.Edges())]++
	}
	require.Len(t, counts, 16)
	chi2 := 0.0
	for _, c := range counts {
		d := float64(c) - 500
		chi2 += d * d / 500
	}
	// 15 degrees of freedom: P(chi2 > 37.7) = 0.001.
	assert.Less(t, chi2, 37.7)
	for _, g := range Tree(64, 50, 1) {
		require.True(t, graph.IsTree(g))
		require.Equal(t, 64, g.N())
	}
}

func TestPrice(t *testing.T) {
	gs := Price(64, 100, 5)
	outTotal := 0
	for i, g := range gs {
		require.True(t, g.Directed())
		require.Equal(t, 64, g.N())
		require.True(t, graph.IsDAG(g), "graph %d", i)
		require.True(t, graph.IsConnected(g), "graph %d", i)
		zero := 0
		for u := 0; u < g.N(); u++ {
			d := g.OutDegree(u)
			require.LessOrEqual(t, d, 6)
			if d == 0 {
				zero++
			}
			outTotal += d
		}
		require.Equal(t, 1, zero, "graph %d: exactly the first node has no out-edges", i)
		require.GreaterOrEqual(t, g.M(), 63)
		require.LessOrEqual(t, g.M(), 63*6)
	}
	// Node 1 always links only to node 0, node 2 to a subset of {0, 1}...;
	// on average a node's 6 draws merge to well under 6 distinct targets.
	mean := float64(outTotal) / float64(100*63)
	assert.Greater(t, mean, 3.0)
	assert.Less(t, mean, 6.0)
	sameGraphs(t, gs[:10], Price(64, 10, 5))
}

func TestLoadErrors(t *testing.T) {
	ctx := context.Background()
	_, err := Load(ctx, "nope", "train", Options{})
	require.Error(t, err)
	for _, name := range []string{"planar", "planar-128", "planar-256", "planar-512", "tree", "price", "ego", "tpu"} {
		assert.Contains(t, err.Error(), name)
	}
	_, err = Load(ctx, "planar", "dev", Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown split "dev" (valid: train, val, test)`)
	_, err = Load(ctx, "tree", "train", Options{N: -1})
	require.Error(t, err)

	assert.Panics(t, func() { Register("planar", loadEgo) })
	t.Cleanup(func() {
		regMu.Lock()
		delete(registry, "test-only")
		regMu.Unlock()
	})
	Register("test-only", func(ctx context.Context, split string, opt Options) ([]*graph.Graph, error) {
		return []*graph.Graph{graph.New(opt.N)}, nil
	})
	gs, err := Load(ctx, "test-only", "val", Options{N: 3})
	require.NoError(t, err)
	assert.Equal(t, 3, gs[0].N())

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Load(cctx, "planar", "train", Options{})
	assert.ErrorIs(t, err, context.Canceled)

	var calls []int
	_, err = Load(ctx, "tree", "val", Options{Progress: func(done, total int) {
		require.Equal(t, 256, total)
		calls = append(calls, done)
	}})
	require.NoError(t, err)
	assert.True(t, slices.IsSorted(calls))
	assert.Equal(t, 256, calls[len(calls)-1])
}

func TestDataDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LGFLOW_DATA", dir)
	d, err := DataDir()
	require.NoError(t, err)
	assert.Equal(t, dir, d)
	t.Setenv("LGFLOW_DATA", filepath.Join(dir, "missing"))
	_, err = DataDir()
	require.Error(t, err)
}

func TestEgoMatchesIndex(t *testing.T) {
	dir := dataDir(t)
	g, err := ReadCiteseer(dir)
	require.NoError(t, err)
	require.Equal(t, 3327, g.N())
	require.Equal(t, 4552, g.M())
	comps := graph.Components(g)
	var lcc []int
	for _, c := range comps {
		if len(c) > len(lcc) {
			lcc = c
		}
	}
	require.Len(t, lcc, 2120)
	nets, centres := EgoNets(g, lcc, 3, 50, 400)

	f, err := os.Open(filepath.Join(dir, "ego", "ego_citeseer_757_index.tsv"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	row := 0
	for sc.Scan() {
		fs := strings.Split(sc.Text(), "\t")
		require.Len(t, fs, 4)
		c, _ := strconv.Atoi(fs[0])
		nn, _ := strconv.Atoi(fs[1])
		m, _ := strconv.Atoi(fs[2])
		require.Less(t, row, len(nets))
		require.Equal(t, c, centres[row], "row %d centre", row)
		require.Equal(t, nn, nets[row].N(), "row %d nodes", row)
		require.Equal(t, m, nets[row].M(), "row %d edges", row)
		row++
	}
	require.Equal(t, 757, row)
	require.Len(t, nets, 757)

	all, err := Ego(dir)
	require.NoError(t, err)
	sameGraphs(t, nets, all)
	// Node order = original id order: the centre's local index is its rank.
	for _, c := range []int{0, 100, 756} {
		require.True(t, graph.IsConnected(all[c]))
	}

	ctx := context.Background()
	split := map[string][]*graph.Graph{}
	for _, s := range SplitNames {
		gs, err := Load(ctx, "ego", s, Options{Dir: dir, Seed: 1})
		require.NoError(t, err)
		split[s] = gs
	}
	assert.Len(t, split["train"], 606)
	assert.Len(t, split["val"], 151)
	assert.Len(t, split["test"], 151)
	train, val, test := EgoSplit(757, 1)
	assert.Equal(t, train[:151], val)
	seen := map[int]bool{}
	for _, i := range append(slices.Clone(train), test...) {
		require.False(t, seen[i])
		seen[i] = true
	}
	assert.Len(t, seen, 757)
	sameGraphs(t, []*graph.Graph{all[test[0]]}, split["test"][:1])
}

func TestTPU(t *testing.T) {
	dir := dataDir(t)
	ctx := context.Background()
	for _, tc := range []struct {
		split       string
		count, maxN int
	}{{"val", 630, 113}, {"test", 631, 154}} {
		gs, err := Load(ctx, "tpu", tc.split, Options{Dir: dir})
		require.NoError(t, err)
		require.Len(t, gs, tc.count)
		maxN, minN := 0, 1<<30
		for _, g := range gs {
			maxN, minN = max(maxN, g.N()), min(minN, g.N())
			require.True(t, graph.IsDAG(g))
			require.Len(t, g.NodeLabels, g.N())
		}
		assert.Equal(t, tc.maxN, maxN)
		assert.Equal(t, 2, minN)
	}
	_, err := Load(ctx, "tpu", "train", Options{Dir: dir})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "train split")

	bad := []struct{ in, err string }{
		{`{"num_nodes":2,"node_type":[1,2],"src":[0],"dst":[1]}` + "\n" + `{"num_nodes":2,"node_type":[1],"src":[],"dst":[]}`, "line 2: node_type has 1 entries, num_nodes = 2"},
		{`{"num_nodes":2,"node_type":[1,47],"src":[],"dst":[]}`, "line 1: node_type[1] = 47 outside 0..46"},
		{`{"num_nodes":2,"node_type":[1,2],"src":[0],"dst":[2]}`, "line 1: edge 0: 0 -> 2 has a node outside 0..1"},
		{`{"num_nodes":2,"node_type":[1,2],"src":[0,1],"dst":[1,0]}`, "line 1: graph: not acyclic"},
		{`{"num_nodes":2,"node_type":[1,2],"src":[0,0],"dst":[1,1]}`, "line 1: edge 1: 0 -> 1 repeated"},
		{`{"num_nodes":2,"node_type":[1,2],"src":[0],"dst":[]}`, "line 1: src has 1 entries, dst has 0"},
		{`{"num_nodes":2,"node_type":[1,2],"src":[1],"dst":[1]}`, "line 1: edge 0: self-loop at node 1"},
		{"\n" + `{"node_type":[]}`, `line 2: missing "num_nodes"`},
		{`{"num_nodes":2,`, "line 1: byte 15: unexpected end of JSON input"},
	}
	for _, tc := range bad {
		_, err := ReadTPUTile(strings.NewReader(tc.in))
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.err)
	}
}

// TestSynthetic checks which datasets are generated from the seed, and
// that another seed's training graphs are new graphs, none of them in the
// default seed's test split.
func TestSynthetic(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"planar", true}, {"planar-128", true}, {"planar-256", true}, {"planar-512", true},
		{"tree", true}, {"price", true}, {"ego", false}, {"tpu", false}, {"nope", false},
	} {
		assert.Equal(t, tc.want, Synthetic(tc.name), tc.name)
	}
	ctx := context.Background()
	test, err := Load(ctx, "planar", "test", Options{})
	require.NoError(t, err)
	other, err := Load(ctx, "planar", "train", Options{Seed: 1, Splits: Splits{Train: 512}})
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, g := range test {
		seen[fmt.Sprint(g.Edges())] = true
	}
	for i, g := range other {
		assert.False(t, seen[fmt.Sprint(g.Edges())], "seed 1's training graph %d is a test graph of seed 0", i)
	}
}
