package mol

import (
	"fmt"
	"strings"
)

// SanitizeErrorKind classifies a sanitisation failure.
type SanitizeErrorKind int

// Kinds of sanitisation failure.
const (
	// ValenceError: an atom has more bonds than any valence allows.
	ValenceError SanitizeErrorKind = iota + 1
	// KekulizeError: an aromatic system admits no Kekulé structure, or an
	// atom outside any ring is marked aromatic.
	KekulizeError
)

// SanitizeError reports why a molecule failed sanitisation. Msg follows
// RDKit's wording, e.g. "Explicit valence for atom # 3 N, 4, is greater
// than permitted" or "Can't kekulize mol.  Unkekulized atoms: 0 1 2 3 4".
type SanitizeError struct {
	Kind  SanitizeErrorKind
	Atoms []int // atoms involved
	Msg   string
}

// Error returns Msg.
func (e *SanitizeError) Error() string { return e.Msg }

// Sanitize checks and normalises m the way RDKit's SanitizeMol does with
// all operations on (RDKit 2022.09 semantics):
//
//  1. clean-up: neutral 5-valent N with =O becomes [N+][O-] (nitro), N=N#N
//     becomes N=[N+]=[N-], C=P(=O) becomes C=[P+][O-], hypervalent Cl/Br/I
//     oxides become charge-separated;
//  2. explicit valences are checked and implicit hydrogens computed from
//     the allowed-valence lists (charged atoms shift the valence by the
//     charge, carbon both ways down);
//  3. rings are perceived and aromatic systems kekulised (a perfect
//     matching of double bonds over the atoms that need one);
//  4. radicals are assigned to bracket atoms with missing hydrogens;
//  5. aromaticity is perceived again with RDKit's model (Hückel 4n+2 on
//     rings and fused systems of up to 6 rings, exocyclic double bonds to
//     more electronegative atoms steal the electron);
//  6. hydrogens lost by aromatic heteroatoms are made explicit ([nH]).
//
// On failure m is left partly processed and should be discarded.
func (m *Mol) Sanitize() error {
	m.buildAdj()
	m.rings = nil
	m.cleanUp()
	if err := m.updateValences(true); err != nil {
		return err
	}
	m.rings = m.findRings()
	if err := m.kekulize(); err != nil {
		return err
	}
	m.assignRadicals()
	m.setAromaticity()
	m.adjustHs() // also refreshes every atom's valences (not strictly:
	// RDKit 2022.09 does not re-check valences after kekulisation)
	m.canonicalizeKekule()
	return nil
}

// UpdateValences recomputes explicit valences and implicit hydrogen counts
// from the current atoms and bonds without changing them. With strict set,
// valence violations are returned as *SanitizeError.
func (m *Mol) UpdateValences(strict bool) error {
	m.ensureAdj()
	return m.updateValences(strict)
}

func (m *Mol) updateValences(strict bool) error {
	for i := range m.Atoms {
		ev, err := m.calcExplicitValence(i, strict)
		if err != nil {
			return err
		}
		m.Atoms[i].explVal = ev
		ih, err := m.calcImplicitValence(i, strict)
		if err != nil {
			return err
		}
		m.Atoms[i].implicitHs = ih
	}
	return nil
}

// isAromaticAtom is RDKit's isAromaticAtom: the flag, or any aromatic bond.
func (m *Mol) isAromaticAtom(i int) bool {
	if m.Atoms[i].Aromatic {
		return true
	}
	_, bds := m.Neighbors(i)
	for _, b := range bds {
		if bd := &m.Bonds[b]; bd.Aromatic || bd.Order == Aromatic {
			return true
		}
	}
	return false
}

// chargeShift returns the charge as it shifts valences: reversed for
// elements left of carbon, and always downwards for carbon.
func chargeShift(z, charge int) int {
	c := charge
	if elementTable[z].early {
		c = -c
	}
	if z == 6 && c > 0 {
		c = -c
	}
	return c
}

func (m *Mol) valenceError(i int, msg string) error {
	return &SanitizeError{Kind: ValenceError, Atoms: []int{i}, Msg: msg}
}

