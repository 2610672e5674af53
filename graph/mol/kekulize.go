package mol

import (
	"fmt"
	"slices"
)

// kekulize replaces aromatic bonds by a Kekulé structure, following RDKit's
// Kekulize: within every fused ring system (rings sharing a bond) the atoms
// that need a double bond are found from their valence state, and a
// perfect matching over the aromatic bonds between them is chosen. Atom and
// bond aromatic flags are cleared afterwards; the H of a neutral aromatic
// N or P with one stated H becomes implicit again.
func (m *Mol) kekulize() error {
	if !m.hasAromaticFlags() {
		return nil
	}
	ri := m.Rings()
	m.kekAtoms, m.kekBonds = m.kekAtoms[:0], m.kekBonds[:0]
	systems := m.fusedRingSystems(ri)
	cand, makeSingle := m.kekuleCandidates(systems)
	for _, b := range makeSingle {
		m.Bonds[b].Order = Single
	}
	// perfect matching per system over aromatic bonds between candidates
	local := make([]int, len(m.Atoms))
	for i := range local {
		local[i] = -1
	}
	for _, sys := range systems {
		if err := m.kekulizeSystem(sys, cand, local); err != nil {
			return err
		}
	}
	return m.clearAromaticFlags(ri)
}

// hasAromaticFlags reports whether any bond is aromatic (flag or order) or
// any atom carries the aromatic flag.
func (m *Mol) hasAromaticFlags() bool {
	for i := range m.Bonds {
		if m.Bonds[i].Aromatic || m.Bonds[i].Order == Aromatic {
			return true
		}
	}
	for i := range m.Atoms {
		if m.Atoms[i].Aromatic {
			return true
		}
	}
	return false
}

// fusedRingSystems groups the rings of ri into fused systems (rings
// sharing at least one bond, joined by union-find) and returns each
// system's atoms, in order of first appearance. A spiro atom shared by two
// systems belongs to both.
func (m *Mol) fusedRingSystems(ri *RingInfo) [][]int {
	nr := len(ri.AtomRings)
	parent := make([]int, nr)
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	bondRing := make([]int, len(m.Bonds))
	for i := range bondRing {
		bondRing[i] = -1
	}
	for r, br := range ri.BondRings {
		for _, b := range br {
			if o := bondRing[b]; o >= 0 {
				if a, c := find(o), find(r); a != c {
					parent[a] = c
				}
			} else {
				bondRing[b] = r
			}
		}
	}
	inSys := make([]int, len(m.Atoms)) // system id + 1 per atom
	sysOf := make([]int, nr)
	for i := range sysOf {
		sysOf[i] = -1
	}
	var systems [][]int
	for r, ar := range ri.AtomRings {
		root := find(r)
		id := sysOf[root]
		if id < 0 {
			id = len(systems)
			sysOf[root] = id
			systems = append(systems, nil)
		}
		for _, a := range ar {
			if inSys[a] == 0 {
				inSys[a] = id + 1
				systems[id] = append(systems[id], a)
			} else if inSys[a] != id+1 {
				// spiro atom shared by two systems: belongs to both
				if !slices.Contains(systems[id], a) {
					systems[id] = append(systems[id], a)
				}
			}
		}
	}
	return systems
}

// kekuleCandidates marks the atoms of the systems with an aromatic (or
// dummy) atom that need a double bond, and returns, in visiting order, the
// aromatic bonds around them that are to become single before matching.
func (m *Mol) kekuleCandidates(systems [][]int) (cand []bool, makeSingle []int) {
	n := len(m.Atoms)
	arom := make([]bool, n)
	for i := range m.Atoms {
		arom[i] = m.isAromaticAtom(i)
	}
	cand = make([]bool, n)
	for _, sys := range systems {
		hasArom := false
		for _, a := range sys {
			if arom[a] || m.Atoms[a].Element == 0 {
				hasArom = true
				break
			}
		}
		if !hasArom {
			continue
		}
		for _, a := range sys {
			at := &m.Atoms[a]
			if at.Element != 0 && !arom[a] {
				continue
			}
			var sbo, nToIgnore int
			sbo, nToIgnore, makeSingle = m.kekuleBondOrderSum(a, makeSingle)
			if at.Element == 0 {
				cand[a] = true // dummies: may take a double bond
				continue
			}
			if m.needsKekuleDouble(a, sbo, nToIgnore) {
				cand[a] = true
			}
		}
	}
	return cand, makeSingle
}

