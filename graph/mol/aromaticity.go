package mol

import "slices"

// electron donor types of RDKit's aromaticity model
type donorType uint8

const (
	donorVacant donorType = iota
	donorOne
	donorTwo
	donorOneOrTwo
	donorAny
	donorNone
)

func (d donorType) minMax() (int, int) {
	switch d {
	case donorAny, donorOneOrTwo:
		return 1, 2
	case donorOne:
		return 1, 1
	case donorTwo:
		return 2, 2
	}
	return 0, 0
}

const maxFusedAromaticRingSize = 24

// countAtomElec is RDKit's MolOps::countAtomElec: the number of electrons
// atom i can donate to a pi system, or -1.
func (m *Mol) countAtomElec(i int) int {
	a := &m.Atoms[i]
	dv := DefaultValence(a.Element)
	if dv <= 1 {
		return -1
	}
	degree := m.Degree(i) + m.TotalHs(i)
	if degree > 3 {
		return -1
	}
	nlp := elementTable[a.Element].outer - dv
	nlp -= a.Charge
	if nlp < 0 {
		nlp = 0
	}
	res := (dv - degree) + nlp - a.Radicals
	if res > 1 && a.explVal-m.Degree(i) > 1 {
		res = 1
	}
	return res
}

func (m *Mol) incidentNonCyclicMultipleBond(i int) (int, bool) {
	nbrs, bds := m.Neighbors(i)
	for k, b := range bds {
		if m.rings.bondCount[b] == 0 && m.Bonds[b].Order.valence2() >= 4 {
			return int(nbrs[k]), true
		}
	}
	return -1, false
}

func (m *Mol) incidentCyclicMultipleBond(i int) bool {
	_, bds := m.Neighbors(i)
	for _, b := range bds {
		if m.rings.bondCount[b] > 0 && m.Bonds[b].Order.valence2() >= 4 {
			return true
		}
	}
	return false
}

func (m *Mol) incidentMultipleBond(i int) bool {
	deg := m.Degree(i) + m.Atoms[i].ExplicitHs
	_, bds := m.Neighbors(i)
	for _, b := range bds {
		if (m.Bonds[b].Order.valence2()+1)/2 == 0 {
			deg--
		}
	}
	return m.Atoms[i].explVal != deg
}

func (m *Mol) donorTypeArom(i int) donorType {
	a := &m.Atoms[i]
	if a.Element == 0 {
		if m.incidentCyclicMultipleBond(i) {
			return donorOne
		}
		return donorAny
	}
	nelec := m.countAtomElec(i)
	switch {
	case nelec < 0:
		return donorNone
	case nelec == 0:
		if _, ok := m.incidentNonCyclicMultipleBond(i); ok {
			return donorVacant
		}
		if m.incidentCyclicMultipleBond(i) {
			return donorOne
		}
		return donorNone
	case nelec == 1:
		if who, ok := m.incidentNonCyclicMultipleBond(i); ok {
			if moreElectroNegative(m.Atoms[who].Element, a.Element) {
				return donorVacant
			}
			return donorOne
		}
		if m.incidentMultipleBond(i) {
			return donorOne
		}
		if a.Charge == 1 {
			return donorVacant
		}
		return donorNone
	default:
		if who, ok := m.incidentNonCyclicMultipleBond(i); ok {
			if moreElectroNegative(m.Atoms[who].Element, a.Element) {
				nelec--
			}
		}
		if nelec%2 == 1 {
			return donorOne
		}
		return donorTwo
	}
}

func (m *Mol) isAtomCandForArom(i int, d donorType) bool {
	a := &m.Atoms[i]
	if a.Element > 18 && a.Element != 34 && a.Element != 52 {
		return false
	}
	if d == donorNone {
		return false
	}
	if dv := DefaultValence(a.Element); dv > 0 {
		z2 := a.Element - a.Charge
		if z2 >= 0 && z2 <= MaxAtomicNumber {
			if m.TotalValence(i) > DefaultValence(z2) {
				return false
			}
		}
	}
	if a.Radicals != 0 && (a.Element != 6 || a.Charge != 0) {
		return false
	}
	if a.explVal-m.Degree(i) > 1 {
		nMult := 0
		_, bds := m.Neighbors(i)
		for _, b := range bds {
			switch m.Bonds[b].Order {
			case Double, Triple:
				nMult++
			}
		}
		if nMult > 1 {
			return false
		}
	}
	return true
}

