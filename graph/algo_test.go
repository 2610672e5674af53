package graph

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestComponentsAndTrees(t *testing.T) {
	g := fromEdges(7, false, [2]int{0, 3}, [2]int{3, 5}, [2]int{1, 2})
	assert.Equal(t, [][]int{{0, 3, 5}, {1, 2}, {4}, {6}}, Components(g))
	assert.False(t, IsConnected(g))
	assert.Equal(t, 2, Diameter(g))

	d := fromEdges(4, true, [2]int{1, 0}, [2]int{2, 0}, [2]int{3, 2})
	assert.Equal(t, [][]int{{0, 1, 2, 3}}, Components(d))
	assert.True(t, IsConnected(d))
	assert.True(t, IsTree(d))

	tests := []struct {
		name                    string
		g                       *Graph
		connected, tree, forest bool
		diameter                int
	}{
		{"empty", New(0), false, false, true, 0},
		{"single", New(1), true, true, true, 0},
		{"P5", path(5), true, true, true, 4},
		{"C6", cycle(6), true, false, false, 3},
		{"K4", complete(4), true, false, false, 1},
		{"forest", fromEdges(4, false, [2]int{0, 1}, [2]int{2, 3}), false, false, true, 1},
		{"house+tail", fromEdges(6, false, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 0}, [2]int{2, 3}, [2]int{3, 4}, [2]int{4, 2}, [2]int{4, 5}), true, false, false, 3},
		{"cycle in one of two components", fromEdges(7, false, [2]int{0, 1}, [2]int{2, 3}, [2]int{3, 4}, [2]int{4, 2}), false, false, false, 1},
		{"directed tree", fromEdges(4, true, [2]int{1, 0}, [2]int{2, 0}, [2]int{3, 2}), true, true, true, 3},
		{"directed 2-cycle", fromEdges(2, true, [2]int{0, 1}, [2]int{1, 0}), true, false, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.connected, IsConnected(tc.g))
			assert.Equal(t, tc.tree, IsTree(tc.g))
			assert.Equal(t, tc.forest, IsForest(tc.g))
			assert.Equal(t, tc.diameter, Diameter(tc.g))
		})
	}
	// The largest component decides, not the longest path overall.
	g = fromEdges(9, false, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 3}, [2]int{4, 5}, [2]int{4, 6}, [2]int{4, 7}, [2]int{4, 8})
	assert.Equal(t, 2, Diameter(g))
}

func TestTopologicalOrder(t *testing.T) {
	d := fromEdges(5, true, [2]int{3, 1}, [2]int{1, 0}, [2]int{4, 0}, [2]int{3, 4}, [2]int{2, 3})
	order, err := TopologicalOrder(d)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 3, 1, 4, 0}, order)
	assert.True(t, IsDAG(d))

	d.MustAddEdge(0, 2) // 0 -> 2 -> 3 -> 1 -> 0
	_, err = TopologicalOrder(d)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrCycle))
	assert.Contains(t, err.Error(), "5 of 5 nodes")
	assert.False(t, IsDAG(d))

	c := fromEdges(4, true, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 1}, [2]int{2, 3})
	_, err = TopologicalOrder(c)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cycle 1 -> 2 -> 1")

	_, err = TopologicalOrder(path(3))
	require.Error(t, err)
	assert.False(t, IsDAG(New(3)))
	assert.True(t, IsDAG(NewDirected(0)))

	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 50; trial++ {
		g := randomGraph(rng, 30, 0.08, true)
		order, err := TopologicalOrder(g)
		if err != nil {
			continue
		}
		pos := make([]int, g.N())
		for i, u := range order {
			pos[u] = i
		}
		for _, e := range g.Edges() {
			require.Less(t, pos[e.From], pos[e.To])
		}
	}
}

// Reference values: networkx 3.6 nx.clustering.
func TestClustering(t *testing.T) {
	und := fromEdges(6, false, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 0}, [2]int{2, 3}, [2]int{3, 4}, [2]int{4, 2}, [2]int{4, 5})
	assert.InDeltaSlice(t, []float64{1, 1, 1.0 / 3, 1, 1.0 / 3, 0}, Clustering(und), 1e-15)
	assert.InDeltaSlice(t, []float64{1, 1, 1, 1}, Clustering(complete(4)), 1e-15)
	assert.InDeltaSlice(t, []float64{0, 0, 0}, Clustering(path(3)), 0)

	dir := fromEdges(5, true, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 0}, [2]int{0, 2}, [2]int{2, 3}, [2]int{3, 0}, [2]int{1, 3}, [2]int{3, 4})
	assert.InDeltaSlice(t, []float64{0.5, 2.0 / 3, 0.5, 1.0 / 3, 0}, Clustering(dir), 1e-15)
}

