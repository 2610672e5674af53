package mol

import (
	"errors"
	"fmt"

	"lgflow/graph"
)

// Encoding maps molecules to labelled graphs and back (docs/design.md,
// "Molecules"): node label = index of the atom's element in AtomTypes,
// edge label = bond class (single 1, double 2, triple 3, aromatic 4).
// Hydrogens are implicit; formal charges are not encoded and are re-derived
// on decoding.
type Encoding struct {
	// Name identifies the encoding ("moses", "guacamol").
	Name string
	// AtomTypes lists the atomic numbers of the node classes.
	AtomTypes []int
}

// MOSES is the 7-type encoding of the MOSES benchmark: C, N, S, O, F, Cl,
// Br -> 0..6.
var MOSES = &Encoding{Name: "moses", AtomTypes: []int{6, 7, 16, 8, 9, 17, 35}}

// GuacaMol is the 12-type encoding of the GuacaMol benchmark: C, N, O, F,
// B, Br, Cl, I, P, S, Se, Si -> 0..11.
var GuacaMol = &Encoding{Name: "guacamol", AtomTypes: []int{6, 7, 8, 9, 5, 35, 17, 53, 15, 16, 34, 14}}

// NumAtomTypes returns the number of node classes.
func (e *Encoding) NumAtomTypes() int { return len(e.AtomTypes) }

// NumBondTypes returns the number of edge classes including "no bond" (5).
func (e *Encoding) NumBondTypes() int { return 5 }

// AtomType returns the node class of element z, or -1.
func (e *Encoding) AtomType(z int) int {
	for k, t := range e.AtomTypes {
		if t == z {
			return k
		}
	}
	return -1
}

