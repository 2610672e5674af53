package mol

import (
	"math/bits"
	"slices"
)

// RingInfo holds the rings of a molecule: the relevant cycles (the union
// of all minimum cycle bases). For ordinary molecules this is the smallest
// set of smallest rings (SSSR); for cage and bridged systems it adds the
// symmetry-equivalent rings that RDKit's symmetrised SSSR adds (cubane has
// 6 four-membered rings, bicyclo[2.2.2]octane 3 six-membered ones).
type RingInfo struct {
	// AtomRings lists each ring's atoms in ring order.
	AtomRings [][]int
	// BondRings lists each ring's bonds, in the same order as AtomRings.
	BondRings [][]int

	atomCount   []int
	bondCount   []int
	atomMinSize []int
	bondMinSize []int
}

func (r *RingInfo) clone() *RingInfo {
	c := &RingInfo{
		atomCount:   slices.Clone(r.atomCount),
		bondCount:   slices.Clone(r.bondCount),
		atomMinSize: slices.Clone(r.atomMinSize),
		bondMinSize: slices.Clone(r.bondMinSize),
	}
	for _, x := range r.AtomRings {
		c.AtomRings = append(c.AtomRings, slices.Clone(x))
	}
	for _, x := range r.BondRings {
		c.BondRings = append(c.BondRings, slices.Clone(x))
	}
	return c
}

// NumRings returns the number of rings.
func (r *RingInfo) NumRings() int { return len(r.AtomRings) }

// NumAtomRings returns how many rings contain atom i.
func (r *RingInfo) NumAtomRings(i int) int { return r.atomCount[i] }

// NumBondRings returns how many rings contain bond b.
func (r *RingInfo) NumBondRings(b int) int { return r.bondCount[b] }

// MinAtomRingSize returns the size of the smallest ring holding atom i, or
// 0 if the atom is in no ring.
func (r *RingInfo) MinAtomRingSize(i int) int { return r.atomMinSize[i] }

// MinBondRingSize returns the size of the smallest ring holding bond b, or
// 0 if the bond is in no ring.
func (r *RingInfo) MinBondRingSize(b int) int { return r.bondMinSize[b] }

// IsAtomInRingOfSize reports whether atom i lies in a ring of exactly k
// atoms.
func (r *RingInfo) IsAtomInRingOfSize(i, k int) bool {
	if r.atomCount[i] == 0 {
		return false
	}
	for _, ring := range r.AtomRings {
		if len(ring) == k && slices.Contains(ring, i) {
			return true
		}
	}
	return false
}

// IsBondInRingOfSize reports whether bond b lies in a ring of exactly k
// bonds.
func (r *RingInfo) IsBondInRingOfSize(b, k int) bool {
	if r.bondCount[b] == 0 {
		return false
	}
	for _, ring := range r.BondRings {
		if len(ring) == k && slices.Contains(ring, b) {
			return true
		}
	}
	return false
}

// Rings returns the ring information of m, computing it if needed. The
// result is owned by m.
func (m *Mol) Rings() *RingInfo {
	if m.rings == nil {
		m.rings = m.findRings()
	}
	return m.rings
}

// findRings computes the relevant cycles of m.
func (m *Mol) findRings() *RingInfo {
	m.ensureAdj()
	n, nb := len(m.Atoms), len(m.Bonds)
	ri := &RingInfo{
		atomCount:   make([]int, n),
		bondCount:   make([]int, nb),
		atomMinSize: make([]int, n),
		bondMinSize: make([]int, nb),
	}
	ringBond := m.ringBonds()
	// components of the ring-bond subgraph
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	var stack []int
	nComp := 0
	local := make([]int, n)
	for s := 0; s < n; s++ {
		if comp[s] >= 0 {
			continue
		}
		hasRing := false
		nbrs, bds := m.Neighbors(s)
		for k := range nbrs {
			if ringBond[bds[k]] {
				hasRing = true
				break
			}
		}
		if !hasRing {
			continue
		}
		var verts []int
		comp[s] = nComp
		stack = append(stack[:0], s)
		for len(stack) > 0 {
			a := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			verts = append(verts, a)
			nbrs, bds := m.Neighbors(a)
			for k, b := range nbrs {
				if ringBond[bds[k]] && comp[b] < 0 {
					comp[b] = nComp
					stack = append(stack, int(b))
				}
			}
		}
		nComp++
		m.ringsOfComponent(verts, ringBond, local, ri)
	}
	for k, ring := range ri.AtomRings {
		for _, a := range ring {
			ri.atomCount[a]++
			if ri.atomMinSize[a] == 0 || len(ring) < ri.atomMinSize[a] {
				ri.atomMinSize[a] = len(ring)
			}
		}
		for _, b := range ri.BondRings[k] {
			ri.bondCount[b]++
			if ri.bondMinSize[b] == 0 || len(ring) < ri.bondMinSize[b] {
				ri.bondMinSize[b] = len(ring)
			}
		}
	}
	return ri
}

