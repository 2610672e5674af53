package mol

import (
	"fmt"
	"slices"
)

// BondOrder is the type of a bond. Its values double as the edge classes of
// the molecule encoding (single 1, double 2, triple 3, aromatic 4; 0 = no
// bond; docs/design.md, "Molecules").
type BondOrder uint8

// Bond orders.
const (
	NoBond    BondOrder = 0
	Single    BondOrder = 1
	Double    BondOrder = 2
	Triple    BondOrder = 3
	Aromatic  BondOrder = 4
	Quadruple BondOrder = 5
)

// String returns the SMILES bond symbol of o ("-", "=", "#", ":", "$").
func (o BondOrder) String() string {
	switch o {
	case Single:
		return "-"
	case Double:
		return "="
	case Triple:
		return "#"
	case Aromatic:
		return ":"
	case Quadruple:
		return "$"
	}
	return "~"
}

// valence2 returns twice the valence contribution of a bond of order o
// (aromatic bonds count 1.5, as in RDKit).
func (o BondOrder) valence2() int {
	switch o {
	case Single:
		return 2
	case Double:
		return 4
	case Triple:
		return 6
	case Aromatic:
		return 3
	case Quadruple:
		return 8
	}
	return 0
}

// BondStereo is a directional mark written on a single bond ('/' or '\')
// to describe double-bond geometry. It is kept as parsed, relative to the
// direction Begin -> End.
type BondStereo uint8

// Bond direction marks.
const (
	StereoNone BondStereo = iota
	StereoUp              // '/'
	StereoDown            // '\'
)

// Atom is one atom of a molecule. The exported fields are what a SMILES
// string states; hydrogen counts and valences implied by them are computed
// by Sanitize (or UpdateValences) and read through Mol's methods.
type Atom struct {
	// Element is the atomic number; 0 is the wildcard atom '*'.
	Element int
	// Charge is the formal charge.
	Charge int
	// Isotope is the mass number, 0 when unspecified.
	Isotope int
	// ExplicitHs is the number of hydrogens stated on the atom (a bracket
	// atom's H count, or hydrogens moved onto it by sanitisation).
	ExplicitHs int
	// NoImplicit is set for bracket atoms: no implicit hydrogens are added.
	NoImplicit bool
	// Aromatic is the aromatic flag (lowercase symbol, or perceived).
	Aromatic bool
	// Chirality is the chirality mark as written ("", "@", "@@", "@TH1", ...).
	Chirality string
	// Class is the atom class (":n" in a bracket atom), 0 if none.
	Class int
	// Radicals is the number of radical electrons (assigned by Sanitize).
	Radicals int

	implicitHs int // computed implicit hydrogen count
	explVal    int // computed explicit valence
}

// Symbol returns the element symbol of the atom ("*" for the wildcard).
func (a *Atom) Symbol() string { return elementTable[a.Element].symbol }

// Bond joins atoms Begin and End.
type Bond struct {
	Begin, End int
	Order      BondOrder
	// Aromatic is the aromatic flag. Bonds of order Aromatic have it set;
	// Kekulé bonds inside a perceived aromatic ring do not exist after
	// sanitisation (they become Aromatic).
	Aromatic bool
	// Stereo is the '/' or '\' mark written on the bond, if any.
	Stereo BondStereo
}

// Other returns the atom of b that is not a.
func (b *Bond) Other(a int) int {
	if b.Begin == a {
		return b.End
	}
	return b.Begin
}

// Mol is a molecule: atoms, bonds and derived data (adjacency, rings,
// implicit hydrogens). Build one with ParseSMILES, or fill Atoms and Bonds
// and call Sanitize. After changing Atoms or Bonds by hand call Sanitize
// (or UpdateValences) again before asking for derived values. A sanitised
// Mol may be read (SMILES, fingerprints, features, scaffolds) from several
// goroutines at once; changing it is not safe concurrently.
type Mol struct {
	Atoms []Atom
	Bonds []Bond

	adjStart []int32 // CSR adjacency: neighbours of atom i are adj[adjStart[i]:adjStart[i+1]]
	adj      []int32
	adjBond  []int32
	rings    *RingInfo

	kekAtoms []int // atoms that took part in the last kekulisation
	kekBonds []int // bonds kekulisation could make double
}

