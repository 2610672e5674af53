package smarts

import "lgflow/graph/mol"

// Target is a molecule prepared for matching: per-atom counts that the
// primitives need are computed once, and recursive-SMARTS results are
// cached. Build one per molecule with NewTarget; it is not safe for
// concurrent use.
type Target struct {
	m         *mol.Mol
	elemCount [mol.MaxAtomicNumber + 1]int
	ri        *mol.RingInfo
	hcount    []int // total H, hydrogen-atom neighbours included
	ringBonds []int
	rec       map[*Pattern][]int8 // 0 unknown, 1 match, 2 no match
	used      []bool
}

// NewTarget prepares a sanitised molecule for matching. The molecule must
// not change while the Target is in use.
func NewTarget(m *mol.Mol) *Target {
	n := m.NumAtoms()
	t := &Target{m: m, ri: m.Rings(), hcount: make([]int, n), ringBonds: make([]int, n), used: make([]bool, n)}
	for i := 0; i < n; i++ {
		t.elemCount[m.Atoms[i].Element]++
		h := m.TotalHs(i)
		nbrs, bds := m.Neighbors(i)
		for k, w := range nbrs {
			if m.Atoms[w].Element == 1 {
				h++
			}
			if t.ri.NumBondRings(int(bds[k])) > 0 {
				t.ringBonds[i]++
			}
		}
		t.hcount[i] = h
	}
	return t
}

// Mol returns the target molecule.
func (t *Target) Mol() *mol.Mol { return t.m }

// MatchMol reports whether p occurs in m (a convenience for one-off
// matches; use NewTarget to match many patterns against one molecule).
func (p *Pattern) MatchMol(m *mol.Mol) bool { return p.Matches(NewTarget(m)) }

// Matches reports whether p occurs in the target: an injective map of
// query atoms to atoms such that every atom and bond expression holds.
func (p *Pattern) Matches(t *Target) bool {
	if !p.prescreen(t) {
		return false
	}
	mapQ := make([]int, len(p.atoms))
	for i := range mapQ {
		mapQ[i] = -1
	}
	clear(t.used)
	return p.search(t, 0, mapQ)
}

// CountMatches returns the number of distinct atom sets p maps onto, up to
// limit (0 = no limit).
func (p *Pattern) CountMatches(t *Target, limit int) int {
	if !p.prescreen(t) {
		return 0
	}
	mapQ := make([]int, len(p.atoms))
	for i := range mapQ {
		mapQ[i] = -1
	}
	clear(t.used)
	seen := map[string]bool{}
	p.enumerate(t, 0, mapQ, func() bool {
		key := make([]byte, 0, 4*len(mapQ))
		sorted := append([]int(nil), mapQ...)
		for i := 1; i < len(sorted); i++ {
			for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
				sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
			}
		}
		for _, a := range sorted {
			key = append(key, byte(a), byte(a>>8), byte(a>>16), byte(a>>24))
		}
		seen[string(key)] = true
		return limit > 0 && len(seen) >= limit
	})
	return len(seen)
}

// prescreen rejects targets with too few atoms of an element the pattern
// needs.
func (p *Pattern) prescreen(t *Target) bool {
	if len(p.atoms) > t.m.NumAtoms() {
		return false
	}
	for _, zc := range p.minCount {
		if t.elemCount[zc[0]] < zc[1] {
			return false
		}
	}
	return true
}

func (p *Pattern) search(t *Target, k int, mapQ []int) bool {
	found := false
	p.enumerate(t, k, mapQ, func() bool { found = true; return true })
	return found
}

// enumerate extends the partial map mapQ from position k of p.order and
// calls done for every complete match; done returns true to stop.
func (p *Pattern) enumerate(t *Target, k int, mapQ []int, done func() bool) bool {
	if k == len(p.order) {
		return done()
	}
	q := p.order[k]
	m := t.m
	// a mapped query neighbour gives the candidates
	parent := -1
	for _, bi := range p.adj[q] {
		b := &p.bonds[bi]
		o := b.a
		if o == q {
			o = b.b
		}
		if mapQ[o] >= 0 {
			parent = mapQ[o]
			break
		}
	}
	try := func(c int) bool {
		if t.used[c] || !p.atoms[q].match(t, c) {
			return false
		}
		for _, bi := range p.adj[q] {
			b := &p.bonds[bi]
			o := b.a
			if o == q {
				o = b.b
			}
			if o == q { // self-loop cannot occur
				return false
			}
			if mapQ[o] < 0 {
				continue
			}
			mb := m.BondBetween(c, mapQ[o])
			if mb < 0 || !b.expr.match(t, mb) {
				return false
			}
		}
		mapQ[q] = c
		t.used[c] = true
		stop := p.enumerate(t, k+1, mapQ, done)
		mapQ[q] = -1
		t.used[c] = false
		return stop
	}
	if parent >= 0 {
		nbrs, _ := m.Neighbors(parent)
		for _, c := range nbrs {
			if try(int(c)) {
				return true
			}
		}
		return false
	}
	for c := 0; c < m.NumAtoms(); c++ {
		if try(c) {
			return true
		}
	}
	return false
}