// setAromaticity is RDKit's default aromaticity model (aromaticityHelper
// with fused systems): candidate rings have only candidate atoms; every
// connected set of up to 6 rings of a fused system whose atoms (those in
// one or two of the chosen rings) hold 4n+2 pi electrons is aromatic.
func (m *Mol) setAromaticity() {
	ri := m.rings
	n := len(m.Atoms)
	if len(ri.AtomRings) == 0 {
		return
	}
	seen := make([]bool, n)
	acand := make([]bool, n)
	edon := make([]donorType, n)
	var cRings []int
	for r, ring := range ri.AtomRings {
		all := true
		allDummy := true
		for _, a := range ring {
			if m.Atoms[a].Element != 0 {
				allDummy = false
			}
			if seen[a] {
				if !acand[a] {
					all = false
				}
				continue
			}
			seen[a] = true
			edon[a] = m.donorTypeArom(a)
			acand[a] = m.isAtomCandForArom(a, edon[a])
			if !acand[a] {
				all = false
			}
		}
		if all && !allDummy {
			cRings = append(cRings, r)
		}
	}
	if len(cRings) == 0 {
		return
	}
	nc := len(cRings)
	brings := make([][]int, nc)
	arings := make([][]int, nc)
	for k, r := range cRings {
		brings[k] = ri.BondRings[r]
		arings[k] = ri.AtomRings[r]
	}
	// neighbour map: rings sharing exactly one bond, both small enough
	neigh := make([][]int, nc)
	for i := 0; i < nc; i++ {
		if len(brings[i]) > maxFusedAromaticRingSize {
			continue
		}
		for j := i + 1; j < nc; j++ {
			if len(brings[j]) > maxFusedAromaticRingSize {
				continue
			}
			shared := 0
			for _, b := range brings[i] {
				if slices.Contains(brings[j], b) {
					shared++
				}
			}
			if shared == 1 {
				neigh[i] = append(neigh[i], j)
				neigh[j] = append(neigh[j], i)
			}
		}
	}
	done := make([]bool, nc)
	cnt := make([]int, max(n, len(m.Bonds)))
	for s := 0; s < nc; s++ {
		if done[s] {
			continue
		}
		var fused []int
		var pick func(int)
		pick = func(c int) {
			done[c] = true
			fused = append(fused, c)
			for _, x := range neigh[c] {
				if !done[x] {
					pick(x)
				}
			}
		}
		pick(s)
		m.huckelFused(arings, brings, fused, neigh, edon, cnt)
	}
}

func (m *Mol) huckelFused(arings, brings [][]int, fused []int, neigh [][]int, edon []donorType, cnt []int) {
	nrings := len(fused)
	nb := len(m.Bonds)
	flags := make([]uint8, nb) // bit 0: bond of this system, bit 1: done
	nRingBonds := 0
	for _, r := range fused {
		for _, b := range brings[r] {
			if flags[b] == 0 {
				flags[b] = 1
				nRingBonds++
			}
		}
	}
	nDone := 0
	maxSize := min(nrings, 6)
	inCur := make(map[int]bool, 8)
	cur := make([]int, 0, 6)
	for size := 1; size <= maxSize; size++ {
		if nDone >= nRingBonds {
			break
		}
		comb := make([]int, size)
		for i := range comb {
			comb[i] = i
		}
		for {
			cur = cur[:0]
			for _, c := range comb {
				cur = append(cur, fused[c])
			}
			if size == 1 || connectedRings(cur, neigh, inCur) {
				// atoms in one or two of the chosen rings
				var atoms []int
				for _, r := range cur {
					for _, a := range arings[r] {
						if cnt[a] == 0 {
							atoms = append(atoms, a)
						}
						cnt[a]++
					}
				}
				lo, hi := 0, 0
				for _, a := range atoms {
					if cnt[a] <= 2 {
						l, h := edon[a].minMax()
						lo += l
						hi += h
					}
				}
				nAny := 0
				for _, a := range atoms {
					if cnt[a] <= 2 && edon[a] == donorAny {
						nAny++
					}
				}
				for _, a := range atoms {
					cnt[a] = 0
				}
				if nAny <= 1 && huckel(lo, hi) {
					nDone += m.markAromatic(arings, brings, cur, flags, cnt)
				}
			}
			if !nextCombination(comb, nrings) {
				break
			}
		}
	}
}

func huckel(lo, hi int) bool {
	if hi >= 6 {
		for e := lo; e <= hi; e++ {
			if (e-2)%4 == 0 {
				return true
			}
		}
		return false
	}
	return hi == 2
}

// connectedRings reports whether the rings cur form a connected subgraph
// of the ring neighbour map.
func connectedRings(cur []int, neigh [][]int, in map[int]bool) bool {
	clear(in)
	for _, r := range cur {
		in[r] = false
	}
	stack := []int{cur[0]}
	in[cur[0]] = true
	reached := 1
	for len(stack) > 0 {
		r := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, x := range neigh[r] {
			if v, ok := in[x]; ok && !v {
				in[x] = true
				reached++
				stack = append(stack, x)
			}
		}
	}
	return reached == len(cur)
}

// nextCombination advances comb to the next k-subset of 0..n-1 in
// lexicographic order, reporting false when exhausted.
func nextCombination(comb []int, n int) bool {
	k := len(comb)
	i := k - 1
	for i >= 0 && comb[i] == n-k+i {
		i--
	}
	if i < 0 {
		return false
	}
	comb[i]++
	for j := i + 1; j < k; j++ {
		comb[j] = comb[j-1] + 1
	}
	return true
}

// markAromatic marks the atoms of rings cur aromatic, and the bonds that
// appear in exactly one of them; it returns how many bonds were newly
// marked done in flags. count is scratch space of at least NumBonds zeros.
func (m *Mol) markAromatic(arings, brings [][]int, cur []int, flags []uint8, count []int) int {
	for _, r := range cur {
		for _, a := range arings[r] {
			m.Atoms[a].Aromatic = true
		}
	}
	for _, r := range cur {
		for _, b := range brings[r] {
			count[b]++
		}
	}
	newly := 0
	for _, r := range cur {
		for _, b := range brings[r] {
			if count[b] == 1 {
				bd := &m.Bonds[b]
				bd.Aromatic = true
				if bd.Order == Single || bd.Order == Double {
					bd.Order = Aromatic
				}
				if flags[b]&2 == 0 {
					flags[b] |= 2
					newly++
				}
			}
		}
	}
	for _, r := range cur {
		for _, b := range brings[r] {
			count[b] = 0
		}
	}
	return newly
}