// calcExplicitValence mirrors RDKit's calculateExplicitValence.
func (m *Mol) calcExplicitValence(i int, strict bool) (int, error) {
	a := &m.Atoms[i]
	z := a.Element
	_, bds := m.Neighbors(i)
	acc2 := 2 * a.ExplicitHs
	for _, b := range bds {
		acc2 += m.Bonds[b].Order.valence2()
	}
	dv := DefaultValence(z)
	chr := chargeShift(z, a.Charge)
	if dv >= 0 && acc2 > 2*(dv+chr) && m.isAromaticAtom(i) {
		pval := dv + chr
		for _, v := range elementTable[z].valences {
			if v == -1 {
				break
			}
			val := int(v) + chr
			if 2*val > acc2 {
				break
			}
			pval = val
		}
		if acc2-2*pval <= 3 {
			acc2 = 2 * pval
		}
	}
	res := (acc2 + 1) / 2 // round(acc + 0.1)
	if strict && z > 0 {
		eff := res + a.Charge
		if elementTable[z].outer >= 4 {
			eff = res - a.Charge
		}
		if mv := maxValence(z); mv > 0 && eff > mv {
			return res, m.valenceError(i, fmt.Sprintf("Explicit valence for atom # %d %s, %d, is greater than permitted", i, a.Symbol(), eff))
		}
	}
	return res, nil
}

// calcImplicitValence mirrors RDKit's calculateImplicitValence; it needs
// Atoms[i].explVal to be current.
func (m *Mol) calcImplicitValence(i int, strict bool) (int, error) {
	a := &m.Atoms[i]
	if a.NoImplicit || a.Element == 0 {
		return 0, nil
	}
	z := a.Element
	ev := a.explVal
	if ev == 0 && z == 1 && a.Radicals == 0 {
		switch a.Charge {
		case 1, -1:
			return 0, nil
		case 0:
			return 1, nil
		}
		if strict {
			return 0, m.valenceError(i, fmt.Sprintf("Unreasonable formal charge on hydrogen # %d.", i))
		}
		return 0, nil
	}
	dv := DefaultValence(z)
	if dv == -1 {
		return 0, nil
	}
	evr := ev + a.Radicals
	chg := chargeShift(z, a.Charge)
	vals := elementTable[z].valences
	if m.isAromaticAtom(i) {
		if evr <= dv+chg {
			return dv + chg - evr, nil
		}
		satis := false
		for _, v := range vals {
			if v <= 0 {
				break
			}
			if evr == int(v)+chg {
				satis = true
				break
			}
		}
		if !satis && strict {
			return 0, m.valenceError(i, fmt.Sprintf("Explicit valence for aromatic atom # %d not equal to any accepted valence", i))
		}
		return 0, nil
	}
	for _, v := range vals {
		if v < 0 {
			break
		}
		if tot := int(v) + chg; evr <= tot {
			return tot - evr, nil
		}
	}
	if strict && vals[len(vals)-1] != -1 {
		return 0, m.valenceError(i, fmt.Sprintf("Explicit valence for atom # %d %s greater than permitted", i, a.Symbol()))
	}
	return 0, nil
}

// cleanupValence is the explicit valence RDKit's nitrogenCleanup sees: the
// atom's aromatic flag is cleared, but aromatic bonds still make it count
// as aromatic.
func (m *Mol) cleanupValence(i int) int {
	a := &m.Atoms[i]
	hold := a.Aromatic
	a.Aromatic = false
	ev, _ := m.calcExplicitValence(i, false)
	a.Aromatic = hold
	return ev
}

