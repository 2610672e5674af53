package mol

import (
	"slices"
	"strconv"
	"strings"
)

// WriteOptions controls WriteSMILES.
type WriteOptions struct {
	// Canonical orders atoms by CanonicalRanks and sorts the fragments;
	// otherwise atoms are visited in index order.
	Canonical bool
	// Kekule writes the Kekulé form (uppercase atoms, explicit double
	// bonds) of an aromatic molecule. The molecule itself is not changed.
	Kekule bool
}

// SMILES returns the canonical SMILES of m: the same string for the same
// molecule whatever the atom order or the Kekulé/aromatic form of the
// input. Aromatic atoms are written in lowercase as RDKit perceives them.
// Stereo marks are not written (the output is non-isomeric).
func (m *Mol) SMILES() string { return m.WriteSMILES(WriteOptions{Canonical: true}) }

// CanonicalSMILES parses s (sanitising as RDKit does) and returns its
// canonical SMILES.
func CanonicalSMILES(s string) (string, error) {
	m, err := ParseSMILES(s)
	if err != nil {
		return "", err
	}
	return m.SMILES(), nil
}

// WriteSMILES writes m as SMILES.
func (m *Mol) WriteSMILES(opt WriteOptions) string {
	w := m
	if opt.Kekule {
		w = m.Clone()
		w.buildAdj()
		if err := w.kekulize(); err != nil {
			w = m
		}
	}
	w.ensureAdj()
	n := len(w.Atoms)
	if n == 0 {
		return ""
	}
	var ranks []int
	if opt.Canonical {
		ranks = w.CanonicalRanks()
	} else {
		ranks = make([]int, n)
		for i := range ranks {
			ranks[i] = i
		}
	}
	sw := smilesWriter{m: w, ranks: ranks, visited: make([]bool, n)}
	var frags []string
	for {
		start := -1
		for i := 0; i < n; i++ {
			if !sw.visited[i] && (start < 0 || ranks[i] < ranks[start]) {
				start = i
			}
		}
		if start < 0 {
			break
		}
		frags = append(frags, sw.fragment(start))
	}
	if opt.Canonical {
		slices.Sort(frags)
	}
	return strings.Join(frags, ".")
}

type smilesWriter struct {
	m        *Mol
	ranks    []int
	visited  []bool
	ringInfo *RingInfo
}

// rdkitBondType is the value of RDKit's Bond::BondType enum for o; the
// traversal prefers ring bonds of higher type, as RDKit does.
func rdkitBondType(o BondOrder) int {
	switch o {
	case Single:
		return 1
	case Double:
		return 2
	case Triple:
		return 3
	case Quadruple:
		return 4
	case Aromatic:
		return 12
	}
	return 0
}

const maxBondType = 32

type possible struct {
	key        int
	atom, bond int
}

// traversalKey orders the neighbours of an atom as RDKit's canonical DFS
// does: ring-closure partners first (gray), then neighbours over non-ring
// bonds, then ring bonds of higher bond type; rank breaks ties.
func (w *smilesWriter) traversalKey(other, bond int, gray bool) int {
	n := len(w.m.Atoms) + 1
	key := w.ranks[other]
	bt := rdkitBondType(w.m.Bonds[bond].Order)
	if gray {
		key -= (maxBondType + 1) * n * n
		key += (maxBondType - bt) * n
	} else if w.ringInfo.bondCount[bond] > 0 {
		key += (maxBondType - bt) * n * n
	}
	return key
}

// fragment writes the fragment holding start, following RDKit's
// dfsFindCycles / dfsBuildStack.
func (w *smilesWriter) fragment(start int) string {
	m := w.m
	n := len(m.Atoms)
	w.ringInfo = m.Rings()
	// pass 1: find ring-closure bonds
	color := make([]uint8, n) // 0 white, 1 gray, 2 black
	closures := make([][]int, n)
	var findCycles func(v, inBond int)
	findCycles = func(v, inBond int) {
		color[v] = 1
		nbrs, bds := m.Neighbors(v)
		ps := make([]possible, 0, len(nbrs))
		for k, u := range nbrs {
			if int(bds[k]) == inBond {
				continue
			}
			ps = append(ps, possible{w.traversalKey(int(u), int(bds[k]), color[u] == 1), int(u), int(bds[k])})
		}
		slices.SortStableFunc(ps, func(a, b possible) int { return a.key - b.key })
		for _, p := range ps {
			switch color[p.atom] {
			case 0:
				findCycles(p.atom, p.bond)
			case 1:
				closures[p.atom] = append(closures[p.atom], p.bond)
				closures[v] = append(closures[v], p.bond)
			}
		}
		color[v] = 2
	}
	findCycles(start, -1)
	// pass 2: write
	var sb strings.Builder
	sb.Grow(2 * n)
	digit := make([]int, len(m.Bonds))
	seen := make([]int, n) // stamp: closure partner of the current atom
	var avail []bool       // avail[d] true if digit d+1 is in use
	var build func(v, inBond int)
	build = func(v, inBond int) {
		w.visited[v] = true
		if inBond >= 0 {
			sb.WriteString(w.bondSymbol(inBond))
		}
		w.writeAtom(&sb, v)
		var closed []int
		for _, b := range closures[v] {
			seen[m.Bonds[b].Other(v)] = v + 1
			if d := digit[b]; d > 0 {
				sb.WriteString(w.bondSymbol(b))
				writeRingDigit(&sb, d)
				closed = append(closed, d)
			} else {
				d := 0
				for d < len(avail) && avail[d] {
					d++
				}
				if d == len(avail) {
					avail = append(avail, false)
				}
				avail[d] = true
				digit[b] = d + 1
				writeRingDigit(&sb, d+1)
			}
		}
		for _, d := range closed {
			avail[d-1] = false
		}
		nbrs, bds := m.Neighbors(v)
		ps := make([]possible, 0, len(nbrs))
		for k, u := range nbrs {
			if int(bds[k]) == inBond || w.visited[u] || seen[u] == v+1 {
				continue
			}
			ps = append(ps, possible{w.traversalKey(int(u), int(bds[k]), false), int(u), int(bds[k])})
		}
		slices.SortStableFunc(ps, func(a, b possible) int { return a.key - b.key })
		for k, p := range ps {
			if w.visited[p.atom] {
				continue
			}
			if k+1 < len(ps) {
				sb.WriteByte('(')
				build(p.atom, p.bond)
				sb.WriteByte(')')
			} else {
				build(p.atom, p.bond)
			}
		}
	}
	build(start, -1)
	return sb.String()
}