// kekuleBondOrderSum returns atom a's bond order sum counting each
// aromatic bond as single (those bonds are appended to makeSingle) and the
// other bonds by their valence contribution, and the number of bonds that
// contribute nothing.
func (m *Mol) kekuleBondOrderSum(a int, makeSingle []int) (sbo, nToIgnore int, _ []int) {
	_, bds := m.Neighbors(a)
	for _, b := range bds {
		bd := &m.Bonds[b]
		if bd.Aromatic && (bd.Order == Single || bd.Order == Double || bd.Order == Aromatic) {
			sbo++
			makeSingle = append(makeSingle, int(b))
		} else {
			c := (bd.Order.valence2() + 1) / 2
			sbo += c
			if c == 0 {
				nToIgnore++
			}
		}
	}
	return sbo, nToIgnore, makeSingle
}

// needsKekuleDouble reports whether the non-dummy aromatic atom a, with
// single-bond order sum sbo (Hs not included) and nToIgnore zero-order
// bonds, needs a double bond in the Kekulé structure, judged from its
// default (or next allowed) valence as RDKit does.
func (m *Mol) needsKekuleDouble(a, sbo, nToIgnore int) bool {
	at := &m.Atoms[a]
	tHs := at.ExplicitHs + m.ImplicitHs(a)
	sbo += tHs
	dv := DefaultValence(at.Element)
	chrg := chargeShift(at.Element, at.Charge)
	dv += chrg
	tbo := at.explVal + m.ImplicitHs(a)
	nRad := at.Radicals
	totalDegree := m.Degree(a) + m.ImplicitHs(a) - nToIgnore
	vals := elementTable[at.Element].valences
	for vi := 1; tbo > dv && vi < len(vals) && vals[vi] > 0; vi++ {
		dv = int(vals[vi]) + chrg
	}
	if tbo == 5 && sbo == 4 && dv == 3 && totalDegree == 3 && nRad == 0 && chrg == 0 && tHs == 0 {
		switch at.Element {
		case 7, 15, 33:
			dv = 5
		}
	}
	if totalDegree+nRad >= dv {
		return false
	}
	if dv == sbo+1+nRad {
		return true
	}
	return nRad == 0 && at.NoImplicit && dv == sbo+2
}

// kekulizeSystem places the double bonds of one fused system: a matching
// over the aromatic bonds between its candidate atoms that covers every
// non-dummy candidate. local must be all -1 on entry and is left so. The
// candidates and their bonds are recorded in m.kekAtoms and m.kekBonds.
func (m *Mol) kekulizeSystem(sys []int, cand []bool, local []int) error {
	var cs []int
	for _, a := range sys {
		if cand[a] {
			cs = append(cs, a)
		}
	}
	if len(cs) == 0 {
		return nil
	}
	g, gb := m.kekuleGraph(cs, local)
	m.kekAtoms = append(m.kekAtoms, cs...)
	match := coverMatching(g, func(k int) bool { return m.Atoms[cs[k]].Element == 0 })
	var unmatched []int
	for k, mk := range match {
		if mk < 0 && m.Atoms[cs[k]].Element != 0 {
			unmatched = append(unmatched, cs[k])
		}
	}
	if len(unmatched) > 0 {
		return &SanitizeError{Kind: KekulizeError, Atoms: unmatched,
			Msg: "Can't kekulize mol.  Unkekulized atoms:" + joinInts(unmatched)}
	}
	for k, mk := range match {
		if mk > k {
			for j, l := range g[k] {
				if l == mk {
					m.Bonds[gb[k][j]].Order = Double
					break
				}
			}
		}
	}
	return nil
}

// kekuleGraph returns the graph over the candidates cs (indices into cs)
// whose edges are the aromatic bonds between them, or any bond touching a
// dummy; gb[k][j] is the bond of edge g[k][j]. Each edge's bond is
// appended once to m.kekBonds. local must be all -1 on entry and is left so.
func (m *Mol) kekuleGraph(cs, local []int) (g, gb [][]int) {
	for k, a := range cs {
		local[a] = k
	}
	g = make([][]int, len(cs))
	gb = make([][]int, len(cs))
	for k, a := range cs {
		nbrs, bds := m.Neighbors(a)
		for j, w := range nbrs {
			l := local[w]
			if l < 0 {
				continue
			}
			bd := &m.Bonds[bds[j]]
			if bd.Aromatic || m.Atoms[a].Element == 0 || m.Atoms[w].Element == 0 {
				g[k] = append(g[k], l)
				gb[k] = append(gb[k], int(bds[j]))
				if l > k {
					m.kekBonds = append(m.kekBonds, int(bds[j]))
				}
			}
		}
	}
	for _, a := range cs {
		local[a] = -1
	}
	return g, gb
}

