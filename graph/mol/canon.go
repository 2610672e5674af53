package mol

import (
	"cmp"
	"slices"
)

// CanonicalRanks returns a canonical numbering of the atoms of m: ranks
// 0..n-1, equal for the same molecule whatever its input atom order, up to
// automorphisms of the molecule.
//
// Atoms start from an invariant (degree, element, isotope, total H,
// charge, aromaticity, ring membership, radicals); classes are refined by
// the sorted (neighbour class, bond order) lists until stable (1-WL with
// bond labels), then by distance profiles; remaining ties are broken by
// individualising one atom of the lowest tied class and refining again,
// the atom whose refined partition has the smallest order-independent
// certificate (see the loop below). Tied classes of molecules are
// automorphism orbits in practice, which makes the choice immaterial; the
// certificate makes it canonical for most that are not (regular cages).
func (m *Mol) CanonicalRanks() []int {
	m.ensureAdj()
	n := len(m.Atoms)
	ranks := make([]int, n)
	if n == 0 {
		return ranks
	}
	ri := m.Rings()
	type inv struct {
		deg, z, iso, hs, chg, arom, ring, rad int
	}
	invs := make([]inv, n)
	for i := range m.Atoms {
		a := &m.Atoms[i]
		ar := 0
		if a.Aromatic {
			ar = 1
		}
		rg := 0
		if ri.atomCount[i] > 0 {
			rg = 1
		}
		invs[i] = inv{m.Degree(i), a.Element, a.Isotope, m.TotalHs(i), a.Charge, ar, rg, a.Radicals}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		a, b := &invs[x], &invs[y]
		// charges compare as unsigned numbers, as in RDKit (0 < 1 < ... < -1)
		return cmp.Or(cmp.Compare(a.deg, b.deg), cmp.Compare(a.z, b.z), cmp.Compare(a.iso, b.iso),
			cmp.Compare(a.hs, b.hs), cmp.Compare(uint32(a.chg), uint32(b.chg)), cmp.Compare(a.arom, b.arom),
			cmp.Compare(a.ring, b.ring), cmp.Compare(a.rad, b.rad))
	})
	for k := 0; k < n; k++ {
		if k > 0 && invs[order[k]] == invs[order[k-1]] {
			ranks[order[k]] = ranks[order[k-1]]
		} else {
			ranks[order[k]] = k
		}
	}
	r := refiner{m: m, ranks: ranks, order: order}
	r.init()
	r.refine()
	if r.hasTies() {
		// Colour refinement cannot tell apart atoms of some regular cage
		// structures that are not symmetry-equivalent; split the remaining
		// classes by each atom's distance profile (how many atoms of each
		// class lie at each distance), which is invariant too.
		r.splitByDistanceProfile()
		r.refine()
	}
	var members, cert, bestCert []int
	saved, savedOrder, best, bestOrder := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	for {
		// lowest tied class
		tie := -1
		for k := 1; k < n; k++ {
			if ranks[order[k]] == ranks[order[k-1]] {
				tie = k - 1
				break
			}
		}
		if tie < 0 {
			break
		}
		rv := ranks[order[tie]]
		end := tie
		for end < n && ranks[order[end]] == rv {
			end++
		}
		// Individualise one member by giving it the highest rank of its
		// class (as RDKit's BreakTies does), and refine. The member is the
		// one whose refinement has the smallest certificate, the lowest
		// input index among equal certificates: automorphic atoms give
		// equal certificates, so for them this is RDKit's choice, and
		// atoms refinement cannot tell apart but that are not symmetric
		// (C12C3C4C1C5C2C5C43) mostly give different ones, which makes
		// the choice independent of the input order.
		members = append(members[:0], order[tie:end]...)
		slices.Sort(members)
		copy(saved, ranks)
		copy(savedOrder, order)
		for i, c := range members {
			if i > 0 {
				copy(ranks, saved)
				copy(order, savedOrder)
			}
			ranks[c] = rv + (end - tie) - 1
			r.sortByRank()
			r.refine()
			cert = r.certificate(cert[:0])
			if i == 0 || slices.Compare(cert, bestCert) < 0 {
				copy(best, ranks)
				copy(bestOrder, order)
				bestCert = append(bestCert[:0], cert...)
			}
		}
		copy(ranks, best)
		copy(order, bestOrder)
	}
	return ranks
}

// certificate appends to dst an encoding of the current, stable partition
// that does not depend on the input atom order: for every rank class in
// increasing order, its rank and the neighbour key its atoms share (after
// refine, atoms of one class have equal keys). Isomorphic (molecule,
// partition) pairs have equal certificates.
func (r *refiner) certificate(dst []int) []int {
	for k, x := range r.order {
		if k > 0 && r.ranks[r.order[k-1]] == r.ranks[x] {
			continue
		}
		dst = append(dst, r.ranks[x])
		if r.fast {
			dst = append(dst, int(r.hi[x]), int(r.lo[x]))
		} else {
			dst = append(dst, r.keys[x]...)
			dst = append(dst, -1)
		}
	}
	return dst
}

func (r *refiner) hasTies() bool {
	for k := 1; k < len(r.order); k++ {
		if r.ranks[r.order[k]] == r.ranks[r.order[k-1]] {
			return true
		}
	}
	return false
}