// ringBonds marks bonds that lie on a cycle (non-bridges), by an iterative
// lowlink DFS.
func (m *Mol) ringBonds() []bool {
	n := len(m.Atoms)
	ring := make([]bool, len(m.Bonds))
	if len(m.Bonds) == 0 {
		return ring
	}
	disc := make([]int32, n)
	low := make([]int32, n)
	for i := range disc {
		disc[i] = -1
	}
	type frame struct {
		v, parentBond, k int32
	}
	var st []frame
	t := int32(0)
	for s := 0; s < n; s++ {
		if disc[s] >= 0 {
			continue
		}
		disc[s], low[s] = t, t
		t++
		st = append(st[:0], frame{int32(s), -1, 0})
		for len(st) > 0 {
			f := &st[len(st)-1]
			nbrs, bds := m.Neighbors(int(f.v))
			if int(f.k) < len(nbrs) {
				w, b := nbrs[f.k], bds[f.k]
				f.k++
				if b == f.parentBond {
					continue
				}
				if disc[w] < 0 {
					disc[w], low[w] = t, t
					t++
					st = append(st, frame{w, b, 0})
				} else {
					ring[b] = true // back edge: on a cycle
					if disc[w] < low[f.v] {
						low[f.v] = disc[w]
					}
				}
				continue
			}
			v, pb := f.v, f.parentBond
			st = st[:len(st)-1]
			if len(st) > 0 {
				p := st[len(st)-1].v
				if low[v] < low[p] {
					low[p] = low[v]
				}
				if low[v] <= disc[p] {
					ring[pb] = true
				}
			}
		}
	}
	return ring
}

type cycleCand struct {
	edges []uint64 // bitset over component-local edges
}

// ringsOfComponent finds the relevant cycles of one connected component of
// the ring-bond subgraph and appends them to ri.
func (m *Mol) ringsOfComponent(verts []int, ringBond []bool, local []int, ri *RingInfo) {
	nv := len(verts)
	if m.ringBondCount(verts, ringBond)/2-nv+1 == 1 {
		atoms, bonds := m.simpleCycle(verts, ringBond)
		ri.AtomRings = append(ri.AtomRings, atoms)
		ri.BondRings = append(ri.BondRings, bonds)
		return
	}
	slices.Sort(verts)
	for i, v := range verts {
		local[v] = i
	}
	eb, ladj := m.localRingGraph(verts, ringBond, local)
	ne := len(eb)
	nc := ne - nv + 1
	if nc <= 0 {
		return
	}
	cands := candidateCycles(ladj, ne)
	slices.SortStableFunc(cands, func(a, b cycleCand) int { return a.size() - b.size() })
	// Gaussian elimination: a candidate of length L is relevant iff it is
	// independent of all cycles shorter than L.
	var cb cycleBasis
	tmp := make([]uint64, (ne+63)/64)
	for i := 0; i < len(cands) && len(cb.basis) < nc; {
		L := cands[i].size()
		j := i
		var rel []int
		for ; j < len(cands) && cands[j].size() == L; j++ {
			copy(tmp, cands[j].edges)
			if cb.reduce(tmp) {
				rel = append(rel, j)
			}
		}
		for _, k := range rel {
			atoms, bonds := m.orderCycle(cands[k].edges, eb, verts, ladj)
			ri.AtomRings = append(ri.AtomRings, atoms)
			ri.BondRings = append(ri.BondRings, bonds)
		}
		for _, k := range rel {
			cb.insert(cands[k].edges)
		}
		i = j
	}
}

// ringBondCount returns the number of ring bonds at the atoms verts, each
// bond counted once from either end.
func (m *Mol) ringBondCount(verts []int, ringBond []bool) int {
	ne2 := 0
	for _, v := range verts {
		_, bds := m.Neighbors(v)
		for _, b := range bds {
			if ringBond[b] {
				ne2++
			}
		}
	}
	return ne2
}