func TestWLColors(t *testing.T) {
	p := path(5)
	assert.Equal(t, []int{0, 1, 1, 1, 0}, WLColors(p, 0))
	assert.Equal(t, []int{0, 1, 2, 1, 0}, WLColors(p, 1))
	assert.Equal(t, []int{0, 1, 2, 1, 0}, WLColors(p, -1))
	assert.Equal(t, []int{1, 2, 0, 2, 1}, WLOrbits(p))

	star := fromEdges(4, false, [2]int{0, 1}, [2]int{0, 2}, [2]int{0, 3})
	assert.Equal(t, []int{0, 1, 1, 1}, WLOrbits(star))
	assert.Equal(t, []int{1, 1, 1, 1, 1, 1}, WLOrbits(cycle(6)))
	// P3 plus an isolated node plus an edge: classes {0,2}, {1}, {3}, {4,5}.
	g := fromEdges(6, false, [2]int{0, 1}, [2]int{1, 2}, [2]int{4, 5})
	assert.Equal(t, []int{1, 0, 1, 0, 2, 2}, WLOrbits(g))
	// Directed graphs use the undirected view.
	d := fromEdges(3, true, [2]int{0, 1}, [2]int{2, 1})
	assert.Equal(t, []int{1, 0, 1}, WLOrbits(d))
	// ...but WLColors separates in- from out-neighbours.
	d2 := fromEdges(3, true, [2]int{0, 1}, [2]int{1, 2})
	assert.Equal(t, []int{1, 2, 0}, WLColors(d2, -1))

	lab := path(3)
	lab.NodeLabels = []int{1, 0, 0}
	assert.Equal(t, []int{0, 1, 0}, WLColors(lab, -1))
	assert.Equal(t, []int{2, 1, 0}, WLColorsLabeled(lab, -1))

	// Isomorphism invariance of colours.
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 20; trial++ {
		g := randomGraph(rng, 25, 0.15, trial%2 == 0)
		perm := rng.Perm(g.N())
		h, err := g.Permute(perm)
		require.NoError(t, err)
		cg, ch := WLColors(g, -1), WLColors(h, -1)
		for u := range cg {
			require.Equal(t, cg[u], ch[perm[u]])
		}
	}
}

func TestWLHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 30; trial++ {
		g := randomGraph(rng, 20, 0.2, trial%2 == 0)
		g.NodeLabels = make([]int, g.N())
		for i := range g.NodeLabels {
			g.NodeLabels[i] = rng.IntN(3)
		}
		for _, e := range g.Edges()[:3] {
			require.NoError(t, g.AddLabeledEdge(e.From, e.To, 1+rng.IntN(2)))
		}
		h, err := g.Permute(rng.Perm(g.N()))
		require.NoError(t, err)
		require.Equal(t, WLHash(g), WLHash(h))
		// Changing one node label changes the hash.
		h.NodeLabels[0] += 7
		require.NotEqual(t, WLHash(g), WLHash(h))
	}
	star := fromEdges(4, false, [2]int{0, 1}, [2]int{0, 2}, [2]int{0, 3})
	assert.NotEqual(t, WLHash(path(4)), WLHash(star))
	assert.NotEqual(t, WLHash(path(2)), WLHash(fromEdges(2, true, [2]int{0, 1})))
	lab := path(3)
	require.NoError(t, lab.AddLabeledEdge(0, 1, 2))
	assert.NotEqual(t, WLHash(path(3)), WLHash(lab))
	zero := path(3)
	zero.NodeLabels = []int{0, 0, 0}
	assert.Equal(t, WLHash(path(3)), WLHash(zero))
	// 1-WL cannot tell C6 from two triangles: equal hashes are expected.
	two := fromEdges(6, false, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 0}, [2]int{3, 4}, [2]int{4, 5}, [2]int{5, 3})
	assert.Equal(t, WLHash(cycle(6)), WLHash(two))
	// Stable across runs and machines: pinned values.
	assert.Equal(t, "58f6f76c2dacb54241a0c117f8c3870b", WLHash(path(4)))
	assert.Equal(t, "5b8cafcf85c783bd21d58e056b93734e", WLHash(fromEdges(3, true, [2]int{0, 1}, [2]int{1, 2})))
}

func TestFromEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := 0; trial < 40; trial++ {
		directed := trial%2 == 0
		n := 1 + rng.IntN(30)
		var es []Edge
		var want *Graph
		if directed {
			want = NewDirected(n)
		} else {
			want = New(n)
		}
		for k := 0; k < 3*n; k++ {
			u, v := rng.IntN(n), rng.IntN(n)
			if u == v {
				continue
			}
			e := Edge{From: u, To: v, Label: rng.IntN(3)}
			es = append(es, e)
			require.NoError(t, want.AddLabeledEdge(e.From, e.To, e.Label))
		}
		got, err := FromEdges(n, directed, es)
		require.NoError(t, err)
		sameGraph(t, want, got)
		require.Equal(t, want.Edges(), got.Edges()) // labels included
		// Further edits on the packed lists do not spill into neighbours.
		if n > 1 && !want.HasEdge(0, n-1) {
			want.MustAddEdge(0, n-1)
			got.MustAddEdge(0, n-1)
			sameGraph(t, want, got)
		}
	}
	_, err := FromEdges(3, false, []Edge{{From: 0, To: 1}, {From: 1, To: 3}})
	require.ErrorIs(t, err, ErrNode)
	assert.Contains(t, err.Error(), "edge 1 is 1 -> 3")
	_, err = FromEdges(3, true, []Edge{{From: 2, To: 2}})
	assert.ErrorContains(t, err, "edge 0 is a self-loop at node 2")
}