// NumAtoms returns the number of (heavy and explicit) atoms.
func (m *Mol) NumAtoms() int { return len(m.Atoms) }

// NumBonds returns the number of bonds.
func (m *Mol) NumBonds() int { return len(m.Bonds) }

// AddAtom appends a copy of a and returns its index. Derived data must be
// recomputed (Sanitize) afterwards.
func (m *Mol) AddAtom(a Atom) int {
	m.Atoms = append(m.Atoms, a)
	m.invalidate()
	return len(m.Atoms) - 1
}

// AddBond adds a bond of order o between atoms i and j and returns its
// index. Self-bonds, out-of-range atoms and duplicate bonds are errors. As
// RDKit's RWMol::addBond, an aromatic bond marks both atoms aromatic.
func (m *Mol) AddBond(i, j int, o BondOrder) (int, error) {
	if i < 0 || j < 0 || i >= len(m.Atoms) || j >= len(m.Atoms) {
		return -1, fmt.Errorf("mol: bond %d-%d: atom index out of range [0, %d)", i, j, len(m.Atoms))
	}
	if i == j {
		return -1, fmt.Errorf("mol: bond from atom %d to itself", i)
	}
	if m.BondBetween(i, j) >= 0 {
		return -1, fmt.Errorf("mol: duplicate bond %d-%d", i, j)
	}
	m.Bonds = append(m.Bonds, Bond{Begin: i, End: j, Order: o, Aromatic: o == Aromatic})
	if o == Aromatic {
		m.Atoms[i].Aromatic, m.Atoms[j].Aromatic = true, true
	}
	m.invalidate()
	return len(m.Bonds) - 1, nil
}

func (m *Mol) invalidate() {
	m.adjStart = nil
	m.rings = nil
}

// buildAdj (re)builds the CSR adjacency lists. Neighbours appear in bond
// order.
func (m *Mol) buildAdj() {
	n := len(m.Atoms)
	if cap(m.adjStart) >= n+1 {
		m.adjStart = m.adjStart[:n+1]
		clear(m.adjStart)
	} else {
		m.adjStart = make([]int32, n+1)
	}
	for _, b := range m.Bonds {
		m.adjStart[b.Begin+1]++
		m.adjStart[b.End+1]++
	}
	for i := 1; i <= n; i++ {
		m.adjStart[i] += m.adjStart[i-1]
	}
	k := 2 * len(m.Bonds)
	if cap(m.adj) >= k {
		m.adj, m.adjBond = m.adj[:k], m.adjBond[:k]
	} else {
		m.adj, m.adjBond = make([]int32, k), make([]int32, k)
	}
	var fillBuf [64]int32
	var fill []int32
	if n > len(fillBuf) {
		fill = make([]int32, n)
	} else {
		fill = fillBuf[:n]
	}
	for bi, b := range m.Bonds {
		p := m.adjStart[b.Begin] + fill[b.Begin]
		m.adj[p], m.adjBond[p] = int32(b.End), int32(bi)
		fill[b.Begin]++
		p = m.adjStart[b.End] + fill[b.End]
		m.adj[p], m.adjBond[p] = int32(b.Begin), int32(bi)
		fill[b.End]++
	}
}

func (m *Mol) ensureAdj() {
	if m.adjStart == nil || len(m.adjStart) != len(m.Atoms)+1 {
		m.buildAdj()
	}
}

// Neighbors returns the neighbours of atom i and the indices of the bonds
// that lead to them, in bond order. The slices are owned by m and must not
// be modified; they stay valid until m changes.
func (m *Mol) Neighbors(i int) (atoms, bonds []int32) {
	m.ensureAdj()
	s, e := m.adjStart[i], m.adjStart[i+1]
	return m.adj[s:e], m.adjBond[s:e]
}

// Degree returns the number of explicit neighbours of atom i (implicit
// hydrogens not counted).
func (m *Mol) Degree(i int) int {
	m.ensureAdj()
	return int(m.adjStart[i+1] - m.adjStart[i])
}