// ToGraph returns the undirected graph of a sanitised molecule: one node
// per atom (same order) labelled with its atom type, one edge per bond
// labelled with its bond class. An element outside AtomTypes is an error.
func (e *Encoding) ToGraph(m *Mol) (*graph.Graph, error) {
	g := graph.New(len(m.Atoms))
	g.NodeLabels = make([]int, len(m.Atoms))
	for i := range m.Atoms {
		t := e.AtomType(m.Atoms[i].Element)
		if t < 0 {
			return nil, fmt.Errorf("mol: atom %d (%s) is not one of the %d %s atom types", i, m.Atoms[i].Symbol(), len(e.AtomTypes), e.Name)
		}
		g.NodeLabels[i] = t
	}
	for bi, b := range m.Bonds {
		if b.Order < Single || b.Order > Aromatic {
			return nil, fmt.Errorf("mol: bond %d has order %v, not single/double/triple/aromatic", bi, b.Order)
		}
		if err := g.AddLabeledEdge(b.Begin, b.End, int(b.Order)); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// typicalValence is DiGress's ATOM_VALENCY table used by the charge
// heuristic.
var typicalValence = map[int]int{6: 4, 7: 3, 8: 2, 9: 1, 15: 3, 16: 2, 17: 1, 35: 1, 53: 1}

// FromGraph builds the (unsanitised) molecule a generated graph describes,
// as DiGress's build_molecule_with_partial_charges does: atoms from node
// labels, bonds from edge labels added in (row, column) order, and after
// each bond, if the first atom (lowest index) whose explicit valence
// exceeds RDKit's limit is N, O or S exceeding its typical valence by
// exactly one, it gets charge +1. Edge labels outside 1..4 and node labels
// outside the encoding are errors. Sanitize the result (or use Decode).
func (e *Encoding) FromGraph(g *graph.Graph) (*Mol, error) {
	if g.Directed() {
		return nil, fmt.Errorf("mol: FromGraph needs an undirected graph")
	}
	n := g.N()
	if g.NodeLabels == nil && n > 0 {
		return nil, fmt.Errorf("mol: graph has no node labels")
	}
	m := &Mol{Atoms: make([]Atom, n)}
	for i := 0; i < n; i++ {
		t := g.NodeLabels[i]
		if t < 0 || t >= len(e.AtomTypes) {
			return nil, fmt.Errorf("mol: node %d has label %d, want 0..%d", i, t, len(e.AtomTypes)-1)
		}
		m.Atoms[i].Element = e.AtomTypes[t]
	}
	for _, ed := range g.Edges() {
		if ed.Label < 1 || ed.Label > 4 {
			return nil, fmt.Errorf("mol: edge %d-%d has label %d, want 1..4", ed.From, ed.To, ed.Label)
		}
		o := BondOrder(ed.Label)
		m.Bonds = append(m.Bonds, Bond{Begin: ed.From, End: ed.To, Order: o, Aromatic: o == Aromatic})
		if o == Aromatic { // as RDKit's RWMol::addBond
			m.Atoms[ed.From].Aromatic, m.Atoms[ed.To].Aromatic = true, true
		}
		m.buildAdj()
		// the first atom whose explicit valence is too high, as RDKit's
		// SANITIZE_PROPERTIES would report it
		for i := 0; i < n; i++ {
			ev, err := m.calcExplicitValence(i, true)
			if err != nil {
				a := &m.Atoms[i]
				eff := ev - a.Charge
				if tv, ok := typicalValence[a.Element]; ok && (a.Element == 7 || a.Element == 8 || a.Element == 16) && eff-tv == 1 {
					a.Charge = 1
				}
				break
			}
			m.Atoms[i].explVal = ev
			if _, err := m.calcImplicitValence(i, true); err != nil {
				break
			}
		}
	}
	m.buildAdj()
	return m, nil
}

// Decode turns a generated graph into canonical SMILES following the
// reference code and DiGress's compute_validity (docs/design.md,
// "Molecules"): FromGraph, sanitise the
// whole molecule, split it into fragments and sanitise each again (RDKit's
// GetMolFrags with sanitizeFrags; a sanitised aromatic system can fail the
// second kekulisation), then write the canonical SMILES of the fragment
// with the most atoms. Any failure means the graph is invalid. Options
// (InferAromaticNH) depart from the reference's decoding.
func (e *Encoding) Decode(g *graph.Graph, opts ...DecodeOption) (string, error) {
	var o decodeOptions
	for _, opt := range opts {
		opt(&o)
	}
	m, err := e.FromGraph(g)
	if err != nil {
		return "", err
	}
	if len(m.Atoms) == 0 {
		return "", fmt.Errorf("mol: empty graph")
	}
	if o.maxNH <= 0 {
		return largestFragment(m)
	}
	smi, err := largestFragment(m.Clone()) // m stays the template of the retries
	var se *SanitizeError
	if err == nil || !errors.As(err, &se) || se.Kind != KekulizeError {
		return smi, err
	}
	cands := m.pyrroleNCandidates()
	idx := make([]int, 0, o.maxNH)
	for k := 1; k <= min(o.maxNH, len(cands)); k++ {
		idx = idx[:k]
		for i := range idx {
			idx[i] = i
		}
		for {
			t := m.Clone()
			for _, i := range idx {
				a := &t.Atoms[cands[i]]
				a.ExplicitHs, a.NoImplicit = 1, true
			}
			if s, err := largestFragment(t); err == nil {
				return s, nil
			}
			if !nextCombination(idx, len(cands)) {
				break
			}
		}
	}
	return "", err
}

// DecodeOption changes how Decode and DecodeDatasetGraph read a graph.
type DecodeOption func(*decodeOptions)

type decodeOptions struct {
	maxNH int
}

// InferAromaticNH lets Decode read up to max aromatic nitrogens as [nH]
// (pyrrole-type, with one hydrogen) when the molecule cannot be kekulised
// as built. The encodings carry no hydrogens, so a ring such as pyrrole,
// imidazole or uracil in the data becomes a graph whose aromatic N has two
// aromatic bonds and nothing says it bears the hydrogen: the reference's
// decoding (RDKit's sanitisation of the bare graph) rejects it, and 10.4%
// of MOSES's test molecules do not survive their own round trip. Candidates
// are the uncharged aromatic nitrogens with exactly two bonds, both
// aromatic; sets of one, then two, up to max of them are tried in order
// of their atom indices, and the first with which every fragment
// sanitises is used (for tautomers, the one with the lowest indices). The
// hydrogens are inferred as DiGress's charge heuristic infers charges
// (FromGraph); it is not the paper's decoding, so figures measured with
// it must say so. max <= 0 keeps the reference's decoding. Where no set
// works, Decode returns the kekulisation error of the graph as built.
func InferAromaticNH(max int) DecodeOption { return func(o *decodeOptions) { o.maxNH = max } }

// DefaultInferNH is the InferAromaticNH bound with which lgflow's tools
// (examples/moses, lgflow sample and train-flow, the sampling server)
// decode generated molecules unless told otherwise. Of the first 20,000
// MOSES test molecules, all but one survive their round trip through
// ToDatasetGraph and DecodeDatasetGraph with it, 95.5% as the same
// canonical SMILES and the rest as the same heavy-atom graph with its
// hydrogens elsewhere (a tautomer); the reference's decoding loses 2,072
// of them (10.4%) and gives 89.3% back unchanged.
const DefaultInferNH = 2

// largestFragment sanitises m, then each fragment again, and returns the
// canonical SMILES of the fragment with the most atoms.
func largestFragment(m *Mol) (string, error) {
	if err := m.Sanitize(); err != nil {
		return "", err
	}
	var best *Mol
	for _, f := range m.Fragments() {
		fm := m.Subset(f)
		if err := fm.Sanitize(); err != nil {
			return "", err
		}
		if best == nil || len(fm.Atoms) > len(best.Atoms) {
			best = fm
		}
	}
	return best.SMILES(), nil
}

// pyrroleNCandidates returns the atoms InferAromaticNH may give a
// hydrogen: uncharged aromatic nitrogens without hydrogens whose two bonds
// are both aromatic.
func (m *Mol) pyrroleNCandidates() []int {
	m.ensureAdj()
	var c []int
	for i := range m.Atoms {
		a := &m.Atoms[i]
		if a.Element != 7 || !a.Aromatic || a.Charge != 0 || a.ExplicitHs != 0 {
			continue
		}
		_, bds := m.Neighbors(i)
		if len(bds) != 2 {
			continue
		}
		ok := true
		for _, b := range bds {
			if m.Bonds[b].Order != Aromatic {
				ok = false
			}
		}
		if ok {
			c = append(c, i)
		}
	}
	return c
}

// NodeFeatureLen and EdgeFeatureLen are the lengths of the encoder feature
// vectors (docs/design.md, "Molecules").
const (
	NodeFeatureLen = 11
	EdgeFeatureLen = 7
)

// Hybridisation classes of NodeFeatures[4] (RDKit's HybridizationType
// restricted to the list LG-Flow's featuriser uses; anything else is misc).
const (
	HybSP = iota
	HybSP2
	HybSP3
	HybSP3D
	HybSP3D2
	HybMisc
)

// Features holds the encoder inputs of one molecule.
type Features struct {
	// Graph is ToGraph's graph.
	Graph *graph.Graph
	// Nodes[i] = [atom type, total degree, formal charge + 5, total H,
	// hybridisation (HybSP..HybMisc), aromatic, in ring of size 3, 4, 5, 6,
	// 7].
	Nodes [][NodeFeatureLen]int
	// Edges[k] describes Graph.Edges()[k]: [bond type (single 0, double 1,
	// triple 2, aromatic 3), conjugated, in ring of size 3, 4, 5, 6, 7].
	Edges [][EdgeFeatureLen]int
}

// Featurize computes the graph and the encoder features of a sanitised
// molecule (RDKit's conjugation and hybridisation rules).
func (e *Encoding) Featurize(m *Mol) (*Features, error) {
	g, err := e.ToGraph(m)
	if err != nil {
		return nil, err
	}
	ri := m.Rings()
	conj := m.conjugatedBonds()
	hyb := m.hybridisation(conj)
	f := &Features{Graph: g, Nodes: make([][NodeFeatureLen]int, len(m.Atoms))}
	for i := range m.Atoms {
		a := &m.Atoms[i]
		v := &f.Nodes[i]
		v[0] = g.NodeLabels[i]
		v[1] = m.TotalDegree(i)
		c := a.Charge + 5
		if c < 0 || c > 10 {
			c = 10
		}
		v[2] = c
		v[3] = m.TotalHs(i)
		v[4] = hyb[i]
		if a.Aromatic {
			v[5] = 1
		}
		for k := 3; k <= 7; k++ {
			if ri.IsAtomInRingOfSize(i, k) {
				v[3+k] = 1
			}
		}
	}
	for _, ed := range g.Edges() {
		b := m.BondBetween(ed.From, ed.To)
		var v [EdgeFeatureLen]int
		v[0] = int(m.Bonds[b].Order) - 1
		if conj[b] {
			v[1] = 1
		}
		for k := 3; k <= 7; k++ {
			if ri.IsBondInRingOfSize(b, k) {
				v[k-1] = 1
			}
		}
		f.Edges = append(f.Edges, v)
	}
	return f, nil
}

// isAtomConjugCand is RDKit's isAtomConjugCand.
func (m *Mol) isAtomConjugCand(i int) bool {
	z := m.Atoms[i].Element
	no := elementTable[z].outer
	return (z <= 10 || (no != 5 && no != 6) || (no == 6 && m.TotalDegree(i) < 2)) && m.countAtomElec(i) > 0
}

// conjugatedBonds is RDKit's setConjugation: aromatic bonds, and bonds
// around an atom with 2-3 substituents that has a multiple bond next to a
// conjugation candidate.
func (m *Mol) conjugatedBonds() []bool {
	m.Rings()
	conj := make([]bool, len(m.Bonds))
	for b := range m.Bonds {
		conj[b] = m.Bonds[b].Aromatic
	}
	for i := range m.Atoms {
		if !m.isAtomConjugCand(i) {
			continue
		}
		if sbo := m.Degree(i) + m.TotalHs(i); sbo < 2 || sbo > 3 {
			continue
		}
		nbrs, bds := m.Neighbors(i)
		for _, b1 := range bds {
			if m.Bonds[b1].Order.valence2() < 3 {
				continue
			}
			for k, b2 := range bds {
				if b1 == b2 {
					continue
				}
				w := int(nbrs[k])
				if m.Degree(w)+m.TotalHs(w) > 3 {
					continue
				}
				if m.isAtomConjugCand(w) {
					conj[b1], conj[b2] = true, true
				}
			}
		}
	}
	return conj
}

// hybridisation is RDKit's setHybridization mapped to HybSP..HybMisc.
func (m *Mol) hybridisation(conj []bool) []int {
	out := make([]int, len(m.Atoms))
	for i := range m.Atoms {
		a := &m.Atoms[i]
		if a.Element == 0 {
			out[i] = HybMisc
			continue
		}
		deg := m.TotalDegree(i)
		norbs := deg
		if a.Element > 1 && a.Element < 89 {
			nouter := elementTable[a.Element].outer
			tv := m.TotalValence(i)
			free := nouter - (tv + a.Charge)
			if tv+nouter-a.Charge < 8 {
				norbs = deg + (free-a.Radicals)/2 + a.Radicals
			} else {
				norbs = deg + free/2
			}
		}
		switch norbs {
		case 2:
			out[i] = HybSP
		case 3:
			out[i] = HybSP2
		case 4:
			out[i] = HybSP3
			if deg <= 3 {
				_, bds := m.Neighbors(i)
				for _, b := range bds {
					if conj[b] {
						out[i] = HybSP2
						break
					}
				}
			}
		case 5:
			out[i] = HybSP3D
		case 6:
			out[i] = HybSP3D2
		default:
			out[i] = HybMisc
		}
	}
	return out
}