// simpleCycle walks the component verts, known to be a simple cycle of
// ring bonds, from its lowest atom, and returns its atoms and bonds in
// ring order.
func (m *Mol) simpleCycle(verts []int, ringBond []bool) (atoms, bonds []int) {
	nv := len(verts)
	start := verts[0]
	for _, v := range verts {
		start = min(start, v)
	}
	atoms = make([]int, 0, nv)
	bonds = make([]int, 0, nv)
	prevBond, cur := int32(-1), start
	for {
		atoms = append(atoms, cur)
		nbrs, bds := m.Neighbors(cur)
		next, nb := -1, int32(-1)
		for k, b := range bds {
			if ringBond[b] && b != prevBond {
				next, nb = int(nbrs[k]), b
				break
			}
		}
		bonds = append(bonds, int(nb))
		prevBond, cur = nb, next
		if cur == start {
			break
		}
	}
	return atoms, bonds
}

// localRingGraph numbers the ring bonds of the component verts (whose
// atoms have local indices local[v]) as local edges: eb maps a local edge
// to its global bond, and ladj[i] lists pairs (neighbour, edge) of local
// vertex i.
func (m *Mol) localRingGraph(verts []int, ringBond []bool, local []int) (eb []int, ladj [][]int) {
	ladj = make([][]int, len(verts))
	for i, v := range verts {
		nbrs, bds := m.Neighbors(v)
		for k, w := range nbrs {
			if !ringBond[bds[k]] {
				continue
			}
			j := local[int(w)]
			if j > i {
				e := len(eb)
				eb = append(eb, int(bds[k]))
				ladj[i] = append(ladj[i], j, e)
				ladj[j] = append(ladj[j], i, e)
			}
		}
	}
	return eb, ladj
}

// size returns the number of edges of the cycle.
func (c cycleCand) size() int {
	s := 0
	for _, w := range c.edges {
		s += bits.OnesCount64(w)
	}
	return s
}

// cycleSearch holds the state of the candidate-cycle search:
// a breadth-first tree from each root, and the cycles closed by
// one edge (odd) or two edges (even) between tree paths that meet only at
// the root.
type cycleSearch struct {
	ladj     [][]int // local adjacency: pairs (nbr, edge)
	root     int
	dist     []int
	pred     []int
	predEdge []int
	queue    []int
	onPath   []int
	stamp    int
	scratch  []uint64
	cands    []cycleCand
}

// candidateCycles returns the distinct candidate cycles of the local graph
// ladj with ne edges, each as an edge bitset, in order of discovery.
func candidateCycles(ladj [][]int, ne int) []cycleCand {
	nv := len(ladj)
	cs := &cycleSearch{
		ladj:     ladj,
		dist:     make([]int, nv),
		pred:     make([]int, nv),
		predEdge: make([]int, nv),
		queue:    make([]int, 0, nv),
		onPath:   make([]int, nv),
		scratch:  make([]uint64, (ne+63)/64),
	}
	for r := 0; r < nv; r++ {
		cs.bfs(r)
		cs.addCyclesFromRoot()
	}
	return cs.cands
}

// bfs builds the breadth-first tree from root r: dist, pred and predEdge.
func (cs *cycleSearch) bfs(r int) {
	for i := range cs.dist {
		cs.dist[i] = -1
	}
	cs.root = r
	cs.dist[r], cs.pred[r], cs.predEdge[r] = 0, -1, -1
	cs.queue = append(cs.queue[:0], r)
	for qi := 0; qi < len(cs.queue); qi++ {
		v := cs.queue[qi]
		for k := 0; k < len(cs.ladj[v]); k += 2 {
			w, e := cs.ladj[v][k], cs.ladj[v][k+1]
			if cs.dist[w] < 0 {
				cs.dist[w], cs.pred[w], cs.predEdge[w] = cs.dist[v]+1, v, e
				cs.queue = append(cs.queue, w)
			}
		}
	}
}

// addCyclesFromRoot adds the odd cycles (an edge v-w between vertices at
// equal distance) and even cycles (two tree predecessors of a vertex) of
// the current tree whose two paths to the root are disjoint.
func (cs *cycleSearch) addCyclesFromRoot() {
	dist, ladj := cs.dist, cs.ladj
	for v := 0; v < len(ladj); v++ {
		for k := 0; k < len(ladj[v]); k += 2 {
			w, e := ladj[v][k], ladj[v][k+1]
			if w <= v {
				continue
			}
			// odd cycle through edge v-w
			if dist[v] == dist[w] && cs.disjoint(v, w) {
				cs.addCand(v, w, e)
			}
		}
		// even cycles: two predecessors of v
		for k := 0; k < len(ladj[v]); k += 2 {
			u, eu := ladj[v][k], ladj[v][k+1]
			if dist[u] != dist[v]-1 || dist[v] <= 0 {
				continue
			}
			for k2 := k + 2; k2 < len(ladj[v]); k2 += 2 {
				w, ew := ladj[v][k2], ladj[v][k2+1]
				if dist[w] != dist[v]-1 || !cs.disjoint(u, w) {
					continue
				}
				cs.addCand(u, w, eu, ew)
			}
		}
	}
}

