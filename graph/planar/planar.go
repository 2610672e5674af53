// Package planar tests graphs for planarity.
//
// IsPlanar implements the left-right (LR) planarity test of de Fraysseix and
// Rosenstiehl in the formulation of U. Brandes, "The Left-Right Planarity
// Test" (2009), following the structure of the networkx implementation
// (BSD licence). Both depth-first searches are iterative, so graphs of any
// size can be tested without deep recursion. Only the decision is
// computed; no embedding is built.
package planar

import (
	"lgflow/graph"
)

// IsPlanar reports whether g can be drawn in the plane without crossing
// edges. A directed graph is tested through its undirected view (an edge
// {u, v} wherever u -> v or v -> u). Disconnected graphs are planar exactly
// when every component is. g is not modified.
//
// The test first applies Euler's bound (a simple planar graph with n >= 3
// nodes has at most 3n - 6 edges) and then runs the LR test, which takes
// O(n + m) time plus a bucket sort of the edges, also O(n + m).
func IsPlanar(g *graph.Graph) bool {
	if g.Directed() {
		g = g.Undirected()
	}
	n, m := g.N(), g.M()
	if n > 2 && m > 3*n-6 {
		return false
	}
	if m < 9 { // K3,3 has 9 edges, K5 has 10: smaller graphs are planar
		return true
	}
	s := newState(g)
	s.orient()
	s.sortByNesting()
	return s.test()
}

// pair is a conflict pair of two intervals of return edges (edge ids; -1
// means none). id identifies the pair for stack-bottom comparisons.
type pair struct {
	ll, lh, rl, rh int32
	id             int32
}

type state struct {
	n, m int
	// undirected adjacency in CSR form
	off []int32
	nbr []int32
	eid []int32

	height     []int32 // per node, -1 = unvisited
	parentEdge []int32 // per node, -1 = none
	roots      []int32
	ind        []int32 // per node, DFS cursor

	// per edge (oriented during the first DFS)
	src, dst   []int32
	oriented   []bool
	skip       []bool
	lowpt      []int32
	lowpt2     []int32
	nesting    []int32
	ref        []int32
	lowptEdge  []int32
	stackBotID []int32

	// oriented out-edges sorted by nesting depth, CSR
	ooff  []int32
	oedge []int32

	stack  []pair
	nextID int32
	dfs    []int32
}

func newState(g *graph.Graph) *state {
	n, m := g.N(), g.M()
	s := &state{n: n, m: m}
	s.off = make([]int32, n+1)
	s.nbr = make([]int32, 2*m)
	s.eid = make([]int32, 2*m)
	for u := 0; u < n; u++ {
		s.off[u+1] = s.off[u] + int32(len(g.Neighbors(u)))
	}
	// Edge ids: assign while scanning u < v, then look up the reverse slot.
	pos := make([]int32, n)
	copy(pos, s.off[:n])
	var id int32
	for u := 0; u < n; u++ {
		for _, v := range g.Neighbors(u) {
			if v < u {
				continue
			}
			s.nbr[pos[u]], s.eid[pos[u]] = int32(v), id
			pos[u]++
			s.nbr[pos[v]], s.eid[pos[v]] = int32(u), id
			pos[v]++
			id++
		}
	}
	s.height = fill(make([]int32, n), -1)
	s.parentEdge = fill(make([]int32, n), -1)
	s.ind = make([]int32, n)
	s.src = make([]int32, m)
	s.dst = make([]int32, m)
	s.oriented = make([]bool, m)
	s.skip = make([]bool, m)
	s.lowpt = make([]int32, m)
	s.lowpt2 = make([]int32, m)
	s.nesting = make([]int32, m)
	s.ref = fill(make([]int32, m), -1)
	s.lowptEdge = fill(make([]int32, m), -1)
	s.stackBotID = make([]int32, m)
	return s
}

func fill(s []int32, v int32) []int32 {
	for i := range s {
		s[i] = v
	}
	return s
}