// splitByDistanceProfile splits tied classes by the sorted list of
// (distance, rank) pairs from the atom to every atom of its component.
func (r *refiner) splitByDistanceProfile() {
	m := r.m
	n := len(m.Atoms)
	tied := make([]bool, n)
	for k := 1; k < n; k++ {
		if x, y := r.order[k], r.order[k-1]; r.ranks[x] == r.ranks[y] {
			tied[x], tied[y] = true, true
		}
	}
	prof := make([][]int, n)
	buf := make([]int, 0, 8*n)
	dist := make([]int, n)
	queue := make([]int, 0, n)
	for s := 0; s < n; s++ {
		if !tied[s] {
			continue
		}
		for i := range dist {
			dist[i] = -1
		}
		dist[s] = 0
		queue = append(queue[:0], s)
		start := len(buf)
		for qi := 0; qi < len(queue); qi++ {
			v := queue[qi]
			buf = append(buf, dist[v]*(n+1)+r.ranks[v])
			nbrs, _ := m.Neighbors(v)
			for _, w := range nbrs {
				if dist[w] < 0 {
					dist[w] = dist[v] + 1
					queue = append(queue, int(w))
				}
			}
		}
		slices.Sort(buf[start:])
		prof[s] = buf[start:len(buf):len(buf)]
	}
	slices.SortStableFunc(r.order, func(x, y int) int {
		if c := cmp.Compare(r.ranks[x], r.ranks[y]); c != 0 {
			return c
		}
		return slices.Compare(prof[x], prof[y])
	})
	newRanks := r.tmp
	for k := 0; k < n; k++ {
		x := r.order[k]
		if k > 0 {
			y := r.order[k-1]
			if r.ranks[x] == r.ranks[y] && slices.Equal(prof[x], prof[y]) {
				newRanks[x] = newRanks[y]
				continue
			}
		}
		newRanks[x] = k
	}
	copy(r.ranks, newRanks)
}

type refiner struct {
	n      int
	m      *Mol
	ranks  []int
	order  []int
	fast   bool     // all degrees <= 8 and n < 8192: keys packed in hi/lo
	hi, lo []uint64 // packed sorted neighbour codes (fast path)
	keys   [][]int  // per atom: neighbour codes, sorted descending (slow path)
	buf    []int
	tmp    []int
}

func (r *refiner) init() {
	m := r.m
	n := len(m.Atoms)
	r.n = n
	r.fast = n < 4096 // 16-bit codes: bond type (< 16) * n + rank
	for i := 0; i < n && r.fast; i++ {
		if m.Degree(i) > 8 {
			r.fast = false
		}
	}
	r.tmp = make([]int, n)
	if r.fast {
		r.hi = make([]uint64, n)
		r.lo = make([]uint64, n)
		return
	}
	r.keys = make([][]int, n)
	r.buf = make([]int, 2*len(m.Bonds))
	off := 0
	for i := 0; i < n; i++ {
		d := m.Degree(i)
		r.keys[i] = r.buf[off : off+d : off+d]
		off += d
	}
}

// sortByRank reorders r.order by rank (stable w.r.t. previous order).
func (r *refiner) sortByRank() {
	slices.SortStableFunc(r.order, func(x, y int) int { return cmp.Compare(r.ranks[x], r.ranks[y]) })
}

// computeKeys fills the neighbour keys from the current ranks.
func (r *refiner) computeKeys() {
	m := r.m
	n := len(m.Atoms)
	for i := 0; i < n; i++ {
		nbrs, bds := m.Neighbors(i)
		if r.fast {
			var codes [8]uint64
			d := len(nbrs)
			for j, w := range nbrs {
				c := uint64(rdkitBondType(m.Bonds[bds[j]].Order)*r.n + r.ranks[w])
				// insertion into descending order
				k := j
				for k > 0 && codes[k-1] < c {
					codes[k] = codes[k-1]
					k--
				}
				codes[k] = c
			}
			var hi, lo uint64
			for j := 0; j < 4; j++ {
				hi = hi<<16 | codes[j]
				lo = lo<<16 | codes[j+4]
			}
			_ = d
			r.hi[i], r.lo[i] = hi, lo
			continue
		}
		k := r.keys[i]
		for j, w := range nbrs {
			k[j] = rdkitBondType(m.Bonds[bds[j]].Order)*r.n + r.ranks[w]
		}
		slices.SortFunc(k, func(a, b int) int { return cmp.Compare(b, a) })
	}
}

func (r *refiner) compareKeys(x, y int) int {
	if r.fast {
		if c := cmp.Compare(r.hi[x], r.hi[y]); c != 0 {
			return c
		}
		return cmp.Compare(r.lo[x], r.lo[y])
	}
	return slices.Compare(r.keys[x], r.keys[y])
}

// refine splits rank classes by the sorted neighbour codes until no class
// splits any more.
func (r *refiner) refine() {
	n := len(r.m.Atoms)
	for {
		r.computeKeys()
		slices.SortStableFunc(r.order, func(x, y int) int {
			if c := cmp.Compare(r.ranks[x], r.ranks[y]); c != 0 {
				return c
			}
			return r.compareKeys(x, y)
		})
		changed := false
		newRanks := r.tmp
		for k := 0; k < n; k++ {
			x := r.order[k]
			if k > 0 {
				y := r.order[k-1]
				if r.ranks[x] == r.ranks[y] {
					if r.compareKeys(x, y) == 0 {
						newRanks[x] = newRanks[y]
						continue
					}
					changed = true
				}
			}
			newRanks[x] = k
		}
		if !changed {
			return
		}
		copy(r.ranks, newRanks)
	}
}