// cleanUp is RDKit's cleanUp: nitro/azide, phosphorus ylide and halogen
// oxide normalisation to charge-separated forms.
func (m *Mol) cleanUp() {
	for i := range m.Atoms {
		a := &m.Atoms[i]
		switch a.Element {
		case 7:
			if a.Charge != 0 {
				continue
			}
			if m.cleanupValence(i) != 5 {
				continue
			}
			nbrs, bds := m.Neighbors(i)
			for k, w := range nbrs {
				o, b := &m.Atoms[w], &m.Bonds[bds[k]]
				if o.Element == 8 && o.Charge == 0 && b.Order == Double {
					b.Order, b.Aromatic = Single, false
					a.Charge, o.Charge = 1, -1
					break
				} else if o.Element == 7 && o.Charge == 0 && b.Order == Triple {
					b.Order = Double
					a.Charge, o.Charge = 1, -1
					break
				}
			}
		case 15:
			if a.Charge != 0 || m.Degree(i) != 3 {
				continue
			}
			if ev, _ := m.calcExplicitValence(i, false); ev != 5 {
				continue
			}
			nbrs, bds := m.Neighbors(i)
			dblO, oAtom := -1, -1
			hasCN := false
			for k, w := range nbrs {
				o, b := &m.Atoms[w], &m.Bonds[bds[k]]
				if o.Element == 8 && o.Charge == 0 && b.Order == Double {
					dblO, oAtom = int(bds[k]), int(w)
				} else if (o.Element == 6 || o.Element == 7) && m.Degree(int(w)) >= 2 && b.Order == Double {
					hasCN = true
				}
			}
			if hasCN && dblO >= 0 {
				m.Atoms[oAtom].Charge = -1
				m.Bonds[dblO].Order = Single
				a.Charge = 1
			}
		case 17, 35, 53:
			if a.Charge != 0 {
				continue
			}
			ev, _ := m.calcExplicitValence(i, false)
			if ev != 7 && ev != 5 && ev != 3 {
				continue
			}
			nbrs, bds := m.Neighbors(i)
			allO := true
			for _, w := range nbrs {
				if m.Atoms[w].Element != 8 {
					allO = false
					break
				}
			}
			if !allO {
				continue
			}
			fc := 0
			for k, w := range nbrs {
				if b := &m.Bonds[bds[k]]; b.Order == Double {
					b.Order = Single
					fc++
					m.Atoms[w].Charge = -1
				}
			}
			a.Charge = fc
		}
	}
}

// assignRadicals is RDKit's assignRadicals: bracket atoms whose stated
// hydrogens and bonds leave electrons unpaired get radicals.
func (m *Mol) assignRadicals() {
	for i := range m.Atoms {
		a := &m.Atoms[i]
		if !a.NoImplicit || a.Radicals != 0 || a.Element == 0 {
			continue
		}
		z := a.Element
		vals := elementTable[z].valences
		nOuter := elementTable[z].outer
		chg := a.Charge
		if len(vals) == 1 && vals[0] == -1 {
			nv := nOuter - chg
			if nv < 0 {
				nv = 0
			}
			a.Radicals = nv % 2
			continue
		}
		_, bds := m.Neighbors(i)
		acc2 := 2 * a.ExplicitHs
		for _, b := range bds {
			acc2 += m.Bonds[b].Order.valence2()
		}
		total := (acc2*10 + 2) / 20 // int(accum + 0.1)
		base := 8
		if z == 1 || z == 2 {
			base = 2
		}
		nr := base - nOuter - total + chg
		if nr < 0 {
			nr = 0
			if len(vals) > 1 {
				for _, v := range vals {
					if int(v)-total+chg >= 0 {
						nr = int(v) - total + chg
						break
					}
				}
			}
		}
		if nr2 := nOuter - total - chg; nr2 >= 0 && nr2 < nr {
			nr = nr2
		}
		a.Radicals = nr
		a.explVal, _ = m.calcExplicitValence(i, false)
	}
}

// adjustHs is RDKit's adjustHs: after aromaticity perception, hydrogens
// that an aromatic atom would no longer get implicitly (the H of pyrrole's
// N) are made explicit.
func (m *Mol) adjustHs() {
	for i := range m.Atoms {
		a := &m.Atoms[i]
		orig := 0
		if !a.NoImplicit {
			orig = a.implicitHs
		}
		a.explVal, _ = m.calcExplicitValence(i, false)
		nw, _ := m.calcImplicitValence(i, false)
		a.implicitHs = nw
		if nw < orig {
			a.ExplicitHs += orig - nw
			a.explVal, _ = m.calcExplicitValence(i, false)
		}
	}
}

func joinInts(v []int) string {
	var sb strings.Builder
	for _, x := range v {
		fmt.Fprintf(&sb, " %d", x)
	}
	return sb.String()
}