// matchAt reports whether p matches with its first atom on atom a.
func (p *Pattern) matchAt(t *Target, a int) bool {
	mapQ := make([]int, len(p.atoms))
	for i := range mapQ {
		mapQ[i] = -1
	}
	// the recursion may run inside an outer search: save its used marks
	saved := append([]bool(nil), t.used...)
	clear(t.used)
	ok := false
	if p.atoms[0].match(t, a) {
		mapQ[0] = a
		t.used[a] = true
		ok = p.search(t, 1, mapQ)
	}
	copy(t.used, saved)
	return ok
}

func (e *atomExpr) match(t *Target, i int) bool {
	switch e.op {
	case aNot:
		return !e.kids[0].match(t, i)
	case aAnd:
		for _, k := range e.kids {
			if !k.match(t, i) {
				return false
			}
		}
		return true
	case aOr:
		for _, k := range e.kids {
			if k.match(t, i) {
				return true
			}
		}
		return false
	}
	m := t.m
	a := &m.Atoms[i]
	switch e.prim {
	case primAny, primTrue:
		return true
	case primAromatic:
		return a.Aromatic
	case primAliphatic:
		return !a.Aromatic
	case primAtomicNum:
		return a.Element == e.val
	case primAliphaticElem:
		return a.Element == e.val && !a.Aromatic
	case primAromaticElem:
		return a.Element == e.val && a.Aromatic
	case primIsotope:
		return a.Isotope == e.val
	case primHCount:
		return t.hcount[i] == e.val
	case primImplicitH:
		if e.val < 0 {
			return m.ImplicitHs(i) > 0
		}
		return m.ImplicitHs(i) == e.val
	case primDegree:
		return m.Degree(i) == e.val
	case primTotalDegree:
		return m.Degree(i)+m.TotalHs(i) == e.val
	case primValence:
		return m.TotalValence(i) == e.val
	case primRingCount:
		return t.ri.NumAtomRings(i) == e.val
	case primInRing:
		return t.ri.NumAtomRings(i) > 0
	case primRingSize:
		return t.ri.MinAtomRingSize(i) == e.val
	case primRingBonds:
		if e.val < 0 {
			return t.ringBonds[i] > 0
		}
		return t.ringBonds[i] == e.val
	case primCharge:
		return a.Charge == e.val
	case primRecursive:
		if t.rec == nil {
			t.rec = map[*Pattern][]int8{}
		}
		c := t.rec[e.sub]
		if c == nil {
			c = make([]int8, m.NumAtoms())
			t.rec[e.sub] = c
		}
		if c[i] == 0 {
			c[i] = 2
			if e.sub.matchAt(t, i) {
				c[i] = 1
			}
		}
		return c[i] == 1
	}
	return false
}

func (e *bondExpr) match(t *Target, b int) bool {
	switch e.op {
	case aNot:
		return !e.kids[0].match(t, b)
	case aAnd:
		for _, k := range e.kids {
			if !k.match(t, b) {
				return false
			}
		}
		return true
	case aOr:
		for _, k := range e.kids {
			if k.match(t, b) {
				return true
			}
		}
		return false
	}
	bd := &t.m.Bonds[b]
	switch e.prim {
	case bondDefault:
		return bd.Order == mol.Single || bd.Order == mol.Aromatic
	case bondSingle:
		return bd.Order == mol.Single
	case bondDouble:
		return bd.Order == mol.Double
	case bondTriple:
		return bd.Order == mol.Triple
	case bondQuadruple:
		return bd.Order == mol.Quadruple
	case bondAromatic:
		return bd.Order == mol.Aromatic
	case bondAny:
		return true
	case bondRing:
		return t.ri.NumBondRings(b) > 0
	}
	return false
}
