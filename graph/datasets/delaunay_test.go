package datasets

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"lgflow/graph"
)

// hullCount returns the number of points on the boundary of the convex
// hull, counting points in the relative interior of hull edges too, by
// Andrew's monotone chain (independent of the triangulator).
func hullCount(pts [][2]float64) int {
	p := slices.Clone(pts)
	slices.SortFunc(p, func(a, b [2]float64) int {
		if a[0] != b[0] {
			if a[0] < b[0] {
				return -1
			}
			return 1
		}
		switch {
		case a[1] < b[1]:
			return -1
		case a[1] > b[1]:
			return 1
		}
		return 0
	})
	var h [][2]float64
	for pass := 0; pass < 2; pass++ {
		start := len(h)
		for _, q := range p {
			for len(h) >= start+2 && orient(h[len(h)-2], h[len(h)-1], q) <= 0 {
				h = h[:len(h)-1]
			}
			h = append(h, q)
		}
		h = h[:len(h)-1]
		slices.Reverse(p)
	}
	count := 0
	for _, q := range pts {
		for i := range h {
			a, b := h[i], h[(i+1)%len(h)]
			if q == a || (orient(a, b, q) == 0 && between(a, b, q)) {
				count++
				break
			}
		}
	}
	return count
}

// segmentsCross reports whether segments ab and cd cross at a point
// interior to both (shared endpoints do not count).
func segmentsCross(a, b, c, d [2]float64) bool {
	if a == c || a == d || b == c || b == d {
		return false
	}
	o1, o2 := orient(a, b, c), orient(a, b, d)
	o3, o4 := orient(c, d, a), orient(c, d, b)
	return o1*o2 < 0 && o3*o4 < 0
}

func checkTriangulation(t *testing.T, pts [][2]float64, tris [][3]int) {
	t.Helper()
	n := len(pts)
	h := hullCount(pts)
	require.Equal(t, 2*n-2-h, len(tris), "triangle count (n=%d, h=%d)", n, h)
	used := make([]bool, n)
	g := graph.New(n)
	for _, tr := range tris {
		require.Equal(t, 1, orient(pts[tr[0]], pts[tr[1]], pts[tr[2]]), "triangle %v not counter-clockwise", tr)
		for k := 0; k < 3; k++ {
			used[tr[k]] = true
			g.MustAddEdge(tr[k], tr[(k+1)%3])
		}
		// Empty circumcircle (exact).
		for q := range pts {
			if q != tr[0] && q != tr[1] && q != tr[2] {
				require.LessOrEqual(t, incircle(pts[tr[0]], pts[tr[1]], pts[tr[2]], pts[q]), 0,
					"point %d inside circumcircle of %v", q, tr)
			}
		}
	}
	for i, u := range used {
		require.True(t, u, "point %d not a vertex", i)
	}
	require.Equal(t, 3*n-3-h, g.M(), "edge count")
	require.True(t, graph.IsConnected(g))
	// A straight-line drawing without crossings proves planarity.
	es := g.Edges()
	for i := range es {
		for j := i + 1; j < len(es); j++ {
			require.False(t, segmentsCross(pts[es[i].From], pts[es[i].To], pts[es[j].From], pts[es[j].To]),
				"edges %v and %v cross", es[i], es[j])
		}
	}
}

func TestDelaunayRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{3, 4, 5, 10, 64, 200} {
		for trial := 0; trial < 5; trial++ {
			pts := make([][2]float64, n)
			for i := range pts {
				pts[i] = [2]float64{rng.Float64(), rng.Float64()}
			}
			tris, err := Delaunay(pts)
			require.NoError(t, err)
			checkTriangulation(t, pts, tris)
		}
	}
}

// Integer grids are maximally degenerate: every unit square is cocircular
// and hull sides are full of collinear points. Exact predicates must cope.
func TestDelaunayDegenerate(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, side := range []int{2, 3, 7, 10} {
		var pts [][2]float64
		for i := 0; i < side; i++ {
			for j := 0; j < side; j++ {
				pts = append(pts, [2]float64{float64(i), float64(j)})
			}
		}
		rng.Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
		tris, err := Delaunay(pts)
		require.NoError(t, err)
		checkTriangulation(t, pts, tris)
		assert.Len(t, tris, 2*(side-1)*(side-1))
	}
	// Points on a circle plus its centre, and nearly collinear points.
	pts := [][2]float64{{0, 0}, {1, 0}, {0, 1}, {-1, 0}, {0, -1}, {1e-17, 0.5}, {0.5, 0.5 + 1e-16}, {0.25, 0.25}}
	tris, err := Delaunay(pts)
	require.NoError(t, err)
	checkTriangulation(t, pts, tris)

	for _, bad := range [][][2]float64{
		{{0, 0}, {1, 1}},
		{{0, 0}, {1, 1}, {2, 2}, {3, 3}},
		{{0, 0}, {1, 0}, {0, 1}, {1, 0}},
	} {
		_, err := Delaunay(bad)
		assert.True(t, errors.Is(err, ErrDegenerate), "%v", bad)
	}
}

func TestPredicatesExact(t *testing.T) {
	// Collinear points whose float evaluation is inexact.
	a, b := [2]float64{0.1, 0.1}, [2]float64{0.3, 0.3}
	c := [2]float64{0.7, 0.7}
	assert.Equal(t, orientExact(a, b, c), orient(a, b, c))
	// Tiny perturbations either side.
	c2 := [2]float64{0.7, 0.7 + 1e-16}
	assert.Equal(t, 1, orient(a, b, c2))
	c3 := [2]float64{0.7, 0.7 - 1e-16}
	assert.Equal(t, -1, orient(a, b, c3))
	// Cocircular: the unit circle through (1,0), (0,1), (-1,0); (0,-1) on it.
	assert.Equal(t, 0, incircle([2]float64{1, 0}, [2]float64{0, 1}, [2]float64{-1, 0}, [2]float64{0, -1}))
	assert.Equal(t, 1, incircle([2]float64{1, 0}, [2]float64{0, 1}, [2]float64{-1, 0}, [2]float64{0, -1 + 1e-16}))
	assert.Equal(t, -1, incircle([2]float64{1, 0}, [2]float64{0, 1}, [2]float64{-1, 0}, [2]float64{0, -1 - 2e-16}))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var p [4][2]float64
		for k := range p {
			// Snap to a coarse grid so that many cases are degenerate.
			p[k] = [2]float64{float64(rng.IntN(4)) / 3, float64(rng.IntN(4)) / 3}
		}
		require.Equal(t, orientExact(p[0], p[1], p[2]), orient(p[0], p[1], p[2]))
		if orientExact(p[0], p[1], p[2]) > 0 {
			require.Equal(t, incircleExact(p[0], p[1], p[2], p[3]), incircle(p[0], p[1], p[2], p[3]))
		}
	}
}
