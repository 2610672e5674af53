package datasets

import (
	"errors"
	"math"
	"math/big"
)

// ErrDegenerate is returned by Delaunay when the points have duplicates or
// are all collinear, so that no triangulation covers every point.
var ErrDegenerate = errors.New("datasets: degenerate point set (duplicate points or all collinear)")

// Delaunay returns the Delaunay triangulation of the points as triangles
// of point indices, each in counter-clockwise order. Every point is a
// vertex; the triangles tile the convex hull. Ties (four or more
// cocircular points) are broken arbitrarily but deterministically.
//
// It is Bowyer-Watson incremental insertion in index order, with "ghost"
// triangles joining each hull edge to a vertex at infinity (so the hull is
// exact without a bounding super-triangle) and point location by a
// visibility walk from the last new triangle. The orientation and
// in-circle predicates are exact: a float64 evaluation with Shewchuk's
// error bound, falling back to exact rational arithmetic when the sign is
// uncertain. The result is therefore the same on every machine.
func Delaunay(pts [][2]float64) ([][3]int, error) {
	var t triangulation
	return t.run(pts)
}

const ghost = -1

type triangle struct {
	v    [3]int32 // counter-clockwise; ghost marks the vertex at infinity
	nb   [3]int32 // nb[i] is the triangle across the edge opposite v[i]
	mark int32    // insertion stamp when in the current cavity
}

func (t *triangle) isGhost() bool { return t.v[0] == ghost || t.v[1] == ghost || t.v[2] == ghost }

type boundary struct {
	a, b    int32 // edge a -> b, cavity on its left
	outside int32 // triangle across the edge
	slot    int32 // index in outside.nb pointing back into the cavity
}

type triangulation struct {
	pts    [][2]float64
	tris   []triangle
	free   []int32
	stack  []int32
	cavity []int32
	bound  []boundary
	newTri []int32
	start  []int32 // start[v+1]: new triangle whose boundary edge starts at v
	end    []int32 // end[v+1]: new triangle whose boundary edge ends at v
	last   int32   // a live real triangle to start walks from
	rot    int     // rotates the first edge a walk tests
}

func (t *triangulation) run(pts [][2]float64) ([][3]int, error) {
	n := len(pts)
	if n < 3 {
		return nil, ErrDegenerate
	}
	t.pts = pts
	// Find a non-degenerate first triangle: point 0, the first point
	// different from it, and the first point off their line.
	i1 := -1
	for i := 1; i < n; i++ {
		if pts[i] != pts[0] {
			i1 = i
			break
		}
	}
	if i1 < 0 {
		return nil, ErrDegenerate
	}
	i2 := -1
	for i := 1; i < n; i++ {
		if i != i1 && orient(pts[0], pts[i1], pts[i]) != 0 {
			i2 = i
			break
		}
	}
	if i2 < 0 {
		return nil, ErrDegenerate
	}
	a, b, c := int32(0), int32(i1), int32(i2)
	if orient(pts[a], pts[b], pts[c]) < 0 {
		b, c = c, b
	}
	t.tris = make([]triangle, 0, 2*n)
	t.tris = append(t.tris,
		triangle{v: [3]int32{a, b, c}},
		triangle{v: [3]int32{b, a, ghost}},
		triangle{v: [3]int32{c, b, ghost}},
		triangle{v: [3]int32{a, c, ghost}},
	)
	// Link the four initial triangles by matching reversed edges.
	for i := range t.tris {
		for k := 0; k < 3; k++ {
			p, q := t.tris[i].v[(k+1)%3], t.tris[i].v[(k+2)%3]
			for j := range t.tris {
				for l := 0; l < 3; l++ {
					if t.tris[j].v[(l+1)%3] == q && t.tris[j].v[(l+2)%3] == p {
						t.tris[i].nb[k] = int32(j)
					}
				}
			}
		}
	}
	for i := range t.tris {
		t.tris[i].mark = -1
	}
	t.last = 0
	t.start = make([]int32, n+1)
	t.end = make([]int32, n+1)
	for i := 1; i < n; i++ {
		if i == i1 || i == i2 {
			continue
		}
		if !t.insert(int32(i)) {
			return nil, ErrDegenerate
		}
	}
	out := make([][3]int, 0, 2*n)
	for i := range t.tris {
		tr := &t.tris[i]
		if tr.mark == -2 || tr.isGhost() {
			continue
		}
		out = append(out, [3]int{int(tr.v[0]), int(tr.v[1]), int(tr.v[2])})
	}
	return out, nil
}