// orient runs the first DFS: it orients every edge away from the root
// (tree edges downwards, back edges upwards) and computes lowpoints and
// nesting depths.
func (s *state) orient() {
	copy(s.ind, s.off[:s.n])
	for r := 0; r < s.n; r++ {
		if s.height[r] >= 0 {
			continue
		}
		s.height[r] = 0
		s.roots = append(s.roots, int32(r))
		s.dfs = append(s.dfs[:0], int32(r))
		for len(s.dfs) > 0 {
			v := s.dfs[len(s.dfs)-1]
			e := s.parentEdge[v]
			descended := false
			for s.ind[v] < s.off[v+1] {
				k := s.ind[v]
				w, ei := s.nbr[k], s.eid[k]
				if !s.skip[ei] {
					if s.oriented[ei] {
						s.ind[v]++
						continue
					}
					s.oriented[ei] = true
					s.src[ei], s.dst[ei] = v, w
					s.lowpt[ei], s.lowpt2[ei] = s.height[v], s.height[v]
					if s.height[w] < 0 { // tree edge: descend first
						s.parentEdge[w] = ei
						s.height[w] = s.height[v] + 1
						s.skip[ei] = true
						s.dfs = append(s.dfs, w)
						descended = true
						break
					}
					s.lowpt[ei] = s.height[w] // back edge
				}
				s.nesting[ei] = 2 * s.lowpt[ei]
				if s.lowpt2[ei] < s.height[v] { // chordal
					s.nesting[ei]++
				}
				if e >= 0 {
					switch {
					case s.lowpt[ei] < s.lowpt[e]:
						s.lowpt2[e] = min(s.lowpt[e], s.lowpt2[ei])
						s.lowpt[e] = s.lowpt[ei]
					case s.lowpt[ei] > s.lowpt[e]:
						s.lowpt2[e] = min(s.lowpt2[e], s.lowpt[ei])
					default:
						s.lowpt2[e] = min(s.lowpt2[e], s.lowpt2[ei])
					}
				}
				s.ind[v]++
			}
			if !descended {
				s.dfs = s.dfs[:len(s.dfs)-1]
			}
		}
	}
}

// sortByNesting builds, for every node, its oriented out-edges in
// increasing nesting depth, by a counting sort over all edges (nesting
// depths lie in [0, 2n)).
func (s *state) sortByNesting() {
	maxDepth := int32(0)
	for _, d := range s.nesting {
		maxDepth = max(maxDepth, d)
	}
	cnt := make([]int32, maxDepth+2)
	for _, d := range s.nesting {
		cnt[d+1]++
	}
	for i := 1; i < len(cnt); i++ {
		cnt[i] += cnt[i-1]
	}
	byDepth := make([]int32, s.m)
	for e, d := range s.nesting {
		byDepth[cnt[d]] = int32(e)
		cnt[d]++
	}
	s.ooff = make([]int32, s.n+1)
	for _, v := range s.src {
		s.ooff[v+1]++
	}
	for i := 1; i <= s.n; i++ {
		s.ooff[i] += s.ooff[i-1]
	}
	pos := s.ind // reuse
	copy(pos, s.ooff[:s.n])
	s.oedge = make([]int32, s.m)
	for _, e := range byDepth {
		v := s.src[e]
		s.oedge[pos[v]] = e
		pos[v]++
	}
}

func (s *state) topID() int32 {
	if len(s.stack) == 0 {
		return -1
	}
	return s.stack[len(s.stack)-1].id
}

func (s *state) push(p pair) {
	p.id = s.nextID
	s.nextID++
	s.stack = append(s.stack, p)
}

func (s *state) pop() pair {
	p := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	return p
}

// conflicting reports whether the interval [low, high] holds a return edge
// that returns higher than edge b.
func (s *state) conflicting(low, high, b int32) bool {
	return !(low < 0 && high < 0) && s.lowpt[high] > s.lowpt[b]
}

func (s *state) lowest(p *pair) int32 {
	if p.ll < 0 && p.lh < 0 {
		return s.lowpt[p.rl]
	}
	if p.rl < 0 && p.rh < 0 {
		return s.lowpt[p.ll]
	}
	return min(s.lowpt[p.ll], s.lowpt[p.rl])
}

func (s *state) setRef(e, to int32) {
	if e >= 0 {
		s.ref[e] = to
	}
}