// disjoint reports whether the tree paths from a and b to the root share
// no vertex but the root.
func (cs *cycleSearch) disjoint(a, b int) bool {
	cs.stamp++
	for x := a; x >= 0; x = cs.pred[x] {
		cs.onPath[x] = cs.stamp
	}
	for x := b; x >= 0; x = cs.pred[x] {
		if cs.onPath[x] == cs.stamp && x != cs.root {
			return false
		}
	}
	return true
}

// addCand adds the cycle made of the tree paths from a and b to the
// root plus the closing edges, unless it is already a candidate.
func (cs *cycleSearch) addCand(a, b int, closing ...int) {
	scratch := cs.scratch
	clear(scratch)
	for v := a; cs.pred[v] >= 0; v = cs.pred[v] {
		e := cs.predEdge[v]
		scratch[e>>6] ^= 1 << (e & 63)
	}
	for v := b; cs.pred[v] >= 0; v = cs.pred[v] {
		e := cs.predEdge[v]
		scratch[e>>6] ^= 1 << (e & 63)
	}
	for _, e := range closing {
		scratch[e>>6] ^= 1 << (e & 63)
	}
	for _, c := range cs.cands {
		if slices.Equal(c.edges, scratch) {
			return
		}
	}
	cs.cands = append(cs.cands, cycleCand{edges: slices.Clone(scratch)})
}

// cycleBasis is a fully reduced basis of edge bitsets over GF(2): pivots[i]
// is the lowest set bit of basis[i], clear in every other basis vector.
type cycleBasis struct {
	basis  [][]uint64
	pivots []int
}

// reduce reduces v in place by the basis and reports whether anything is
// left (v is independent of the basis).
func (cb *cycleBasis) reduce(v []uint64) bool {
	for bi, b := range cb.basis {
		p := cb.pivots[bi]
		if v[p>>6]&(1<<(p&63)) != 0 {
			for k := range v {
				v[k] ^= b[k]
			}
		}
	}
	for _, w := range v {
		if w != 0 {
			return true
		}
	}
	return false
}

// insert adds a copy of v to the basis if it is independent, keeping the
// basis fully reduced on the new pivot.
func (cb *cycleBasis) insert(v []uint64) {
	c := slices.Clone(v)
	if !cb.reduce(c) {
		return
	}
	p := -1
	for k, w := range c {
		if w != 0 {
			p = k*64 + bits.TrailingZeros64(w)
			break
		}
	}
	// keep basis fully reduced on the new pivot
	for bi, b := range cb.basis {
		if b[p>>6]&(1<<(p&63)) != 0 {
			for k := range b {
				cb.basis[bi][k] ^= c[k]
			}
		}
	}
	cb.basis = append(cb.basis, c)
	cb.pivots = append(cb.pivots, p)
}

// orderCycle returns the atoms and bonds of the cycle given as a local
// edge bitset, in ring order starting from its lowest atom.
func (m *Mol) orderCycle(edges []uint64, eb, verts []int, ladj [][]int) (atoms, bonds []int) {
	in := func(e int) bool { return edges[e>>6]&(1<<(e&63)) != 0 }
	// find the lowest local vertex on the cycle
	start := -1
	for v := 0; v < len(verts) && start < 0; v++ {
		for k := 0; k < len(ladj[v]); k += 2 {
			if in(ladj[v][k+1]) {
				start = v
				break
			}
		}
	}
	prevEdge, cur := -1, start
	for {
		atoms = append(atoms, verts[cur])
		next, ne := -1, -1
		for k := 0; k < len(ladj[cur]); k += 2 {
			e := ladj[cur][k+1]
			if e != prevEdge && in(e) {
				next, ne = ladj[cur][k], e
				break
			}
		}
		bonds = append(bonds, eb[ne])
		prevEdge, cur = ne, next
		if cur == start {
			break
		}
	}
	return atoms, bonds
}
