package mol

// MurckoScaffold returns the Bemis–Murcko scaffold of a sanitised molecule
// as RDKit's MurckoScaffold.GetScaffoldForMol builds it: ring atoms and the
// linker atoms on paths between rings are kept, side chains removed; an
// atom doubly bonded to a kept atom (a ring C=O, say) is kept too. A kept
// aromatic heteroatom that loses a substituent gets one explicit H (so
// n-methylpyrrole gives [nH]). Aromatic flags are kept and valences
// recomputed strictly; an impossible result is an error. A molecule
// without rings gives an empty scaffold.
func (m *Mol) MurckoScaffold() (*Mol, error) {
	m.ensureAdj()
	n := len(m.Atoms)
	ri := m.Rings()
	keep := make([]bool, n)
	deg := make([]int, n)
	for i := 0; i < n; i++ {
		keep[i] = true
		deg[i] = m.Degree(i)
	}
	// prune non-ring atoms of degree <= 1 until none is left: what remains
	// is the rings and the linkers between them
	stack := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if ri.atomCount[i] == 0 && deg[i] <= 1 {
			stack = append(stack, i)
			keep[i] = false
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nbrs, _ := m.Neighbors(v)
		for _, w := range nbrs {
			if !keep[w] {
				continue
			}
			deg[w]--
			if ri.atomCount[w] == 0 && deg[w] <= 1 {
				keep[w] = false
				stack = append(stack, int(w))
			}
		}
	}
	s := m.Clone()
	s.buildAdj()
	var atoms []int
	for i := 0; i < n; i++ {
		if keep[i] {
			atoms = append(atoms, i)
			continue
		}
		removeIt := true
		nbrs, bds := m.Neighbors(i)
		for k, w := range nbrs {
			if !keep[w] {
				continue
			}
			nb := &s.Atoms[w]
			switch {
			case m.Bonds[bds[k]].Order == Double:
				removeIt = false
			case nb.Aromatic && nb.Element != 6:
				nb.ExplicitHs = 1
			case nb.Aromatic && nb.Element == 6 && nb.Charge == 1:
				nb.ExplicitHs = 1
			case nb.NoImplicit || nb.Chirality != "":
				nb.NoImplicit = false
				nb.ExplicitHs = 0
				nb.Chirality = ""
			}
			if !removeIt {
				break
			}
		}
		if !removeIt {
			atoms = append(atoms, i)
		}
	}
	// atoms must stay in index order, as RDKit removes atoms in place
	sc := s.Subset(atoms)
	sc.buildAdj()
	if err := sc.updateValences(true); err != nil {
		return nil, err
	}
	return sc, nil
}

// AddHs returns a copy of m in which every hydrogen (stated or implicit)
// is an explicit hydrogen atom bonded to its heavy atom, appended after the
// original atoms (RDKit's AddHs). SMARTS patterns that mention [#1] are
// matched against this form.
func (m *Mol) AddHs() *Mol {
	m.ensureAdj()
	n := len(m.Atoms)
	h := &Mol{Atoms: make([]Atom, n, 2*n), Bonds: make([]Bond, len(m.Bonds), len(m.Bonds)+2*n)}
	copy(h.Atoms, m.Atoms)
	copy(h.Bonds, m.Bonds)
	for i := 0; i < n; i++ {
		nh := m.TotalHs(i)
		a := &h.Atoms[i]
		a.ExplicitHs = 0
		a.implicitHs = 0
		a.NoImplicit = true
		for k := 0; k < nh; k++ {
			h.Atoms = append(h.Atoms, Atom{Element: 1, NoImplicit: true, explVal: 1})
			h.Bonds = append(h.Bonds, Bond{Begin: i, End: len(h.Atoms) - 1, Order: Single})
		}
	}
	h.buildAdj()
	h.rings = m.Rings().extend(len(h.Atoms), len(h.Bonds))
	h.updateValences(false) //nolint:errcheck // non-strict never fails
	return h
}

// extend returns ring information for a molecule with extra, ring-free
// atoms and bonds appended.
func (r *RingInfo) extend(nAtoms, nBonds int) *RingInfo {
	c := r.clone()
	for len(c.atomCount) < nAtoms {
		c.atomCount = append(c.atomCount, 0)
		c.atomMinSize = append(c.atomMinSize, 0)
	}
	for len(c.bondCount) < nBonds {
		c.bondCount = append(c.bondCount, 0)
		c.bondMinSize = append(c.bondMinSize, 0)
	}
	return c
}
