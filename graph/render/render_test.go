package render

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/graph"
	"lgflow/graph/datasets"
)

func wellFormed(t *testing.T, s string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
	}
}

func TestSVG(t *testing.T) {
	g := datasets.Planar(30, 1, 1)[0]
	var buf bytes.Buffer
	require.NoError(t, SVG(&buf, g, Options{Title: "planar <30>", ShowIDs: true}))
	s := buf.String()
	wellFormed(t, s)
	assert.Equal(t, g.M(), strings.Count(s, "<line "))
	assert.Equal(t, g.N(), strings.Count(s, "<circle "))
	assert.Contains(t, s, "planar &lt;30&gt;")
	assert.NotContains(t, s, "marker-end")

	// Deterministic.
	var again bytes.Buffer
	require.NoError(t, SVG(&again, g, Options{Title: "planar <30>", ShowIDs: true}))
	assert.Equal(t, s, again.String())

	d := datasets.Price(20, 1, 2)[0]
	d.NodeLabels = make([]int, d.N())
	d.NodeLabels[3] = 2
	buf.Reset()
	require.NoError(t, SVG(&buf, d, Options{}))
	s = buf.String()
	wellFormed(t, s)
	assert.Equal(t, d.M(), strings.Count(s, "marker-end=\"url(#arrow0)\""))
	assert.Contains(t, s, tableau10[2])
}

func TestPositions(t *testing.T) {
	in01 := func(p [][2]float64) {
		for _, q := range p {
			require.True(t, q[0] >= -1e-12 && q[0] <= 1+1e-12 && q[1] >= -1e-12 && q[1] <= 1+1e-12, "%v", q)
			require.False(t, math.IsNaN(q[0]) || math.IsNaN(q[1]))
		}
	}
	graphs := []*graph.Graph{graph.New(0), graph.New(1), graph.New(5), datasets.Tree(40, 1, 0)[0], datasets.Planar(64, 1, 0)[0]}
	for _, g := range graphs {
		for _, l := range []Layout{LayoutAuto, LayoutSpectral, LayoutForce, LayoutLayered, LayoutCircle} {
			p := Positions(g, Options{Layout: l})
			require.Len(t, p, g.N())
			in01(p)
		}
	}
	// Layered: every edge goes down a row.
	d := datasets.Price(30, 1, 4)[0]
	p := Positions(d, Options{})
	for _, e := range d.Edges() {
		require.Less(t, p[e.From][1], p[e.To][1])
	}
	// Spectral layout of a path is a line: y spread tiny vs x, or the reverse.
	path := graph.New(6)
	for i := 0; i < 5; i++ {
		path.MustAddEdge(i, i+1)
	}
	p = Positions(path, Options{Layout: LayoutSpectral})
	for i := 0; i+1 < 6; i++ {
		require.Less(t, p[i][0], p[i+1][0], "path nodes in order along x")
	}
}

func TestGridSVG(t *testing.T) {
	gs := datasets.Tree(24, 5, 0)
	var buf bytes.Buffer
	require.NoError(t, GridSVG(&buf, gs, 3, Options{Width: 200, Height: 200, Titles: []string{"a"}}))
	s := buf.String()
	wellFormed(t, s)
	assert.Contains(t, s, `width="600" height="436"`)
	assert.Contains(t, s, ">a (24 nodes, 23 edges)<")
	assert.Contains(t, s, ">#4 (24 nodes, 23 edges)<")
	require.Error(t, GridSVG(&buf, nil, 1, Options{}))
	if out := os.Getenv("LGFLOW_RENDER_OUT"); out != "" {
		write := func(name string, f func(io.Writer) error) {
			var b bytes.Buffer
			require.NoError(t, f(&b))
			require.NoError(t, os.WriteFile(out+"/"+name, b.Bytes(), 0o644))
		}
		write("planar.svg", func(w io.Writer) error { return GridSVG(w, datasets.Planar(64, 4, 0), 2, Options{}) })
		write("tree.svg", func(w io.Writer) error { return GridSVG(w, datasets.Tree(64, 4, 0), 2, Options{}) })
		d := datasets.Price(64, 2, 0)
		d[1].NodeLabels = make([]int, 64)
		for i := range d[1].NodeLabels {
			d[1].NodeLabels[i] = i % 5
		}
		write("price.svg", func(w io.Writer) error { return GridSVG(w, d, 2, Options{Width: 480, Height: 480}) })
		write("planar_spectral.svg", func(w io.Writer) error {
			return SVG(w, datasets.Planar(64, 1, 0)[0], Options{Layout: LayoutSpectral, Title: "spectral", ShowIDs: true})
		})
	}
}
