package graph

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGraphCore(t *testing.T) {
	g := New(4)
	require.NoError(t, g.AddEdge(2, 0))
	require.NoError(t, g.AddLabeledEdge(1, 2, 3))
	require.NoError(t, g.AddEdge(0, 2)) // duplicate: no-op
	assert.Equal(t, 2, g.M())
	assert.True(t, g.HasEdge(0, 2) && g.HasEdge(2, 0))
	assert.Equal(t, 3, g.EdgeLabel(2, 1))
	assert.Equal(t, []int{0, 1}, g.Neighbors(2))
	assert.Equal(t, []Edge{{From: 0, To: 2}, {From: 1, To: 2, Label: 3}}, g.Edges())
	src, dst := g.EdgeIndex()
	assert.Equal(t, []int32{0, 1, 2, 2}, src)
	assert.Equal(t, []int32{2, 2, 0, 1}, dst)
	a := g.Adjacency()
	assert.Equal(t, 1.0, a[0*4+2])
	assert.Equal(t, 1.0, a[2*4+0])
	assert.Equal(t, 0.0, a[0*4+1])
	assert.True(t, errors.Is(g.AddEdge(0, 4), ErrNode))
	assert.Error(t, g.AddEdge(1, 1))

	c := g.Clone()
	assert.True(t, g.RemoveEdge(2, 1))
	assert.False(t, g.RemoveEdge(2, 1))
	assert.Equal(t, 0, g.EdgeLabel(1, 2))
	assert.Equal(t, 2, c.M())
	assert.Equal(t, 3, c.EdgeLabel(1, 2))

	d := NewDirected(3)
	d.MustAddEdge(0, 1)
	d.MustAddEdge(1, 0)
	d.MustAddEdge(2, 1)
	d.NodeLabels = []int{7, 8, 9}
	assert.Equal(t, 3, d.M())
	assert.Equal(t, 3, d.Degree(1))
	assert.Equal(t, 1, d.OutDegree(1))
	assert.Equal(t, 2, d.InDegree(1))
	u := d.Undirected()
	assert.Equal(t, 2, u.M())
	assert.Equal(t, []int{7, 8, 9}, u.NodeLabels)

	p, err := d.Permute([]int{2, 0, 1})
	require.NoError(t, err)
	assert.True(t, p.HasEdge(2, 0) && p.HasEdge(0, 2) && p.HasEdge(1, 0))
	assert.Equal(t, []int{8, 9, 7}, p.NodeLabels)
	_, err = d.Permute([]int{0, 0, 1})
	assert.Error(t, err)
	assert.Equal(t, "directed graph: 3 nodes, 3 edges", d.String())
}