// test runs the second DFS, which looks for a consistent left-right
// partition of the back edges.
func (s *state) test() bool {
	copy(s.ind, s.ooff[:s.n])
	clear(s.skip)
	for _, r := range s.roots {
		s.dfs = append(s.dfs[:0], r)
		for len(s.dfs) > 0 {
			v := s.dfs[len(s.dfs)-1]
			e := s.parentEdge[v]
			descended := false
			for s.ind[v] < s.ooff[v+1] {
				k := s.ind[v]
				ei := s.oedge[k]
				w := s.dst[ei]
				if !s.skip[ei] {
					s.stackBotID[ei] = s.topID()
					if ei == s.parentEdge[w] { // tree edge
						s.skip[ei] = true
						s.dfs = append(s.dfs, w)
						descended = true
						break
					}
					s.lowptEdge[ei] = ei // back edge
					s.push(pair{ll: -1, lh: -1, rl: ei, rh: ei})
				}
				if s.lowpt[ei] < s.height[v] { // ei has return edges
					if k == s.ooff[v] {
						s.lowptEdge[e] = s.lowptEdge[ei]
					} else if !s.addConstraints(ei, e) {
						return false
					}
				}
				s.ind[v]++
			}
			if !descended {
				if e >= 0 {
					s.removeBackEdges(e)
				}
				s.dfs = s.dfs[:len(s.dfs)-1]
			}
		}
	}
	return true
}

func (s *state) addConstraints(ei, e int32) bool {
	p := pair{ll: -1, lh: -1, rl: -1, rh: -1}
	// Merge the return edges of ei into p's right interval.
	for {
		q := s.pop()
		if !(q.ll < 0 && q.lh < 0) {
			q.ll, q.lh, q.rl, q.rh = q.rl, q.rh, q.ll, q.lh
		}
		if !(q.ll < 0 && q.lh < 0) {
			return false
		}
		if s.lowpt[q.rl] > s.lowpt[e] { // merge intervals
			if p.rl < 0 && p.rh < 0 {
				p.rh = q.rh
			} else {
				s.setRef(p.rl, q.rh)
			}
			p.rl = q.rl
		} else { // align
			s.setRef(q.rl, s.lowptEdge[e])
		}
		if s.topID() == s.stackBotID[ei] {
			break
		}
	}
	// Merge conflicting return edges of the earlier siblings into p's left
	// interval.
	for len(s.stack) > 0 {
		t := &s.stack[len(s.stack)-1]
		if !s.conflicting(t.ll, t.lh, ei) && !s.conflicting(t.rl, t.rh, ei) {
			break
		}
		q := s.pop()
		if s.conflicting(q.rl, q.rh, ei) {
			q.ll, q.lh, q.rl, q.rh = q.rl, q.rh, q.ll, q.lh
		}
		if s.conflicting(q.rl, q.rh, ei) {
			return false
		}
		s.setRef(p.rl, q.rh)
		if q.rl >= 0 {
			p.rl = q.rl
		}
		if p.ll < 0 && p.lh < 0 {
			p.lh = q.lh
		} else {
			s.setRef(p.ll, q.lh)
		}
		p.ll = q.ll
	}
	if !(p.ll < 0 && p.lh < 0 && p.rl < 0 && p.rh < 0) {
		s.push(p)
	}
	return true
}

func (s *state) removeBackEdges(e int32) {
	u := s.src[e]
	hu := s.height[u]
	// Drop whole conflict pairs whose return edges all end at u.
	for len(s.stack) > 0 && s.lowest(&s.stack[len(s.stack)-1]) == hu {
		s.pop()
	}
	if len(s.stack) > 0 { // one more conflict pair to trim
		p := &s.stack[len(s.stack)-1]
		for p.lh >= 0 && s.dst[p.lh] == u {
			p.lh = s.ref[p.lh]
		}
		if p.lh < 0 && p.ll >= 0 { // just emptied
			s.ref[p.ll] = p.rl
			p.ll = -1
		}
		for p.rh >= 0 && s.dst[p.rh] == u {
			p.rh = s.ref[p.rh]
		}
		if p.rh < 0 && p.rl >= 0 {
			s.ref[p.rl] = p.ll
			p.rl = -1
		}
	}
	// The side of e is the side of a highest return edge.
	if s.lowpt[e] < hu && len(s.stack) > 0 {
		t := &s.stack[len(s.stack)-1]
		hl, hr := t.lh, t.rh
		if hl >= 0 && (hr < 0 || s.lowpt[hl] > s.lowpt[hr]) {
			s.ref[e] = hl
		} else {
			s.ref[e] = hr
		}
	}
}