func writeRingDigit(sb *strings.Builder, d int) {
	switch {
	case d < 10:
		sb.WriteByte(byte('0' + d))
	case d < 100:
		sb.WriteByte('%')
		sb.WriteString(strconv.Itoa(d))
	default:
		sb.WriteString("%(")
		sb.WriteString(strconv.Itoa(d))
		sb.WriteByte(')')
	}
}

// bondSymbol returns the symbol to write for bond b ("" when implied).
func (w *smilesWriter) bondSymbol(b int) string {
	m := w.m
	bd := &m.Bonds[b]
	a1, a2 := &m.Atoms[bd.Begin], &m.Atoms[bd.End]
	switch bd.Order {
	case Single:
		if a1.Aromatic && a2.Aromatic {
			return "-"
		}
		return ""
	case Aromatic:
		if a1.Aromatic && a2.Aromatic {
			return ""
		}
		return ":"
	default:
		return bd.Order.String()
	}
}

var organicSubset = [...]bool{5: true, 6: true, 7: true, 8: true, 9: true, 15: true, 16: true, 17: true, 35: true, 53: true}

var lowerSymbol = func() []string {
	out := make([]string, len(elementTable))
	for z, e := range elementTable {
		out[z] = strings.ToLower(e.symbol)
	}
	return out
}()

// writeAtom writes atom i, in brackets when the organic-subset shorthand
// would not reproduce it (RDKit's rules).
func (w *smilesWriter) writeAtom(sb *strings.Builder, i int) {
	m := w.m
	a := &m.Atoms[i]
	sym := a.Symbol()
	if a.Aromatic {
		sym = lowerSymbol[a.Element]
	}
	bracket := true
	if a.Element == 0 {
		bracket = a.Charge != 0 || a.Isotope != 0 || a.Class != 0 || a.ExplicitHs != 0
	} else if a.Element < len(organicSubset) && organicSubset[a.Element] {
		bracket = a.Charge != 0 || a.Isotope != 0 || a.Radicals != 0 || a.Class != 0
		if !bracket {
			hs := m.TotalHs(i)
			switch {
			case (a.Element == 7 || a.Element == 15) && a.Aromatic && a.ExplicitHs > 0:
				bracket = true
			case m.TotalValence(i) != DefaultValence(a.Element) && hs > 0:
				bracket = true
			case hs != w.impliedHs(i):
				bracket = true
			}
		}
	}
	if !bracket {
		sb.WriteString(sym)
		return
	}
	sb.WriteByte('[')
	if a.Isotope != 0 {
		sb.WriteString(strconv.Itoa(a.Isotope))
	}
	sb.WriteString(sym)
	if hs := m.TotalHs(i); hs > 0 {
		sb.WriteByte('H')
		if hs > 1 {
			sb.WriteString(strconv.Itoa(hs))
		}
	}
	switch {
	case a.Charge == 1:
		sb.WriteByte('+')
	case a.Charge == -1:
		sb.WriteByte('-')
	case a.Charge > 1:
		sb.WriteByte('+')
		sb.WriteString(strconv.Itoa(a.Charge))
	case a.Charge < -1:
		sb.WriteString(strconv.Itoa(a.Charge))
	}
	if a.Class != 0 {
		sb.WriteByte(':')
		sb.WriteString(strconv.Itoa(a.Class))
	}
	sb.WriteByte(']')
}

// impliedHs returns the hydrogen count a SMILES reader would give atom i
// written as a bare organic-subset symbol with its current bonds.
func (w *smilesWriter) impliedHs(i int) int {
	m := w.m
	a := &m.Atoms[i]
	_, bds := m.Neighbors(i)
	acc2 := 0
	for _, b := range bds {
		acc2 += m.Bonds[b].Order.valence2()
	}
	dv := DefaultValence(a.Element)
	arom := m.isAromaticAtom(i)
	if arom && acc2 > 2*dv {
		pval := dv
		for _, v := range elementTable[a.Element].valences {
			if 2*int(v) > acc2 {
				break
			}
			pval = int(v)
		}
		if acc2-2*pval <= 3 {
			acc2 = 2 * pval
		}
	}
	ev := (acc2 + 1) / 2
	if arom {
		if ev <= dv {
			return dv - ev
		}
		return 0
	}
	for _, v := range elementTable[a.Element].valences {
		if ev <= int(v) {
			return int(v) - ev
		}
	}
	return 0
}