// inCircle reports whether point p lies strictly inside the circumcircle
// of triangle tr; for a ghost triangle (x, y, ∞), whether p lies strictly
// left of x -> y or strictly inside the segment xy.
func (t *triangulation) inCircle(tr *triangle, p [2]float64) bool {
	v := tr.v
	for k := 0; k < 3; k++ {
		if v[k] == ghost {
			x, y := t.pts[v[(k+1)%3]], t.pts[v[(k+2)%3]]
			o := orient(x, y, p)
			if o != 0 {
				return o > 0
			}
			// collinear: inside iff strictly between x and y
			return between(x, y, p)
		}
	}
	return incircle(t.pts[v[0]], t.pts[v[1]], t.pts[v[2]], p) > 0
}

func between(x, y, p [2]float64) bool {
	if x[0] != y[0] {
		return (x[0] < p[0] && p[0] < y[0]) || (y[0] < p[0] && p[0] < x[0])
	}
	return (x[1] < p[1] && p[1] < y[1]) || (y[1] < p[1] && p[1] < x[1])
}

// locate walks from t.last towards p and returns a triangle whose
// circumcircle contains p, or -1 if p duplicates a vertex.
func (t *triangulation) locate(p [2]float64) int32 {
	cur := t.last
	limit := 4*len(t.tris) + 16
	for step := 0; step < limit; step++ {
		tr := &t.tris[cur]
		if tr.isGhost() {
			return cur
		}
		moved := false
		t.rot++
		for kk := 0; kk < 3; kk++ {
			k := (kk + t.rot) % 3
			x, y := t.pts[tr.v[(k+1)%3]], t.pts[tr.v[(k+2)%3]]
			if orient(x, y, p) < 0 {
				cur = tr.nb[k]
				moved = true
				break
			}
		}
		if !moved {
			for k := 0; k < 3; k++ {
				if t.pts[tr.v[k]] == p {
					return -1
				}
			}
			return cur
		}
	}
	// The visibility walk terminates on Delaunay triangulations; this
	// linear scan is only a safety net.
	for i := range t.tris {
		tr := &t.tris[i]
		if tr.mark != -2 && t.inCircle(tr, p) {
			return int32(i)
		}
	}
	return -1
}

// insert adds point index pi; it reports false if pi duplicates a vertex.
func (t *triangulation) insert(pi int32) bool {
	p := t.pts[pi]
	seed := t.locate(p)
	if seed < 0 {
		return false
	}
	// Grow the cavity: all triangles whose circumcircle contains p.
	t.stack = append(t.stack[:0], seed)
	t.tris[seed].mark = pi
	t.bound = t.bound[:0]
	t.cavity = t.cavity[:0]
	for len(t.stack) > 0 {
		ci := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.cavity = append(t.cavity, ci)
		tr := &t.tris[ci]
		for k := 0; k < 3; k++ {
			ni := tr.nb[k]
			nt := &t.tris[ni]
			if nt.mark == pi {
				continue
			}
			if t.inCircle(nt, p) {
				nt.mark = pi
				t.stack = append(t.stack, ni)
				continue
			}
			slot := int32(0)
			for s := int32(0); s < 3; s++ {
				if nt.nb[s] == ci {
					slot = s
				}
			}
			t.bound = append(t.bound, boundary{a: tr.v[(k+1)%3], b: tr.v[(k+2)%3], outside: ni, slot: slot})
		}
	}
	for _, ci := range t.cavity {
		t.tris[ci].mark = -2
	}
	t.free = append(t.free, t.cavity...)
	// Fan the cavity boundary around p, reusing freed slots.
	t.newTri = t.newTri[:0]
	for _, e := range t.bound {
		var id int32
		if k := len(t.free); k > 0 {
			id = t.free[k-1]
			t.free = t.free[:k-1]
		} else {
			id = int32(len(t.tris))
			t.tris = append(t.tris, triangle{})
		}
		t.tris[id] = triangle{v: [3]int32{e.a, e.b, pi}, mark: -1}
		t.tris[id].nb[2] = e.outside
		t.tris[e.outside].nb[e.slot] = id
		t.start[e.a+1] = id
		t.end[e.b+1] = id
		t.newTri = append(t.newTri, id)
		if e.a != ghost && e.b != ghost {
			t.last = id
		}
	}
	for _, id := range t.newTri {
		tr := &t.tris[id]
		tr.nb[0] = t.start[tr.v[1]+1] // across (b, p)
		tr.nb[1] = t.end[tr.v[0]+1]   // across (p, a)
	}
	return true
}