// clearAromaticFlags clears every bond's and atom's aromatic flag after
// kekulisation, failing on an aromatic atom outside any ring. The H of a
// neutral aromatic N or P with one stated H becomes implicit again, and
// those atoms' valences are recomputed.
func (m *Mol) clearAromaticFlags(ri *RingInfo) error {
	for i := range m.Bonds {
		m.Bonds[i].Aromatic = false
	}
	var resetHs []int
	for i := range m.Atoms {
		a := &m.Atoms[i]
		if !a.Aromatic {
			continue
		}
		if ri.atomCount[i] == 0 {
			return &SanitizeError{Kind: KekulizeError, Atoms: []int{i}, Msg: fmt.Sprintf("non-ring atom %d marked aromatic", i)}
		}
		a.Aromatic = false
		if (a.Element == 7 || a.Element == 15) && a.Charge == 0 && a.ExplicitHs == 1 {
			a.NoImplicit = false
			a.ExplicitHs = 0
			resetHs = append(resetHs, i)
		}
	}
	// Like RDKit, keep the valences computed before kekulisation (they are
	// what aromaticity perception reads) except on atoms whose H changed.
	for _, i := range resetHs {
		m.Atoms[i].explVal, _ = m.calcExplicitValence(i, false)
		m.Atoms[i].implicitHs, _ = m.calcImplicitValence(i, false)
	}
	return nil
}

// coverMatching returns a matching of g (adjacency lists over 0..n-1;
// match[v] is v's partner or -1) that covers every vertex for which
// optional is false, if one exists, and otherwise a maximum matching of
// the gadget below restricted to g. Optional vertices (dummy atoms, which
// may or may not take a double bond) are covered only where that helps: a
// plain maximum matching of g can cover an optional vertex at the expense
// of a required one (the 5-ring *1cccc1 has maximum matchings leaving
// a c bare), and which one it picks depends on the atom order.
//
// The gadget adds q new vertices forming a clique, each adjacent to every
// optional vertex, with q the number of optional vertices rounded up to
// the parity of n; g has a matching covering its required vertices
// exactly when the gadget graph has a perfect matching (the optional
// vertices left bare pair off with new vertices, the other new vertices
// with each other).
func coverMatching(g [][]int, optional func(v int) bool) []int {
	n := len(g)
	var opt []int
	for v := range n {
		if optional(v) {
			opt = append(opt, v)
		}
	}
	if len(opt) == 0 {
		return maxMatching(g)
	}
	q := len(opt)
	if (q-n)%2 != 0 {
		q++
	}
	x := make([][]int, n+q)
	for v := range n {
		x[v] = slices.Clone(g[v])
	}
	for i := range q {
		e := n + i
		for _, v := range opt {
			x[v] = append(x[v], e)
			x[e] = append(x[e], v)
		}
		for j := range q {
			if j != i {
				x[e] = append(x[e], n+j)
			}
		}
	}
	match := maxMatching(x)[:n]
	for v, w := range match {
		// A pair of optional vertices covers nothing required: leave both
		// bare (two dummy atoms in a ring of no aromatic atom, *1*=C1,
		// took a double bond between them and read back as *1=*=C1).
		if w >= n || (w >= 0 && optional(v) && optional(w)) {
			match[v] = -1
		}
	}
	return match
}