// BondBetween returns the index of the bond between atoms i and j, or -1.
func (m *Mol) BondBetween(i, j int) int {
	if m.adjStart != nil && len(m.adjStart) == len(m.Atoms)+1 {
		nb, bd := m.Neighbors(i)
		for k, a := range nb {
			if int(a) == j {
				return int(bd[k])
			}
		}
		return -1
	}
	for bi, b := range m.Bonds {
		if (b.Begin == i && b.End == j) || (b.Begin == j && b.End == i) {
			return bi
		}
	}
	return -1
}

// ImplicitHs returns the number of implicit hydrogens on atom i as computed
// by the last Sanitize or UpdateValences.
func (m *Mol) ImplicitHs(i int) int {
	if m.Atoms[i].NoImplicit {
		return 0
	}
	return m.Atoms[i].implicitHs
}

// TotalHs returns explicit plus implicit hydrogens on atom i (hydrogen
// atoms present as graph neighbours are not counted).
func (m *Mol) TotalHs(i int) int { return m.Atoms[i].ExplicitHs + m.ImplicitHs(i) }

// TotalDegree returns Degree(i) + TotalHs(i).
func (m *Mol) TotalDegree(i int) int { return m.Degree(i) + m.TotalHs(i) }

// ExplicitValence returns the explicit valence of atom i (bond orders plus
// stated hydrogens, with RDKit's treatment of aromatic bonds).
func (m *Mol) ExplicitValence(i int) int { return m.Atoms[i].explVal }

// TotalValence returns ExplicitValence(i) + ImplicitHs(i).
func (m *Mol) TotalValence(i int) int { return m.Atoms[i].explVal + m.ImplicitHs(i) }

// Clone returns a deep copy of m.
func (m *Mol) Clone() *Mol {
	c := &Mol{Atoms: slices.Clone(m.Atoms), Bonds: slices.Clone(m.Bonds)}
	if m.rings != nil {
		c.rings = m.rings.clone()
	}
	return c
}

// Fragments returns the connected components of m as sorted atom index
// lists, ordered by their lowest atom index (RDKit's GetMolFrags order).
func (m *Mol) Fragments() [][]int {
	n := len(m.Atoms)
	m.ensureAdj()
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	var frags [][]int
	stack := make([]int, 0, n)
	for s := 0; s < n; s++ {
		if comp[s] >= 0 {
			continue
		}
		id := len(frags)
		comp[s] = id
		stack = append(stack[:0], s)
		var f []int
		for len(stack) > 0 {
			a := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			f = append(f, a)
			nb, _ := m.Neighbors(a)
			for _, b := range nb {
				if comp[b] < 0 {
					comp[b] = id
					stack = append(stack, int(b))
				}
			}
		}
		slices.Sort(f)
		frags = append(frags, f)
	}
	return frags
}

// Subset returns the molecule made of the given atoms (in the given order)
// and the bonds among them. Atom data, including computed hydrogen counts,
// is copied; the result must be re-sanitised or UpdateValences'd if the
// removed neighbours matter.
func (m *Mol) Subset(atoms []int) *Mol {
	idx := make([]int, len(m.Atoms))
	for i := range idx {
		idx[i] = -1
	}
	s := &Mol{Atoms: make([]Atom, len(atoms))}
	for k, a := range atoms {
		idx[a] = k
		s.Atoms[k] = m.Atoms[a]
	}
	for _, b := range m.Bonds {
		if idx[b.Begin] >= 0 && idx[b.End] >= 0 {
			nb := b
			nb.Begin, nb.End = idx[b.Begin], idx[b.End]
			s.Bonds = append(s.Bonds, nb)
		}
	}
	return s
}

// LargestFragment returns the connected component with the most atoms
// (ties: the one holding the lowest atom index, as Python's max over
// RDKit's GetMolFrags picks). The molecule returned keeps the sanitised
// state of m (aromaticity, hydrogen counts) and has fresh ring data. A
// single-fragment molecule is returned as a clone.
func (m *Mol) LargestFragment() *Mol {
	frags := m.Fragments()
	if len(frags) <= 1 {
		return m.Clone()
	}
	best := 0
	for i, f := range frags {
		if len(f) > len(frags[best]) {
			best = i
		}
	}
	s := m.Subset(frags[best])
	s.buildAdj()
	return s
}

// String returns the canonical SMILES of m (see SMILES).
func (m *Mol) String() string { return m.SMILES() }