// Exact geometric predicates (Shewchuk's filters, exact fallback).

const epsilon = 1.0 / (1 << 53)

var (
	ccwErrBound = (3 + 16*epsilon) * epsilon
	iccErrBound = (10 + 96*epsilon) * epsilon
)

// orient returns +1 if a, b, c are counter-clockwise, -1 if clockwise and
// 0 if collinear, exactly.
func orient(a, b, c [2]float64) int {
	detLeft := float64((a[0] - c[0]) * (b[1] - c[1]))
	detRight := float64((a[1] - c[1]) * (b[0] - c[0]))
	det := detLeft - detRight
	var detSum float64
	switch {
	case detLeft > 0:
		if detRight <= 0 {
			return sign(det)
		}
		detSum = detLeft + detRight
	case detLeft < 0:
		if detRight >= 0 {
			return sign(det)
		}
		detSum = -detLeft - detRight
	default:
		return sign(det)
	}
	if math.Abs(det) >= ccwErrBound*detSum {
		return sign(det)
	}
	return orientExact(a, b, c)
}

// incircle returns +1 if d lies inside the circle through the
// counter-clockwise triangle a, b, c, -1 if outside and 0 if on it, exactly.
func incircle(a, b, c, d [2]float64) int {
	adx, ady := a[0]-d[0], a[1]-d[1]
	bdx, bdy := b[0]-d[0], b[1]-d[1]
	cdx, cdy := c[0]-d[0], c[1]-d[1]
	bdxcdy, cdxbdy := float64(bdx*cdy), float64(cdx*bdy)
	alift := float64(adx*adx) + float64(ady*ady)
	cdxady, adxcdy := float64(cdx*ady), float64(adx*cdy)
	blift := float64(bdx*bdx) + float64(bdy*bdy)
	adxbdy, bdxady := float64(adx*bdy), float64(bdx*ady)
	clift := float64(cdx*cdx) + float64(cdy*cdy)
	det := float64(alift*(bdxcdy-cdxbdy)) + float64(blift*(cdxady-adxcdy)) + float64(clift*(adxbdy-bdxady))
	perm := (math.Abs(bdxcdy)+math.Abs(cdxbdy))*alift +
		(math.Abs(cdxady)+math.Abs(adxcdy))*blift +
		(math.Abs(adxbdy)+math.Abs(bdxady))*clift
	if math.Abs(det) > iccErrBound*perm {
		return sign(det)
	}
	return incircleExact(a, b, c, d)
}

func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func rat(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }

func sub(x, y float64) *big.Rat { return new(big.Rat).Sub(rat(x), rat(y)) }

func mul(x, y *big.Rat) *big.Rat { return new(big.Rat).Mul(x, y) }

func orientExact(a, b, c [2]float64) int {
	l := mul(sub(a[0], c[0]), sub(b[1], c[1]))
	r := mul(sub(a[1], c[1]), sub(b[0], c[0]))
	return l.Cmp(r)
}

func incircleExact(a, b, c, d [2]float64) int {
	adx, ady := sub(a[0], d[0]), sub(a[1], d[1])
	bdx, bdy := sub(b[0], d[0]), sub(b[1], d[1])
	cdx, cdy := sub(c[0], d[0]), sub(c[1], d[1])
	lift := func(x, y *big.Rat) *big.Rat { return new(big.Rat).Add(mul(x, x), mul(y, y)) }
	cross := func(x1, y1, x2, y2 *big.Rat) *big.Rat { return new(big.Rat).Sub(mul(x1, y2), mul(x2, y1)) }
	det := mul(lift(adx, ady), cross(bdx, bdy, cdx, cdy))
	det.Add(det, mul(lift(bdx, bdy), cross(cdx, cdy, adx, ady)))
	det.Add(det, mul(lift(cdx, cdy), cross(adx, ady, bdx, bdy)))
	return det.Sign()
}