// maxMatching returns a maximum matching of the undirected graph g
// (adjacency lists over 0..n-1): match[v] is v's partner or -1. It is
// Edmonds' blossom algorithm, O(n^3), after a greedy start.
func maxMatching(g [][]int) []int {
	n := len(g)
	match := make([]int, n)
	for i := range match {
		match[i] = -1
	}
	for v := 0; v < n; v++ {
		if match[v] >= 0 {
			continue
		}
		for _, w := range g[v] {
			if match[w] < 0 {
				match[v], match[w] = w, v
				break
			}
		}
	}
	p := make([]int, n)
	base := make([]int, n)
	used := make([]bool, n)
	blossom := make([]bool, n)
	q := make([]int, 0, n)
	lca := func(a, b int) int {
		seen := make([]bool, n)
		for {
			a = base[a]
			seen[a] = true
			if match[a] < 0 {
				break
			}
			a = p[match[a]]
		}
		for {
			b = base[b]
			if seen[b] {
				return b
			}
			b = p[match[b]]
		}
	}
	markPath := func(v, b, child int) {
		for base[v] != b {
			blossom[base[v]], blossom[base[match[v]]] = true, true
			p[v] = child
			child = match[v]
			v = p[match[v]]
		}
	}
	findPath := func(root int) int {
		for i := 0; i < n; i++ {
			used[i], p[i], base[i] = false, -1, i
		}
		used[root] = true
		q = append(q[:0], root)
		for qh := 0; qh < len(q); qh++ {
			v := q[qh]
			for _, to := range g[v] {
				if base[v] == base[to] || match[v] == to {
					continue
				}
				if to == root || (match[to] >= 0 && p[match[to]] >= 0) {
					cur := lca(v, to)
					for i := range blossom {
						blossom[i] = false
					}
					markPath(v, cur, to)
					markPath(to, cur, v)
					for i := 0; i < n; i++ {
						if blossom[base[i]] {
							base[i] = cur
							if !used[i] {
								used[i] = true
								q = append(q, i)
							}
						}
					}
				} else if p[to] < 0 {
					p[to] = v
					if match[to] < 0 {
						return to
					}
					used[match[to]] = true
					q = append(q, match[to])
				}
			}
		}
		return -1
	}
	for v := 0; v < n; v++ {
		if match[v] >= 0 || len(g[v]) == 0 {
			continue
		}
		if u := findPath(v); u >= 0 {
			for u >= 0 {
				pv := p[u]
				ppv := match[pv]
				match[u], match[pv] = pv, u
				u = ppv
			}
		}
	}
	return match
}

// kekuleFree is a bond-order code used only while ranking: a bond whose
// single/double assignment came from kekulisation and survived aromaticity
// perception as a non-aromatic bond.
const kekuleFree BondOrder = 6

// canonicalizeKekule re-chooses, in canonical order, the double bonds that
// kekulisation placed on bonds that did not become aromatic again (for
// example in rings that aromaticity perception rejects, such as the Se ring
// of c1cc[se]2...). Which perfect matching kekulisation finds depends on the
// input atom order; without this step two inputs of the same molecule
// could give different canonical SMILES. RDKit keeps whatever its search
// found.
func (m *Mol) canonicalizeKekule() {
	free := false
	for _, b := range m.kekBonds {
		if !m.Bonds[b].Aromatic {
			free = true
			break
		}
	}
	if !free {
		return
	}
	saved := make([]BondOrder, len(m.kekBonds))
	for k, b := range m.kekBonds {
		saved[k] = m.Bonds[b].Order
		if !m.Bonds[b].Aromatic {
			m.Bonds[b].Order = kekuleFree
		}
	}
	ranks := m.CanonicalRanks()
	cs := slices.Clone(m.kekAtoms)
	slices.SortFunc(cs, func(a, b int) int { return ranks[a] - ranks[b] })
	local := make(map[int]int, len(cs))
	for k, a := range cs {
		local[a] = k
	}
	g := make([][]int, len(cs))
	for _, b := range m.kekBonds {
		i, j := local[m.Bonds[b].Begin], local[m.Bonds[b].End]
		g[i] = append(g[i], j)
		g[j] = append(g[j], i)
	}
	for k := range g {
		slices.SortFunc(g[k], func(a, b int) int { return ranks[cs[a]] - ranks[cs[b]] })
	}
	match := coverMatching(g, func(k int) bool { return m.Atoms[cs[k]].Element == 0 })
	for k, b := range m.kekBonds {
		bd := &m.Bonds[b]
		if bd.Aromatic {
			bd.Order = saved[k]
			continue
		}
		i, j := local[bd.Begin], local[bd.End]
		if match[i] == j && match[j] == i {
			bd.Order = Double
		} else {
			bd.Order = Single
		}
	}
	for k, mk := range match {
		if mk < 0 && m.Atoms[cs[k]].Element != 0 { // cannot happen: a covering matching existed
			for k, b := range m.kekBonds {
				m.Bonds[b].Order = saved[k]
			}
			return
		}
	}
}
